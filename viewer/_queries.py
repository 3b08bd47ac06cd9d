"""Every SQL the viewer runs, over a short-lived read-only DuckDB connection.

The viewer never caches a connection: each page refresh opens the file read-only, runs the
queries of this module and closes it, so exporters can write between refreshes.  A missing,
locked or newer-schema database becomes :class:`DbUnavailable` with an owner-facing message.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import duckdb

from otel_inputs.exporter._db import LockTimeout, connect_with_retry, file_lock
from otel_inputs.exporter._schema import MIGRATIONS, SCHEMA_VERSION, SchemaError, check_version, sha256_key_sql

LOCK_WAIT_S = 20.0  # several writers may hold the lock back to back; a slow page beats an error page

PAGE_SIZE = 50
LEGACY_RECOVERY_LOOKBACK = 20
"""How many strictly prior same-session turns a legacy correction may look back through."""


class DbUnavailable(Exception):
    """The database cannot be read right now; ``str(exc)`` is the sentence shown on the page."""


@contextmanager
def read_only(db_path: str | os.PathLike[str]) -> Iterator[duckdb.DuckDBPyConnection]:
    """Open ``db_path`` read-only for one refresh, check its schema, and always close it."""
    path = Path(db_path)
    if not path.exists():
        raise DbUnavailable(f"No database {path.name} yet. Record an attempt first, or check OTEL_INPUTS_DB.")
    # The shared sidecar lock waits out a writer's batch (a few hundred ms at most) instead of
    # failing the refresh; it is released when this refresh's connection closes.
    lock = file_lock(path, exclusive=False, timeout_s=LOCK_WAIT_S)
    try:
        lock.__enter__()
    except LockTimeout as exc:
        raise DbUnavailable(
            f"The database {path.name} is busy with a long write; the page retries on its next refresh."
        ) from exc
    try:
        con = connect_with_retry(path, read_only=True)
    except duckdb.Error as exc:
        lock.__exit__(None, None, None)
        text = str(exc)
        if "lock" in text.lower():
            raise DbUnavailable(
                f"The database {path.name} is locked by a writer right now; the page retries on its next refresh."
            ) from exc
        raise DbUnavailable(f"The database {path.name} cannot be opened: {text.splitlines()[0]}") from exc
    except BaseException:
        lock.__exit__(None, None, None)
        raise
    try:
        try:
            version = _schema_version(con)
        except SchemaError as exc:
            raise DbUnavailable(str(exc)) from exc
        if version < SCHEMA_VERSION:
            raise DbUnavailable(
                f"The database {path.name} has schema version {version}, older than this viewer reads "
                f"({SCHEMA_VERSION}); the exporter upgrades it the next time it writes."
            )
        yield con
    finally:
        con.close()
        lock.__exit__(None, None, None)


def _schema_version(con: duckdb.DuckDBPyConnection) -> int:
    """The applied schema version, checked like ``check_version`` but without information_schema.

    Reading the version table directly costs ~1 ms instead of ~17 ms per refresh; any surprise
    (no table yet, unexpected shape) falls back to the exporter's own ``check_version``.
    """
    try:
        rows = con.execute("SELECT version, name FROM otel_inputs_schema").fetchall()
    except duckdb.Error:
        return check_version(con)
    known = {m.version: m.name for m in MIGRATIONS}
    version = max((int(v) for v, _ in rows), default=0)
    if version > SCHEMA_VERSION or any(known.get(int(v)) != name for v, name in rows):
        return check_version(con)  # raises SchemaError with the exporter's wording
    # Migrations may land out of order (see migrate): the version this file fully has is the one
    # below its first missing migration.
    missing = sorted(set(known) - {int(v) for v, _ in rows})
    return missing[0] - 1 if missing else version


# --------------------------------------------------------------------------------------------
# Records
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class AttemptRecord:
    """One row of ``agent_attempts`` with its timestamps as epoch nanoseconds."""

    attempt_id: str
    run_id: str | None = None
    session_id: str | None = None
    phase: str | None = None
    agent_name: str | None = None
    provider_name: str | None = None
    request_model: str | None = None
    task_prompt: str | None = None
    task_source_kind: str | None = None
    task_source_path: str | None = None
    task_size_bytes: int | None = None
    task_sha256: str | None = None
    send_kind: str | None = None
    turn_index: int | None = None
    previous_turn_attempt_id: str | None = None
    retry_of_attempt_id: str | None = None
    system_prompt: str | None = None
    user_prompt: str | None = None
    input_packet_version: int | None = None
    input_coverage: str = "not_recorded"
    coverage_reason: str | None = None
    declared_input_count: int | None = None
    captured_input_count: int | None = None
    omitted_input_count: int | None = None
    item_count: int | None = None
    capture_decision: str | None = None
    capture_gap_reason: str | None = None
    started_ns: int | None = None
    ended_ns: int | None = None
    status: str | None = None
    status_message: str | None = None
    trace_id: str | None = None
    span_id: str | None = None
    service_name: str | None = None
    source_format: str | None = None
    dropped_events_count: int | None = None
    dropped_attributes_count: int | None = None

    @property
    def is_legacy(self) -> bool:
        return self.input_packet_version is None


@dataclass(frozen=True)
class InputRecord:
    """One row of ``agent_attempt_inputs`` plus the store's later view from ``agent_artifacts``."""

    input_id: str
    attempt_id: str
    seq: int
    label: str | None = None
    source_kind: str | None = None
    delivery_mode: str | None = None
    source_path: str | None = None
    snapshot_ref: str | None = None
    media_type: str | None = None
    preview_kind: str | None = None
    size_bytes: int | None = None
    sha256: str | None = None
    capture_status: str | None = None
    artifact_status: str | None = None
    detail: str | None = None
    captured_ns: int | None = None
    row_problem: str | None = None
    store_artifact_status: str | None = None
    store_status_reason: str | None = None

    @property
    def current_artifact_status(self) -> str | None:
        """The store is the authority after capture; the event's value is as of capture."""
        return self.store_artifact_status or self.artifact_status


@dataclass(frozen=True)
class PartRecord:
    """One ``agent_exchange_parts`` row (as recorded on the span) plus the store receipt read later."""

    attempt_id: str
    part_name: str | None = None
    capture: str | None = None
    reason: str | None = None
    dispatch: str | None = None
    ref: str | None = None
    sha256: str | None = None
    size_bytes: int | None = None
    persistence: str | None = None
    detail: str | None = None
    recorded_ns: int | None = None
    row_problem: str | None = None
    receipt: dict[str, Any] | None = field(default=None, compare=False)
    receipt_outcome: str | None = None  # why no receipt could be read ("not_found", ...), None if unread


@dataclass(frozen=True)
class TurnRef:
    """A same-run, same-session attempt, enough to order turns and link to them."""

    attempt_id: str
    started_ns: int | None
    ended_ns: int | None
    phase: str | None
    send_kind: str | None
    turn_index: int | None
    is_legacy: bool
    user_prompt: str | None = None
    retry_of_attempt_id: str | None = None
    status: str | None = None


@dataclass(frozen=True)
class StepRecord:
    """One ``agent_attempt_steps`` row (contract C1): a model call, tool call or inner agent span."""

    attempt_id: str
    span_id: str
    seq: int | None = None
    step_kind: str | None = None
    operation_name: str | None = None
    span_name: str | None = None
    provider_name: str | None = None
    request_model: str | None = None
    response_model: str | None = None
    started_ns: int | None = None
    ended_ns: int | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    tool_name: str | None = None
    tool_call_id: str | None = None
    tool_arguments: str | None = None
    """Content: the tool call's JSON arguments, present only when the span carried them."""
    status: str | None = None


@dataclass(frozen=True)
class MessagesRecord:
    """The attempt's exact messages from ``agent_attempt_messages`` (contract C2)."""

    attempt_id: str
    system_prompt: str | None = None
    user_prompt: str | None = None
    input_messages_json: str | None = None
    messages_source: str | None = None
    messages_note: str | None = None


@dataclass(frozen=True)
class RetryMember:
    """One physical attempt of a logical operation (an initial send and its retries)."""

    attempt_id: str
    retry_of_attempt_id: str | None
    started_ns: int | None
    send_kind: str | None
    status: str | None
    is_legacy: bool


@dataclass(frozen=True)
class AttemptBundle:
    """Everything one attempt page needs, read in one refresh."""

    attempt: AttemptRecord
    inputs: tuple[InputRecord, ...]
    session_turns: tuple[TurnRef, ...]
    previous_turn_id: str | None
    previous_inputs: tuple[InputRecord, ...] | None
    recovery_prompts: dict[str, str] = field(default_factory=dict)
    parts: tuple[PartRecord, ...] = ()
    steps: tuple[StepRecord, ...] | None = None
    """``None`` when the database has no steps table (steps not recorded), never "no steps"."""
    messages: MessagesRecord | None = None
    """The C2 row when the database has one for this attempt; else the attempt row's own messages."""
    operation: tuple[RetryMember, ...] = ()
    """The physical attempts of this attempt's logical operation, in time order (itself included)."""
    withheld: Any = None  # set by otel_inputs.viewer._access.Access.gate: what this viewer may not see


@dataclass(frozen=True)
class RunSummary:
    run_id: str | None
    attempts: int
    sessions: int
    first_ns: int | None
    last_ns: int | None
    phases: str
    complete: int
    partial: int
    not_recorded: int


@dataclass(frozen=True)
class AttemptFilters:
    """Filters of a run's attempt list; ``None`` means any, :data:`NULL_VALUE` means not recorded."""

    phase: str | None = None
    agent: str | None = None
    send_kind: str | None = None
    coverage: str | None = None
    status: str | None = None
    newest_first: bool = False


NULL_VALUE = "\x00not recorded"


@dataclass(frozen=True)
class AttemptListRow:
    attempt_id: str
    started_ns: int | None
    ended_ns: int | None
    phase: str | None
    agent_name: str | None
    send_kind: str | None
    turn_index: int | None
    session_id: str | None
    input_coverage: str
    item_count: int | None
    status: str | None
    is_legacy: bool


@dataclass(frozen=True)
class AttemptPage:
    rows: tuple[AttemptListRow, ...]
    total: int
    offset: int
    limit: int


@dataclass(frozen=True)
class RunFacets:
    phases: tuple[str | None, ...]
    agents: tuple[str | None, ...]
    send_kinds: tuple[str | None, ...]
    coverages: tuple[str | None, ...]
    statuses: tuple[str | None, ...]


@dataclass(frozen=True)
class HealthRow:
    source: str
    metric: str
    value: int
    updated_ns: int | None


# --------------------------------------------------------------------------------------------
# SQL
# --------------------------------------------------------------------------------------------
_ATTEMPT_COLUMNS = [f.name for f in fields(AttemptRecord) if f.name not in ("started_ns", "ended_ns")]
_ATTEMPT_SELECT = ", ".join(_ATTEMPT_COLUMNS) + ", epoch_ns(started_at) AS started_ns, epoch_ns(ended_at) AS ended_ns"
_INPUT_COLUMNS = [
    f.name
    for f in fields(InputRecord)
    if f.name not in ("captured_ns", "store_artifact_status", "store_status_reason")
]
_INPUT_SELECT = ", ".join(_INPUT_COLUMNS) + ", epoch_ns(captured_at) AS captured_ns"


def _rows(cur: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    names = [d[0] for d in cur.description]
    return [dict(zip(names, row)) for row in cur.fetchall()]


def get_attempt(con: duckdb.DuckDBPyConnection, attempt_id: str) -> AttemptRecord | None:
    rows = _rows(con.execute(f"SELECT {_ATTEMPT_SELECT} FROM agent_attempts WHERE attempt_id = ? LIMIT 1", [attempt_id]))
    return AttemptRecord(**rows[0]) if rows else None


def _by_attempt(table: str, select: str, attempt_id: str, started_ns: int | None, order: str) -> tuple[str, list[Any]]:
    """SQL for one attempt's rows of a table that carries ``attempt_started_at`` and has no index.

    ``attempt_started_at = <start>`` lets DuckDB's row-group min/max zone maps skip nearly every
    row group (rows land roughly in time order); the ``IS NULL`` branch finds rows landed before
    the column existed (or of an attempt with no start time) and is itself pruned by the
    row groups' null statistics, so no row ever disappears and the common case stays cheap.
    """
    if started_ns is None:  # start unknown: an unpruned scan by attempt id (correct, slower)
        return f"SELECT {select} FROM {table} WHERE attempt_id = ? ORDER BY {order}", [attempt_id]
    null_branch = f"SELECT {select} FROM {table} WHERE attempt_started_at IS NULL AND attempt_id = ?"
    return (
        f"SELECT {select} FROM {table} WHERE attempt_started_at = make_timestamp_ns(?::BIGINT) AND attempt_id = ? "
        f"UNION ALL {null_branch} ORDER BY {order}",
        [int(started_ns), attempt_id, attempt_id],
    )


def get_inputs(con: duckdb.DuckDBPyConnection, attempt_id: str, started_ns: int | None = None) -> tuple[InputRecord, ...]:
    """The attempt's input rows in ``seq`` order, each with the store's artifact status as landed.

    ``started_ns`` is the attempt's start time (``agent_attempts.started_at``); with it the lookup
    is pruned by zone maps instead of scanning every input row; without it every row is scanned.
    """
    sql, params = _by_attempt("agent_attempt_inputs", _INPUT_SELECT, attempt_id, started_ns, "seq, input_id")
    rows = _rows(con.execute(sql, params))
    store: dict[str, tuple[str | None, str | None]] = {}
    for input_id, status, reason in con.execute(
        "SELECT input_id, artifact_status, status_reason FROM agent_artifacts WHERE attempt_id = ? "
        "ORDER BY updated_at NULLS FIRST",
        [attempt_id],
    ).fetchall():
        store[input_id] = (status, reason)  # latest update wins
    out = []
    for row in rows:
        status, reason = store.get(row["input_id"], (None, None))
        out.append(InputRecord(**row, store_artifact_status=status, store_status_reason=reason))
    return tuple(out)


_PART_SELECT = (
    "attempt_id, part_name, capture, reason, dispatch, ref, sha256, size_bytes, persistence, detail, "
    "epoch_ns(recorded_at) AS recorded_ns, row_problem"
)


def get_parts(con: duckdb.DuckDBPyConnection, attempt_id: str, started_ns: int | None = None) -> tuple[PartRecord, ...]:
    """The attempt's exchange-part events as landed, logical request first, in recorded order."""
    from otel_inputs.types import PartName

    sql, params = _by_attempt("agent_exchange_parts", _PART_SELECT, attempt_id, started_ns, "recorded_ns NULLS LAST")
    rank = {PartName.LOGICAL_REQUEST.value: 0, PartName.OBSERVABLE_OUTPUT.value: 1}
    parts = [PartRecord(**row) for row in _rows(con.execute(sql, params))]
    return tuple(sorted(parts, key=lambda p: rank.get(p.part_name or "", 2)))  # stable: recorded order kept


def get_session_turns(con: duckdb.DuckDBPyConnection, run_id: str | None, session_id: str | None) -> tuple[TurnRef, ...]:
    """Every attempt of ``run_id`` with ``session_id``; empty when either is null (never grouped)."""
    if run_id is None or session_id is None:
        return ()
    cur = con.execute(
        "SELECT attempt_id, epoch_ns(started_at), epoch_ns(ended_at), phase, send_kind, turn_index, "
        "input_packet_version IS NULL, NULL, retry_of_attempt_id, status FROM agent_attempts "
        "WHERE run_id = ? AND session_id = ? "
        "ORDER BY started_at NULLS LAST, attempt_id",
        [run_id, session_id],
    )
    return tuple(TurnRef(*row) for row in cur.fetchall())


def get_user_prompts(con: duckdb.DuckDBPyConnection, attempt_ids: Sequence[str]) -> dict[str, str]:
    if not attempt_ids:
        return {}
    cur = con.execute(
        "SELECT attempt_id, user_prompt FROM agent_attempts WHERE attempt_id IN (SELECT unnest(?::VARCHAR[]))",
        [list(attempt_ids)],
    )
    return {a: p for a, p in cur.fetchall() if p is not None}


def load_attempt(con: duckdb.DuckDBPyConnection, attempt_id: str) -> AttemptBundle | None:
    """All queries of one attempt page: the attempt, its inputs, its session, the previous turn's inputs."""
    from otel_inputs.viewer._lineage import previous_turn_id, prior_turns

    attempt = get_attempt(con, attempt_id)
    if attempt is None:
        return None
    inputs = get_inputs(con, attempt_id, attempt.started_ns)
    parts = get_parts(con, attempt_id, attempt.started_ns)
    turns = get_session_turns(con, attempt.run_id, attempt.session_id)
    prior = prior_turns(attempt, turns)
    prev_id = previous_turn_id(attempt, prior)
    previous_inputs = None
    if prev_id:
        prev_start = next((t.started_ns for t in turns if t.attempt_id == prev_id), None)
        if prev_start is None and not any(t.attempt_id == prev_id for t in turns):
            prev = get_attempt(con, prev_id)
            prev_start = prev.started_ns if prev is not None else None
        previous_inputs = get_inputs(con, prev_id, prev_start)
    prompts: dict[str, str] = {}
    if attempt.is_legacy and prior.turns:
        same_phase = [t.attempt_id for t in prior.turns if t.phase == attempt.phase]
        prompts = get_user_prompts(con, same_phase[-LEGACY_RECOVERY_LOOKBACK:])
    steps = get_steps(con, attempt_id, attempt.started_ns)
    messages = get_messages(con, attempt_id)
    operation = get_operation(con, attempt, turns)
    return AttemptBundle(attempt, inputs, turns, prev_id, previous_inputs, prompts, parts, steps, messages,
                         operation)


def list_runs(con: duckdb.DuckDBPyConnection, *, limit: int = PAGE_SIZE, offset: int = 0) -> tuple[RunSummary, ...]:
    cur = con.execute(
        """
        SELECT run_id, count(*) AS attempts, count(DISTINCT session_id) AS sessions,
               min(epoch_ns(started_at)) AS first_ns,
               max(epoch_ns(coalesce(ended_at, started_at))) AS last_ns,
               coalesce(string_agg(DISTINCT phase, ', ' ORDER BY phase), '') AS phases,
               count(*) FILTER (WHERE input_coverage = 'complete') AS complete,
               count(*) FILTER (WHERE input_coverage = 'partial') AS partial,
               count(*) FILTER (WHERE input_coverage NOT IN ('complete', 'partial')) AS not_recorded
        FROM agent_attempts GROUP BY run_id
        ORDER BY last_ns DESC NULLS LAST, run_id LIMIT ? OFFSET ?
        """,
        [limit, offset],
    )
    return tuple(RunSummary(**row) for row in _rows(cur))


def _run_clause(run_id: str | None) -> tuple[str, list[Any]]:
    return ("run_id IS NULL", []) if run_id is None else ("run_id = ?", [run_id])


def _filter_clause(filters: AttemptFilters) -> tuple[str, list[Any]]:
    parts: list[str] = []
    params: list[Any] = []
    for column, value in (
        ("phase", filters.phase),
        ("agent_name", filters.agent),
        ("send_kind", filters.send_kind),
        ("input_coverage", filters.coverage),
        ("status", filters.status),
    ):
        if value is None:
            continue
        if value == NULL_VALUE:
            parts.append(f"{column} IS NULL")
        else:
            parts.append(f"{column} = ?")
            params.append(value)
    return "".join(f" AND {p}" for p in parts), params


def list_attempts(
    con: duckdb.DuckDBPyConnection,
    run_id: str | None,
    filters: AttemptFilters = AttemptFilters(),
    *,
    limit: int = PAGE_SIZE,
    offset: int = 0,
) -> AttemptPage:
    """One page of a run's attempts, filtered and sorted by start time, with the filtered total."""
    run_sql, run_params = _run_clause(run_id)
    filt_sql, filt_params = _filter_clause(filters)
    order = "DESC" if filters.newest_first else "ASC"
    cur = con.execute(
        f"""
        SELECT attempt_id, epoch_ns(started_at), epoch_ns(ended_at), phase, agent_name, send_kind,
               turn_index, session_id, input_coverage, item_count, status, input_packet_version IS NULL,
               count(*) OVER () AS total
        FROM agent_attempts WHERE {run_sql}{filt_sql}
        ORDER BY started_at {order} NULLS LAST, attempt_id {order} LIMIT ? OFFSET ?
        """,
        [*run_params, *filt_params, limit, offset],
    )
    raw = cur.fetchall()
    rows = tuple(AttemptListRow(*r[:-1]) for r in raw)
    if raw:
        total = int(raw[0][-1])
    elif offset:
        total = int(con.execute(f"SELECT count(*) FROM agent_attempts WHERE {run_sql}{filt_sql}", [*run_params, *filt_params]).fetchone()[0])
    else:
        total = 0
    return AttemptPage(rows, total, offset, limit)


def run_facets(con: duckdb.DuckDBPyConnection, run_id: str | None) -> RunFacets:
    run_sql, params = _run_clause(run_id)
    row = con.execute(
        f"""
        SELECT list(DISTINCT phase), list(DISTINCT agent_name), list(DISTINCT send_kind),
               list(DISTINCT input_coverage), list(DISTINCT status),
               bool_or(phase IS NULL), bool_or(agent_name IS NULL), bool_or(send_kind IS NULL),
               bool_or(input_coverage IS NULL), bool_or(status IS NULL)
        FROM agent_attempts WHERE {run_sql}
        """,
        params,
    ).fetchone()
    lists = []
    for values, has_null in zip(row[:5], row[5:]):
        vals: list[str | None] = sorted(v for v in (values or []) if v is not None)
        if has_null:
            vals.append(None)
        lists.append(tuple(vals))
    return RunFacets(*lists)


def run_timeline(con: duckdb.DuckDBPyConnection, run_id: str | None, *, limit: int = 2000) -> tuple[AttemptListRow, ...]:
    """The run's attempts in time order (bounded), with retry links, for the timeline picture."""
    page = list_attempts(con, run_id, AttemptFilters(), limit=limit)
    return page.rows


def run_artifact_usage(con: duckdb.DuckDBPyConnection, run_id: str | None) -> list[dict[str, Any]]:
    """Snapshot bytes of a run by artifact status and media type (from the store's own rows)."""
    run_sql, params = _run_clause(run_id)
    cur = con.execute(
        f"""
        SELECT coalesce(artifact_status, 'unknown') AS artifact_status,
               coalesce(media_type, 'unknown') AS media_type,
               count(*) AS items, sum(size_bytes) AS bytes
        FROM agent_artifacts WHERE {run_sql}
        GROUP BY ALL ORDER BY bytes DESC NULLS LAST
        """,
        params,
    )
    return _rows(cur)


def exporter_health(con: duckdb.DuckDBPyConnection) -> tuple[HealthRow, ...]:
    """The latest value of every exporter health counter (drops, spills, failed batches)."""
    cur = con.execute(
        """
        SELECT source, metric, value, epoch_ns(updated_at)
        FROM exporter_health
        QUALIFY row_number() OVER (PARTITION BY source, metric ORDER BY updated_at DESC) = 1
        ORDER BY source, metric
        """
    )
    return tuple(HealthRow(*row) for row in cur.fetchall())


def run_coverage(con: duckdb.DuckDBPyConnection, run_id: str | None) -> list[dict[str, Any]]:
    """Attempt counts of a run by phase and packet coverage."""
    run_sql, params = _run_clause(run_id)
    cur = con.execute(
        f"""
        SELECT coalesce(phase, 'not recorded') AS phase, input_coverage AS coverage, count(*) AS attempts
        FROM agent_attempts WHERE {run_sql} GROUP BY ALL ORDER BY ALL
        """,
        params,
    )
    return _rows(cur)


# --------------------------------------------------------------------------------------------
# Steps, messages, retries, where-else (tables of migration 11 are feature-detected)
# --------------------------------------------------------------------------------------------
_STEP_SELECT = (
    "attempt_id, span_id, seq, step_kind, operation_name, span_name, provider_name, request_model, "
    "response_model, epoch_ns(started_at) AS started_ns, epoch_ns(ended_at) AS ended_ns, input_tokens, "
    "output_tokens, tool_name, tool_call_id, tool_arguments, status"
)


def get_steps(con: duckdb.DuckDBPyConnection, attempt_id: str, started_ns: int | None = None) -> tuple[StepRecord, ...] | None:
    """The attempt's steps in ``seq`` order, or ``None`` when this database has no steps table."""
    sql, params = _by_attempt("agent_attempt_steps", _STEP_SELECT, attempt_id, started_ns,
                              "seq NULLS LAST, started_ns NULLS LAST, span_id")
    try:
        rows = _rows(con.execute(sql, params))
    except duckdb.CatalogException:
        return None  # older schema: steps were not recorded (not "no steps")
    return tuple(StepRecord(**row) for row in rows)


def get_messages(con: duckdb.DuckDBPyConnection, attempt_id: str) -> MessagesRecord | None:
    """The C2 messages row of the attempt, or ``None`` (no such table, or no row for it)."""
    try:
        rows = _rows(con.execute(
            "SELECT attempt_id, system_prompt, user_prompt, input_messages_json, messages_source, messages_note "
            "FROM agent_attempt_messages WHERE attempt_id = ? LIMIT 1", [attempt_id]))
    except duckdb.CatalogException:
        return None
    return MessagesRecord(**rows[0]) if rows else None


MAX_RETRY_DEPTH = 50
"""A bound on walking retry links (a corrupt cycle must not loop)."""


def run_retry_links(con: duckdb.DuckDBPyConnection, run_id: str | None, *, limit: int = 20_000) -> dict[str, str]:
    """``retry attempt id -> the attempt it retries`` for a run (bounded)."""
    run_sql, params = _run_clause(run_id)
    cur = con.execute(
        f"SELECT attempt_id, retry_of_attempt_id FROM agent_attempts WHERE {run_sql} "
        "AND retry_of_attempt_id IS NOT NULL LIMIT ?",
        [*params, limit],
    )
    return dict(cur.fetchall())


def get_operation(con: duckdb.DuckDBPyConnection, attempt: AttemptRecord,
                  session_turns: tuple[TurnRef, ...] = ()) -> tuple[RetryMember, ...]:
    """The physical attempts of ``attempt``'s logical operation (linked by retry-of), in time order.

    Retries are re-sends into the same session, so with a session the already-read session turns
    carry every link (no further scan); an attempt without a session reads its run's links.
    """
    from otel_inputs.viewer._retries import family

    if attempt.session_id is not None and session_turns:
        links = {t.attempt_id: t.retry_of_attempt_id for t in session_turns if t.retry_of_attempt_id}
    else:
        links = run_retry_links(con, attempt.run_id)
    if attempt.retry_of_attempt_id:
        links.setdefault(attempt.attempt_id, attempt.retry_of_attempt_id)
    members = family(attempt.attempt_id, links)
    if len(members) <= 1:
        return ()
    known = {t.attempt_id: t for t in session_turns}
    rows = [RetryMember(t.attempt_id, t.retry_of_attempt_id, t.started_ns, t.send_kind, t.status, t.is_legacy)
            for a, t in known.items() if a in members]
    missing = sorted(members - known.keys())
    if missing:
        cur = con.execute(
            "SELECT attempt_id, retry_of_attempt_id, epoch_ns(started_at), send_kind, status, "
            "input_packet_version IS NULL FROM agent_attempts WHERE attempt_id IN (SELECT unnest(?::VARCHAR[]))",
            [missing],
        )
        rows.extend(RetryMember(*r) for r in cur.fetchall())
    rows.sort(key=lambda m: (m.started_ns is None, m.started_ns or 0, m.attempt_id))
    return tuple(rows)


@dataclass(frozen=True)
class ElsewhereRow:
    """An input of another attempt that had the same SHA-256 or the same path."""

    attempt_id: str
    run_id: str | None
    phase: str | None
    started_ns: int | None
    seq: int
    label: str | None
    source_path: str | None
    sha256: str | None
    input_id: str | None = None  # lets the access layer tell which input of that attempt was purged


@dataclass(frozen=True)
class Elsewhere:
    rows: tuple[ElsewhereRow, ...]
    total: int


WHERE_ELSE_LIMIT = 50


def where_else(con: duckdb.DuckDBPyConnection, *, sha256: str | None = None, source_path: str | None = None,
               exclude_attempt: str | None = None, limit: int = WHERE_ELSE_LIMIT) -> Elsewhere:
    """Inputs of any run with this SHA-256 (or this path), newest first, and how many there are in all."""
    if (sha256 is None) == (source_path is None):
        raise ValueError("exactly one of sha256 or source_path")
    # Two steps: the (few) matching input rows by a column scan, then their attempts by the unique
    # attempt_id index; a join would scan every attempt row instead.  By SHA-256 the scan reads the
    # 8-byte key first (migration 13), and the full text only where the key matched or is absent.
    cols = "attempt_id, seq, label, source_path, sha256, input_id, attempt_started_at"
    if sha256 is not None:
        match = (f"SELECT {cols} FROM agent_attempt_inputs WHERE sha256_key = {sha256_key_sql('$1')} AND sha256 = $1 "
                 f"UNION ALL SELECT {cols} FROM agent_attempt_inputs WHERE sha256_key IS NULL AND sha256 = $1")
    else:
        match = f"SELECT {cols} FROM agent_attempt_inputs WHERE source_path = $1"
    hits = con.execute(
        f"SELECT attempt_id, seq, label, source_path, sha256, input_id, count(*) OVER () FROM ({match}) "
        "WHERE attempt_id IS DISTINCT FROM $2 ORDER BY attempt_started_at DESC NULLS LAST, attempt_id, seq LIMIT $3",
        [sha256 if sha256 is not None else source_path, exclude_attempt, limit],
    ).fetchall()
    if not hits:
        return Elsewhere((), 0)
    ids = sorted({h[0] for h in hits})
    meta = {
        r[0]: r[1:]
        for r in con.execute(
            "SELECT attempt_id, run_id, phase, epoch_ns(started_at) FROM agent_attempts "
            "WHERE attempt_id IN (SELECT unnest(?::VARCHAR[]))", [ids]).fetchall()
    }
    rows = tuple(
        ElsewhereRow(h[0], *meta.get(h[0], (None, None, None)), h[1], h[2], h[3], h[4], h[5]) for h in hits
    )
    return Elsewhere(rows, int(hits[0][-1]))


@dataclass(frozen=True)
class TaskRun:
    """A run that used a task SHA-256: its first attempt with that task, and how many it had."""

    run_id: str | None
    attempts: int
    first_attempt_id: str
    first_started_ns: int | None


def task_runs(con: duckdb.DuckDBPyConnection, task_sha256: str, *, limit: int = 20) -> tuple[TaskRun, ...]:
    """Runs whose attempts had this task SHA-256, newest first (bounded)."""
    cur = con.execute(
        """
        SELECT run_id, count(*), arg_min(attempt_id, started_at), min(epoch_ns(started_at)) AS first_ns
        FROM agent_attempts WHERE task_sha256 = ? GROUP BY run_id ORDER BY first_ns DESC NULLS LAST LIMIT ?
        """,
        [task_sha256, limit],
    )
    return tuple(TaskRun(*r) for r in cur.fetchall())
