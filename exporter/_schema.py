"""The DuckDB schema: small, named, ordered migrations and a schema-version table.

``otel_traces`` mirrors the OpenTelemetry Collector ClickHouse exporter column for column, so a
Parquet export of it loads into ClickHouse unchanged.  The ``agent_*`` tables are the typed view
of the same spans that the viewer and SQL users read (docs/encodings.md says how each is derived).

The tables' columns are spelled once, in ``_tables``; a migration that creates a table or adds
columns takes its DDL from there (``Table.create_sql`` / ``Table.add_columns_sql``), so the
file a migration makes and the spec the code reads cannot drift apart unnoticed.
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb

from otel_inputs.exporter._tables import (
    AGENT_ARTIFACTS, AGENT_ATTEMPT_INPUTS, AGENT_ATTEMPT_STEPS, AGENT_ATTEMPTS, AGENT_CODING_TURNS, AGENT_EXCHANGE_PARTS,
    EXPORTER_HEALTH, INGEST_PROGRESS, OTEL_LOGS, OTEL_TRACES,
)  # fmt: skip
from otel_inputs.exporter._tables import sha256_key_sql as sha256_key_sql  # re-exported: the viewer's where-else key


class SchemaError(RuntimeError):
    """The database has a schema this version of otel-inputs cannot safely use."""


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str


# The messages view of migration 11 (docs/encodings.md, contract C2): the span's own messages, else
# its GenAI log event, else those of its first model step, and which of them it took.
_MESSAGES_VIEW = """
CREATE VIEW agent_attempt_messages AS
WITH m AS (
    SELECT attempt_id, system_prompt, user_prompt, input_messages_json, messages_note,
           step_system_prompt, step_user_prompt, step_input_messages_json, step_messages_span_id,
           log_system_prompt, log_user_prompt, log_input_messages_json, log_span_id,
           (system_prompt IS NOT NULL OR user_prompt IS NOT NULL OR input_messages_json IS NOT NULL) AS own,
           (step_system_prompt IS NOT NULL OR step_user_prompt IS NOT NULL
               OR step_input_messages_json IS NOT NULL) AS step_own,
           coalesce(log_span_id = span_id, false) AS log_on_attempt,
           coalesce(log_span_id = step_messages_span_id, false) AS log_on_step
    FROM agent_attempts
)
SELECT attempt_id,
       CASE WHEN own THEN system_prompt WHEN log_on_attempt THEN log_system_prompt
            WHEN step_own THEN step_system_prompt ELSE log_system_prompt END AS system_prompt,
       CASE WHEN own THEN user_prompt WHEN log_on_attempt THEN log_user_prompt
            WHEN step_own THEN step_user_prompt ELSE log_user_prompt END AS user_prompt,
       CASE WHEN own THEN input_messages_json WHEN log_on_attempt THEN log_input_messages_json
            WHEN step_own THEN step_input_messages_json ELSE log_input_messages_json END AS input_messages_json,
       CASE WHEN own THEN 'attempt_span' WHEN log_on_attempt THEN 'log_event' ELSE 'model_step' END AS messages_source,
       nullif(concat_ws('; ',
           messages_note,
           CASE WHEN own AND log_on_attempt
                 AND ((log_user_prompt IS NOT NULL AND log_user_prompt IS DISTINCT FROM user_prompt)
                      OR (log_system_prompt IS NOT NULL AND log_system_prompt IS DISTINCT FROM system_prompt))
                THEN 'a GenAI log event for this span recorded different messages; the span''s are shown' END,
           CASE WHEN NOT own AND NOT log_on_attempt AND step_own
                THEN 'the attempt span recorded no messages: these are what its first model step (span '
                     || step_messages_span_id || ') sent' END,
           CASE WHEN NOT own AND NOT log_on_attempt AND NOT step_own
                THEN 'the attempt span recorded no messages: these are from the GenAI log event of its first model step (span '
                     || step_messages_span_id || ')' END
       ), '') AS messages_note
FROM m
WHERE own OR log_on_attempt OR step_own OR log_on_step;
"""

MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "otel_traces_clickhouse_mirror", OTEL_TRACES.create_sql()),
    Migration(2, "agent_attempts", AGENT_ATTEMPTS.create_sql()),
    Migration(3, "agent_attempt_inputs", AGENT_ATTEMPT_INPUTS.create_sql()),
    Migration(4, "agent_artifacts", AGENT_ARTIFACTS.create_sql()),
    Migration(5, "exporter_health", EXPORTER_HEALTH.create_sql()),
    # No ART index on agent_attempt_inputs: at 20 rows per span it cost ~28% of ingest throughput
    # and ~1.1 KB per span (measured); (attempt_id, seq) uniqueness is guaranteed by the row
    # derivation plus keyed replace inside one locked transaction, and tested.
    Migration(
        6,
        "lookup_indexes",
        """
        CREATE INDEX agent_attempts_run ON agent_attempts (run_id);
        CREATE UNIQUE INDEX agent_attempts_attempt ON agent_attempts (attempt_id);
        CREATE INDEX agent_artifacts_attempt ON agent_artifacts (attempt_id);
        """,
    ),
    # Instead of an index on agent_attempt_inputs(attempt_id) (~28% of ingest): every input row
    # carries its attempt's start time.  Rows arrive roughly in time order, so DuckDB's per-row-
    # group min/max zone maps prune almost every row group for ``attempt_started_at = <start>``
    # and the viewer's per-attempt lookup touches one or two row groups.  NULL for rows landed
    # before this migration (the viewer keeps a fallback query for them).
    Migration(7, "inputs_attempt_started_at", AGENT_ATTEMPT_INPUTS.add_columns_sql(7)),
    # One row per ``otel_inputs.exchange_part`` event (docs/wire.md): the logical request and the
    # observable output of an attempt, each with its own capture outcome.  ``persistence`` is the
    # state at submit ("queued" is not durable); the store's receipt is the authority later.
    # Replaced by attempt_id together with the attempt's other rows; pruned like the inputs.
    Migration(8, "agent_exchange_parts", AGENT_EXCHANGE_PARTS.create_sql()),
    # The run_id index was never used by the viewer's run queries (a run's rows are found by a
    # scan with zone maps; measured no slower without it) yet DuckDB rewrites every ART index at
    # each checkpoint, so it cost file size (blocks freed by each per-batch checkpoint).
    Migration(
        9,
        "drop_agent_attempts_run_index",
        """
        DROP INDEX IF EXISTS agent_attempts_run;
        """,
    ),
    # OTLP log records, column for column as the Collector ClickHouse exporter's ``otel_logs``
    # (GenAI content events such as ``gen_ai.client.inference.operation.details`` travel as log
    # records and are joined to their span by TraceId/SpanId).  Structured bodies and attribute
    # values land as JSON text, as that exporter writes them.
    Migration(10, "otel_logs_clickhouse_mirror", OTEL_LOGS.create_sql()),
    # Attempts and their steps, and the attempt's exact messages (docs/encodings.md).  Every GenAI
    # span first lands as an agent_attempts row; the writer then moves a span nested under an
    # attempt into agent_attempt_steps (contract C1).  The trace_id index finds a trace's landed
    # rows when a later span of it arrives (an ancestor may come after its descendants).  Messages
    # (C2) are a view over columns the writer fills from the span, its first model step and the
    # GenAI log records (settled whichever of span and log record lands first, exporter/_messages.py).
    Migration(11, "attempt_steps_and_messages",
              AGENT_ATTEMPTS.add_columns_sql(11) + "CREATE INDEX agent_attempts_trace ON agent_attempts (trace_id);\n"
              + AGENT_ATTEMPT_STEPS.create_sql() + _MESSAGES_VIEW),
    # "Where else was this item?" finds an input by SHA-256 among every attempt's.  A scan of the
    # 64-character strings costs ~0.15 s alone at 10M rows and 0.3-0.8 s on a loaded host; an ART
    # index on sha256 answers in ~7 ms but made each 10k-row insert ~30x and each checkpoint ~7x
    # slower at 10M rows (measured), so instead each row carries an 8-byte key of its hash
    # (``sha256_key_sql``), written with the row, that the viewer scans first (~50-70 ms loaded).
    # Rows landed before this migration keep NULL and are still found (the viewer also scans the
    # row groups that hold unkeyed rows; zone maps skip every other one).
    Migration(13, "inputs_sha256_key", AGENT_ATTEMPT_INPUTS.add_columns_sql(13)),
    # The sink's write-ahead log (<db>.ingest/): the highest record landed, written in the same
    # transaction as the record's rows, so a restart replays exactly the records not yet landed
    # (log rows have no key to replace by, so a replayed record must never land twice).
    Migration(14, "ingest_write_ahead_progress", INGEST_PROGRESS.create_sql()),
    # Coding agents (docs/coding-agents.md): an instruction file's loaded / delivered facts and the store
    # attempt of its snapshot; a step's auxiliary reason and request record; one row per coding-agent
    # turn (indexed by session for lineage and by turn key for late hook records).
    Migration(15, "coding_agent_turns",
              AGENT_ATTEMPT_INPUTS.add_columns_sql(15) + AGENT_ATTEMPT_STEPS.add_columns_sql(15)
              + AGENT_CODING_TURNS.create_sql()
              + "CREATE INDEX agent_coding_turns_session ON agent_coding_turns (session_id);\n"
              + "CREATE INDEX agent_coding_turns_key ON agent_coding_turns (turn_key);\n"),
)

SCHEMA_VERSION = MIGRATIONS[-1].version


_VERSION_TABLE = "otel_inputs_schema"


def current_version(con: duckdb.DuckDBPyConnection) -> int:
    """The highest applied migration, 0 for an empty database."""
    row = con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = ?", [_VERSION_TABLE]).fetchone()
    assert row is not None  # an aggregate without GROUP BY returns one row
    if not row[0]:
        return 0
    row = con.execute(f"SELECT max(version) FROM {_VERSION_TABLE}").fetchone()
    assert row is not None
    return int(row[0] or 0)


def check_version(con: duckdb.DuckDBPyConnection) -> int:
    """Raise :class:`SchemaError` for a schema newer than this code; return the version."""
    version = current_version(con)
    if version > SCHEMA_VERSION:
        raise SchemaError(
            f"database schema version {version} is newer than this otel-inputs understands "
            f"({SCHEMA_VERSION}); upgrade otel-inputs or use another database file"
        )
    if version:
        known = {m.version: m.name for m in MIGRATIONS}
        for v, name in con.execute(f"SELECT version, name FROM {_VERSION_TABLE}").fetchall():
            if known.get(v) != name:
                raise SchemaError(
                    f"database records unknown migration {v} ({name!r}); "
                    "it was not created by this otel-inputs"
                )
    return version


def migrate(con: duckdb.DuckDBPyConnection) -> int:
    """Apply every pending migration, each in its own transaction; return the final version."""
    con.execute(
        f"CREATE TABLE IF NOT EXISTS {_VERSION_TABLE} "
        "(version INTEGER PRIMARY KEY, name VARCHAR NOT NULL, applied_at TIMESTAMP NOT NULL)"
    )
    check_version(con)
    # By set, not by the highest applied: migrations are numbered per team and may land out of
    # order, so a database that has 14 can still lack 13.
    applied = {int(v) for (v,) in con.execute(f"SELECT version FROM {_VERSION_TABLE}").fetchall()}
    for migration in MIGRATIONS:
        if migration.version in applied:
            continue
        con.execute("BEGIN TRANSACTION")
        try:
            con.execute(migration.sql)
            con.execute(
                f"INSERT INTO {_VERSION_TABLE} VALUES (?, ?, now())",
                [migration.version, migration.name],
            )
            con.execute("COMMIT")
        except Exception:
            con.execute("ROLLBACK")
            raise
    return SCHEMA_VERSION
