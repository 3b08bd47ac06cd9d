"""Pure derivation of typed attempt and input rows from one neutral span (docs/wire.md, docs/encodings.md).

What each encoding records is read in ``exporter/_encodings`` (one module per source); this module
turns the merged reading into rows.

No I/O here: the in-process exporter and the OTLP sink both call :func:`derive`, so the same span
gives the same rows whichever way it arrived.  Absent attributes become ``None`` (NULL), never 0
or ''; malformed input events stay visible as unavailable rows with a safe ``row_problem``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from otel_inputs import names as n
from otel_inputs.types import ArtifactStatus, CaptureStatus, Coverage

from otel_inputs.exporter._encodings import CONTENT_EVENTS, openinference, read as read_encodings, source_format, wire
from otel_inputs.exporter._encodings._base import INT32_MAX as _INT32_MAX, INT64_MAX as _INT64_MAX
from otel_inputs.exporter._encodings._base import Messages, integer as _int, messages_of, string as _str
from otel_inputs.exporter._spans import SpanRecord
from otel_inputs.exporter._tables import (
    AGENT_ATTEMPT_INPUTS, AGENT_ATTEMPT_STEPS, AGENT_ATTEMPTS, AGENT_EXCHANGE_PARTS, Fill,
)  # fmt: skip

# Re-exported for the writer's modules (one home: exporter/_encodings).
__all__ = ["CONTENT_EVENTS", "Messages", "SpanRows", "attempt_kind", "attempt_row", "derive", "finish_coverage", "input_rows",
           "messages_of", "part_rows", "span_messages"]

_MODEL_CALL_OPERATIONS = frozenset(n.OPERATIONS_MODEL_CALL)
_COVERAGES = frozenset(c.value for c in Coverage)

SOURCE_OTEL_INPUTS = wire.NAME

STEP_MODEL_CALL = "model_call"
STEP_TOOL_CALL = "tool_call"
STEP_AGENT = "agent"
STEP_OTHER = "other"
# A span that contains a run (an OpenInference CHAIN): the attempt at the root, never listed as a step.
STEP_CONTAINER = "container"

MESSAGES_ATTEMPT_SPAN = "attempt_span"
MESSAGES_LOG_EVENT = "log_event"
MESSAGES_MODEL_STEP = "model_step"

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


def span_messages(span: SpanRecord) -> Messages:
    """The messages the span itself records, merged across the encodings (docs/encodings.md)."""
    source = source_format(span.attributes, span.name)
    return read_encodings(span, source or "").messages


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


def attempt_kind(attrs: Mapping[str, Any], span_name: str = "") -> str | None:
    """Which encoding makes this span an attempt (or a step, once nested under one), or ``None`` for
    an ordinary span (exporter/_encodings)."""
    return source_format(attrs, span_name)


def step_kind(operation: str | None, kind: str) -> str:
    """model_call | tool_call | agent | other, from the operation the span says it performed."""
    if kind == SOURCE_OTEL_INPUTS:
        return STEP_AGENT
    if operation in _MODEL_CALL_OPERATIONS:
        return STEP_MODEL_CALL
    if operation == n.OPERATION_EXECUTE_TOOL:
        return STEP_TOOL_CALL
    if operation == n.OPERATION_INVOKE_AGENT:
        return STEP_AGENT
    if operation == openinference.OPERATION_CONTAINER:
        return STEP_CONTAINER
    return STEP_OTHER


def derive(span: SpanRecord) -> SpanRows:
    """The agent_attempts row and agent_attempt_inputs rows one span contributes (maybe none)."""
    kind = attempt_kind(span.attributes, span.name)
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
    got = read_encodings(span, kind)
    r, messages = got.reading, got.messages
    row: dict[str, Any] = dict.fromkeys(ATTEMPT_COLUMNS)
    row.update(
        session_id=r.session_id,
        agent_name=r.agent_name,
        provider_name=r.provider_name,
        request_model=r.request_model,
        system_prompt=messages.system,
        user_prompt=messages.user,
        input_messages_json=messages.json,
        messages_note=messages.note,
        parent_span_id=span.parent_span_id or None,
        span_name=span.name or None,
        operation_name=r.operation_name,
        step_kind=step_kind(r.operation, kind),
        response_model=r.response_model,
        input_tokens=r.input_tokens,
        output_tokens=r.output_tokens,
        tool_name=r.tool_name,
        tool_call_id=r.tool_call_id,
        tool_arguments=r.tool_arguments,
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
    row.update(wire.packet_fields(span))
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
