"""Coding agents as runtimes: Claude Code, Codex CLI and Gemini CLI turns as attempts (docs/coding-agents.md).

Their spans are not GenAI attempt spans (Claude Code and Codex send no ``gen_ai.operation.name``;
Gemini CLI's ``llm_call`` spans are one root per call), so the generic projection leaves them
alone and this one derives, per user turn, one ``agent_attempts`` row, its steps and its
instruction-file inputs, and keeps ``agent_coding_turns`` (a turn's key, session and trace).

The writer calls :func:`settle` after every batch, inside the batch's transaction.  It finds the
turns the batch's records belong to (by trace; by session and time for records without trace
context; by the runtime's turn key or agent process for the otel-inputs hook records), reads each
such turn's records anew from ``otel_traces`` / ``otel_logs`` and replaces its rows, then renumbers
the lineage of the sessions touched.  The result depends only on which records have landed, never
on their order or batching; every lookup is bounded by time (``Timestamp`` zone maps) so no table
is scanned whole.  Time bounds: a turn's records lie within :data:`TURN_WINDOW_NS` of the records
that touched it; Claude Code's ``InstructionsLoaded`` of an agent process within
:data:`PROCESS_WINDOW_NS` before the turn; a Gemini CLI step within :data:`TURN_WINDOW_NS` after
its prompt.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from otel_inputs import names as n

from otel_inputs.exporter._arrow import ATTEMPTS, INPUTS, LOGS, STEPS, BatchTables
from otel_inputs.exporter._encodings import _instructions as ins
from otel_inputs.exporter._encodings import claude_code, codex, gemini_cli
from otel_inputs.exporter._encodings._turns import (
    HOOK_EVENTS, Log, Span, Step, Turn, event_name,
)  # fmt: skip
from otel_inputs.exporter._tables import (
    AGENT_ATTEMPT_INPUTS, AGENT_ATTEMPT_STEPS, AGENT_ATTEMPTS, AGENT_CODING_TURNS, Fill, sha256_key_sql,
)  # fmt: skip

_log = logging.getLogger(__name__)

HOOK_SERVICE = "otel-inputs-hook"
TURN_WINDOW_NS = 6 * 3600 * 10**9
PROCESS_WINDOW_NS = 7 * 24 * 3600 * 10**9
HOOK_WINDOW_NS = 3600 * 10**9
GEMINI_ANCHOR_WINDOW_NS = 24 * 3600 * 10**9
SOURCE_FORMATS = (claude_code.SOURCE_FORMAT, codex.SOURCE_FORMAT, gemini_cli.SOURCE_FORMAT)
TURNS = AGENT_CODING_TURNS.name
_CHUNK = 500
_VIEW = "_otel_inputs_coding_rows"

ATTEMPT_COLUMNS = AGENT_ATTEMPTS.row_columns
STEP_COLUMNS = AGENT_ATTEMPT_STEPS.row_columns + AGENT_ATTEMPT_STEPS.filled_by(Fill.AGENT)
INPUT_COLUMNS = AGENT_ATTEMPT_INPUTS.row_columns + AGENT_ATTEMPT_INPUTS.filled_by(Fill.AGENT)
TURN_COLUMNS = AGENT_CODING_TURNS.names


def is_coding_service(service: str) -> bool:
    return service in (claude_code.SERVICE, gemini_cli.SERVICE, HOOK_SERVICE) or service.startswith("codex")


def _span_window(ranges: dict[str, list[int]], key: str, ts: int) -> None:
    got = ranges.get(key)
    if got is None:
        ranges[key] = [ts, ts]
    else:
        got[0], got[1] = min(got[0], ts), max(got[1], ts)


@dataclass
class Touched:
    """The records of one batch that may change a coding-agent turn."""

    traces: dict[str, list[int]] = field(default_factory=dict)  # Claude Code / Codex trace -> [lo, hi] ns
    gemini: dict[str, list[int]] = field(default_factory=dict)  # Gemini session -> [lo, hi]
    claude_untraced: dict[str, list[int]] = field(default_factory=dict)  # Claude session -> [lo, hi]
    hooks: list[tuple[str, str, str, str, int]] = field(default_factory=list)  # runtime, session, turn key, process, ts

    def __bool__(self) -> bool:
        return bool(self.traces or self.gemini or self.claude_untraced or self.hooks)


def _coding_rows(table: pa.Table) -> pa.Table | None:
    services = table.column("ServiceName")
    mask = pc.or_(pc.is_in(services, pa.array([claude_code.SERVICE, gemini_cli.SERVICE, HOOK_SERVICE], pa.string())),
                  pc.starts_with(services, "codex"))  # fmt: skip
    picked = table.filter(pc.fill_null(mask, False))
    return picked if picked.num_rows else None


# Codex sends some 460 internal spans per turn; only these can change a turn's rows (codex.derive), so a
# batch of the others re-derives nothing.
_CODEX_SPANS = (n.CODEX_SPAN_TURN, n.CODEX_SPAN_REQUEST, n.CODEX_SPAN_RESPONSE_EVENT)  # a list, not pa.array: no
# pyarrow call at import (its first builds the pandas shim the sink skips; test_sink_process_never_imports_pandas)
_CODEX_KEYS = (n.CODEX_CONVERSATION_ID, n.CODEX_CALL_ID)


def _lookup(maps: pa.ChunkedArray, key: str) -> pa.ChunkedArray:
    return pc.map_lookup(maps, pa.scalar(key, pa.string()), "first")


def touched(tables: BatchTables) -> Touched:
    """Which coding-agent turns a batch's spans and log records may change (cheap when it has none:
    attribute maps are read column-wise, and only for the rows that need them)."""
    out = Touched()
    if tables.traces is not None and tables.traces.num_rows:
        spans = _coding_rows(tables.traces.select(["TraceId", "ServiceName", "Timestamp", "SpanName", "SpanAttributes"]))
        if spans is not None:
            services = spans.column("ServiceName")
            codex_rows = pc.starts_with(services, "codex")
            relevant = pc.or_(pc.invert(codex_rows), pc.is_in(spans.column("SpanName"), pa.array(_CODEX_SPANS, pa.string())))
            for key in _CODEX_KEYS:
                relevant = pc.or_(relevant, pc.is_valid(_lookup(spans.column("SpanAttributes"), key)))
            spans = spans.filter(pc.fill_null(relevant, False))
            sessions = _lookup(spans.column("SpanAttributes"), n.GEN_AI_CONVERSATION_ID).to_pylist()
            for trace, service, t, session in zip(spans.column("TraceId").to_pylist(), spans.column("ServiceName").to_pylist(),
                                                  spans.column("Timestamp").cast(pa.int64()).to_pylist(), sessions):  # fmt: skip
                if service == gemini_cli.SERVICE:
                    if session:
                        _span_window(out.gemini, session, t)
                elif trace:
                    _span_window(out.traces, trace, t)
    if tables.logs is not None and tables.logs.num_rows:
        logs = _coding_rows(tables.logs.select(["TraceId", "ServiceName", "Timestamp", "EventName", "LogAttributes"]))
        if logs is not None:
            attrs = logs.column("LogAttributes")
            ts = logs.column("Timestamp").cast(pa.int64()).to_pylist()
            looked = {k: _lookup(attrs, k).to_pylist() for k in (n.EVENT_NAME_ATTR, n.OPENINFERENCE_SESSION_ID,
                      n.HOOK_RUNTIME, n.GEN_AI_CONVERSATION_ID, n.HOOK_TURN_KEY, n.HOOK_PROCESS_KEY)}  # fmt: skip
            for i, (trace, service, ev) in enumerate(zip(logs.column("TraceId").to_pylist(), logs.column("ServiceName").to_pylist(),
                                                         logs.column("EventName").to_pylist())):  # fmt: skip
                name = event_name(ev, {n.EVENT_NAME_ATTR: looked[n.EVENT_NAME_ATTR][i] or ""})
                session = looked[n.OPENINFERENCE_SESSION_ID][i]
                if name in HOOK_EVENTS:
                    out.hooks.append((looked[n.HOOK_RUNTIME][i] or "", looked[n.GEN_AI_CONVERSATION_ID][i] or "",
                                      looked[n.HOOK_TURN_KEY][i] or "", looked[n.HOOK_PROCESS_KEY][i] or "", ts[i]))  # fmt: skip
                elif service == gemini_cli.SERVICE:
                    if session:
                        _span_window(out.gemini, session, ts[i])
                elif trace:
                    _span_window(out.traces, trace, ts[i])
                elif service == claude_code.SERVICE and session:
                    _span_window(out.claude_untraced, session, ts[i])
    return out


# --- reading landed records -------------------------------------------------------------------------


def _marks(items: Sequence[Any]) -> str:
    return ", ".join("?" * len(items))


def _chunks(items: Sequence[Any]) -> Iterable[Sequence[Any]]:
    for start in range(0, len(items), _CHUNK):
        yield items[start:start + _CHUNK]


_SPAN_SELECT = ('SELECT "TraceId", "SpanId", "ParentSpanId", "SpanName", "ServiceName", epoch_ns("Timestamp"), '
                '"Duration", "StatusCode", "SpanAttributes" FROM otel_traces ')
_LOG_SELECT = ('SELECT "TraceId", "SpanId", epoch_ns("Timestamp"), "EventName", "ServiceName", "LogAttributes", "Body" '
               f'FROM {LOGS} ')


def _spans(rows: Iterable[tuple[Any, ...]]) -> list[Span]:
    return [Span(t, s, p or "", name or "", svc or "", start, start + int(dur or 0), status or "", dict(attrs or {}))
            for t, s, p, name, svc, start, dur, status, attrs in rows]  # fmt: skip


def _logs(rows: Iterable[tuple[Any, ...]]) -> list[Log]:
    out = []
    for t, s, ts, ev, svc, attrs, body in rows:
        a = dict(attrs or {})
        out.append(Log(t or "", s or "", ts, event_name(ev, a), svc or "", a, body))
    return out


def _read_traces(con: duckdb.DuckDBPyConnection, traces: Mapping[str, list[int]]) -> tuple[list[Span], list[Log]]:
    ids = sorted(traces)
    spans: list[Span] = []
    logs: list[Log] = []
    for chunk in _chunks(ids):
        lo = min(traces[t][0] for t in chunk) - TURN_WINDOW_NS
        hi = max(traces[t][1] for t in chunk) + TURN_WINDOW_NS
        where = f'WHERE "Timestamp" BETWEEN make_timestamp_ns(?) AND make_timestamp_ns(?) AND "TraceId" IN ({_marks(chunk)})'
        spans += _spans(con.execute(_SPAN_SELECT + where, [lo, hi, *chunk]).fetchall())
        logs += _logs(con.execute(_LOG_SELECT + where, [lo, hi, *chunk]).fetchall())
    return spans, logs


def _read_hooks(con: duckdb.DuckDBPyConnection, lo: int, hi: int) -> list[Log]:
    events = sorted(HOOK_EVENTS)
    return _logs(con.execute(
        _LOG_SELECT + 'WHERE "Timestamp" BETWEEN make_timestamp_ns(?) AND make_timestamp_ns(?) '
        f'AND "ServiceName" = ? AND "EventName" IN ({_marks(events)})', [lo, hi, HOOK_SERVICE, *events]).fetchall())


def _read_process_loads(con: duckdb.DuckDBPyConnection, processes: Sequence[str], lo: int, hi: int) -> list[Log]:
    if not processes:
        return []
    return _logs(con.execute(
        _LOG_SELECT + 'WHERE "Timestamp" BETWEEN make_timestamp_ns(?) AND make_timestamp_ns(?) AND "ServiceName" = ? '
        f"AND \"EventName\" = ? AND \"LogAttributes\"['{n.HOOK_PROCESS_KEY}'] IN ({_marks(processes)})",
        [lo, hi, HOOK_SERVICE, n.INSTRUCTION_FILE_EVENT, *processes]).fetchall())


def _read_untraced(con: duckdb.DuckDBPyConnection, service: str, lo: int, hi: int) -> list[Log]:
    return _logs(con.execute(
        _LOG_SELECT + 'WHERE "Timestamp" BETWEEN make_timestamp_ns(?) AND make_timestamp_ns(?) AND "ServiceName" = ? '
        "AND \"TraceId\" = ''", [lo, hi, service]).fetchall())


def _turn_rows(con: duckdb.DuckDBPyConnection, where: str, params: Sequence[Any]) -> list[dict[str, Any]]:
    cols = ", ".join(c for c in TURN_COLUMNS if c not in ("started_at", "ended_at"))
    cur = con.execute(f"SELECT {cols}, epoch_ns(started_at), epoch_ns(ended_at) FROM {TURNS} WHERE {where}", list(params))
    names = [c for c in TURN_COLUMNS if c not in ("started_at", "ended_at")] + ["started_at", "ended_at"]
    return [dict(zip(names, r)) for r in cur.fetchall()]


# --- deriving ---------------------------------------------------------------------------------------


def _claude_codex_turns(con: duckdb.DuckDBPyConnection, traces: dict[str, list[int]]) -> list[Turn]:
    if not traces:
        return []
    spans, logs = _read_traces(con, traces)
    claude_turns = [s for s in spans if claude_code.is_turn(s)]
    codex_turns = [s for s in spans if codex.is_turn(s)]
    if not claude_turns and not codex_turns:
        return []
    lo = min(s.start_ns for s in claude_turns + codex_turns)
    hi = max(s.end_ns for s in claude_turns + codex_turns)
    hooks = _read_hooks(con, lo - HOOK_WINDOW_NS, hi + HOOK_WINDOW_NS)
    processes = sorted({h.attrs.get(n.HOOK_PROCESS_KEY, "") for h in hooks
                        if h.event == n.HOOK_TURN_EVENT and h.attrs.get(n.HOOK_PROCESS_KEY)})  # fmt: skip
    seen = {(h.ts_ns, h.span_id, tuple(sorted(h.attrs.items()))) for h in hooks}
    for extra in _read_process_loads(con, processes, lo - PROCESS_WINDOW_NS, hi):
        if (extra.ts_ns, extra.span_id, tuple(sorted(extra.attrs.items()))) not in seen:
            hooks.append(extra)
    untraced = _read_untraced(con, claude_code.SERVICE, lo, hi + claude_code.PAIR_SLACK_NS) if claude_turns else []
    out = [claude_code.derive(t, spans, logs + untraced, hooks) for t in claude_turns]
    out += [codex.derive(t, spans, logs, hooks) for t in codex_turns]
    return out


def _gemini_turns(con: duckdb.DuckDBPyConnection, sessions: Mapping[str, list[int]]) -> tuple[list[Turn], list[str]]:
    """The turns of these Gemini sessions that the given time ranges may change, and every attempt id
    the sessions had in those ranges (a turn whose prompt record is gone keeps no rows)."""
    turns: list[Turn] = []
    for session, (lo, hi) in sorted(sessions.items()):
        anchors = sorted((l for l in _logs(con.execute(
            _LOG_SELECT + 'WHERE "Timestamp" BETWEEN make_timestamp_ns(?) AND make_timestamp_ns(?) AND "ServiceName" = ? '
            "AND \"LogAttributes\"['session.id'] = ?",
            [lo - GEMINI_ANCHOR_WINDOW_NS, hi + GEMINI_ANCHOR_WINDOW_NS, gemini_cli.SERVICE, session]).fetchall())
            if l.event == gemini_cli.EV_USER_PROMPT), key=Log.key)  # fmt: skip
        if not anchors:
            continue
        # The prompts whose turn may hold a touched record: from the last one at or before lo to the
        # last one at or before hi (each turn runs to the session's next prompt).
        starts = [a.ts_ns for a in anchors]
        first = max([i for i, t in enumerate(starts) if t <= lo] or [0])
        last = max([i for i, t in enumerate(starts) if t <= hi] or [0])
        picked = list(range(first, last + 1))
        w_lo = starts[picked[0]]
        w_hi = starts[picked[-1] + 1] if picked[-1] + 1 < len(starts) else starts[picked[-1]] + GEMINI_ANCHOR_WINDOW_NS
        spans = _spans(con.execute(
            _SPAN_SELECT + 'WHERE "Timestamp" BETWEEN make_timestamp_ns(?) AND make_timestamp_ns(?) AND "ServiceName" = ? '
            f"AND \"SpanAttributes\"['{n.GEN_AI_CONVERSATION_ID}'] = ?", [w_lo, w_hi, gemini_cli.SERVICE, session]).fetchall())
        logs = _logs(con.execute(
            _LOG_SELECT + 'WHERE "Timestamp" BETWEEN make_timestamp_ns(?) AND make_timestamp_ns(?) AND "ServiceName" = ? '
            "AND \"TraceId\" != ''", [w_lo, w_hi, gemini_cli.SERVICE]).fetchall())
        hooks = _read_hooks(con, w_lo - gemini_cli.HOOK_MATCH_NS, w_hi + gemini_cli.HOOK_MATCH_NS)
        for i in picked:
            until = starts[i + 1] if i + 1 < len(starts) else None
            turns.append(gemini_cli.derive(anchors[i], until, spans, logs, hooks))
    return turns, []


def _targets(con: duckdb.DuckDBPyConnection, t: Touched) -> tuple[dict[str, list[int]], dict[str, list[int]]]:
    """Claude Code / Codex traces and Gemini sessions to re-derive, from every kind of touched record."""
    traces = {k: list(v) for k, v in t.traces.items()}
    gemini = {k: list(v) for k, v in t.gemini.items()}
    for session, (lo, hi) in t.claude_untraced.items():
        for row in _turn_rows(con, "session_id = ? AND started_at <= make_timestamp_ns(?) AND ended_at >= make_timestamp_ns(?)",
                              [session, hi, lo - claude_code.PAIR_SLACK_NS]):  # fmt: skip
            _span_window(traces, row["trace_id"], row["started_at"])
    keys = sorted({key for _, _, key, _, _ in t.hooks if key})
    for chunk in _chunks(keys):
        for row in _turn_rows(con, f"turn_key IN ({_marks(chunk)})", chunk):
            if row["trace_id"] and row["runtime"] != n.RUNTIME_GEMINI_CLI:
                _span_window(traces, row["trace_id"], row["started_at"])
                _span_window(traces, row["trace_id"], row["ended_at"] or row["started_at"])
    processes = sorted({p for _, _, key, p, _ in t.hooks if p and not key})
    for chunk in _chunks(processes):
        for row in _turn_rows(con, f"process_key IN ({_marks(chunk)})", chunk):
            if row["trace_id"]:
                _span_window(traces, row["trace_id"], row["started_at"])
    for runtime, session, key, _, ts in t.hooks:
        if runtime == n.RUNTIME_GEMINI_CLI and session:
            _span_window(gemini, session, ts)
    return traces, gemini


# --- writing --------------------------------------------------------------------------------------


def _attempt_row(turn: Turn) -> dict[str, Any]:
    row: dict[str, Any] = dict.fromkeys(ATTEMPT_COLUMNS)
    req = turn.request
    captured = sum(1 for f in turn.files if f.capture_status == "captured")
    row.update(
        attempt_id=turn.attempt_id, run_id=turn.session_id, session_id=turn.session_id, agent_name=turn.agent_name,
        provider_name=turn.provider_name, request_model=turn.request_model,
        system_prompt=req.system if req is not None else None, user_prompt=turn.prompt,
        input_coverage=turn.coverage, coverage_reason=turn.coverage_reason,
        declared_input_count=len(turn.files) if turn.coverage != "not_recorded" else None,
        captured_input_count=captured if turn.coverage != "not_recorded" else None,
        started_at=turn.start_ns, ended_at=turn.end_ns, status=turn.status, status_message=turn.status_message,
        trace_id=turn.trace_id, span_id=turn.span_id, service_name=turn.service_name, source_format=turn.source_format,
        span_name=None, operation_name=None, step_kind="agent",
        input_messages_json=req.messages_json if req is not None else None, messages_note=turn.messages_note,
    )
    return row


def _step_row(turn: Turn, seq: int, s: Step) -> dict[str, Any]:
    return {
        "attempt_id": turn.attempt_id, "span_id": s.span_id, "trace_id": s.trace_id, "parent_span_id": s.parent_span_id,
        "seq": seq, "step_kind": s.kind, "operation_name": s.operation_name, "span_name": s.span_name,
        "provider_name": s.provider_name, "request_model": s.request_model, "response_model": s.response_model,
        "started_at": s.start_ns, "ended_at": s.end_ns, "input_tokens": s.input_tokens, "output_tokens": s.output_tokens,
        "tool_name": s.tool_name, "tool_call_id": s.tool_call_id, "tool_arguments": s.tool_arguments,
        "status": s.status, "attempt_started_at": turn.start_ns, "auxiliary": s.auxiliary,
        "request_record": s.request_record,
    }


def _schema(table: str, columns: Sequence[str]) -> pa.Schema:
    from otel_inputs.exporter._tables import TABLES

    spec = next(t for t in TABLES if t.name == table)
    types = {c.name: c.type.arrow for c in spec.columns}
    return pa.schema([(c, types[c]) for c in columns])


def _insert(con: duckdb.DuckDBPyConnection, table: str, columns: Sequence[str], rows: Sequence[Mapping[str, Any]],
            keys: Mapping[str, str] | None = None) -> None:
    if not rows:
        return
    schema = _schema(table, columns)
    data = pa.table({f.name: pa.array([r.get(f.name) for r in rows], f.type) for f in schema}, schema=schema)
    con.register(_VIEW, data)
    try:
        into = [f'"{c}"' for c in columns]
        values = list(into)
        for key, of in (keys or {}).items():
            into.append(f'"{key}"')
            values.append(sha256_key_sql(f'"{of}"'))
        con.execute(f"INSERT INTO {table} ({', '.join(into)}) SELECT {', '.join(values)} FROM {_VIEW}")
    finally:
        con.unregister(_VIEW)


def _replace(con: duckdb.DuckDBPyConnection, turns: Sequence[Turn]) -> None:
    ids = sorted({t.attempt_id for t in turns})
    for chunk in _chunks(ids):
        for table in (ATTEMPTS, STEPS, INPUTS, TURNS):
            con.execute(f"DELETE FROM {table} WHERE attempt_id IN ({_marks(chunk)})", list(chunk))
    unique = {t.attempt_id: t for t in turns}.values()
    _insert(con, ATTEMPTS, ATTEMPT_COLUMNS, [_attempt_row(t) for t in unique])
    _insert(con, STEPS, STEP_COLUMNS, [_step_row(t, i, s) for t in unique for i, s in enumerate(t.steps)])
    _insert(con, INPUTS, INPUT_COLUMNS, [ins.row(f, t.attempt_id, i, t.start_ns) for t in unique
                                         for i, f in enumerate(t.files)], keys={"sha256_key": "sha256"})  # fmt: skip
    _insert(con, TURNS, TURN_COLUMNS, [{"attempt_id": t.attempt_id, "runtime": t.runtime, "session_id": t.session_id,
                                        "turn_key": t.turn_key, "trace_id": t.trace_id, "process_key": t.hook_process_key,
                                        "started_at": t.start_ns, "ended_at": t.end_ns} for t in unique])


def _lineage(con: duckdb.DuckDBPyConnection, sessions: Sequence[str]) -> None:
    """Number each touched session's turns in start order and link each to the one before (across
    processes: --continue, resume); only rows whose lineage changed are updated."""
    updates: list[tuple[str, int, str | None]] = []
    for chunk in _chunks(sorted(s for s in sessions if s)):
        rows = con.execute(
            f"SELECT t.session_id, t.attempt_id, a.turn_index, a.previous_turn_attempt_id FROM {TURNS} t "
            f"JOIN {ATTEMPTS} a ON a.attempt_id = t.attempt_id WHERE t.session_id IN ({_marks(chunk)}) "
            "ORDER BY t.session_id, t.started_at, t.attempt_id", list(chunk)).fetchall()
        previous: dict[str, tuple[str, int]] = {}
        for session, attempt, index, before in rows:
            prior = previous.get(session)
            want_index = prior[1] + 1 if prior else 1
            want_before = prior[0] if prior else None
            if (index, before) != (want_index, want_before):
                updates.append((attempt, want_index, want_before))
            previous[session] = (attempt, want_index)
    if not updates:
        return
    table = pa.table({"attempt_id": pa.array([u[0] for u in updates], pa.string()),
                      "turn_index": pa.array([u[1] for u in updates], pa.int32()),
                      "previous": pa.array([u[2] for u in updates], pa.string())})  # fmt: skip
    con.register(_VIEW, table)
    try:
        con.execute(f"UPDATE {ATTEMPTS} SET turn_index = u.turn_index, previous_turn_attempt_id = u.previous "
                    f"FROM {_VIEW} u WHERE {ATTEMPTS}.attempt_id = u.attempt_id")
    finally:
        con.unregister(_VIEW)


def settle(con: duckdb.DuckDBPyConnection, tables: BatchTables) -> int:
    """Re-derive the coding-agent turns this batch touched; returns how many turns were written."""
    t = touched(tables)
    if not t:
        return 0
    traces, gemini = _targets(con, t)
    turns = _claude_codex_turns(con, traces)
    gemini_turns, _ = _gemini_turns(con, gemini)
    turns += gemini_turns
    if not turns:
        return 0
    _replace(con, turns)
    _lineage(con, sorted({x.session_id for x in turns if x.session_id}))
    return len(turns)


def derive_all(spans: Sequence[Span], logs: Sequence[Log]) -> list[Turn]:
    """Every turn of a set of records at once (tests and tools: the same derivations, no database)."""
    hooks = [l for l in logs if l.event in HOOK_EVENTS]
    out = [claude_code.derive(s, spans, logs, hooks) for s in spans if claude_code.is_turn(s)]
    out += [codex.derive(s, spans, logs, hooks) for s in spans if codex.is_turn(s)]
    by_session: dict[str | None, list[Log]] = {}
    for l in logs:
        if l.event == gemini_cli.EV_USER_PROMPT and l.service == gemini_cli.SERVICE:
            by_session.setdefault(l.attrs.get(n.OPENINFERENCE_SESSION_ID), []).append(l)
    for anchors in by_session.values():
        anchors.sort(key=Log.key)
        for i, a in enumerate(anchors):
            until = anchors[i + 1].ts_ns if i + 1 < len(anchors) else None
            out.append(gemini_cli.derive(a, until, spans, logs, hooks))
    return out


__all__ = ["SOURCE_FORMATS", "Touched", "derive_all", "is_coding_service", "settle", "touched"]
