"""Gemini CLI's own telemetry (``telemetry`` in its settings), read as one attempt per user turn
(docs/coding-agents.md).

- Every ``llm_call`` is a root span in a trace of its own, so the turn is not a span: it is the
  ``gemini_cli.user_prompt`` event (no trace context; ``prompt`` with ``logPrompts``), and its
  steps are the session's spans (``gen_ai.conversation.id``) from that prompt to the session's
  next one: ``llm_call`` (model call), ``tool_call`` (tool call, ``gen_ai.tool.call_id``) and
  ``schedule_tool_calls`` (a step of kind other, never an attempt).  ``prompt_id`` does not
  separate turns (``gemini -p`` gives every turn of a session the session id).
- A model call whose ``gemini_cli.api_request`` event (same span) has a ``role`` other than
  ``main`` is auxiliary (the model router's classifier, ``utility_router``).
- The request is the ``llm_call`` span's ``gen_ai.input.messages`` (Gemini's own
  ``{role, parts: [{text} | {functionCall} | {functionResponse}]}`` shape; needs ``traces`` and
  ``logPrompts``), else the ``api_request`` event's ``request_text``; the system instructions are
  ``gen_ai.system_instructions`` (a JSON string).  GEMINI.md reaches the model inside them as
  ``--- Context from: PATH ---`` blocks: that is Gemini CLI's report of what it loaded.
- Log records have an empty EventName; the name is the ``event.name`` attribute.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from otel_inputs import names as n

from otel_inputs.exporter._encodings import _instructions as ins
from otel_inputs.exporter._encodings._turns import (
    Log, Request, Span, Step, Turn, as_int, first, messages_note, status_of,
)  # fmt: skip

RUNTIME = n.RUNTIME_GEMINI_CLI
SOURCE_FORMAT = "gemini_cli"
LABEL = "Gemini CLI"
SERVICE = "gemini-cli"
EV_USER_PROMPT = n.GEMINI_EVENT_USER_PROMPT
EV_API_REQUEST = n.GEMINI_EVENT_API_REQUEST
EV_DETAILS = n.EVENT_INFERENCE_DETAILS
EV_TOOL_CALL = n.GEMINI_EVENT_TOOL_CALL
OP_MODEL = n.GEMINI_OPERATION_LLM_CALL
OP_TOOL = n.GEMINI_OPERATION_TOOL_CALL
HOOK_MATCH_NS = 60_000_000_000
SWITCH_MESSAGES = "telemetry.logPrompts and telemetry.traces"


def claims_span(attrs: Mapping[str, Any]) -> bool:
    """Gemini CLI's spans (gen_ai.agent.name gemini-cli) are grouped into turns here, never read per span."""
    return attrs.get(n.GEN_AI_AGENT_NAME) == SERVICE


def is_record(service: str, span_name: str | None = None) -> bool:
    return service == SERVICE


def is_step_span(span: Span) -> bool:
    return span.service == SERVICE and bool(span.attrs.get(n.GEN_AI_OPERATION_NAME))


def session_of(span: Span) -> str | None:
    return span.attrs.get(n.GEN_AI_CONVERSATION_ID)


def attempt_id(session: str | None, anchor_ns: int) -> str:
    return f"{RUNTIME}:{session or 'no-session'}:{anchor_ns}"


def _parts(parts: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for p in parts if isinstance(parts, list) else []:
        if not isinstance(p, dict):
            continue
        if "text" in p:
            out.append({"type": "text", "content": p.get("text")})
        elif "functionCall" in p and isinstance(p["functionCall"], dict):
            call = p["functionCall"]
            out.append({"type": "tool_call", "id": call.get("id"), "name": call.get("name"), "arguments": call.get("args")})
        elif "functionResponse" in p and isinstance(p["functionResponse"], dict):
            resp = p["functionResponse"]
            out.append({"type": "tool_call_response", "id": resp.get("id"), "response": resp.get("response")})
        else:
            out.append({"type": next(iter(p), "unknown")})
    return out


def genai_messages(raw: str) -> str | None:
    """Gemini's own message shape as GenAI input-message JSON (``model`` is the assistant role)."""
    try:
        doc = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(doc, list):
        return None
    out = [{"role": "assistant" if m.get("role") == "model" else m.get("role"), "parts": _parts(m.get("parts"))}
           for m in doc if isinstance(m, dict)]  # fmt: skip
    return json.dumps(out, ensure_ascii=False, separators=(",", ":"))


def system_text(raw: str | None) -> str | None:
    """``gen_ai.system_instructions`` as text: a JSON string (on spans) or GenAI parts (the details event)."""
    if raw is None:
        return None
    try:
        doc = json.loads(raw)
    except ValueError:
        return raw
    if isinstance(doc, str):
        return doc
    if isinstance(doc, list):
        return "\n\n".join(str(p.get("content", p.get("text", ""))) for p in doc if isinstance(p, dict))
    return raw


def _request(step: Step, logs: Sequence[Log]) -> Request:
    span = step.span
    assert span is not None
    same = [l for l in logs if l.trace_id == span.trace_id and l.span_id == span.span_id]
    raw = span.attrs.get(n.GEN_AI_INPUT_MESSAGES)
    where = "the llm_call span's gen_ai.input.messages"
    if raw is None:
        raw = first(l.attrs.get(n.GEMINI_REQUEST_TEXT) for l in same if l.event == EV_API_REQUEST)
        where = "the api_request event's request_text"
    system_raw = first([span.attrs.get(n.GEN_AI_SYSTEM_INSTRUCTIONS),
                        *(l.attrs.get(n.GEN_AI_SYSTEM_INSTRUCTIONS) for l in same if l.event == EV_DETAILS)])
    if raw is None and system_raw is None:
        return Request(note=f"not recorded by {LABEL}: turn on {SWITCH_MESSAGES}")
    whole = raw is not None and _is_list(raw)
    text = "\n".join(t for t in (raw, system_raw) if t is not None)
    note = (f"from {where}, Gemini's own message shape, whole" if whole else
            f"from {where}, not parseable as a whole message list: partial" if raw is not None else
            f"only the system instructions were recorded by {LABEL} (turn on {SWITCH_MESSAGES} for the messages)")
    return Request(text=text, whole=whole, length=len(text.encode("utf-8", "surrogatepass")), note=note,
                   system=system_text(system_raw), messages_json=raw if whole else None)  # fmt: skip


def _is_list(raw: str) -> bool:
    try:
        return isinstance(json.loads(raw), list)
    except ValueError:
        return False


def derive(anchor: Log, until_ns: int | None, spans: Sequence[Span], logs: Sequence[Log], hooks: Sequence[Log]) -> Turn:
    """One turn: the user_prompt event ``anchor`` and the session's spans from it up to ``until_ns``
    (the session's next prompt; None: no later prompt landed)."""
    session = anchor.attrs.get(n.OPENINFERENCE_SESSION_ID)
    logs = sorted(logs, key=Log.key)
    mine = sorted((s for s in spans if is_step_span(s) and session_of(s) == session and s.start_ns >= anchor.ts_ns
                   and (until_ns is None or s.start_ns < until_ns)), key=lambda s: (s.start_ns, s.span_id))  # fmt: skip
    prompt = anchor.attrs.get(n.GEMINI_PROMPT)
    turn = Turn(RUNTIME, SOURCE_FORMAT, attempt_id(session, anchor.ts_ns), session, str(anchor.ts_ns), None, None,
                anchor.ts_ns, max([anchor.ts_ns, *(s.end_ns for s in mine)]), service_name=anchor.service or None,
                prompt=prompt, agent_name=SERVICE)  # fmt: skip
    roles: dict[tuple[str, str], str | None] = {}
    providers: dict[tuple[str, str], str | None] = {}
    for l in sorted(logs, key=Log.key):
        if l.trace_id and l.event == EV_API_REQUEST:
            roles.setdefault((l.trace_id, l.span_id), l.attrs.get(n.GEMINI_ROLE))
        elif l.trace_id and l.event == EV_DETAILS and l.attrs.get(n.GEN_AI_PROVIDER_NAME):
            providers.setdefault((l.trace_id, l.span_id), l.attrs.get(n.GEN_AI_PROVIDER_NAME))
    steps: list[Step] = []
    for s in mine:
        a = s.attrs
        op = a.get(n.GEN_AI_OPERATION_NAME)
        kind = "model_call" if op == OP_MODEL else "tool_call" if op == OP_TOOL else "other"
        step = Step(s, kind, s.span_id, s.trace_id, s.parent or None, s.start_ns, s.end_ns, operation_name=op,
                    span_name=s.name, provider_name=providers.get((s.trace_id, s.span_id)),
                    request_model=a.get(n.GEN_AI_REQUEST_MODEL), response_model=a.get(n.GEN_AI_RESPONSE_MODEL),
                    input_tokens=as_int(a.get(n.GEN_AI_USAGE_INPUT_TOKENS)),
                    output_tokens=as_int(a.get(n.GEN_AI_USAGE_OUTPUT_TOKENS)), status=status_of(s.status))
        if kind == "model_call":
            role = roles.get((s.trace_id, s.span_id))
            step.auxiliary = role if role and role != "main" else None
            step.request = _request(step, logs)
            step.request_record = step.request.note
        elif kind == "tool_call":
            step.tool_name = a.get(n.GEN_AI_TOOL_NAME)
            step.tool_call_id = first([a.get(n.GEMINI_TOOL_CALL_ID), a.get(n.GEN_AI_TOOL_CALL_ID)])
            step.tool_arguments = _tool_arguments(s, logs)
        steps.append(step)
    turn.steps = steps
    main = next((st for st in steps if st.kind == "model_call" and st.auxiliary is None), None)
    turn.request = main.request if main is not None else Request(note="no model call of the turn was recorded")
    if main is not None:
        turn.request_model, turn.provider_name = main.request_model, main.provider_name
        turn.trace_id, turn.span_id = main.trace_id, None
    statuses = [st.status for st in steps if st.auxiliary is None]
    turn.status = "error" if "error" in statuses else ("ok" if "ok" in statuses else "unset")
    turn.messages_note = messages_note(prompt, f"turn on telemetry.logPrompts for {LABEL}", turn.request)
    _files(turn, anchor, hooks)
    return turn


def _tool_arguments(span: Span, logs: Sequence[Log]) -> str | None:
    raw = span.attrs.get(n.GEN_AI_INPUT_MESSAGES)
    if raw:
        try:
            doc = json.loads(raw)
        except ValueError:
            doc = None
        if isinstance(doc, dict) and "args" in doc:
            return json.dumps(doc["args"], ensure_ascii=False, separators=(",", ":"))
    return first(l.attrs.get(n.GEMINI_FUNCTION_ARGS) for l in logs if l.event == EV_TOOL_CALL and l.trace_id == span.trace_id)


def _hook_turn(anchor: Log, hooks: Sequence[Log]) -> Log | None:
    """The BeforeAgent record of this prompt: same session, same prompt digest (when both are known),
    nearest in time within a minute."""
    import hashlib

    prompt = anchor.attrs.get(n.GEMINI_PROMPT)
    digest = hashlib.sha256(prompt.encode("utf-8", "surrogatepass")).hexdigest() if prompt else None
    near = [h for h in hooks if h.event == n.HOOK_TURN_EVENT and h.attrs.get(n.HOOK_RUNTIME) == RUNTIME
            and h.attrs.get(n.GEN_AI_CONVERSATION_ID) == anchor.attrs.get(n.OPENINFERENCE_SESSION_ID)
            and abs(h.ts_ns - anchor.ts_ns) <= HOOK_MATCH_NS
            and (digest is None or h.attrs.get(n.HOOK_PROMPT_SHA256) in (None, digest))]  # fmt: skip
    near.sort(key=lambda h: (abs(h.ts_ns - anchor.ts_ns), h.key()))
    return near[0] if near else None


def _files(turn: Turn, anchor: Log, hooks: Sequence[Log]) -> None:
    req = turn.request
    text = ins.unescape(req.text) if req is not None and req.text is not None else None
    hook = _hook_turn(anchor, hooks)
    if hook is None:
        files = ins.from_request(RUNTIME, req, turn.attempt_id)
        turn.coverage = "partial" if files else "not_recorded"
        turn.coverage_reason = ("instruction files present at dispatch: not recorded (no otel-inputs hook record for "
                                "this turn; otel-inputs setup gemini installs it); the files below are those "
                                f"{LABEL} put in its request") if files else (
            "instruction files present at dispatch: not recorded (no otel-inputs hook record for this turn; "
            "otel-inputs setup gemini installs it)")
    else:
        capture = hook.attrs.get(n.HOOK_CAPTURE_ID)
        files = ins.from_hook_records([h for h in hooks if h.event == n.INSTRUCTION_FILE_EVENT
                                       and h.attrs.get(n.HOOK_CAPTURE_ID) == capture])  # fmt: skip
        known = {f.path for f in files}
        files += [f for f in ins.from_request(RUNTIME, req, turn.attempt_id) if f.path not in known]
        gaps = hook.attrs.get(n.HOOK_GAP)
        turn.coverage = "partial" if gaps else "complete"
        turn.coverage_reason = gaps
        turn.hook_process_key = hook.attrs.get(n.HOOK_PROCESS_KEY)
    reports = {f.path: f"{LABEL} put it in the request (--- Context from: {f.path} ---)" for f in files
               if text is not None and ins.gemini_marker(f.path) in text}  # fmt: skip
    ins.loaded_by_report(files, reports, req is not None and req.whole, LABEL,
                         f"present at dispatch; not in {LABEL}'s recorded request (no --- Context from: block)")
    ins.settle_delivery(RUNTIME, files, req, LABEL)
    turn.files = files
