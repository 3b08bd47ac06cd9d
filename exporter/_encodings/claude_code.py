"""Claude Code's own telemetry (``CLAUDE_CODE_ENABLE_TELEMETRY``; spans need
``CLAUDE_CODE_ENHANCED_TELEMETRY_BETA``), read as one attempt per user turn (docs/coding-agents.md).

- The turn is the ``claude_code.interaction`` span (one trace per turn); its prompt is the span's
  ``user_prompt``, else the ``user_prompt`` event's ``prompt`` (both need ``OTEL_LOG_USER_PROMPTS``).
- Its steps are the ``claude_code.llm_request`` (model call) and ``claude_code.tool`` (tool call)
  spans of the trace.  A model call's request is the ``api_request_body`` event inside its time
  (``OTEL_LOG_RAW_API_BODIES``: ``body`` cut at 60 KB, or ``body_ref`` to a file on the agent's
  machine, which the receiver never opens); the ``api_request`` event's ``query_source`` marks a
  call that is not the turn's own (the session title, compaction) as auxiliary.  Those events
  carry the interaction span's ids, or none at all (the session-title call), so they are paired
  with a model-call span by time: the span whose start and end hold the event, preferring one of
  the event's own trace.
- Log records have an empty EventName; the name is the ``event.name`` attribute.
- Which instruction files were loaded only Claude Code's ``InstructionsLoaded`` hook says (the
  otel-inputs hook forwards it, linked to the turn by the agent process); their text is only in
  the request body (``Contents of PATH (…):``).
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

RUNTIME = n.RUNTIME_CLAUDE_CODE
SOURCE_FORMAT = "claude_code"
LABEL = "Claude Code"
TURN_SPAN = n.CLAUDE_SPAN_INTERACTION
MODEL_SPAN = n.CLAUDE_SPAN_LLM_REQUEST
TOOL_SPAN = n.CLAUDE_SPAN_TOOL
SERVICE = "claude-code"
EV_USER_PROMPT = n.CLAUDE_EVENT_USER_PROMPT
EV_BODY = n.CLAUDE_EVENT_API_REQUEST_BODY
EV_API = n.CLAUDE_EVENT_API_REQUEST
EV_TOOL_RESULT = n.CLAUDE_EVENT_TOOL_RESULT
MAIN_QUERY_SOURCES = ("sdk", "repl_main_thread")  # the turn's own calls (-p / interactive); sub-agents: agent*
REDACTED = "<REDACTED>"
PAIR_SLACK_NS = 5_000_000
SWITCH_PROMPTS = "OTEL_LOG_USER_PROMPTS=1"
SWITCH_BODIES = "OTEL_LOG_RAW_API_BODIES=1 (or file:DIR)"
SWITCH_TOOLS = "OTEL_LOG_TOOL_DETAILS=1"


def is_turn(span: Span) -> bool:
    return span.name == TURN_SPAN


def claims_span(attrs: Mapping[str, Any]) -> bool:
    """No per-span encoding recognises Claude Code's spans (they send no gen_ai.operation.name)."""
    return False


def is_record(service: str, span_name: str | None = None) -> bool:
    """Whether a landed span or log record is Claude Code's (its turns are re-derived when one lands)."""
    return service == SERVICE or (span_name or "").startswith(n.CLAUDE_SPAN_INTERACTION.split(".")[0] + ".")


def _prompt(turn: Span, logs: Sequence[Log]) -> str | None:
    own = turn.attrs.get(n.CLAUDE_USER_PROMPT)
    if own and own != REDACTED:
        return own
    return first(rec.attrs.get(n.CLAUDE_PROMPT) for rec in logs if rec.event == EV_USER_PROMPT and rec.span_id == turn.span_id
                 and rec.attrs.get(n.CLAUDE_PROMPT) != REDACTED)  # fmt: skip


def prompt_id(turn: Span, logs: Sequence[Log]) -> str | None:
    """The turn's prompt.id (every content event of the turn carries it), the key the hook's record has:
    the turn span's own user_prompt event's, else its earliest event's."""
    mine = [rec for rec in logs if rec.trace_id == turn.trace_id and rec.attrs.get(n.CLAUDE_PROMPT_ID)]
    mine.sort(key=lambda rec: (rec.span_id != turn.span_id or rec.event != EV_USER_PROMPT, rec.key()))
    return mine[0].attrs[n.CLAUDE_PROMPT_ID] if mine else None


def _pair(calls: list[Step], logs: Sequence[Log], event: str, turn_trace: str) -> dict[int, Log]:
    """Each call's event of this name: one inside the call's time (start .. end + slack), of the turn's
    own trace first (an event without trace context, such as the session-title call's, otherwise),
    then the nearest to the call's start."""
    out: dict[int, Log] = {}
    mine = [rec for rec in logs if rec.event == event]
    for i, call in enumerate(calls):
        start, end = call.start_ns, call.end_ns
        if start is None or end is None:
            continue
        fits = [rec for rec in mine if start <= rec.ts_ns <= end + PAIR_SLACK_NS]
        if fits:
            out[i] = min(fits, key=lambda rec: (rec.trace_id != turn_trace, abs(rec.ts_ns - start), rec.key()))
    return out


def _read_agent_side(hooks: Sequence[Log]) -> dict[str, list[Log]]:
    """The otel-inputs hook's request_body records by body path: a file: body read agent-side at the
    turn's end, with each instruction file found in it or not."""
    out: dict[str, list[Log]] = {}
    for h in sorted((h for h in hooks if h.event == n.REQUEST_BODY_EVENT), key=Log.key):
        ref = h.attrs.get(n.REQUEST_BODY_REF)
        if ref:
            out.setdefault(ref, []).append(h)
    return out


def _request(body: Log | None, bodies_on: bool | None, read_bodies: dict[str, list[Log]] | None = None) -> Request:
    if body is None:
        note = (f"not recorded by {LABEL}: set {SWITCH_BODIES}" if not bodies_on
                else f"not recorded: no api_request_body event of {LABEL} fell inside this call")
        return Request(note=note)
    a = body.attrs
    length = as_int(a.get(n.CLAUDE_BODY_LENGTH))
    if a.get(n.CLAUDE_BODY) is not None:
        text = a[n.CLAUDE_BODY]
        cut = a.get(n.CLAUDE_BODY_TRUNCATED) == "true"
        got = len(text.encode("utf-8", "surrogatepass"))
        note = (f"inline in {LABEL}'s api_request_body event, cut at {got} of {length or 0} bytes: partial" if cut
                else f"inline in {LABEL}'s api_request_body event, whole ({got} bytes)")
        req = Request(text=text, whole=not cut, length=length, note=note)
        if not cut:
            _messages(req)
        return req
    if a.get(n.CLAUDE_BODY_REF):
        ref = a[n.CLAUDE_BODY_REF]
        read = (read_bodies or {}).get(ref)
        if read:
            r = read[0].attrs
            return Request(length=length, deliveries=read, note=(
                f"written whole by {LABEL} to {ref}; read agent-side into the store by the otel-inputs hook at the "
                f"turn's end ({r.get(n.PART_SIZE_BYTES)} bytes, sha256 {r.get(n.PART_SHA256)}, "
                f"{r.get(n.PART_CAPTURE)})"))
        return Request(length=length, note=(f"written whole by {LABEL} to {ref} on the agent's machine "
                                            f"({length or 0} bytes); the receiver does not open it"))
    return Request(note=f"the api_request_body event of {LABEL} held neither body nor body_ref")


def _messages(req: Request) -> None:
    """A whole Anthropic Messages request body: the messages are the body as recorded; the system text
    is its ``system`` (a string, or the text of its text blocks)."""
    req.messages_json = req.text
    try:
        doc = json.loads(req.text or "")
    except ValueError:
        return
    system = doc.get("system") if isinstance(doc, dict) else None
    if isinstance(system, str):
        req.system = system
    elif isinstance(system, list):
        req.system = "\n\n".join(str(b.get("text", "")) for b in system if isinstance(b, dict) and b.get("type") == "text")


def derive(turn_span: Span, spans: Sequence[Span], logs: Sequence[Log], hooks: Sequence[Log]) -> Turn:
    """One turn from its trace's spans, the Claude Code log records in and around it (its own trace, and
    the session's records without trace context inside its time) and the otel-inputs hook records."""
    session = turn_span.attrs.get(n.OPENINFERENCE_SESSION_ID)
    own_logs = sorted((rec for rec in logs if rec.trace_id == turn_span.trace_id or
                       (not rec.trace_id and rec.attrs.get(n.OPENINFERENCE_SESSION_ID) == session
                        and turn_span.start_ns <= rec.ts_ns <= turn_span.end_ns + PAIR_SLACK_NS)), key=Log.key)  # fmt: skip
    turn = Turn(RUNTIME, SOURCE_FORMAT, turn_span.span_id, session, prompt_id(turn_span, own_logs), turn_span.trace_id,
                turn_span.span_id, turn_span.start_ns, turn_span.end_ns, service_name=turn_span.service or None,
                prompt=_prompt(turn_span, own_logs), agent_name=SERVICE, status=status_of(turn_span.status))  # fmt: skip
    calls: list[Step] = []
    tools: list[Step] = []
    for s in sorted((s for s in spans if s.trace_id == turn_span.trace_id), key=lambda s: (s.start_ns, s.span_id)):
        if s.name == MODEL_SPAN:
            calls.append(Step(s, "model_call", s.span_id, s.trace_id, s.parent or None, s.start_ns, s.end_ns,
                              span_name=s.name, provider_name=s.attrs.get(n.GEN_AI_SYSTEM),
                              request_model=first([s.attrs.get(n.GEN_AI_REQUEST_MODEL), s.attrs.get(n.CLAUDE_MODEL)]),
                              input_tokens=as_int(s.attrs.get(n.CLAUDE_INPUT_TOKENS)),
                              output_tokens=as_int(s.attrs.get(n.CLAUDE_OUTPUT_TOKENS)), status=status_of(s.status)))
        elif s.name == TOOL_SPAN:
            call_id = first([s.attrs.get(n.GEN_AI_TOOL_CALL_ID), s.attrs.get(n.CLAUDE_TOOL_USE_ID)])
            tools.append(Step(s, "tool_call", s.span_id, s.trace_id, s.parent or None, s.start_ns, s.end_ns,
                              span_name=s.name, tool_name=s.attrs.get(n.CLAUDE_TOOL_NAME), tool_call_id=call_id,
                              tool_arguments=_tool_arguments(s, own_logs, call_id), status=status_of(s.status)))
    bodies = _pair(calls, own_logs, EV_BODY, turn_span.trace_id)
    apis = _pair(calls, own_logs, EV_API, turn_span.trace_id)
    bodies_on = bool(bodies) or any(rec.event == EV_BODY for rec in own_logs)
    read_bodies = _read_agent_side(hooks)
    for i, call in enumerate(calls):
        source = first([apis[i].attrs.get(n.CLAUDE_QUERY_SOURCE) if i in apis else None,
                        bodies[i].attrs.get(n.CLAUDE_QUERY_SOURCE) if i in bodies else None])
        if source and source not in MAIN_QUERY_SOURCES and not source.startswith("agent"):
            call.auxiliary = source
        call.request = _request(bodies.get(i), bodies_on, read_bodies)
        call.request_record = call.request.note
    turn.steps = sorted(calls + tools, key=lambda s: (s.start_ns or 0, s.span_id))
    main = next((c for c in calls if c.auxiliary is None), None)
    turn.request = main.request if main is not None else Request(note="no model call of the turn was recorded")
    if main is not None:
        turn.provider_name, turn.request_model = main.provider_name, main.request_model
    _files(turn, hooks)
    turn.messages_note = messages_note(turn.prompt, SWITCH_PROMPTS, turn.request)
    return turn


def _tool_arguments(span: Span, logs: Sequence[Log], call_id: str | None) -> str | None:
    """The tool_result event's tool_input (OTEL_LOG_TOOL_DETAILS), else the span's file_path as {"file_path": …}."""
    got = first(rec.attrs.get(n.CLAUDE_TOOL_INPUT) for rec in logs if rec.event == EV_TOOL_RESULT and call_id
                and rec.attrs.get(n.CLAUDE_TOOL_USE_ID) == call_id)  # fmt: skip
    if got:
        return got
    path = span.attrs.get(n.CLAUDE_FILE_PATH)
    return json.dumps({n.CLAUDE_FILE_PATH: path}, ensure_ascii=False) if path else None


def _files(turn: Turn, hooks: Sequence[Log]) -> None:
    """The turn's instruction files: the hook's list at the prompt (same prompt id), Claude Code's
    InstructionsLoaded reports of the same agent process up to the turn's end, and the request."""
    turn_records = [h for h in hooks if h.event == n.HOOK_TURN_EVENT and turn.turn_key
                    and h.attrs.get(n.HOOK_TURN_KEY) == turn.turn_key]  # fmt: skip
    if not turn_records:
        files = ins.from_request(RUNTIME, turn.request, turn.attempt_id)
        for f in files:
            f.loaded, f.loaded_detail = ins.LOADED_NOT_RECORDED, (
                f"not recorded: no otel-inputs hook ran for this turn ({LABEL} reports loads only to its "
                "InstructionsLoaded hook; otel-inputs setup claude-code installs it)")
        ins.settle_delivery(RUNTIME, files, turn.request, LABEL)
        turn.files = files
        turn.coverage = "not_recorded"
        turn.coverage_reason = ("instruction files present at dispatch: not recorded (no otel-inputs hook record "
                                "for this turn; otel-inputs setup claude-code installs it)")
        return
    anchor = sorted(turn_records, key=Log.key)[-1]
    process = anchor.attrs.get(n.HOOK_PROCESS_KEY)
    capture = anchor.attrs.get(n.HOOK_CAPTURE_ID)
    listed = [h for h in hooks if h.event == n.INSTRUCTION_FILE_EVENT and h.attrs.get(n.HOOK_CAPTURE_ID) == capture]
    loads = [h for h in hooks if h.event == n.INSTRUCTION_FILE_EVENT and process
             and h.attrs.get(n.HOOK_PROCESS_KEY) == process and h.attrs.get(n.INSTRUCTION_DISCOVERY) == "reported_loaded"
             and h.ts_ns <= (turn.end_ns or anchor.ts_ns)]  # fmt: skip
    files = ins.from_hook_records(listed)
    known = {f.path for f in files}
    files += [f for f in ins.from_hook_records(loads) if f.path not in known]  # loaded mid-turn (a sub-folder's)
    reports: dict[str, str] = {}
    for h in sorted(loads, key=Log.key):
        path = h.attrs.get(n.INPUT_SOURCE_PATH) or ""
        words = f"{LABEL} reported it loaded (InstructionsLoaded: memory_type {h.attrs.get(n.INSTRUCTION_MEMORY_TYPE)}, " \
                f"load_reason {h.attrs.get(n.INSTRUCTION_LOAD_REASON)})"
        reports.setdefault(path, words)
    ins.loaded_by_report(files, reports, True, LABEL, f"present at dispatch; {LABEL} did not report loading it")
    loaded_dirs = {p.rsplit("/", 1)[0] for p in reports if p.endswith("/CLAUDE.md")}
    for f in files:
        if f.loaded == ins.LOADED_NOT_REPORTED and f.path.endswith("/AGENTS.md") and f.path.rsplit("/", 1)[0] in loaded_dirs:
            assert f.loaded_detail is not None  # loaded_by_report set it with the loaded fact
            f.loaded_detail += " (the CLAUDE.md in the same folder was reported loaded)"
    for rec in (turn.request.deliveries if turn.request is not None else None) or []:
        for f in files:  # the body read agent-side says it (the receiver never opens it)
            if rec.attrs.get(n.INPUT_SOURCE_PATH) == f.path and rec.attrs.get(n.INSTRUCTION_DELIVERED):
                f.delivered = rec.attrs[n.INSTRUCTION_DELIVERED]
                f.delivered_detail = rec.attrs.get(n.INSTRUCTION_DELIVERED_DETAIL)
    ins.settle_delivery(RUNTIME, files, turn.request, LABEL)
    turn.files = files
    turn.hook_process_key = process
    gaps = anchor.attrs.get(n.HOOK_GAP)
    turn.coverage = "partial" if gaps else "complete"
    turn.coverage_reason = gaps


def turn_keys_of(spans: Sequence[Span], logs: Sequence[Log]) -> list[str]:
    return [k for s in spans if is_turn(s) for k in [prompt_id(s, logs)] if k]
