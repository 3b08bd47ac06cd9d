"""What the coding-agent encoders read and produce (docs/coding-agents.md, "How a turn is derived").

The encoders are pure: they take the landed records of one turn (:class:`Span`, :class:`Log`, as
``otel_traces`` / ``otel_logs`` hold them: every attribute a string) and return a :class:`Turn`,
which the writer turns into ``agent_attempts``, ``agent_attempt_steps`` and
``agent_attempt_inputs`` rows.  Nothing here reads a file or the network.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from otel_inputs import names as n

# Where a log record's own name is (docs/coding-agents.md): the EventName field, unless it is empty
# or a Rust source location ("event otel/src/...:1234", Codex), then the event.name attribute.
EVENT_NAME_ATTR = n.EVENT_NAME_ATTR
SOURCE_LOCATION_PREFIX = n.SOURCE_LOCATION_PREFIX


def event_name(event_field: str | None, attrs: Mapping[str, str]) -> str | None:
    name = event_field or ""
    if not name or name.startswith(SOURCE_LOCATION_PREFIX):
        return attrs.get(EVENT_NAME_ATTR) or None
    return name


@dataclass(frozen=True, slots=True)
class Span:
    trace_id: str
    span_id: str
    parent: str
    name: str
    service: str
    start_ns: int
    end_ns: int
    status: str  # Unset | Ok | Error, as landed
    attrs: Mapping[str, str]


@dataclass(frozen=True, slots=True)
class Log:
    trace_id: str
    span_id: str
    ts_ns: int
    event: str | None  # the record's own name (see event_name)
    service: str
    attrs: Mapping[str, str]
    body: str | None = None

    def key(self) -> tuple[Any, ...]:
        """A stable order for records (arrival order is not stable): time, name, the runtime's own
        event sequence, span."""
        return (self.ts_ns, self.event or "", as_int(self.attrs.get(n.EVENT_SEQUENCE_ATTR)) or 0, self.trace_id, self.span_id)


@dataclass
class Request:
    """One model request as the runtime recorded it, for the messages and the delivered check."""

    text: str | None = None  # the request as text (instruction files are looked up in it)
    whole: bool = False  # False: the record is cut (text holds the part recorded)
    length: int | None = None  # the request's full length in bytes, when the runtime said it
    note: str | None = None  # how it was recorded, or why it was not (names the switch)
    system: str | None = None
    messages_json: str | None = None
    deliveries: list[Log] | None = None  # Claude Code file: bodies read agent-side (otel_inputs.request_body)


@dataclass
class Step:
    span: Span | None  # None for a model call known only from log records (no span)
    kind: str  # model_call | tool_call | other
    span_id: str
    trace_id: str | None
    parent_span_id: str | None
    start_ns: int | None
    end_ns: int | None
    operation_name: str | None = None
    span_name: str | None = None
    provider_name: str | None = None
    request_model: str | None = None
    response_model: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    tool_name: str | None = None
    tool_call_id: str | None = None
    tool_arguments: str | None = None
    status: str | None = None
    auxiliary: str | None = None  # why this call is not the turn's own (session title, routing), else None
    request_record: str | None = None  # how this call's request was recorded (or that it was not)
    request: Request | None = None


@dataclass
class InstructionFile:
    """One instruction file of a turn: what the hook saw and what the runtime says."""

    path: str
    input_id: str
    capture_attempt_id: str | None = None
    size_bytes: int | None = None
    sha256: str | None = None
    snapshot_ref: str | None = None
    media_type: str | None = None
    preview_kind: str | None = None
    capture_status: str | None = None
    artifact_status: str | None = None
    detail: str | None = None
    captured_ns: int | None = None
    loaded: str | None = None
    loaded_detail: str | None = None
    delivered: str | None = None
    delivered_detail: str | None = None
    delivery_mode: str | None = None


@dataclass
class Turn:
    """One user turn of a coding agent: one attempt."""

    runtime: str  # claude-code | codex | gemini-cli
    source_format: str  # claude_code | codex | gemini_cli
    attempt_id: str
    session_id: str | None
    turn_key: str | None
    trace_id: str | None
    span_id: str | None
    start_ns: int
    end_ns: int | None
    service_name: str | None = None
    prompt: str | None = None
    agent_name: str | None = None
    provider_name: str | None = None
    request_model: str | None = None
    status: str | None = None
    status_message: str | None = None
    steps: list[Step] = field(default_factory=list)
    request: Request | None = None
    files: list[InstructionFile] = field(default_factory=list)
    coverage: str = "not_recorded"
    coverage_reason: str | None = None
    messages_note: str | None = None
    hook_process_key: str | None = None


def first(values: Iterable[str | None]) -> str | None:
    return next((v for v in values if v), None)


def as_int(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        got = int(value)
    except ValueError:
        try:
            got = int(float(value))
        except ValueError:
            return None
    return got if got >= 0 else None


def status_of(raw: str | None) -> str | None:
    return raw.lower() if raw else None


def messages_note(prompt: str | None, prompt_switch: str, request: Request | None, label: str = "") -> str:
    """What a reader should know about a turn's messages: the prompt when not recorded (naming the
    switch), and how the request was recorded (or why not)."""
    notes = [] if prompt is not None else [f"prompt text: not recorded ({prompt_switch})"]
    notes.append(f"request messages: {request.note if request is not None and request.note else 'not recorded'}")
    return "; ".join(notes)


HOOK_EVENTS = frozenset({n.HOOK_TURN_EVENT, n.INSTRUCTION_FILE_EVENT, n.REQUEST_BODY_EVENT})
