"""Every SQL the viewer runs, written once for both backends (:mod:`otel_inputs.viewer._backend`).

The viewer never caches a connection: each page refresh opens the backend (a DuckDB file
read-only, or a ClickHouse database), runs the queries of this module and closes it, so exporters
can write between refreshes.  A missing, locked, unreachable or newer-schema database becomes
:class:`DbUnavailable` with an owner-facing message.  A table one backend does not have reads as
``None`` ("not recorded on this backend"), never as no rows.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import fields
from typing import Any

from otel_inputs.exporter import output_tool_calls
from otel_inputs.viewer._backend import Backend, DbUnavailable, open_backend, read_only
from otel_inputs.viewer._dispatch import Dispatch, this_dispatch
from otel_inputs.viewer._lineage import inferred_turn_index, previous_turn_id, prior_turns
from otel_inputs.viewer._records import (
    AttemptBundle,
    AttemptFilters,
    AttemptListRow,
    AttemptPage,
    AttemptRow,
    CODING_RUNTIMES,
    Elsewhere,
    ElsewhereRow,
    HealthRow,
    InputRecord,
    MessagesRecord,
    PartRecord,
    RetryMember,
    RunFacets,
    RunSummary,
    ServiceRecords,
    SessionRun,
    StepRecord,
    TaskRun,
    TurnRef,
)
from otel_inputs.viewer._retries import family

__all__ = ["Backend", "DbUnavailable", "open_backend", "read_only"]

PAGE_SIZE = 50
LEGACY_RECOVERY_LOOKBACK = 20
"""How many strictly prior same-session turns a legacy correction may look back through."""
HOOK_SERVICE = "otel-inputs-hook"  # service.name of the otel-inputs hooks' records (otel_inputs/hooks/worker.py)
NULL_VALUE = "\x00not recorded"
"""An :class:`~otel_inputs.viewer._records.AttemptFilters` value that means "not recorded"."""


# --------------------------------------------------------------------------------------------
# SQL
# --------------------------------------------------------------------------------------------
_ATTEMPT_COLUMNS = [f.name for f in fields(AttemptRow) if f.name not in ("started_ns", "ended_ns")]
_ATTEMPT_SELECT = ", ".join(_ATTEMPT_COLUMNS) + ", epoch_ns(started_at) AS started_ns, epoch_ns(ended_at) AS ended_ns"
_INPUT_COLUMNS = [
    f.name
    for f in fields(InputRecord)
    if f.name not in ("captured_ns", "store_artifact_status", "store_status_reason", "placement")
]
_INPUT_SELECT = ", ".join(_INPUT_COLUMNS) + ", epoch_ns(captured_at) AS captured_ns"


def get_attempt(db: Backend, attempt_id: str) -> AttemptRow | None:
    sql, params = db.by_attempt("agent_attempts", _ATTEMPT_SELECT, attempt_id, None, None, "started_ns, span_id")
    rows = db.dicts(sql + " LIMIT 1", params)
    return AttemptRow(**rows[0]) if rows else None


def get_inputs(db: Backend, attempt_id: str, started_ns: int | None = None,
               trace_id: str | None = None) -> tuple[InputRecord, ...]:
    """The attempt's input rows in ``seq`` order, each with the store's artifact status as landed.

    ``started_ns`` / ``trace_id`` are the attempt's (``agent_attempts``); with them the lookup reads
    only the attempt's part of the table (:meth:`Backend.by_attempt`); without, every row is scanned.
    The store's statuses (``agent_artifacts``) exist on DuckDB only: elsewhere they are left unset,
    and the store itself is asked (``overlay_store``).
    """
    sql, params = db.by_attempt("agent_attempt_inputs", _INPUT_SELECT, attempt_id, started_ns, trace_id,
                                "seq, input_id")
    rows = db.dicts(sql, params)
    store: dict[str, tuple[str | None, str | None]] = {}
    if db.has("agent_artifacts"):
        for input_id, status, reason in db.rows(
            "SELECT input_id, artifact_status, status_reason FROM agent_artifacts WHERE attempt_id = ? "
            "ORDER BY updated_at NULLS FIRST",
            [attempt_id],
        ):
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


def get_parts(db: Backend, attempt_id: str, started_ns: int | None = None,
              trace_id: str | None = None) -> tuple[PartRecord, ...]:
    """The attempt's exchange-part events as landed, logical request first, in recorded order."""
    from otel_inputs.types import PartName

    sql, params = db.by_attempt("agent_exchange_parts", _PART_SELECT, attempt_id, started_ns, trace_id,
                                "recorded_ns NULLS LAST")
    rank = {PartName.LOGICAL_REQUEST.value: 0, PartName.OBSERVABLE_OUTPUT.value: 1}
    parts = [PartRecord(**row) for row in db.dicts(sql, params)]
    return tuple(sorted(parts, key=lambda p: rank.get(p.part_name or "", 2)))  # stable: recorded order kept


def get_session_turns(db: Backend, run_id: str | None, session_id: str | None) -> tuple[TurnRef, ...]:
    """Every attempt of ``run_id`` with ``session_id`` (without a run id: every attempt of the session
    that has none either, as frameworks on their own telemetry send); empty without a session id."""
    if session_id is None:
        return ()
    scope, scope_params = db.session_scope(session_id)
    run_sql, run_params = _run_clause(run_id)
    rows = db.rows(
        "SELECT attempt_id, epoch_ns(started_at), epoch_ns(ended_at), phase, send_kind, turn_index, "
        "input_packet_version IS NULL, NULL, retry_of_attempt_id, status, trace_id FROM agent_attempts "
        f"WHERE {scope}{run_sql} AND session_id = ? "
        "ORDER BY started_at NULLS LAST, attempt_id",
        [*scope_params, *run_params, session_id],
    )
    return tuple(TurnRef(*_legacy_flag(row, 6)) for row in rows)


def _legacy_flag(row: Sequence[Any], i: int) -> tuple[Any, ...]:
    """``row`` with its ``IS NULL`` column as a bool (ClickHouse answers 0/1)."""
    return (*row[:i], bool(row[i]), *row[i + 1:])


def get_user_prompts(db: Backend, attempt_ids: Sequence[str]) -> dict[str, str]:
    if not attempt_ids:
        return {}
    rows = db.rows(f"SELECT attempt_id, user_prompt FROM agent_attempts WHERE {db.in_list('attempt_id')}",
                   [list(attempt_ids)])
    return {a: p for a, p in rows if p is not None}


def load_attempt(db: Backend, attempt_id: str) -> AttemptBundle | None:
    """All queries of one attempt page: the attempt, its inputs, its session, the previous turn's inputs."""
    attempt = get_attempt(db, attempt_id)
    if attempt is None:
        return None
    inputs = get_inputs(db, attempt_id, attempt.started_ns, attempt.trace_id)
    parts = get_parts(db, attempt_id, attempt.started_ns, attempt.trace_id)
    turns = get_session_turns(db, attempt.run_id, attempt.session_id)
    prior = prior_turns(attempt, turns)
    prev_id = previous_turn_id(attempt, prior)
    previous_inputs = None
    if prev_id:
        turn = next((t for t in turns if t.attempt_id == prev_id), None)
        if turn is not None:
            prev_start, prev_trace = turn.started_ns, turn.trace_id
        else:
            prev = get_attempt(db, prev_id)
            prev_start, prev_trace = (prev.started_ns, prev.trace_id) if prev is not None else (None, None)
        previous_inputs = get_inputs(db, prev_id, prev_start, prev_trace)
    prompts: dict[str, str] = {}
    if attempt.is_legacy and prior.turns:
        same_phase = [t.attempt_id for t in prior.turns if t.phase == attempt.phase]
        prompts = get_user_prompts(db, same_phase[-LEGACY_RECOVERY_LOOKBACK:])
    steps = get_steps(db, attempt_id, attempt.started_ns, attempt.trace_id)
    messages = get_messages(db, attempt_id, attempt.trace_id)
    operation = get_operation(db, attempt, turns)
    dispatch = _dispatch(db, attempt, messages, prev_id, turns)
    return AttemptBundle(attempt, inputs, turns, prev_id, previous_inputs, prompts, parts, steps, messages,
                         operation, dispatch=dispatch, inferred_turn_index=inferred_turn_index(attempt, prior))


def _dispatch(db: Backend, attempt: AttemptRow, messages: MessagesRecord | None, prev_id: str | None,
              turns: tuple[TurnRef, ...]) -> Dispatch:  # fmt: skip
    """This dispatch's new user message, told apart from the conversation it inherited (viewer/_dispatch.py)."""
    recorded = messages.input_messages_json if messages is not None else None
    user = messages.user_prompt if messages is not None else attempt.user_prompt
    previous_json = None
    if prev_id is not None and recorded is not None:
        turn = next((t for t in turns if t.attempt_id == prev_id), None)
        previous = get_messages(db, prev_id, turn.trace_id if turn is not None else None)
        previous_json = previous.input_messages_json if previous is not None else None
    return this_dispatch(recorded, user, previous_json, prev_id)


def list_runs(db: Backend, *, limit: int = PAGE_SIZE, offset: int = 0) -> tuple[RunSummary, ...]:
    rows = db.dicts(
        f"""
        SELECT run_id, CASE WHEN run_id IS NULL THEN session_id END AS session_key,
               count(*) AS attempts, count(DISTINCT session_id) AS sessions,
               min(epoch_ns(started_at)) AS first_ns,
               max(epoch_ns(coalesce(ended_at, started_at))) AS last_ns,
               {db.distinct_join('phase')} AS phases,
               count(*) FILTER (WHERE input_coverage = 'complete') AS complete,
               count(*) FILTER (WHERE input_coverage = 'partial') AS partial,
               count(*) FILTER (WHERE input_coverage NOT IN ('complete', 'partial')) AS not_recorded
        FROM agent_attempts GROUP BY run_id, CASE WHEN run_id IS NULL THEN session_id END
        ORDER BY last_ns DESC NULLS LAST, run_id, session_key LIMIT ? OFFSET ?
        """,
        [limit, offset],
    )
    return tuple(RunSummary(**row) for row in rows)


def _run_clause(run_id: str | None) -> tuple[str, list[Any]]:
    if isinstance(run_id, SessionRun):
        return "run_id IS NULL AND session_id = ?", [str(run_id)]
    return ("run_id IS NULL", []) if run_id is None else ("run_id = ?", [run_id])


UNMAPPED_DOC_NOTE = ("Which encodings otel-inputs reads, and what it reads from each: docs/encodings.md in the "
                     "otel-inputs repository.")


def services_without_attempts(db: Backend) -> tuple[ServiceRecords, ...]:
    """Each service whose spans or log records landed while no attempt was derived from its spans:
    telemetry of an encoding that is not read, never shown as "nothing recorded"."""
    # Spans by id: a retried Collector export stores a span twice on ClickHouse, and it is one span.
    spans = dict(db.rows('SELECT "ServiceName", count(DISTINCT "TraceId" || "SpanId") FROM otel_traces '
                         'GROUP BY "ServiceName"', []))
    logs = dict(db.rows('SELECT "ServiceName", count(*) FROM otel_logs GROUP BY "ServiceName"', [])) \
        if db.has("otel_logs") else {}
    mapped = {r[0] for r in db.rows("SELECT DISTINCT service_name FROM agent_attempts", [])}
    if db.rows(f"SELECT 1 FROM agent_attempts WHERE source_format IN ({', '.join(repr(f) for f in CODING_RUNTIMES)}) LIMIT 1",
               []):
        mapped.add(HOOK_SERVICE)  # the otel-inputs hook's records are read with the coding agents' turns
    out = [ServiceRecords(name or None, int(spans.get(name, 0)), int(logs.get(name, 0)))
           for name in sorted(set(spans) | set(logs), key=lambda x: x or "")
           if (name or None) not in mapped]  # fmt: skip
    return tuple(out)


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
    db: Backend,
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
    raw = db.rows(
        f"""
        SELECT attempt_id, epoch_ns(started_at), epoch_ns(ended_at), phase, agent_name, send_kind,
               turn_index, session_id, input_coverage, item_count, status, input_packet_version IS NULL,
               count(*) OVER () AS total
        FROM agent_attempts WHERE {run_sql}{filt_sql}
        ORDER BY started_at {order} NULLS LAST, attempt_id {order} LIMIT ? OFFSET ?
        """,
        [*run_params, *filt_params, limit, offset],
    )
    rows = tuple(AttemptListRow(*_legacy_flag(r[:-1], 11)) for r in raw)
    if raw:
        total = int(raw[0][-1])
    elif offset:
        total = int(db.rows(f"SELECT count(*) FROM agent_attempts WHERE {run_sql}{filt_sql}",
                            [*run_params, *filt_params])[0][0])
    else:
        total = 0
    return AttemptPage(rows, total, offset, limit)


def run_facets(db: Backend, run_id: str | None) -> RunFacets:
    """The values each filter can take in this run (``None`` listed last when some row lacks it)."""
    run_sql, params = _run_clause(run_id)
    # The distinct combinations are few (phases x agents x kinds x coverages x statuses); folding
    # them here keeps the SQL the same on both engines.
    combos = db.rows(
        f"SELECT DISTINCT phase, agent_name, send_kind, input_coverage, status FROM agent_attempts WHERE {run_sql}",
        params,
    )
    lists = []
    for i in range(5):
        values = {c[i] for c in combos}
        vals: list[str | None] = sorted(v for v in values if v is not None)
        if None in values:
            vals.append(None)
        lists.append(tuple(vals))
    return RunFacets(*lists)


def run_timeline(db: Backend, run_id: str | None, *, limit: int = 2000) -> tuple[AttemptListRow, ...]:
    """The run's attempts in time order (bounded), with retry links, for the timeline picture."""
    page = list_attempts(db, run_id, AttemptFilters(), limit=limit)
    return page.rows


def run_artifact_usage(db: Backend, run_id: str | None) -> list[dict[str, Any]] | None:
    """Snapshot bytes of a run by artifact status and media type (from the store's own rows);
    ``None`` where the backend has no ``agent_artifacts`` table (not recorded there)."""
    if not db.has("agent_artifacts"):
        return None
    run_sql, params = _run_clause(run_id)
    return db.dicts(
        f"""
        SELECT coalesce(artifact_status, 'unknown') AS artifact_status,
               coalesce(media_type, 'unknown') AS media_type,
               count(*) AS items, sum(size_bytes) AS bytes
        FROM agent_artifacts WHERE {run_sql}
        GROUP BY ALL ORDER BY bytes DESC NULLS LAST
        """,
        params,
    )


def exporter_health(db: Backend) -> tuple[HealthRow, ...] | None:
    """The latest value of every exporter health counter (drops, spills, failed batches); ``None``
    where the backend has no ``exporter_health`` table (the stock ClickHouse exporter keeps none)."""
    if not db.has("exporter_health"):
        return None
    rows = db.rows(
        """
        SELECT source, metric, value, epoch_ns(updated_at)
        FROM exporter_health
        QUALIFY row_number() OVER (PARTITION BY source, metric ORDER BY updated_at DESC) = 1
        ORDER BY source, metric
        """
    )
    return tuple(HealthRow(*row) for row in rows)


def run_coverage(db: Backend, run_id: str | None) -> list[dict[str, Any]]:
    """Attempt counts of a run by phase and packet coverage."""
    run_sql, params = _run_clause(run_id)
    return db.dicts(
        f"""
        SELECT coalesce(phase, 'not recorded') AS phase, input_coverage AS coverage, count(*) AS attempts
        FROM agent_attempts WHERE {run_sql} GROUP BY phase, coverage ORDER BY phase, coverage
        """,
        params,
    )


# --------------------------------------------------------------------------------------------
# Steps, messages, retries, where-else (tables of migration 11 are feature-detected)
# --------------------------------------------------------------------------------------------
_STEP_SELECT = (
    "attempt_id, span_id, seq, step_kind, operation_name, span_name, provider_name, request_model, "
    "response_model, epoch_ns(started_at) AS started_ns, epoch_ns(ended_at) AS ended_ns, input_tokens, "
    "output_tokens, tool_name, tool_call_id, tool_arguments, status, auxiliary, request_record"
)


def get_steps(db: Backend, attempt_id: str, started_ns: int | None = None,
              trace_id: str | None = None) -> tuple[StepRecord, ...] | None:
    """The attempt's steps in ``seq`` order, or ``None`` when this database has no steps table."""
    if not db.has("agent_attempt_steps"):
        return None  # older schema: steps were not recorded (not "no steps")
    sql, params = db.by_attempt("agent_attempt_steps", _STEP_SELECT, attempt_id, started_ns, trace_id,
                                "seq NULLS LAST, started_ns NULLS LAST, span_id")
    steps = tuple(StepRecord(**row) for row in db.dicts(sql, params))
    return _arguments_from_model_calls(db, steps, trace_id)


def _arguments_from_model_calls(db: Backend, steps: tuple[StepRecord, ...], trace_id: str | None) -> tuple[StepRecord, ...]:
    """A tool step that recorded no arguments takes them from the tool call of the model step that asked
    for it (same call id in that step's ``gen_ai.output.messages``, on its span or its log record), and
    says which step: ADK with content on log events leaves them only there (docs/encodings.md)."""
    from otel_inputs import names

    wanted = {s.tool_call_id for s in steps if s.step_kind == "tool_call" and s.tool_arguments is None and s.tool_call_id}
    models = sorted({s.span_id for s in steps if s.step_kind == "model_call"})
    if not wanted or not models or not trace_id or not db.has("otel_traces"):
        return steps
    found: dict[str, tuple[str, str]] = {}
    sources = [("otel_traces", '"SpanAttributes"')] + ([("otel_logs", '"LogAttributes"')] if db.has("otel_logs") else [])
    span_in = db.in_list('"SpanId"')
    for table, column in sources:
        rows = db.rows(f'SELECT "SpanId", {column}[?] FROM {table} WHERE "TraceId" = ? AND {span_in}',
                       [names.GEN_AI_OUTPUT_MESSAGES, trace_id, models])
        for span_id, raw in rows:
            for call_id, args in output_tool_calls(raw if isinstance(raw, str) and raw else None).items():
                found.setdefault(call_id, (args, span_id))
    return tuple(dataclasses.replace(s, tool_arguments=found[s.tool_call_id][0], arguments_from=found[s.tool_call_id][1])
                 if s.step_kind == "tool_call" and s.tool_arguments is None and s.tool_call_id in found else s
                 for s in steps)  # fmt: skip


def get_messages(db: Backend, attempt_id: str, trace_id: str | None = None) -> MessagesRecord | None:
    """The C2 messages row of the attempt, or ``None`` (no such table, or no row for it)."""
    if not db.has("agent_attempt_messages"):
        return None
    cols = "attempt_id, system_prompt, user_prompt, input_messages_json, messages_source, messages_note"
    sql, params = db.by_attempt("agent_attempt_messages", cols, attempt_id, None, trace_id, "attempt_id")
    rows = db.dicts(sql, params)
    return MessagesRecord(**rows[0]) if rows else None


def run_retry_links(db: Backend, run_id: str | None, *, limit: int = 20_000) -> dict[str, str]:
    """``retry attempt id -> the attempt it retries`` for a run (bounded)."""
    run_sql, params = _run_clause(run_id)
    return dict(db.rows(
        f"SELECT attempt_id, retry_of_attempt_id FROM agent_attempts WHERE {run_sql} "
        "AND retry_of_attempt_id IS NOT NULL LIMIT ?",
        [*params, limit],
    ))


def get_operation(db: Backend, attempt: AttemptRow,
                  session_turns: tuple[TurnRef, ...] = ()) -> tuple[RetryMember, ...]:
    """The physical attempts of ``attempt``'s logical operation (linked by retry-of), in time order.

    Retries are re-sends into the same session, so with a session the already-read session turns
    carry every link (no further scan); an attempt without a session reads its run's links.
    """
    if attempt.session_id is not None and session_turns:
        links = {t.attempt_id: t.retry_of_attempt_id for t in session_turns if t.retry_of_attempt_id}
    else:
        links = run_retry_links(db, attempt.run_id)
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
        found = db.rows(
            "SELECT attempt_id, retry_of_attempt_id, epoch_ns(started_at), send_kind, status, "
            f"input_packet_version IS NULL FROM agent_attempts WHERE {db.in_list('attempt_id')}",
            [missing],
        )
        rows.extend(RetryMember(*_legacy_flag(r, 5)) for r in found)
    rows.sort(key=lambda m: (m.started_ns is None, m.started_ns or 0, m.attempt_id))
    return tuple(rows)


WHERE_ELSE_LIMIT = 50


def where_else(db: Backend, *, sha256: str | None = None, source_path: str | None = None,
               exclude_attempt: str | None = None, limit: int = WHERE_ELSE_LIMIT) -> Elsewhere:
    """Inputs of any run with this SHA-256 (or this path), newest first, and how many there are in all."""
    if (sha256 is None) == (source_path is None):
        raise ValueError("exactly one of sha256 or source_path")
    # Two steps: the (few) matching input rows by a column scan, then their attempts by the unique
    # attempt_id index; a join would scan every attempt row instead.
    cols = "attempt_id, seq, label, source_path, sha256, input_id, attempt_started_at"
    if sha256 is not None:
        match, n_params = db.sha256_match(cols, "agent_attempt_inputs")
        match_params: list[str | None] = [sha256] * n_params
    else:
        match, match_params = f"SELECT {cols} FROM agent_attempt_inputs WHERE source_path = ?", [source_path]
    hits = db.rows(
        f"SELECT attempt_id, seq, label, source_path, sha256, input_id, count(*) OVER () AS total FROM ({match}) AS m "
        "WHERE attempt_id IS DISTINCT FROM ? ORDER BY attempt_started_at DESC NULLS LAST, attempt_id, seq LIMIT ?",
        [*match_params, exclude_attempt, limit],
    )
    if not hits:
        return Elsewhere((), 0)
    ids = sorted({h[0] for h in hits})
    meta = {
        r[0]: (r[1], r[2], r[3])
        for r in db.rows(
            f"SELECT attempt_id, run_id, phase, epoch_ns(started_at) FROM agent_attempts WHERE {db.in_list('attempt_id')}",
            [ids])
    }
    rows = tuple(
        ElsewhereRow(h[0], *meta.get(h[0], (None, None, None)), h[1], h[2], h[3], h[4], h[5]) for h in hits
    )
    return Elsewhere(rows, int(hits[0][-1]))


def task_runs(db: Backend, task_sha256: str, *, limit: int = 20) -> tuple[TaskRun, ...]:
    """Runs whose attempts had this task SHA-256, newest first (bounded)."""
    rows = db.rows(
        """
        SELECT run_id, count(*), argMin(attempt_id, started_at), min(epoch_ns(started_at)) AS first_ns
        FROM agent_attempts WHERE task_sha256 = ? GROUP BY run_id ORDER BY first_ns DESC NULLS LAST LIMIT ?
        """,
        [task_sha256, limit],
    )
    return tuple(TaskRun(*r) for r in rows)
