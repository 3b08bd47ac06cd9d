"""Which landed GenAI spans are attempts and which are steps of one (docs/encodings.md, contract C1).

Every GenAI span first lands as an ``agent_attempts`` row (the pure derivation in ``_rows`` cannot
see a span's ancestors).  After each batch, inside the same transaction, :func:`resolve` looks at
every trace the batch touched and settles, from everything landed so far in that trace:

- a span carrying an otel-inputs packet is always an attempt;
- another GenAI span with a GenAI ancestor is a step of its nearest ancestor that is an attempt
  (ancestry crosses ordinary spans, read from ``otel_traces``);
- a GenAI span with no GenAI ancestor landed (yet) is a legacy attempt.

Children end, and so are exported, before their parents, possibly in another batch, request or
process, and an ancestor may never arrive.  The outcome depends only on the set of spans landed,
never on their order: a later ancestor turns the attempts below it into its steps.  The work per
batch is bounded by its traces: landed rows are found through the ``trace_id`` index and the
``attempt_started_at`` / ``Timestamp`` zone maps, never by a scan of a whole table.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import duckdb
import pyarrow as pa

from otel_inputs.exporter._arrow import ATTEMPTS, INPUTS, PARTS, STEP_SCHEMA, STEPS, rows_table
from otel_inputs.exporter._messages import settle as settle_log_messages, update_attempts
from otel_inputs.exporter._rows import (
    ATTEMPT_STEP_MESSAGE_COLUMNS, SOURCE_OTEL_INPUTS, STEP_COLUMNS, STEP_CONTAINER, STEP_MODEL_CALL, span_messages,
)  # fmt: skip
from otel_inputs.exporter._spans import EventRecord, SpanRecord

_CHUNK = 1000  # bound parameters per statement
_STEPS_VIEW = "_otel_inputs_steps"
_NOT_MESSAGES = frozenset({"embeddings"})
# Columns of a step row that an attempt row holds under the same name.
_SHARED = tuple(c for c in STEP_COLUMNS if c not in ("attempt_id", "seq", "status", "attempt_started_at",
                                                      "started_at", "ended_at"))  # fmt: skip
_TS_COLUMNS = ("started_at", "ended_at")
_NODE_COLUMNS = ("attempt_id", "source_format", "step_messages_span_id", "log_span_id", *_SHARED)
# Whether the attempt span recorded messages of its own (the texts themselves are not fetched).
_OWN_MESSAGES = "(system_prompt IS NOT NULL OR user_prompt IS NOT NULL OR input_messages_json IS NOT NULL)"


@dataclass(slots=True)
class _Node:
    """One GenAI span of a trace, as landed: an attempt row, a step row, or (re-landed) both."""

    span_id: str
    parent: str
    start: int | None
    data: dict[str, Any]  # step-shaped columns (ids, names, models, times, tokens, tool, status)
    attempt: dict[str, Any] | None = None  # its agent_attempts row, when it has one now
    step_of: list[str] = field(default_factory=list)  # attempt ids holding a step row of it now

    @property
    def packet(self) -> bool:
        return self.attempt is not None and self.attempt["source_format"] == SOURCE_OTEL_INPUTS


def _chunks(items: Sequence[Any]) -> Iterable[Sequence[Any]]:
    for start in range(0, len(items), _CHUNK):
        yield items[start:start + _CHUNK]


def _marks(items: Sequence[Any]) -> str:
    return ", ".join("?" * len(items))


def _status(code: Any) -> str | None:
    return code.lower() if isinstance(code, str) and code else None


def resolve(con: duckdb.DuckDBPyConnection, trace_ids: Iterable[str], fresh: set[str]) -> None:
    """Settle attempts and steps of these traces; ``fresh`` are span ids (re)landed by this batch."""
    wanted = sorted({t for t in trace_ids if t})
    attempts: dict[str, list[dict[str, Any]]] = {}
    cols = ", ".join(_NODE_COLUMNS)
    for chunk in _chunks(wanted):
        cur = con.execute(
            f"SELECT {cols}, {_OWN_MESSAGES}, status, epoch_ns(started_at), epoch_ns(ended_at) FROM {ATTEMPTS} "
            f"WHERE trace_id IN ({_marks(chunk)})", list(chunk))
        for values in cur.fetchall():
            row = dict(zip((*_NODE_COLUMNS, "own_messages", "status", *_TS_COLUMNS), values))
            attempts.setdefault(row["trace_id"], []).append(row)
    if not attempts:
        return
    steps = _landed_steps(con, [a for rows in attempts.values() for a in rows])
    work = _Work()
    for trace_id, rows in attempts.items():
        nodes = _nodes(rows, steps)
        if len(nodes) == 1 and not any(node.step_of for node in nodes.values()):
            continue  # one GenAI span alone in its trace, as landed: an attempt, nothing to move
        work.traces[trace_id] = nodes
    if work.traces:
        parents = _intermediate_parents(con, work.traces)
        for trace_id, nodes in work.traces.items():
            _plan(nodes, parents.get(trace_id, {}), fresh, work)
        work.apply(con)
    # Log records that landed before these attempts (or before their first model step was known).
    demoted = set(work.demote)
    changed = {a["attempt_id"] for a, _ in work.messages}
    settle_log_messages(con, [a for rows in attempts.values() for a in rows if a["attempt_id"] not in demoted
                              and (a["span_id"] in fresh or a["attempt_id"] in changed)])  # fmt: skip


def _landed_steps(con: duckdb.DuckDBPyConnection, attempts: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """The step rows of these attempts, by attempt id (found through the attempt_started_at zone maps)."""
    out: dict[str, list[dict[str, Any]]] = {}
    starts = [a["started_at"] for a in attempts if a["started_at"] is not None]
    ids = [a["attempt_id"] for a in attempts]
    if not ids:
        return out
    window = ("attempt_started_at BETWEEN make_timestamp_ns(?) AND make_timestamp_ns(?)" if starts else "FALSE")
    if len(starts) < len(ids):
        window = f"({window} OR attempt_started_at IS NULL)"
    cols = ", ".join(c for c in STEP_COLUMNS if c not in (*_TS_COLUMNS, "attempt_started_at"))
    for chunk in _chunks(ids):
        params: list[Any] = ([min(starts), max(starts)] if starts else []) + list(chunk)
        cur = con.execute(
            f"SELECT {cols}, epoch_ns(started_at), epoch_ns(ended_at), epoch_ns(attempt_started_at) FROM {STEPS} "
            f"WHERE {window} AND attempt_id IN ({_marks(chunk)})", params)
        names = (*cols.split(", "), *_TS_COLUMNS, "attempt_started_at")
        for values in cur.fetchall():
            row = dict(zip(names, values))
            out.setdefault(row["attempt_id"], []).append(row)
    return out


def _nodes(rows: list[dict[str, Any]], steps: Mapping[str, list[dict[str, Any]]]) -> dict[str, _Node]:
    nodes: dict[str, _Node] = {}
    for row in rows:
        data = {c: row[c] for c in (*_SHARED, *_TS_COLUMNS)}
        data["status"] = _status(row["status"])
        nodes[row["span_id"]] = _Node(row["span_id"], row["parent_span_id"] or "", row["started_at"], data, row)
    for row in rows:
        for step in steps.get(row["attempt_id"], ()):
            node = nodes.get(step["span_id"])
            if node is None:
                data = {c: step[c] for c in (*_SHARED, *_TS_COLUMNS, "status")}
                node = nodes[step["span_id"]] = _Node(step["span_id"], step["parent_span_id"] or "",
                                                      step["started_at"], data)  # fmt: skip
            node.step_of.append(row["attempt_id"])
    return nodes


def _intermediate_parents(con: duckdb.DuckDBPyConnection, traces: Mapping[str, dict[str, _Node]]) -> dict[str, dict[str, str]]:
    """SpanId → ParentSpanId of the ordinary spans that may link these traces' GenAI spans.

    Only needed for a GenAI span whose parent is not itself a GenAI span.  A link between two GenAI
    spans started between them, so the lookup is bounded to the traces' earliest and latest GenAI
    span start, which the ``Timestamp`` zone maps of otel_traces prune to a few row groups."""
    need = [t for t, nodes in traces.items() if any(x.parent and x.parent not in nodes for x in nodes.values())]
    starts = [x.start for t in need for x in traces[t].values() if x.start is not None]
    out: dict[str, dict[str, str]] = {}
    if not starts:
        return out
    for chunk in _chunks(need):
        cur = con.execute(
            'SELECT "TraceId", "SpanId", "ParentSpanId" FROM otel_traces '
            'WHERE "Timestamp" BETWEEN make_timestamp_ns(?) AND make_timestamp_ns(?) '
            f'AND "TraceId" IN ({_marks(chunk)})', [min(starts), max(starts), *chunk])
        for trace_id, span_id, parent in cur.fetchall():
            out.setdefault(trace_id, {})[span_id] = parent or ""
    return out


@dataclass
class _Work:
    """What one batch changes, collected over its traces and applied in a few statements."""

    traces: dict[str, dict[str, _Node]] = field(default_factory=dict)
    demote: list[str] = field(default_factory=list)  # attempt ids whose attempt row goes
    clear: dict[str, int | None] = field(default_factory=dict)  # attempt id → attempt_started_at of its step rows
    insert: list[dict[str, Any]] = field(default_factory=list)
    messages: list[tuple[dict[str, Any], _Node]] = field(default_factory=list)  # (attempt row, first model step)

    def apply(self, con: duckdb.DuckDBPyConnection) -> None:
        for chunk in _chunks(self.demote):
            for target in (ATTEMPTS, INPUTS, PARTS):
                con.execute(f"DELETE FROM {target} WHERE attempt_id IN ({_marks(chunk)})", list(chunk))
        if self.clear:
            starts = [s for s in self.clear.values() if s is not None]
            ids = list(self.clear)
            window = "attempt_started_at BETWEEN make_timestamp_ns(?) AND make_timestamp_ns(?)" if starts else "FALSE"
            if len(starts) < len(ids):
                window = f"({window} OR attempt_started_at IS NULL)"
            for chunk in _chunks(ids):
                params = ([min(starts), max(starts)] if starts else []) + list(chunk)
                con.execute(f"DELETE FROM {STEPS} WHERE {window} AND attempt_id IN ({_marks(chunk)})", params)
        if self.insert:
            table = rows_table(self.insert, STEP_SCHEMA)
            con.register(_STEPS_VIEW, table)
            try:
                names = ", ".join(STEP_COLUMNS)
                con.execute(f"INSERT INTO {STEPS} ({names}) SELECT {names} FROM {_STEPS_VIEW}")
            finally:
                con.unregister(_STEPS_VIEW)
        _fill_step_messages(con, self.messages)


def _plan(nodes: dict[str, _Node], parents: Mapping[str, str], fresh: set[str], work: _Work) -> None:
    """The trace's attempts and their ordered steps, and what must change to get there."""

    def genai_parent(node: _Node) -> _Node | None:
        p, hops = node.parent, 0
        while p and hops <= len(parents) + 1:
            if p in nodes:
                return nodes[p]
            p, hops = parents.get(p, ""), hops + 1
        return None

    def attempt_of(node: _Node) -> _Node | None:
        if node.packet:
            return None
        above = genai_parent(node)
        seen = {node.span_id}
        while above is not None and not above.packet and above.span_id not in seen:
            seen.add(above.span_id)
            higher = genai_parent(above)
            if higher is None:
                break
            above = higher
        return above

    owned: dict[str, list[_Node]] = {}
    for node in nodes.values():
        target = attempt_of(node)
        if target is None and node.attempt is None:
            # A step whose attempt row is gone from view (cannot be promoted without its attempt row): keep it.
            target = next((x for x in nodes.values() if x.attempt and x.attempt["attempt_id"] in node.step_of), None)
        if target is None or target.attempt is None:
            continue
        # A container below an attempt (a LangGraph node or runnable) is not listed: its GenAI spans are.
        if node.data["step_kind"] != STEP_CONTAINER:
            owned.setdefault(target.attempt["attempt_id"], []).append(node)
        if node.attempt is not None:
            work.demote.append(node.attempt["attempt_id"])
    by_attempt = {x.attempt["attempt_id"]: x.attempt for x in nodes.values() if x.attempt is not None}
    current: dict[str, set[str]] = {}
    for node in nodes.values():
        for attempt_id in node.step_of:
            current.setdefault(attempt_id, set()).add(node.span_id)
    demoted = set(work.demote)
    for attempt_id, held in current.items():
        if attempt_id in demoted or held != {x.span_id for x in owned.get(attempt_id, ())}:
            work.clear[attempt_id] = by_attempt[attempt_id]["started_at"] if attempt_id in by_attempt else None
    for attempt_id, members in owned.items():
        attempt = by_attempt[attempt_id]
        members.sort(key=lambda x: (x.start if x.start is not None else -1, x.span_id))
        changed = (attempt_id in work.clear or current.get(attempt_id) != {x.span_id for x in members}
                   or any(x.span_id in fresh or x.attempt is not None for x in members))  # fmt: skip
        if changed:
            work.clear.setdefault(attempt_id, attempt["started_at"])
            for seq, node in enumerate(members):
                row = dict(node.data, attempt_id=attempt_id, seq=seq, attempt_started_at=attempt["started_at"])
                row["span_id"] = node.span_id
                work.insert.append(row)
        first = next((x for x in members if x.data["step_kind"] == STEP_MODEL_CALL
                      and x.data["operation_name"] not in _NOT_MESSAGES), None)  # fmt: skip
        if first is not None and not attempt["own_messages"] and attempt["step_messages_span_id"] != first.span_id:
            work.messages.append((attempt, first))


def _fill_step_messages(con: duckdb.DuckDBPyConnection, todo: list[tuple[dict[str, Any], _Node]]) -> None:
    """Record what each attempt's first model step sent, read from that step's otel_traces row by
    the same derivation as an attempt span's own messages (their start times prune the scan)."""
    wanted = {(step.data["trace_id"], step.span_id): attempt for attempt, step in todo if step.start is not None}
    if not wanted:
        return  # a step without a start cannot be looked up: its messages stay not recorded
    starts = [step.start for _, step in todo if step.start is not None]
    span_ids = sorted({span_id for _, span_id in wanted})
    updates: list[dict[str, Any]] = []
    for chunk in _chunks(span_ids):
        cur = con.execute(
            'SELECT "TraceId", "SpanId", "SpanAttributes", "Events.Name", "Events.Attributes" FROM otel_traces '
            'WHERE "Timestamp" BETWEEN make_timestamp_ns(?) AND make_timestamp_ns(?) '
            f'AND "SpanId" IN ({_marks(chunk)})', [min(starts), max(starts), *chunk])
        for trace_id, span_id, attrs, ev_names, ev_attrs in cur.fetchall():
            attempt = wanted.get((trace_id, span_id))
            if attempt is None:
                continue
            events = tuple(EventRecord(name, 0, dict(a)) for name, a in zip(ev_names or (), ev_attrs or ()))
            record = SpanRecord(trace_id, span_id, "", "", "", "", 0, 0, "", "", dict(attrs or {}), events=events)
            messages = span_messages(record)
            attempt["step_messages_span_id"] = span_id
            updates.append({"attempt_id": attempt["attempt_id"], "step_system_prompt": messages.system,
                            "step_user_prompt": messages.user, "step_input_messages_json": messages.json,
                            "step_messages_span_id": span_id})  # fmt: skip
    update_attempts(con, updates, ATTEMPT_STEP_MESSAGE_COLUMNS)


def step_trace_ids(traces: pa.Table | None, attempts: pa.Table | None) -> tuple[set[str], set[str]]:
    """(trace ids a batch touches, span ids of its GenAI spans) for :func:`resolve`."""
    trace_ids: set[str] = set()
    fresh: set[str] = set()
    if traces is not None:
        trace_ids.update(traces.column("TraceId").to_pylist())
    if attempts is not None:
        trace_ids.update(t for t in attempts.column("trace_id").to_pylist() if t)
        fresh.update(s for s in attempts.column("span_id").to_pylist() if s)
    return trace_ids, fresh


__all__ = ["resolve", "step_trace_ids"]
