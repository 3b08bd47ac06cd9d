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

from otel_inputs.exporter._spans import SpanRecord

OPENINFERENCE_INPUT_MESSAGES = n.OPENINFERENCE_INPUT_MESSAGES
OPENINFERENCE_MESSAGE_ROLE = n.OPENINFERENCE_MESSAGE_ROLE
OPENINFERENCE_MESSAGE_CONTENT = n.OPENINFERENCE_MESSAGE_CONTENT

_OI_ATTEMPT_KINDS = frozenset(n.OPENINFERENCE_LLM_KINDS)

_INT32_MAX = 2**31 - 1
_INT64_MAX = 2**63 - 1
_COVERAGES = frozenset(c.value for c in Coverage)
_ROLE_SYSTEM = "system"
_ROLE_USER = "user"

SOURCE_OTEL_INPUTS = "otel_inputs"
SOURCE_GEN_AI = "gen_ai"
SOURCE_OPENINFERENCE = "openinference"

_OI_MSG = re.compile(
    re.escape(OPENINFERENCE_INPUT_MESSAGES) + r"\.(\d+)\.(" + re.escape(OPENINFERENCE_MESSAGE_ROLE)
    + "|" + re.escape(OPENINFERENCE_MESSAGE_CONTENT) + r")$"
)

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

ATTEMPT_COLUMNS = (
    "attempt_id", "run_id", "session_id", "phase", "agent_name", "provider_name", "request_model",
    "task_prompt", "task_source_kind", "task_source_path", "task_size_bytes", "task_sha256",
    "send_kind", "turn_index", "previous_turn_attempt_id", "retry_of_attempt_id",
    "system_prompt", "user_prompt", "input_packet_version", "input_coverage", "coverage_reason",
    "declared_input_count", "captured_input_count", "omitted_input_count", "item_count",
    "capture_decision", "capture_gap_reason", "started_at", "ended_at", "status",
    "status_message", "trace_id", "span_id", "service_name", "source_format",
    "dropped_events_count", "dropped_attributes_count",
)  # fmt: skip

INPUT_COLUMNS = (
    "input_id", "attempt_id", "seq", "label", "source_kind", "delivery_mode", "source_path",
    "snapshot_ref", "media_type", "preview_kind", "size_bytes", "sha256", "capture_status",
    "artifact_status", "detail", "captured_at", "row_problem", "attempt_started_at",
)  # fmt: skip

PART_COLUMNS = (
    "attempt_id", "part_name", "capture", "reason", "dispatch", "ref", "sha256", "size_bytes",
    "persistence", "detail", "recorded_at", "attempt_started_at", "row_problem",
)  # fmt: skip

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


def _messages_text(raw: Any, role: str | None) -> str | None:
    """Text of the messages with ``role`` (or of a bare parts list); the exact JSON if unparseable."""
    if raw is None:
        return None
    if not isinstance(raw, str):
        return json.dumps(raw, ensure_ascii=False) if isinstance(raw, (list, dict)) else str(raw)
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


def _openinference_messages(attrs: Mapping[str, Any]) -> dict[str, list[str]]:
    by_index: dict[int, dict[str, Any]] = {}
    for key, value in attrs.items():
        m = _OI_MSG.match(key)
        if m:
            by_index.setdefault(int(m.group(1)), {})[m.group(2)] = value
    out: dict[str, list[str]] = {}
    for _, msg in sorted(by_index.items()):
        role = msg.get(OPENINFERENCE_MESSAGE_ROLE)
        content = msg.get(OPENINFERENCE_MESSAGE_CONTENT)
        if isinstance(role, str) and isinstance(content, str):
            out.setdefault(role, []).append(content)
    return out


def _prompts(attrs: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """(system_prompt, user_prompt) from whichever message convention the span carries."""
    system = _messages_text(attrs.get(n.GEN_AI_SYSTEM_INSTRUCTIONS), None)
    user: str | None = None
    raw_input = attrs.get(n.GEN_AI_INPUT_MESSAGES)
    if raw_input is not None:
        user = _messages_text(raw_input, _ROLE_USER)
        if system is None and isinstance(raw_input, str):
            try:
                has_system = any(
                    isinstance(m, Mapping) and m.get("role") == _ROLE_SYSTEM for m in json.loads(raw_input)
                )
            except (ValueError, TypeError):
                has_system = False
            if has_system:
                system = _messages_text(raw_input, _ROLE_SYSTEM)
    if user is None and n.GEN_AI_PROMPT in attrs:
        user = _messages_text(attrs.get(n.GEN_AI_PROMPT), _ROLE_USER)
    if user is None or system is None:
        oi = _openinference_messages(attrs)
        if user is None and oi.get(_ROLE_USER):
            user = "\n\n".join(oi[_ROLE_USER])
        if system is None and oi.get(_ROLE_SYSTEM):
            system = "\n\n".join(oi[_ROLE_SYSTEM])
    if user is None:
        value = attrs.get(n.OPENINFERENCE_INPUT_VALUE)
        if isinstance(value, str):
            user = value
    return system, user


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
    """Which source format makes this span an attempt, or ``None`` for an ordinary span."""
    if n.PACKET_VERSION_ATTR in attrs:
        return SOURCE_OTEL_INPUTS
    if n.GEN_AI_OPERATION_NAME in attrs:
        return SOURCE_GEN_AI
    if attrs.get(n.OPENINFERENCE_SPAN_KIND) in _OI_ATTEMPT_KINDS:
        return SOURCE_OPENINFERENCE
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
    system_prompt, user_prompt = _prompts(attrs)
    row: dict[str, Any] = dict.fromkeys(ATTEMPT_COLUMNS)
    row.update(
        session_id=_str(attrs, n.GEN_AI_CONVERSATION_ID) or _str(attrs, n.OPENINFERENCE_SESSION_ID),
        agent_name=_str(attrs, n.GEN_AI_AGENT_NAME),
        provider_name=_str(attrs, n.GEN_AI_PROVIDER_NAME) or _str(attrs, n.GEN_AI_SYSTEM),
        request_model=_str(attrs, n.GEN_AI_REQUEST_MODEL) or _str(attrs, n.OPENINFERENCE_MODEL_NAME),
        system_prompt=system_prompt,
        user_prompt=user_prompt,
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
