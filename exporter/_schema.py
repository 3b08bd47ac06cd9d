"""The DuckDB schema: small, named, ordered migrations and a schema-version table.

``otel_traces`` mirrors the OpenTelemetry Collector ClickHouse exporter column for column, so a
Parquet export of it loads into ClickHouse unchanged.  The ``agent_*`` tables are the typed view
of the same spans that the viewer and SQL users read; their columns are named as in seed 000.
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb


class SchemaError(RuntimeError):
    """The database has a schema this version of otel-inputs cannot safely use."""


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str


_MAP = "MAP(VARCHAR, VARCHAR)"

_MIGRATION_11 = """
ALTER TABLE agent_attempts ADD COLUMN parent_span_id VARCHAR;
ALTER TABLE agent_attempts ADD COLUMN span_name VARCHAR;
ALTER TABLE agent_attempts ADD COLUMN operation_name VARCHAR;
ALTER TABLE agent_attempts ADD COLUMN step_kind VARCHAR;
ALTER TABLE agent_attempts ADD COLUMN response_model VARCHAR;
ALTER TABLE agent_attempts ADD COLUMN input_tokens BIGINT;
ALTER TABLE agent_attempts ADD COLUMN output_tokens BIGINT;
ALTER TABLE agent_attempts ADD COLUMN tool_name VARCHAR;
ALTER TABLE agent_attempts ADD COLUMN tool_call_id VARCHAR;
ALTER TABLE agent_attempts ADD COLUMN tool_arguments VARCHAR;
ALTER TABLE agent_attempts ADD COLUMN input_messages_json VARCHAR;
ALTER TABLE agent_attempts ADD COLUMN messages_note VARCHAR;
ALTER TABLE agent_attempts ADD COLUMN step_system_prompt VARCHAR;
ALTER TABLE agent_attempts ADD COLUMN step_user_prompt VARCHAR;
ALTER TABLE agent_attempts ADD COLUMN step_input_messages_json VARCHAR;
ALTER TABLE agent_attempts ADD COLUMN step_messages_span_id VARCHAR;
ALTER TABLE agent_attempts ADD COLUMN log_system_prompt VARCHAR;
ALTER TABLE agent_attempts ADD COLUMN log_user_prompt VARCHAR;
ALTER TABLE agent_attempts ADD COLUMN log_input_messages_json VARCHAR;
ALTER TABLE agent_attempts ADD COLUMN log_span_id VARCHAR;
CREATE INDEX agent_attempts_trace ON agent_attempts (trace_id);
CREATE TABLE agent_attempt_steps (
    attempt_id VARCHAR NOT NULL,
    span_id VARCHAR NOT NULL,
    trace_id VARCHAR,
    parent_span_id VARCHAR,
    seq INTEGER,
    step_kind VARCHAR,
    operation_name VARCHAR,
    span_name VARCHAR,
    provider_name VARCHAR,
    request_model VARCHAR,
    response_model VARCHAR,
    started_at TIMESTAMP_NS,
    ended_at TIMESTAMP_NS,
    input_tokens BIGINT,
    output_tokens BIGINT,
    tool_name VARCHAR,
    tool_call_id VARCHAR,
    tool_arguments VARCHAR,
    status VARCHAR,
    attempt_started_at TIMESTAMP_NS
);
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
    Migration(
        1,
        "otel_traces_clickhouse_mirror",
        f"""
        CREATE TABLE otel_traces (
            "Timestamp" TIMESTAMP_NS,
            "TraceId" VARCHAR,
            "SpanId" VARCHAR,
            "ParentSpanId" VARCHAR,
            "TraceState" VARCHAR,
            "SpanName" VARCHAR,
            "SpanKind" VARCHAR,
            "ServiceName" VARCHAR,
            "ResourceAttributes" {_MAP},
            "ScopeName" VARCHAR,
            "ScopeVersion" VARCHAR,
            "SpanAttributes" {_MAP},
            "Duration" UBIGINT,
            "StatusCode" VARCHAR,
            "StatusMessage" VARCHAR,
            "Events.Timestamp" TIMESTAMP_NS[],
            "Events.Name" VARCHAR[],
            "Events.Attributes" {_MAP}[],
            "Links.TraceId" VARCHAR[],
            "Links.SpanId" VARCHAR[],
            "Links.TraceState" VARCHAR[],
            "Links.Attributes" {_MAP}[]
        );
        """,
    ),
    Migration(
        2,
        "agent_attempts",
        """
        CREATE TABLE agent_attempts (
            attempt_id VARCHAR NOT NULL,
            run_id VARCHAR,
            session_id VARCHAR,
            phase VARCHAR,
            agent_name VARCHAR,
            provider_name VARCHAR,
            request_model VARCHAR,
            task_prompt VARCHAR,
            task_source_kind VARCHAR,
            task_source_path VARCHAR,
            task_size_bytes BIGINT,
            task_sha256 VARCHAR,
            send_kind VARCHAR,
            turn_index INTEGER,
            previous_turn_attempt_id VARCHAR,
            retry_of_attempt_id VARCHAR,
            system_prompt VARCHAR,
            user_prompt VARCHAR,
            input_packet_version INTEGER,
            input_coverage VARCHAR NOT NULL,
            coverage_reason VARCHAR,
            declared_input_count INTEGER,
            captured_input_count INTEGER,
            omitted_input_count INTEGER,
            item_count INTEGER,
            capture_decision VARCHAR,
            capture_gap_reason VARCHAR,
            started_at TIMESTAMP_NS,
            ended_at TIMESTAMP_NS,
            status VARCHAR,
            status_message VARCHAR,
            trace_id VARCHAR,
            span_id VARCHAR,
            service_name VARCHAR,
            source_format VARCHAR,
            dropped_events_count INTEGER,
            dropped_attributes_count INTEGER
        );
        """,
    ),
    Migration(
        3,
        "agent_attempt_inputs",
        """
        CREATE TABLE agent_attempt_inputs (
            input_id VARCHAR,
            attempt_id VARCHAR NOT NULL,
            seq INTEGER NOT NULL,
            label VARCHAR,
            source_kind VARCHAR,
            delivery_mode VARCHAR,
            source_path VARCHAR,
            snapshot_ref VARCHAR,
            media_type VARCHAR,
            preview_kind VARCHAR,
            size_bytes BIGINT,
            sha256 VARCHAR,
            capture_status VARCHAR,
            artifact_status VARCHAR,
            detail VARCHAR,
            captured_at TIMESTAMP_NS,
            row_problem VARCHAR
        );
        """,
    ),
    Migration(
        4,
        "agent_artifacts",
        """
        CREATE TABLE agent_artifacts (
            attempt_id VARCHAR NOT NULL,
            input_id VARCHAR,
            run_id VARCHAR,
            session_id VARCHAR,
            seq INTEGER,
            label VARCHAR,
            source_kind VARCHAR,
            delivery_mode VARCHAR,
            source_path VARCHAR,
            sha256 VARCHAR,
            size_bytes BIGINT,
            snapshot_ref VARCHAR,
            media_type VARCHAR,
            preview_kind VARCHAR,
            capture_status VARCHAR,
            artifact_status VARCHAR,
            status_reason VARCHAR,
            detail VARCHAR,
            captured_at TIMESTAMP_NS,
            manifest_coverage VARCHAR,
            manifest_decision VARCHAR,
            manifest_gap_reason VARCHAR,
            manifest_committed_at TIMESTAMP_NS,
            row_problem VARCHAR,
            updated_at TIMESTAMP
        );
        """,
    ),
    Migration(
        5,
        "exporter_health",
        """
        CREATE TABLE exporter_health (
            source VARCHAR NOT NULL,
            metric VARCHAR NOT NULL,
            value BIGINT NOT NULL,
            updated_at TIMESTAMP NOT NULL
        );
        """,
    ),
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
    Migration(
        7,
        "inputs_attempt_started_at",
        """
        ALTER TABLE agent_attempt_inputs ADD COLUMN attempt_started_at TIMESTAMP_NS;
        """,
    ),
    # One row per ``otel_inputs.exchange_part`` event (seed 001 §2): the logical request and the
    # observable output of an attempt, each with its own capture outcome.  ``persistence`` is the
    # state at submit ("queued" is not durable); the store's receipt is the authority later.
    # Replaced by attempt_id together with the attempt's other rows; pruned like the inputs.
    Migration(
        8,
        "agent_exchange_parts",
        """
        CREATE TABLE agent_exchange_parts (
            attempt_id VARCHAR NOT NULL,
            part_name VARCHAR,
            capture VARCHAR,
            reason VARCHAR,
            dispatch VARCHAR,
            ref VARCHAR,
            sha256 VARCHAR,
            size_bytes BIGINT,
            persistence VARCHAR,
            detail VARCHAR,
            recorded_at TIMESTAMP_NS,
            attempt_started_at TIMESTAMP_NS,
            row_problem VARCHAR
        );
        """,
    ),
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
    Migration(
        10,
        "otel_logs_clickhouse_mirror",
        f"""
        CREATE TABLE otel_logs (
            "Timestamp" TIMESTAMP_NS,
            "TimestampTime" TIMESTAMP,
            "TraceId" VARCHAR,
            "SpanId" VARCHAR,
            "TraceFlags" UTINYINT,
            "SeverityText" VARCHAR,
            "SeverityNumber" UTINYINT,
            "ServiceName" VARCHAR,
            "Body" VARCHAR,
            "ResourceSchemaUrl" VARCHAR,
            "ResourceAttributes" {_MAP},
            "ScopeSchemaUrl" VARCHAR,
            "ScopeName" VARCHAR,
            "ScopeVersion" VARCHAR,
            "ScopeAttributes" {_MAP},
            "LogAttributes" {_MAP},
            "EventName" VARCHAR
        );
        """,
    ),
    # Attempts and their steps, and the attempt's exact messages (docs/encodings.md).  Every GenAI
    # span first lands as an agent_attempts row; the writer then moves a span nested under an
    # attempt into agent_attempt_steps (contract C1).  The trace_id index finds a trace's landed
    # rows when a later span of it arrives (an ancestor may come after its descendants).  Messages
    # (C2) are a view over columns the writer fills from the span, its first model step and the
    # GenAI log records (settled whichever of span and log record lands first, exporter/_messages.py).
    Migration(11, "attempt_steps_and_messages", _MIGRATION_11),
    # "Where else was this item?" finds an input by SHA-256 among every attempt's.  A scan of the
    # 64-character strings costs ~0.15 s alone at 10M rows and 0.3-0.8 s on a loaded host; an ART
    # index on sha256 answers in ~7 ms but made each 10k-row insert ~30x and each checkpoint ~7x
    # slower at 10M rows (measured), so instead each row carries an 8-byte key of its hash
    # (``sha256_key_sql``), written with the row, that the viewer scans first (~50-70 ms loaded).
    # Rows landed before this migration keep NULL and are still found (the viewer also scans the
    # row groups that hold unkeyed rows; zone maps skip every other one).
    Migration(
        13,
        "inputs_sha256_key",
        """
        ALTER TABLE agent_attempt_inputs ADD COLUMN sha256_key UBIGINT;
        """,
    ),
    # The sink's write-ahead log (<db>.ingest/): the highest record landed, written in the same
    # transaction as the record's rows, so a restart replays exactly the records not yet landed
    # (log rows have no key to replace by, so a replayed record must never land twice).
    Migration(
        14,
        "ingest_write_ahead_progress",
        """
        CREATE TABLE otel_inputs_ingest_progress (
            log VARCHAR PRIMARY KEY,
            landed_seq UBIGINT NOT NULL,
            updated_at TIMESTAMP
        );
        """,
    ),
)

SCHEMA_VERSION = MIGRATIONS[-1].version


def sha256_key_sql(expr: str) -> str:
    """SQL for the 8-byte key of a SHA-256 text (``agent_attempt_inputs.sha256_key``, migration 13).

    The first 16 hex digits as an integer; 0 for a NULL or non-hex value, so every row the
    writer lands has a key and NULL means "landed before migration 13".  Equal texts have equal
    keys, so ``sha256_key = key(x) AND sha256 = x`` finds exactly the rows ``sha256 = x`` does."""
    return f"coalesce(TRY_CAST('0x' || left({expr}, 16) AS UBIGINT), 0)"
_VERSION_TABLE = "otel_inputs_schema"


def current_version(con: duckdb.DuckDBPyConnection) -> int:
    """The highest applied migration, 0 for an empty database."""
    exists = con.execute(
        "SELECT count(*) FROM information_schema.tables WHERE table_name = ?", [_VERSION_TABLE]
    ).fetchone()[0]
    if not exists:
        return 0
    row = con.execute(f"SELECT max(version) FROM {_VERSION_TABLE}").fetchone()
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
