"""Pure derivation of typed attempt and input rows from one neutral span (WIRE.md → seed 000).

No I/O here: the in-process exporter and the OTLP sink both call :func:`derive`, so the same span
gives the same rows whichever way it arrived.  Absent attributes become ``None`` (NULL), never 0
or ''; malformed input events stay visible as unavailable rows with a safe ``row_problem``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from otel_inputs import names as n
from otel_inputs.types import ArtifactStatus, CaptureStatus, Coverage

from otel_inputs.exporter._spans import SpanRecord, stringify
from otel_inputs.exporter._tables import (
    AGENT_ATTEMPT_INPUTS, AGENT_ATTEMPT_STEPS, AGENT_ATTEMPTS, AGENT_EXCHANGE_PARTS, Fill,
)  # fmt: skip

OPENINFERENCE_INPUT_MESSAGES = n.OPENINFERENCE_INPUT_MESSAGES
OPENINFERENCE_MESSAGE_ROLE = n.OPENINFERENCE_MESSAGE_ROLE
OPENINFERENCE_MESSAGE_CONTENT = n.OPENINFERENCE_MESSAGE_CONTENT

_OI_ATTEMPT_KINDS = frozenset(n.OPENINFERENCE_LLM_KINDS + n.OPENINFERENCE_STEP_KINDS)
_MODEL_CALL_OPERATIONS = frozenset(n.OPERATIONS_MODEL_CALL)
# OpenLLMetry's llm.request.type → the GenAI operation it corresponds to (for the step kind only:
# operation_name stays what the span sent, i.e. NULL for these spans).
_OPENLLMETRY_OPERATIONS = {"chat": "chat", "completion": "text_completion", "embedding": "embeddings"}
_OPENLLMETRY_MARKERS = tuple(f"{prefix}.0.{field}" for prefix in (n.OPENLLMETRY_PROMPT_PREFIX, n.OPENLLMETRY_COMPLETION_PREFIX)
                             for field in ("role", "content"))  # fmt: skip
CONTENT_EVENTS = frozenset({n.EVENT_INFERENCE_DETAILS, n.EVENT_CONTENT_PROMPT})

_INT32_MAX = 2**31 - 1
_INT64_MAX = 2**63 - 1
_COVERAGES = frozenset(c.value for c in Coverage)
_ROLE_SYSTEM = "system"
_ROLE_USER = "user"

SOURCE_OTEL_INPUTS = "otel_inputs"
CODING_AGENT_GEMINI = "gemini-cli"  # gen_ai.agent.name of Gemini CLI's spans
SOURCE_GEN_AI = "gen_ai"
SOURCE_OPENINFERENCE = "openinference"
SOURCE_OPENLLMETRY = "openllmetry"

STEP_MODEL_CALL = "model_call"
STEP_TOOL_CALL = "tool_call"
STEP_AGENT = "agent"
STEP_OTHER = "other"

MESSAGES_ATTEMPT_SPAN = "attempt_span"
MESSAGES_LOG_EVENT = "log_event"
MESSAGES_MODEL_STEP = "model_step"

_OI_MSG = re.compile(
    re.escape(OPENINFERENCE_INPUT_MESSAGES) + r"\.(\d+)\.(" + re.escape(OPENINFERENCE_MESSAGE_ROLE)
    + "|" + re.escape(OPENINFERENCE_MESSAGE_CONTENT) + r")$"
)
_OPENLLMETRY_MSG = re.compile(re.escape(n.OPENLLMETRY_PROMPT_PREFIX) + r"\.(\d+)\.(role|content)$")

# Input-event string fields: (wire name, row column).
INPUT_STR_FIELDS = (
    (n.INPUT_LABEL, "label"),
    (n.INPUT_SOURCE_KIND, "source_kind"),
    (n.INPUT_DELIVERY_MODE, "delivery_mode"),
    (n.INPUT_SOURCE_PATH, "source_path"),
    (n.INPUT_SNAPSHOT_REF, "snapshot_ref"),
    (n.INPUT_MEDIA_TYPE, "media_type"),
    (n.INPUT_PREVIEW_KIND, "preview_kind"),
    (n.INPUT_SHA256, "sha256"),
    (n.INPUT_CAPTURE_STATUS, "capture_status"),
    (n.INPUT_ARTIFACT_STATUS, "artifact_status"),
    (n.INPUT_DETAIL, "detail"),
)

# Each row's keys, in table order (the spec: exporter/_tables.py).
ATTEMPT_COLUMNS = AGENT_ATTEMPTS.row_columns
# Filled by the writer once the attempt's steps are known (the first model step's messages).
ATTEMPT_STEP_MESSAGE_COLUMNS = AGENT_ATTEMPTS.filled_by(Fill.STEP)
STEP_COLUMNS = AGENT_ATTEMPT_STEPS.row_columns
INPUT_COLUMNS = AGENT_ATTEMPT_INPUTS.row_columns
PART_COLUMNS = AGENT_EXCHANGE_PARTS.row_columns

# Exchange-part string fields: (wire name, row column).
_PART_STR_FIELDS = (
    (n.PART_NAME, "part_name"),
    (n.PART_CAPTURE, "capture"),
    (n.PART_REASON, "reason"),
    (n.PART_DISPATCH, "dispatch"),
    (n.PART_REF, "ref"),
    (n.PART_SHA256, "sha256"),
    (n.PART_PERSISTENCE, "persistence"),
    (n.PART_DETAIL, "detail"),
)


@dataclass(slots=True)
class SpanRows:
    """What one span contributes beyond its ``otel_traces`` row."""

    attempt: dict[str, Any] | None = None
    inputs: list[dict[str, Any]] = field(default_factory=list)
    parts: list[dict[str, Any]] = field(default_factory=list)


# --- small typed readers: a wrong type reads as absent, never as a coerced value ---------------


def _str(attrs: Mapping[str, Any], key: str) -> str | None:
    value = attrs.get(key)
    return value if isinstance(value, str) else None


def _int(value: Any, *, lo: int = 0, hi: int = _INT32_MAX) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if lo <= value <= hi else None


def _attr_int(attrs: Mapping[str, Any], key: str, *, hi: int = _INT32_MAX) -> int | None:
    return _int(attrs.get(key), hi=hi)


# --- GenAI / OpenInference message extraction ----------------------------------------------------


def _part_texts(parts: Any) -> list[str] | None:
    """Text of GenAI message parts; ``None`` when the shape is not recognisable."""
    if isinstance(parts, str):
        return [parts]
    if not isinstance(parts, list):
        return None
    texts: list[str] = []
    for part in parts:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, Mapping):
            content = part.get("content", part.get("text"))
            if part.get("type", "text") == "text" and isinstance(content, str):
                texts.append(content)
        else:
            return None
    return texts


def _text(value: Any) -> str | None:
    """A content attribute as text: strings as sent, structured AnyValues (SDK >= 1.45 sends maps and
    arrays) as the compact JSON the otel_traces map holds for them, so both readings agree."""
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple, Mapping)):
        return stringify(value)
    return None


def _messages_text(raw: Any, role: str | None) -> str | None:
    """Text of the messages with ``role`` (or of a bare parts list); the exact JSON if unparseable."""
    raw = _text(raw)
    if raw is None:
        return None
    try:
        doc = json.loads(raw)
    except ValueError:
        return raw  # plain text (deprecated gen_ai.prompt) or broken JSON: keep it exactly
    if isinstance(doc, Mapping):
        doc = [doc]
    if not isinstance(doc, list):
        return raw
    texts: list[str] = []
    for item in doc:
        if isinstance(item, Mapping) and "role" in item:
            if role is not None and item.get("role") != role:
                continue
            got = _part_texts(item.get("parts", item.get("content")))
        else:
            got = _part_texts([item]) if role is None or role == _ROLE_SYSTEM else []
        if got is None:
            return raw
        texts.extend(got)
    return "\n\n".join(texts) if texts else (None if doc else raw)


def _has_role(raw: str, role: str) -> bool:
    try:
        doc = json.loads(raw)
    except ValueError:
        return False
    return isinstance(doc, list) and any(isinstance(m, Mapping) and m.get("role") == role for m in doc)


def _indexed_messages(attrs: Mapping[str, Any], pattern: re.Pattern[str], role_key: str,
                      content_key: str) -> list[tuple[str, str]]:
    """(role, content) of flattened ``<prefix>.<i>.<role|content>`` attributes, in index order."""
    by_index: dict[int, dict[str, Any]] = {}
    for key, value in attrs.items():
        m = pattern.match(key)
        if m:
            by_index.setdefault(int(m.group(1)), {})[m.group(2)] = value
    out: list[tuple[str, str]] = []
    for _, msg in sorted(by_index.items()):
        role, content = msg.get(role_key), _text(msg.get(content_key))
        if isinstance(role, str) and content is not None:
            out.append((role, content))
    return out


def _genai_json(messages: Sequence[tuple[str, str]]) -> str:
    """Flattened (role, content) messages as GenAI input-message JSON, content kept as sent."""
    return json.dumps([{"role": r, "parts": [{"type": "text", "content": c}]} for r, c in messages],
                      ensure_ascii=False, separators=(",", ":"))  # fmt: skip


@dataclass(slots=True)
class Messages:
    """A span's own record of what it sent: texts by role, the messages as JSON, and a note."""

    system: str | None = None
    user: str | None = None
    json: str | None = None
    note: str | None = None


def messages_of(system_raw: Any, input_raw: Any) -> Messages:
    """Messages from GenAI system-instructions and input-messages values (text or structured)."""
    system = _messages_text(system_raw, None)
    raw_input = _text(input_raw)
    user = _messages_text(raw_input, _ROLE_USER) if raw_input is not None else None
    if system is None and raw_input is not None and _has_role(raw_input, _ROLE_SYSTEM):
        system = _messages_text(raw_input, _ROLE_SYSTEM)
    return Messages(system, user, raw_input)


def _from_flat(messages: Sequence[tuple[str, str]], note: str | None = None) -> Messages:
    def joined(role: str) -> str | None:
        texts = [c for r, c in messages if r == role]
        return "\n\n".join(texts) if texts else None

    return Messages(joined(_ROLE_SYSTEM), joined(_ROLE_USER), _genai_json(messages), note)


def span_messages(span: SpanRecord) -> Messages:
    """The messages the span itself records, from the first encoding it carries (docs/encodings.md)."""
    attrs = span.attributes
    if n.GEN_AI_SYSTEM_INSTRUCTIONS in attrs or n.GEN_AI_INPUT_MESSAGES in attrs:
        return messages_of(attrs.get(n.GEN_AI_SYSTEM_INSTRUCTIONS), attrs.get(n.GEN_AI_INPUT_MESSAGES))
    for event in span.events:
        # Content recorded as span events (older instrumentations, or a log event bridged onto the span).
        if event.name not in CONTENT_EVENTS:
            continue
        ev = event.attributes
        if n.GEN_AI_SYSTEM_INSTRUCTIONS in ev or n.GEN_AI_INPUT_MESSAGES in ev:
            return messages_of(ev.get(n.GEN_AI_SYSTEM_INSTRUCTIONS), ev.get(n.GEN_AI_INPUT_MESSAGES))
        if n.GEN_AI_PROMPT in ev:
            return Messages(None, _messages_text(ev.get(n.GEN_AI_PROMPT), _ROLE_USER), _text(ev.get(n.GEN_AI_PROMPT)))
    if n.GEN_AI_PROMPT in attrs:
        return Messages(None, _messages_text(attrs.get(n.GEN_AI_PROMPT), _ROLE_USER), _text(attrs.get(n.GEN_AI_PROMPT)))
    flat = _indexed_messages(attrs, _OPENLLMETRY_MSG, "role", "content")
    if flat:
        return _from_flat(flat)
    flat = _indexed_messages(attrs, _OI_MSG, OPENINFERENCE_MESSAGE_ROLE, OPENINFERENCE_MESSAGE_CONTENT)
    if flat:
        return _from_flat(flat)
    if n.PYDANTIC_AI_ALL_MESSAGES in attrs:
        got = messages_of(None, attrs.get(n.PYDANTIC_AI_ALL_MESSAGES))
        got.note = "from pydantic_ai.all_messages: the whole agent run, its replies and tool results included"
        return got
    value = attrs.get(n.OPENINFERENCE_INPUT_VALUE)
    if isinstance(value, str):
        return Messages(None, value, None, "from OpenInference input.value (the span's input as one text)")
    return Messages()


# --- input events ---------------------------------------------------------------------------------


def input_rows(span: SpanRecord, attempt_id: str) -> tuple[list[dict[str, Any]], int]:
    """One row per input event, (attempt_id, seq) unique; returns (rows, malformed count)."""
    rows: list[dict[str, Any]] = []
    pending: list[dict[str, Any]] = []  # malformed rows waiting for a synthetic seq
    seen: set[int] = set()
    for event in span.events:
        if event.name != n.INPUT_EVENT:
            continue
        attrs = event.attributes
        problems: list[str] = []
        row: dict[str, Any] = dict.fromkeys(INPUT_COLUMNS)
        row["attempt_id"] = attempt_id
        row["captured_at"] = event.time_ns or None
        row["attempt_started_at"] = span.start_ns or None
        raw_id = attrs.get(n.INPUT_ID)
        if isinstance(raw_id, str) and raw_id:
            row["input_id"] = raw_id
        else:
            problems.append("input id missing" if raw_id is None else "input id is not a non-empty string")
        _copy_event_fields(attrs, INPUT_STR_FIELDS, n.INPUT_SIZE_BYTES, row, problems)
        raw_seq = attrs.get(n.INPUT_SEQ)
        seq = _int(raw_seq)
        if raw_seq is None:
            problems.append("seq missing")
        elif seq is None:
            problems.append("seq is not a non-negative integer")
        elif seq in seen:
            problems.append(f"duplicate seq {seq}")
            seq = None
        if problems:
            # Unreadable as a packet item: keep it visible, but never claim its bytes are available.
            row["capture_status"] = CaptureStatus.UNREADABLE.value
            row["artifact_status"] = ArtifactStatus.NEVER_CAPTURED.value
            row["row_problem"] = "malformed input event: " + "; ".join(problems)
        if seq is None:
            pending.append(row)
        else:
            seen.add(seq)
            row["seq"] = seq
        rows.append(row)
    next_seq = max(seen) + 1 if seen else 0
    for row in pending:
        row["seq"] = next_seq
        next_seq += 1
    malformed = sum(1 for r in rows if r["row_problem"] is not None)
    return rows, malformed


def _copy_event_fields(attrs: Mapping[str, Any], str_fields: Sequence[tuple[str, str]], size_key: str,
                       row: dict[str, Any], problems: list[str]) -> None:
    """Copy an event's string fields and size into ``row``; a wrongly typed value is a named problem."""
    for key, column in str_fields:
        value = attrs.get(key)
        if value is None:
            continue
        if isinstance(value, str):
            row[column] = value
        else:
            problems.append(f"{column} is not a string")
    size = attrs.get(size_key)
    if size is not None:
        row["size_bytes"] = _int(size, hi=_INT64_MAX)
        if row["size_bytes"] is None:
            problems.append("size_bytes is not a non-negative integer")


def part_rows(span: SpanRecord, attempt_id: str) -> list[dict[str, Any]]:
    """One row per exchange-part event, in event order; a malformed one stays visible with a problem.

    Values are kept as recorded: an absent or unrecognised dispatch stays NULL/as is (the viewer
    reads anything but dispatched / not_dispatched as unknown), never "not_dispatched".
    """
    rows: list[dict[str, Any]] = []
    for event in span.events:
        if event.name != n.EXCHANGE_PART_EVENT:
            continue
        attrs = event.attributes
        problems: list[str] = []
        row: dict[str, Any] = dict.fromkeys(PART_COLUMNS)
        row["attempt_id"] = attempt_id
        row["recorded_at"] = event.time_ns or None
        row["attempt_started_at"] = span.start_ns or None
        _copy_event_fields(attrs, _PART_STR_FIELDS, n.PART_SIZE_BYTES, row, problems)
        if row["part_name"] is None:
            problems.append("part name missing")
        if problems:
            row["row_problem"] = "malformed exchange part event: " + "; ".join(problems)
        rows.append(row)
    return rows


# --- the attempt -----------------------------------------------------------------------------------


def attempt_kind(attrs: Mapping[str, Any]) -> str | None:
    """Which source format makes this span an attempt (or a step, once nested under one), or
    ``None`` for an ordinary span."""
    if n.PACKET_VERSION_ATTR in attrs:
        return SOURCE_OTEL_INPUTS
    if attrs.get(n.GEN_AI_AGENT_NAME) == CODING_AGENT_GEMINI:
        return None  # Gemini CLI: its calls are grouped into turns by exporter/_coding_agents (docs/coding-agents.md)
    if n.GEN_AI_OPERATION_NAME in attrs:
        return SOURCE_GEN_AI
    if attrs.get(n.OPENINFERENCE_SPAN_KIND) in _OI_ATTEMPT_KINDS:
        return SOURCE_OPENINFERENCE
    if n.OPENLLMETRY_REQUEST_TYPE in attrs or (
        n.GEN_AI_SYSTEM in attrs and any(k in attrs for k in _OPENLLMETRY_MARKERS)
    ):
        return SOURCE_OPENLLMETRY
    return None


def step_kind(attrs: Mapping[str, Any], kind: str) -> str:
    """model_call | tool_call | agent | other, from the operation the span says it performed."""
    if kind == SOURCE_OTEL_INPUTS:
        return STEP_AGENT
    operation = attrs.get(n.GEN_AI_OPERATION_NAME)
    if kind == SOURCE_OPENINFERENCE:
        oi = attrs.get(n.OPENINFERENCE_SPAN_KIND)
        operation = {"LLM": "chat", "EMBEDDING": "embeddings", "AGENT": n.OPERATION_INVOKE_AGENT,
                     "TOOL": n.OPERATION_EXECUTE_TOOL}.get(oi)  # fmt: skip
    elif kind == SOURCE_OPENLLMETRY:
        operation = _OPENLLMETRY_OPERATIONS.get(attrs.get(n.OPENLLMETRY_REQUEST_TYPE), "chat")
    if operation in _MODEL_CALL_OPERATIONS:
        return STEP_MODEL_CALL
    if operation == n.OPERATION_EXECUTE_TOOL:
        return STEP_TOOL_CALL
    if operation == n.OPERATION_INVOKE_AGENT:
        return STEP_AGENT
    return STEP_OTHER


def _first_int(attrs: Mapping[str, Any], *keys: str) -> int | None:
    for key in keys:
        if key in attrs:
            return _int(attrs[key], hi=_INT64_MAX)
    return None


def derive(span: SpanRecord) -> SpanRows:
    """The agent_attempts row and agent_attempt_inputs rows one span contributes (maybe none)."""
    kind = attempt_kind(span.attributes)
    if kind is None:
        return SpanRows()
    row = attempt_row(span, kind)
    if kind != SOURCE_OTEL_INPUTS:
        return SpanRows(attempt=row, parts=part_rows(span, row["attempt_id"]))
    inputs, malformed = input_rows(span, row["attempt_id"])
    finish_coverage(row, span, len(inputs), malformed)
    return SpanRows(attempt=row, inputs=inputs, parts=part_rows(span, row["attempt_id"]))


def attempt_row(span: SpanRecord, kind: str) -> dict[str, Any]:
    """The attempt row of an attempt span of source format ``kind``, before its coverage is settled.

    Split from :func:`derive` so a caller that builds the input rows another way (the sink's
    column-wise path) still derives the attempt row and coverage by exactly this code."""
    attrs = span.attributes
    messages = span_messages(span)
    row: dict[str, Any] = dict.fromkeys(ATTEMPT_COLUMNS)
    row.update(
        session_id=_str(attrs, n.GEN_AI_CONVERSATION_ID) or _str(attrs, n.OPENINFERENCE_SESSION_ID),
        agent_name=_str(attrs, n.GEN_AI_AGENT_NAME),
        provider_name=(_str(attrs, n.GEN_AI_PROVIDER_NAME) or _str(attrs, n.PROVIDER_NAME) or _str(attrs, n.GEN_AI_SYSTEM)
                       or _str(attrs, n.OPENINFERENCE_LLM_PROVIDER) or _str(attrs, n.OPENINFERENCE_LLM_SYSTEM)),
        request_model=_str(attrs, n.GEN_AI_REQUEST_MODEL) or _str(attrs, n.OPENINFERENCE_MODEL_NAME),
        system_prompt=messages.system,
        user_prompt=messages.user,
        input_messages_json=messages.json,
        messages_note=messages.note,
        parent_span_id=span.parent_span_id or None,
        span_name=span.name or None,
        operation_name=_str(attrs, n.GEN_AI_OPERATION_NAME),
        step_kind=step_kind(attrs, kind),
        response_model=_str(attrs, n.GEN_AI_RESPONSE_MODEL),
        input_tokens=_first_int(attrs, n.GEN_AI_USAGE_INPUT_TOKENS, n.GEN_AI_USAGE_PROMPT_TOKENS,
                                n.OPENINFERENCE_PROMPT_TOKENS),
        output_tokens=_first_int(attrs, n.GEN_AI_USAGE_OUTPUT_TOKENS, n.GEN_AI_USAGE_COMPLETION_TOKENS,
                                 n.OPENINFERENCE_COMPLETION_TOKENS),
        tool_name=_str(attrs, n.GEN_AI_TOOL_NAME) or (
            _str(attrs, n.OPENINFERENCE_TOOL_NAME) if kind == SOURCE_OPENINFERENCE else None),
        tool_call_id=_str(attrs, n.GEN_AI_TOOL_CALL_ID),
        tool_arguments=_text(attrs.get(n.GEN_AI_TOOL_CALL_ARGUMENTS)) if n.GEN_AI_TOOL_CALL_ARGUMENTS in attrs else (
            _text(attrs.get(n.OPENINFERENCE_INPUT_VALUE))
            if attrs.get(n.OPENINFERENCE_SPAN_KIND) == "TOOL" else None),
        started_at=span.start_ns or None,
        ended_at=span.end_ns or None,
        status=span.status_code,
        status_message=span.status_message or None,
        trace_id=span.trace_id,
        span_id=span.span_id,
        service_name=span.service_name or None,
        source_format=kind,
        dropped_events_count=min(span.dropped_events, _INT32_MAX),
        dropped_attributes_count=min(span.dropped_attributes, _INT32_MAX),
    )
    if kind != SOURCE_OTEL_INPUTS:
        # A legacy/foreign attempt: no packet is ever invented for it.
        row["attempt_id"] = span.span_id
        row["input_coverage"] = Coverage.NOT_RECORDED.value
        return row
    row.update(
        attempt_id=_str(attrs, n.ATTEMPT_ID) or span.span_id,  # '' is no id: fall back to the span
        run_id=_str(attrs, n.RUN_ID),
        phase=_str(attrs, n.PHASE),
        task_prompt=_str(attrs, n.TASK_PROMPT),
        task_source_kind=_str(attrs, n.TASK_SOURCE_KIND),
        task_source_path=_str(attrs, n.TASK_SOURCE_PATH),
        task_size_bytes=_attr_int(attrs, n.TASK_SIZE_BYTES, hi=_INT64_MAX),
        task_sha256=_str(attrs, n.TASK_SHA256),
        send_kind=_str(attrs, n.SEND_KIND),
        turn_index=_attr_int(attrs, n.TURN_INDEX),
        previous_turn_attempt_id=_str(attrs, n.PREVIOUS_TURN_ATTEMPT_ID),
        retry_of_attempt_id=_str(attrs, n.RETRY_OF_ATTEMPT_ID),
        input_packet_version=_attr_int(attrs, n.PACKET_VERSION_ATTR),
        declared_input_count=_attr_int(attrs, n.PACKET_DECLARED_COUNT),
        captured_input_count=_attr_int(attrs, n.PACKET_CAPTURED_COUNT),
        omitted_input_count=_attr_int(attrs, n.PACKET_OMITTED_COUNT),
        item_count=_attr_int(attrs, n.PACKET_ITEM_COUNT),
        capture_decision=_str(attrs, n.CAPTURE_DECISION),
        capture_gap_reason=_str(attrs, n.CAPTURE_GAP_REASON),
    )
    return row


def finish_coverage(row: dict[str, Any], span: SpanRecord, input_count: int, malformed: int) -> None:
    """Settle a packet attempt's coverage from its input rows: never ``complete`` with a known gap."""
    attrs = span.attributes
    coverage = _str(attrs, n.PACKET_COVERAGE)
    reasons: list[str] = []
    if coverage not in _COVERAGES:
        reasons.append("packet coverage missing or not a known value")
        coverage = Coverage.PARTIAL.value
    item_count = row["item_count"]
    if item_count is not None and input_count < item_count:
        reasons.append(
            f"only {input_count} of {item_count} input events arrived (span event limit or dropped events)"
        )
    if span.dropped_events > 0:
        reasons.append(f"{span.dropped_events} span events were dropped before export")
    if malformed:
        reasons.append(f"{malformed} input events were malformed")
    if reasons and coverage == Coverage.COMPLETE.value:
        coverage = Coverage.PARTIAL.value
    gap = _str(attrs, n.PACKET_GAP_REASON)
    if gap is not None and coverage != Coverage.COMPLETE.value:
        reasons.insert(0, gap)
    row["input_coverage"] = coverage
    row["coverage_reason"] = "; ".join(reasons) if reasons else None
