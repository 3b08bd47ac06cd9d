"""An attempt's exact messages from GenAI content log records (docs/encodings.md, contract C2).

Log records travel apart from their span and may land before or after it.  So the writer settles
them from both sides, in the batch's transaction: when attempts land (or their first model step is
found) it reads the log records already in ``otel_logs``; when log records land it finds the
attempts they belong to.  Either way the result goes into the attempt's ``log_*`` columns, which
the ``agent_attempt_messages`` view reads; the texts are taken by the same derivation as a span's
own messages (``_rows``), so span and log are compared like for like.

A record belongs to a span by TraceId and SpanId, and counts when it was emitted while that span's
attempt was open (its Timestamp within the attempt's start and end), as instrumentations emit
them; that bound lets the Timestamp zone maps of otel_logs prune every lookup.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import duckdb
import pyarrow as pa


from otel_inputs.exporter._arrow import ATTEMPTS, LOGS
from otel_inputs.exporter._encodings import LOG_EVENTS, LogRecord, Messages, log_messages
from otel_inputs.exporter._tables import AGENT_ATTEMPTS, Fill

_CHUNK = 1000
CONTENT_LOG_EVENTS = LOG_EVENTS  # the log records some encoding reads (exporter/_encodings)
_EVENT_NAME_ATTR = "event.name"  # where records from before the EventName field carry it
_EVENT_NAME_SQL = f"""coalesce(nullif("EventName", ''), "LogAttributes"['{_EVENT_NAME_ATTR}'])"""
_ATTEMPT_COLUMNS = ("attempt_id", "trace_id", "span_id", "step_messages_span_id", "log_span_id")


def _marks(items: Sequence[Any]) -> str:
    return ", ".join("?" * len(items))


def settle(con: duckdb.DuckDBPyConnection, attempts: Iterable[Mapping[str, Any]]) -> None:
    """Fill the ``log_*`` columns of these attempts (each with attempt_id, trace_id, span_id,
    step_messages_span_id, log_span_id and epoch-ns started_at / ended_at) from otel_logs."""
    todo = [a for a in attempts if a.get("trace_id") and a.get("started_at") is not None
            and a.get("ended_at") is not None]  # fmt: skip
    for start in range(0, len(todo), _CHUNK):
        chunk = todo[start:start + _CHUNK]
        traces = sorted({a["trace_id"] for a in chunk})
        events = list(CONTENT_LOG_EVENTS)
        rows = con.execute(
            'SELECT "TraceId", "SpanId", epoch_ns("Timestamp"), ' + _EVENT_NAME_SQL + ', "Body", "LogAttributes" '
            f'FROM {LOGS} WHERE "Timestamp" BETWEEN make_timestamp_ns(?) AND make_timestamp_ns(?) '
            f'AND "TraceId" IN ({_marks(traces)}) AND {_EVENT_NAME_SQL} IN ({_marks(events)}) '
            'ORDER BY "Timestamp"',
            [min(a["started_at"] for a in chunk), max(a["ended_at"] for a in chunk), *traces, *events]).fetchall()
        by_span: dict[tuple[str, str], list[LogRecord]] = {}
        for trace_id, span_id, ts, event, body, attrs in rows:
            by_span.setdefault((trace_id, span_id), []).append(LogRecord(ts, event, body, dict(attrs or {})))
        updates = [u for a in chunk if (u := _settle_one(a, by_span)) is not None]
        update_attempts(con, updates, _LOG_COLUMNS)


_UPDATE_VIEW = "_otel_inputs_attempt_updates"
_LOG_COLUMNS = AGENT_ATTEMPTS.filled_by(Fill.LOG)


def update_attempts(con: duckdb.DuckDBPyConnection, rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> None:
    """Set ``columns`` of the attempts in ``rows`` (each with attempt_id) in one statement."""
    if not rows:
        return
    table = pa.table({c: pa.array([r[c] for r in rows], pa.string()) for c in ("attempt_id", *columns)})
    con.register(_UPDATE_VIEW, table)
    try:
        sets = ", ".join(f"{c} = u.{c}" for c in columns)
        con.execute(f"UPDATE {ATTEMPTS} SET {sets} FROM {_UPDATE_VIEW} u WHERE {ATTEMPTS}.attempt_id = u.attempt_id")
    finally:
        con.unregister(_UPDATE_VIEW)


def _settle_one(a: Mapping[str, Any], by_span: Mapping[tuple[str, str], list[LogRecord]]) -> dict[str, Any] | None:
    """The attempt's new log_* values, or None when nothing was and nothing is recorded."""
    found: tuple[str, Messages] | None = None
    for span_id in (a["span_id"], a.get("step_messages_span_id")):
        if not span_id:
            continue
        records = [r for r in by_span.get((a["trace_id"], span_id), ()) if a["started_at"] <= r.time_ns <= a["ended_at"]]
        got = log_messages(records) if records else None
        if got is not None:
            found = (span_id, got)
            break
    if found is None and a.get("log_span_id") is None:
        return None  # nothing recorded before, nothing now
    span_id, got = found if found is not None else (None, Messages())
    return {"attempt_id": a["attempt_id"], "log_system_prompt": got.system, "log_user_prompt": got.user,
            "log_input_messages_json": got.json, "log_span_id": span_id}  # fmt: skip


def settle_for_logs(con: duckdb.DuckDBPyConnection, logs: pa.Table) -> None:
    """The attempts that log records just landed for (their span is the attempt's or its first
    model step's), settled again with every record of theirs."""
    names = logs.column("EventName").to_pylist()
    attrs = logs.column("LogAttributes").to_pylist()
    spans: dict[str, set[str]] = {}
    for trace_id, span_id, name, kv in zip(logs.column("TraceId").to_pylist(), logs.column("SpanId").to_pylist(),
                                           names, attrs):  # fmt: skip
        event = name or dict(kv or ()).get(_EVENT_NAME_ATTR)
        if trace_id and span_id and event in CONTENT_LOG_EVENTS:
            spans.setdefault(trace_id, set()).add(span_id)
    if not spans:
        return
    traces = sorted(spans)
    attempts: list[dict[str, Any]] = []
    for start in range(0, len(traces), _CHUNK):
        chunk = traces[start:start + _CHUNK]
        cur = con.execute(
            f"SELECT {', '.join(_ATTEMPT_COLUMNS)}, epoch_ns(started_at), epoch_ns(ended_at) FROM {ATTEMPTS} "
            f"WHERE trace_id IN ({_marks(chunk)})", list(chunk))
        for values in cur.fetchall():
            a = dict(zip((*_ATTEMPT_COLUMNS, "started_at", "ended_at"), values))
            if a["span_id"] in spans[a["trace_id"]] or a["step_messages_span_id"] in spans[a["trace_id"]]:
                attempts.append(a)
    settle(con, attempts)


__all__ = ["CONTENT_LOG_EVENTS", "settle", "settle_for_logs", "update_attempts"]
