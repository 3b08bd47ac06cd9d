"""The exporter's tables, column by column: the one place their names, types and order are spelled.

Everything else takes its columns from here: the DDL of the migrations (``_schema``), the Arrow
schemas of a batch (``_arrow``), the order in which both conversions (the reference one in
``_rows``/``_arrow`` and the sink's fused one in ``_columns``) lay out their columns, and the
writer's insert lists.  tests/exporter/test_exporter_tables.py checks that a freshly migrated
DuckDB file has exactly these columns, in this order, with these types.

Migrations only ever append (``ALTER TABLE … ADD COLUMN``), so a column's place in its table is
its place here: a column added later carries the migration that added it (``since``) and goes at
the end.  docs/ingest.md ("Where the columns are defined") says how to add one.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

import pyarrow as pa


@dataclass(frozen=True)
class ColumnType:
    """A column type as DuckDB spells it (exactly as ``duckdb_columns()`` reports it) and its Arrow twin."""

    sql: str
    arrow: pa.DataType


VARCHAR = ColumnType("VARCHAR", pa.string())
INTEGER = ColumnType("INTEGER", pa.int32())
BIGINT = ColumnType("BIGINT", pa.int64())
UBIGINT = ColumnType("UBIGINT", pa.uint64())
UTINYINT = ColumnType("UTINYINT", pa.uint8())
TIMESTAMP = ColumnType("TIMESTAMP", pa.timestamp("us"))
TIMESTAMP_NS = ColumnType("TIMESTAMP_NS", pa.timestamp("ns"))
MAP = ColumnType("MAP(VARCHAR, VARCHAR)", pa.map_(pa.string(), pa.string()))


def list_of(item: ColumnType) -> ColumnType:
    return ColumnType(f"{item.sql}[]", pa.list_(item.arrow))


class Fill(Enum):
    """Who writes a column's value."""

    ROW = "row"  # the conversions: a column of the batch's Arrow table, reference and fused path alike
    KEY = "key"  # the writer's INSERT, from another column of the same row (``key_of``)
    STEP = "step"  # _steps, once the attempt's first model step has landed
    LOG = "log"  # _messages, once the attempt's GenAI log records have landed
    SQL = "sql"  # the writer's own SQL (health counters, write-ahead progress), not an Arrow batch
    AGENT = "agent"  # _encodings.coding_agents: the coding-agent projection's own rows (docs/coding-agents.md)


@dataclass(frozen=True)
class Column:
    name: str
    type: ColumnType
    nullable: bool = True
    since: int | None = None  # the migration that added it; None: created with its table
    fill: Fill = Fill.ROW
    key_of: str | None = None  # for Fill.KEY: the SHA-256 text column this is the key of
    primary_key: bool = False

    def ddl(self) -> str:
        null = " PRIMARY KEY" if self.primary_key else ("" if self.nullable else " NOT NULL")
        return f'"{self.name}" {self.type.sql}{null}'


@dataclass(frozen=True)
class Table:
    name: str
    created_in: int  # the migration that creates it
    columns: tuple[Column, ...]

    def __post_init__(self) -> None:
        # ALTER TABLE ADD COLUMN appends: a later column placed before an earlier one would put the
        # spec and the files' column order out of step (and every positional read with them).
        created = tuple(c for c in self.columns if c.since is None)
        later = [c.since for c in self.columns if c.since is not None]
        if (not created or self.columns[: len(created)] != created or later != sorted(later)
                or any(v <= self.created_in for v in later)):  # fmt: skip
            raise ValueError(f"{self.name}: a column added by a later migration goes at the end, in migration order")
        names = [c.name for c in self.columns]
        if len(set(names)) != len(names):
            raise ValueError(f"{self.name}: a column name repeats")
        for c in self.columns:
            if c.since is not None and (not c.nullable or c.primary_key):
                raise ValueError(f"{self.name}.{c.name}: a column added to existing rows must be nullable")
            if (c.fill is Fill.KEY) != (c.key_of is not None) or (c.key_of is not None and c.key_of not in names):
                raise ValueError(f"{self.name}.{c.name}: a KEY column names the column it is the key of, and only it")

    @property
    def names(self) -> tuple[str, ...]:
        """Every column, in table order."""
        return tuple(c.name for c in self.columns)

    def filled_by(self, fill: Fill) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns if c.fill is fill)

    @property
    def row_columns(self) -> tuple[str, ...]:
        """The columns of the batch's Arrow table, in table order: what the conversions produce."""
        return self.filled_by(Fill.ROW)

    def arrow_schema(self) -> pa.Schema:
        """The Arrow schema of the batch's table (the ``Fill.ROW`` columns)."""
        return pa.schema([(c.name, c.type.arrow) for c in self.columns if c.fill is Fill.ROW])

    def key_columns(self) -> tuple[Column, ...]:
        return tuple(c for c in self.columns if c.fill is Fill.KEY)

    def create_sql(self) -> str:
        """``CREATE TABLE`` with the columns its creating migration made (later ones are added by theirs)."""
        cols = ",\n    ".join(c.ddl() for c in self.columns if c.since is None)
        return f'CREATE TABLE "{self.name}" (\n    {cols}\n);\n'

    def add_columns_sql(self, migration: int) -> str:
        """The ``ALTER TABLE … ADD COLUMN`` statements of the columns ``migration`` added."""
        added = [c for c in self.columns if c.since == migration]
        return "".join(f'ALTER TABLE "{self.name}" ADD COLUMN {c.ddl()};\n' for c in added)


def sha256_key_sql(expr: str) -> str:
    """SQL for the 8-byte key of a SHA-256 text (``agent_attempt_inputs.sha256_key``, migration 13).

    The first 16 hex digits as an integer; 0 for a NULL or non-hex value, so every row the
    writer lands has a key and NULL means "landed before migration 13".  Equal texts have equal
    keys, so ``sha256_key = key(x) AND sha256 = x`` finds exactly the rows ``sha256 = x`` does."""
    return f"coalesce(TRY_CAST('0x' || left({expr}, 16) AS UBIGINT), 0)"


def _cols(names: str, type_: ColumnType, **kw: object) -> tuple[Column, ...]:
    """Several columns of one type and options, in the order written."""
    return tuple(Column(name, type_, **kw) for name in names.split())  # type: ignore[arg-type]


# --- tables ---------------------------------------------------------------------------------------
# The Collector ClickHouse exporter's otel_traces, column for column (a Parquet export loads into
# ClickHouse unchanged).
OTEL_TRACES = Table("otel_traces", 1, (
    *_cols("Timestamp", TIMESTAMP_NS),
    *_cols("TraceId SpanId ParentSpanId TraceState SpanName SpanKind ServiceName", VARCHAR),
    *_cols("ResourceAttributes", MAP),
    *_cols("ScopeName ScopeVersion", VARCHAR),
    *_cols("SpanAttributes", MAP),
    *_cols("Duration", UBIGINT),
    *_cols("StatusCode StatusMessage", VARCHAR),
    *_cols("Events.Timestamp", list_of(TIMESTAMP_NS)),
    *_cols("Events.Name", list_of(VARCHAR)),
    *_cols("Events.Attributes", list_of(MAP)),
    *_cols("Links.TraceId Links.SpanId Links.TraceState", list_of(VARCHAR)),
    *_cols("Links.Attributes", list_of(MAP)),
))  # fmt: skip

AGENT_ATTEMPTS = Table("agent_attempts", 2, (
    *_cols("attempt_id", VARCHAR, nullable=False),
    *_cols("run_id session_id phase agent_name provider_name request_model task_prompt task_source_kind "
        "task_source_path", VARCHAR),
    *_cols("task_size_bytes", BIGINT),
    *_cols("task_sha256 send_kind", VARCHAR),
    *_cols("turn_index", INTEGER),
    *_cols("previous_turn_attempt_id retry_of_attempt_id system_prompt user_prompt", VARCHAR),
    *_cols("input_packet_version", INTEGER),
    *_cols("input_coverage", VARCHAR, nullable=False),
    *_cols("coverage_reason", VARCHAR),
    *_cols("declared_input_count captured_input_count omitted_input_count item_count", INTEGER),
    *_cols("capture_decision capture_gap_reason", VARCHAR),
    *_cols("started_at ended_at", TIMESTAMP_NS),
    *_cols("status status_message trace_id span_id service_name source_format", VARCHAR),
    *_cols("dropped_events_count dropped_attributes_count", INTEGER),
    # Migration 11: what the span is as a possible step, and where its messages came from.
    *_cols("parent_span_id span_name operation_name step_kind response_model", VARCHAR, since=11),
    *_cols("input_tokens output_tokens", BIGINT, since=11),
    *_cols("tool_name tool_call_id tool_arguments input_messages_json messages_note", VARCHAR, since=11),
    *_cols("step_system_prompt step_user_prompt step_input_messages_json step_messages_span_id", VARCHAR, since=11,
        fill=Fill.STEP),
    *_cols("log_system_prompt log_user_prompt log_input_messages_json log_span_id", VARCHAR, since=11, fill=Fill.LOG),
))  # fmt: skip

AGENT_ATTEMPT_INPUTS = Table("agent_attempt_inputs", 3, (
    *_cols("input_id", VARCHAR),
    *_cols("attempt_id", VARCHAR, nullable=False),
    *_cols("seq", INTEGER, nullable=False),
    *_cols("label source_kind delivery_mode source_path snapshot_ref media_type preview_kind", VARCHAR),
    *_cols("size_bytes", BIGINT),
    *_cols("sha256 capture_status artifact_status detail", VARCHAR),
    *_cols("captured_at", TIMESTAMP_NS),
    *_cols("row_problem", VARCHAR),
    *_cols("attempt_started_at", TIMESTAMP_NS, since=7),
    *_cols("sha256_key", UBIGINT, since=13, fill=Fill.KEY, key_of="sha256"),
    # Migration 15: an instruction file's two facts (loaded: the runtime's report; delivered: its bytes
    # in the recorded request) and the store attempt holding its snapshot (docs/coding-agents.md).
    *_cols("loaded loaded_detail delivered delivered_detail capture_attempt_id", VARCHAR, since=15, fill=Fill.AGENT),
))  # fmt: skip

AGENT_ARTIFACTS = Table("agent_artifacts", 4, (
    *_cols("attempt_id", VARCHAR, nullable=False),
    *_cols("input_id run_id session_id", VARCHAR),
    *_cols("seq", INTEGER),
    *_cols("label source_kind delivery_mode source_path sha256", VARCHAR),
    *_cols("size_bytes", BIGINT),
    *_cols("snapshot_ref media_type preview_kind capture_status artifact_status status_reason detail", VARCHAR),
    *_cols("captured_at", TIMESTAMP_NS),
    *_cols("manifest_coverage manifest_decision manifest_gap_reason", VARCHAR),
    *_cols("manifest_committed_at", TIMESTAMP_NS),
    *_cols("row_problem", VARCHAR),
    *_cols("updated_at", TIMESTAMP),
))  # fmt: skip

EXPORTER_HEALTH = Table("exporter_health", 5, (
    *_cols("source metric", VARCHAR, nullable=False, fill=Fill.SQL),
    *_cols("value", BIGINT, nullable=False, fill=Fill.SQL),
    *_cols("updated_at", TIMESTAMP, nullable=False, fill=Fill.SQL),
))  # fmt: skip

AGENT_EXCHANGE_PARTS = Table("agent_exchange_parts", 8, (
    *_cols("attempt_id", VARCHAR, nullable=False),
    *_cols("part_name capture reason dispatch ref sha256", VARCHAR),
    *_cols("size_bytes", BIGINT),
    *_cols("persistence detail", VARCHAR),
    *_cols("recorded_at attempt_started_at", TIMESTAMP_NS),
    *_cols("row_problem", VARCHAR),
))  # fmt: skip

# The Collector ClickHouse exporter's otel_logs, column for column.
OTEL_LOGS = Table("otel_logs", 10, (
    *_cols("Timestamp", TIMESTAMP_NS),
    *_cols("TimestampTime", TIMESTAMP),
    *_cols("TraceId SpanId", VARCHAR),
    *_cols("TraceFlags", UTINYINT),
    *_cols("SeverityText", VARCHAR),
    *_cols("SeverityNumber", UTINYINT),
    *_cols("ServiceName Body ResourceSchemaUrl", VARCHAR),
    *_cols("ResourceAttributes", MAP),
    *_cols("ScopeSchemaUrl ScopeName ScopeVersion", VARCHAR),
    *_cols("ScopeAttributes LogAttributes", MAP),
    *_cols("EventName", VARCHAR),
))  # fmt: skip

AGENT_ATTEMPT_STEPS = Table("agent_attempt_steps", 11, (
    *_cols("attempt_id span_id", VARCHAR, nullable=False),
    *_cols("trace_id parent_span_id", VARCHAR),
    *_cols("seq", INTEGER),
    *_cols("step_kind operation_name span_name provider_name request_model response_model", VARCHAR),
    *_cols("started_at ended_at", TIMESTAMP_NS),
    *_cols("input_tokens output_tokens", BIGINT),
    *_cols("tool_name tool_call_id tool_arguments status", VARCHAR),
    *_cols("attempt_started_at", TIMESTAMP_NS),
    # Migration 15: why a coding agent's call is not the turn's own (session title, model routing), and
    # how its request was recorded (docs/coding-agents.md).
    *_cols("auxiliary request_record", VARCHAR, since=15, fill=Fill.AGENT),
))  # fmt: skip

# One row per coding-agent turn (docs/coding-agents.md): the turn's key in its runtime, its session
# and its trace, so a later record of a turn (a hook record, a log) finds it, and a session's turns
# are found in order for their lineage.  Written only by the coding-agent projection.
AGENT_CODING_TURNS = Table("agent_coding_turns", 15, (
    *_cols("attempt_id", VARCHAR, nullable=False, fill=Fill.AGENT),
    *_cols("runtime session_id turn_key trace_id process_key", VARCHAR, fill=Fill.AGENT),
    *_cols("started_at ended_at", TIMESTAMP_NS, fill=Fill.AGENT),
))  # fmt: skip

INGEST_PROGRESS = Table("otel_inputs_ingest_progress", 14, (
    Column("log", VARCHAR, nullable=False, fill=Fill.SQL, primary_key=True),
    *_cols("landed_seq", UBIGINT, nullable=False, fill=Fill.SQL),
    *_cols("updated_at", TIMESTAMP, fill=Fill.SQL),
))  # fmt: skip

TABLES: tuple[Table, ...] = (OTEL_TRACES, AGENT_ATTEMPTS, AGENT_ATTEMPT_INPUTS, AGENT_ARTIFACTS, EXPORTER_HEALTH,
                             AGENT_EXCHANGE_PARTS, OTEL_LOGS, AGENT_ATTEMPT_STEPS, INGEST_PROGRESS,
                             AGENT_CODING_TURNS)  # fmt: skip

# The per-attempt tables with the columns both backends give for the same spans: DuckDB's tables
# here, ClickHouse's views under clickhouse/projection.sql (tests/clickhouse compares them row for
# row); agent_artifacts (the store's statuses as landed) is DuckDB's only. An evidence bundle's
# rows are these columns, on either backend.
MESSAGES_VIEW_COLUMNS = ("attempt_id", "system_prompt", "user_prompt", "input_messages_json", "messages_source",
                         "messages_note")  # the agent_attempt_messages view (migration 11)
ATTEMPT_TABLE_COLUMNS: dict[str, tuple[str, ...]] = {
    "agent_attempts": AGENT_ATTEMPTS.row_columns + AGENT_ATTEMPTS.filled_by(Fill.STEP),
    "agent_attempt_inputs": AGENT_ATTEMPT_INPUTS.row_columns + AGENT_ATTEMPT_INPUTS.filled_by(Fill.AGENT),
    "agent_artifacts": AGENT_ARTIFACTS.names,
    "agent_exchange_parts": AGENT_EXCHANGE_PARTS.row_columns,
    "agent_attempt_steps": AGENT_ATTEMPT_STEPS.row_columns + AGENT_ATTEMPT_STEPS.filled_by(Fill.AGENT),
    "agent_attempt_messages": MESSAGES_VIEW_COLUMNS,
}
TIMESTAMP_COLUMNS = frozenset(c.name for t in (AGENT_ATTEMPTS, AGENT_ATTEMPT_INPUTS, AGENT_ARTIFACTS, AGENT_EXCHANGE_PARTS,
                                               AGENT_ATTEMPT_STEPS) for c in t.columns if c.type in (TIMESTAMP, TIMESTAMP_NS))
"""The per-attempt tables' columns holding a point in time."""
