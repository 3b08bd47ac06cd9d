"""Codex CLI's own telemetry (``[otel]`` in ``config.toml``), read as one attempt per user turn
(docs/coding-agents.md).

- The turn is the ``session_task.turn`` span (``turn.id``; the turn's trace also holds its
  ``codex.turn_input`` span with ``conversation.id``, the session).  A ``codex exec`` run sends
  some 460 spans; only these are read, the rest stay ordinary spans in ``otel_traces``.
- Its steps: each model call is a ``try_run_sampling_request`` span (one per request, with
  ``model``), its tokens the ``gen_ai.usage.*`` of the ``handle_responses`` span below it that
  carries them (the response's end; the other ``handle_responses`` spans are single stream
  events); each tool call a span with ``tool_name`` and ``call_id`` (``exec_command``), whose
  arguments are the ``codex.tool_result`` event's ``arguments`` (sent whenever ``[otel]`` is on).
- Log records' EventName is a Rust source location; the name is the ``event.name`` attribute.
  The prompt is the ``codex.user_prompt`` event's ``prompt`` (``[REDACTED]`` unless
  ``log_user_prompt = true``).
- Codex sends neither the request messages nor anything about AGENTS.md: the files the
  otel-inputs hook lists are *present at dispatch, loading not reported by Codex*, and their
  delivery is *request not recorded by Codex*.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from typing import Any

from otel_inputs import names as n

from otel_inputs.exporter._encodings import _instructions as ins
from otel_inputs.exporter._encodings._turns import (
    Log, Request, Span, Step, Turn, as_int, first, messages_note, status_of,
)  # fmt: skip

RUNTIME = n.RUNTIME_CODEX
SOURCE_FORMAT = "codex"
LABEL = "Codex"
TURN_SPAN = n.CODEX_SPAN_TURN
REQUEST_SPAN = n.CODEX_SPAN_REQUEST  # one per model request (a retry is another)
MODEL_SPAN = n.CODEX_SPAN_RESPONSE_EVENT  # one per stream event; the one with gen_ai.usage.* is the response's end
USAGE_IN = n.GEN_AI_USAGE_INPUT_TOKENS
USAGE_OUT = n.GEN_AI_USAGE_OUTPUT_TOKENS
EV_USER_PROMPT = n.CODEX_EVENT_USER_PROMPT
EV_TOOL_RESULT = n.CODEX_EVENT_TOOL_RESULT
REDACTED = "[REDACTED]"
NO_REQUEST = f"not recorded by {LABEL}: no {LABEL} setting sends the request messages"


def is_turn(span: Span) -> bool:
    return span.name == TURN_SPAN and span.service.startswith("codex")


def claims_span(attrs: Mapping[str, Any]) -> bool:
    """No per-span encoding recognises Codex's spans (they send no gen_ai.operation.name)."""
    return False


def is_record(service: str, span_name: str | None = None) -> bool:
    return service.startswith("codex")


def _session(turn: Span, spans: Sequence[Span], logs: Sequence[Log]) -> str | None:
    """The conversation.id a span or event of the turn's trace carries (Codex puts it on some, all alike)."""
    found = [v for v in (*(s.attrs.get(n.CODEX_CONVERSATION_ID) for s in spans if s.trace_id == turn.trace_id),
                         *(l.attrs.get(n.CODEX_CONVERSATION_ID) for l in logs if l.trace_id == turn.trace_id)) if v]
    return min(found) if found else None


def derive(turn_span: Span, spans: Sequence[Span], logs: Sequence[Log], hooks: Sequence[Log]) -> Turn:
    trace = [s for s in spans if s.trace_id == turn_span.trace_id]
    own_logs = sorted((l for l in logs if l.trace_id == turn_span.trace_id
                       and turn_span.start_ns <= l.ts_ns <= turn_span.end_ns), key=Log.key)  # fmt: skip
    prompt = first(l.attrs.get(n.CODEX_PROMPT) for l in own_logs if l.event == EV_USER_PROMPT
                   and l.attrs.get(n.CODEX_PROMPT) != REDACTED)  # fmt: skip
    turn = Turn(RUNTIME, SOURCE_FORMAT, turn_span.span_id, _session(turn_span, trace, logs),
                turn_span.attrs.get(n.CODEX_TURN_ID), turn_span.trace_id, turn_span.span_id, turn_span.start_ns,
                turn_span.end_ns, service_name=turn_span.service or None, prompt=prompt, agent_name="codex",
                request_model=turn_span.attrs.get(n.CODEX_MODEL), status=status_of(turn_span.status))  # fmt: skip
    results: dict[str, Log] = {}
    for l in own_logs:
        if l.event == EV_TOOL_RESULT and l.attrs.get(n.CODEX_CALL_ID):
            results.setdefault(l.attrs[n.CODEX_CALL_ID], l)
    steps: list[Step] = []
    usage = {s.parent: s for s in trace if s.name == MODEL_SPAN and USAGE_IN in s.attrs}  # receiving_stream -> span
    streams = {s.span_id: s.parent for s in trace if s.span_id in usage}
    by_request = {req: usage[stream] for stream, req in streams.items()}
    for s in sorted(trace, key=lambda s: (s.start_ns, s.span_id)):
        if not turn_span.start_ns <= s.start_ns <= turn_span.end_ns or s.span_id == turn_span.span_id:
            continue  # a Codex turn's trace is its own: its steps are the trace's spans inside its time
        a = s.attrs
        if s.name == REQUEST_SPAN:
            done = by_request.get(s.span_id)
            u = done.attrs if done is not None else {}
            steps.append(Step(s, "model_call", s.span_id, s.trace_id, s.parent or None, s.start_ns, s.end_ns,
                              span_name=s.name, request_model=a.get(n.CODEX_MODEL), input_tokens=as_int(u.get(USAGE_IN)),
                              output_tokens=as_int(u.get(USAGE_OUT)), status=status_of(s.status),
                              request_record=NO_REQUEST, request=Request(note=NO_REQUEST)))
        elif a.get(n.CODEX_CALL_ID) and a.get(n.CODEX_TOOL_NAME) and a.get(n.CODEX_TOOL_PHASE):
            result = results.get(a[n.CODEX_CALL_ID])
            steps.append(Step(s, "tool_call", s.span_id, s.trace_id, s.parent or None, s.start_ns, s.end_ns,
                              span_name=s.name, tool_name=a[n.CODEX_TOOL_NAME], tool_call_id=a[n.CODEX_CALL_ID],
                              tool_arguments=result.attrs.get(n.CODEX_ARGUMENTS) if result is not None else None,
                              status=status_of(s.status)))
    turn.steps = steps
    turn.request = Request(note=NO_REQUEST)
    turn.messages_note = messages_note(prompt, f"set log_user_prompt = true under [otel] for {LABEL}", turn.request)
    _files(turn, hooks)
    return turn


def _files(turn: Turn, hooks: Sequence[Log]) -> None:
    turn_records = [h for h in hooks if h.event == n.HOOK_TURN_EVENT and turn.turn_key
                    and h.attrs.get(n.HOOK_TURN_KEY) == turn.turn_key]  # fmt: skip
    if not turn_records:
        turn.coverage = "not_recorded"
        turn.coverage_reason = (f"instruction files present at dispatch: not recorded (no otel-inputs hook record for "
                                f"this turn; {LABEL} itself reports none; otel-inputs setup codex installs the hook)")
        return
    anchor = sorted(turn_records, key=Log.key)[-1]
    capture = anchor.attrs.get(n.HOOK_CAPTURE_ID)
    files = ins.from_hook_records([h for h in hooks if h.event == n.INSTRUCTION_FILE_EVENT
                                   and h.attrs.get(n.HOOK_CAPTURE_ID) == capture])  # fmt: skip
    for f in files:
        f.loaded, f.loaded_detail = ins.LOADED_NOT_BY_RUNTIME, f"present at dispatch, loading not reported by {LABEL}"
        f.delivered, f.delivered_detail = ins.DELIVERED_NO_REQUEST, f"the request was {NO_REQUEST}"
    turn.files = files
    turn.hook_process_key = anchor.attrs.get(n.HOOK_PROCESS_KEY)
    gaps = anchor.attrs.get(n.HOOK_GAP)
    turn.coverage = "partial" if gaps else "complete"
    turn.coverage_reason = gaps
