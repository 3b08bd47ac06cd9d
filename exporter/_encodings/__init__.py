"""Which encoding is read, and how: one module per source, one registry (docs/encodings.md).

``ENCODINGS`` lists them in the order they are asked.  A span's ``source_format`` is the name of the
first that recognises it; each field of the span's reading is the first value an encoding recorded
(in that order, an empty string counting as not recorded), except the operation, which is the
recognising encoding's own.  Adding an encoding is one module here, its SQL functions in
``clickhouse/projection_functions.sql`` (one section per encoding, same names) and its corpus case
in the tests.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from otel_inputs.exporter._encodings import (
    claude_code, codex, gemini_cli, genai, genai_logs, openinference, openllmetry, pydantic_ai, vercel_ai, wire,
)  # fmt: skip
from otel_inputs.exporter._encodings._base import READING_FIELDS, Encoding, Messages, Reading
from otel_inputs.exporter._spans import SpanRecord

ENCODINGS: tuple[Encoding, ...] = (
    wire.ENCODING,
    genai.ENCODING,
    openllmetry.ENCODING,
    pydantic_ai.ENCODING,
    openinference.ENCODING,
    vercel_ai.ENCODING,
)
# Coding agents (docs/coding-agents.md) are read per user turn, not per span: their modules derive a
# turn from all its records (exporter/_encodings/coding_agents.py settles them after each batch).  A
# span one of them claims is no per-span encoding's, even if it looks like one (Gemini CLI's llm_call
# spans carry gen_ai.operation.name).
TURN_ENCODINGS = (claude_code, codex, gemini_cli)
# Span events some encoding reads (besides the wire's own input and exchange-part events).
CONTENT_EVENTS = genai.SPAN_EVENTS
# Log records read for a span's messages (exporter/_messages.py), and how: the first reader that finds any.
LOG_READERS = (genai_logs.log_messages,)
LOG_EVENTS = genai_logs.LOG_EVENTS
LogRecord = genai_logs.LogRecord


def log_messages(records: Sequence[LogRecord]) -> Messages | None:
    """A span's messages from its log records (time-ordered), by the first reader that finds any."""
    return next((m for reader in LOG_READERS if (m := reader(records)) is not None), None)


@dataclass(frozen=True, slots=True)
class SpanReading:
    """A span as the encodings read it: which one recognised it, and the merged fields."""

    source_format: str
    reading: Reading
    messages: Messages


def source_format(attrs: Mapping[str, Any], span_name: str = "") -> str | None:
    """The first encoding that recognises the span, or ``None`` for an ordinary span (one a coding
    agent's turn encoding claims is read with its turn, not here)."""
    if any(m.claims_span(attrs) for m in TURN_ENCODINGS):
        return None
    return next((e.name for e in ENCODINGS if e.recognises(attrs, span_name)), None)


def _present(value: Any) -> bool:
    return value is not None and value != ""


def read(span: SpanRecord, source: str) -> SpanReading:
    """Every encoding's reading of ``span``, merged field by field in registry order."""
    readings = [(e.name, e.read(span)) for e in ENCODINGS]
    merged: dict[str, Any] = {f: next((v for _, r in readings if _present(v := getattr(r, f))), None)
                              for f in READING_FIELDS}  # fmt: skip
    merged["operation"] = next((r.operation for name, r in readings if name == source), None)
    messages = next((r.messages for _, r in readings if r.messages is not None and not r.messages.empty), None)
    return SpanReading(source, Reading(**merged), messages or Messages())


__all__ = ["CONTENT_EVENTS", "ENCODINGS", "TURN_ENCODINGS", "LOG_EVENTS", "LOG_READERS", "LogRecord", "log_messages", "Encoding", "Messages", "Reading", "SpanReading", "read", "source_format"]
