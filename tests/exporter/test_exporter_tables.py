"""The table spec (exporter/_tables.py) is what a migrated DuckDB file, the Arrow batches and the
released migrations agree on: a column added, dropped or retyped in one place only fails here."""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest
from exporter_helpers import SpanFactory
from sink_client import proto_request
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor

from otel_inputs.exporter._arrow import build_batch
from otel_inputs.exporter._columns import build_chunk
from otel_inputs.exporter._logs import logs_table
from otel_inputs.exporter._artifacts import artifacts_table
from otel_inputs.exporter._otlp import iter_valid
from otel_inputs.exporter._schema import MIGRATIONS, migrate
from otel_inputs.exporter._spans import from_readable
from otel_inputs.exporter._tables import AGENT_ATTEMPTS, TABLES, VARCHAR, Column, Fill, Table
from otel_inputs.store import AttemptRecord, CatalogItem
from otel_inputs import names as n

_BY_NAME = {t.name: t for t in TABLES}
_MACHINERY = {"otel_inputs_schema"}  # the migrations' own version table, made by migrate() itself

# SHA-256 prefixes of the SQL of every migration already released.  Files in the field were made by
# exactly this SQL; since the DDL is generated from the spec, editing a column that a released
# migration created would silently give new files another schema than old ones.
_RELEASED = {
    1: "dc185bd1200bccf4", 2: "0132fbc4a394ae17", 3: "54c03eb5f46ffdcf", 4: "18b6425087e0efc9",
    5: "186609814789c40d", 6: "b8f1172b2bf3f12d", 7: "5d970da46b1cd29e", 8: "a3999da216b6fdbf",
    9: "f044e7e857c3a9fd", 10: "4b25858b9afb3231", 11: "98e0389db5b25fff", 13: "538ed3af7afb653f",
    14: "eaee761158c3b312",
}  # fmt: skip


def _fresh(path: Path) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect(str(path))
    migrate(con)
    return con


def _mismatches(con: duckdb.DuckDBPyConnection, tables: tuple[Table, ...]) -> list[str]:
    """Every difference between the spec and the file: tables, column order, types, nullability, keys."""
    out: list[str] = []
    live = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()} - _MACHINERY
    out += [f"table {t} has no spec" for t in sorted(live - {t.name for t in tables})]
    for table in tables:
        got = con.execute(
            "SELECT column_name, data_type, is_nullable FROM duckdb_columns() WHERE table_name = ? "
            "ORDER BY column_index", [table.name]).fetchall()  # fmt: skip
        want = [(c.name, c.type.sql, c.nullable) for c in table.columns]
        if got != want:
            out.append(f"{table.name}: file {got} != spec {want}")
        keys = con.execute("SELECT constraint_column_names FROM duckdb_constraints() WHERE table_name = ? "
                           "AND constraint_type = 'PRIMARY KEY'", [table.name]).fetchall()  # fmt: skip
        if [k[0] for k in keys] != [[c.name] for c in table.columns if c.primary_key]:
            out.append(f"{table.name}: primary key {keys} differs from the spec")
    return out


def test_a_freshly_migrated_file_has_exactly_the_spec_columns(tmp_path: Path) -> None:
    """Every exporter table of a new file has the spec's columns in the spec's order, type for type, NULL for NULL."""
    con = _fresh(tmp_path / "t.duckdb")
    assert _mismatches(con, TABLES) == []
    assert len(TABLES) == 10


def test_a_column_added_in_one_place_only_is_caught(tmp_path: Path) -> None:
    """A column added only by a migration, or only to the spec, or a type changed only in the spec, is a mismatch."""
    con = _fresh(tmp_path / "t.duckdb")
    extra = Column("extra", VARCHAR, since=99)
    spec_only = dataclasses.replace(AGENT_ATTEMPTS, columns=(*AGENT_ATTEMPTS.columns, extra))
    others = tuple(t for t in TABLES if t is not AGENT_ATTEMPTS)
    assert [m for m in _mismatches(con, (*others, spec_only)) if "extra" in m]
    retyped = dataclasses.replace(AGENT_ATTEMPTS, columns=tuple(
        dataclasses.replace(c, type=VARCHAR) if c.name == "turn_index" else c for c in AGENT_ATTEMPTS.columns))
    assert [m for m in _mismatches(con, (*others, retyped)) if "turn_index" in m]
    con.execute("ALTER TABLE agent_attempts ADD COLUMN extra VARCHAR")
    con.execute("CREATE TABLE agent_new (x VARCHAR)")
    problems = _mismatches(con, TABLES)
    assert any("extra" in p for p in problems) and "table agent_new has no spec" in problems


def test_arrow_types_of_the_spec_load_as_its_duckdb_types() -> None:
    """Each column's Arrow type reads in DuckDB as the column's DuckDB type, so a batch lands without a cast."""
    con = duckdb.connect()
    for table in TABLES:
        empty = pa.schema([(c.name, c.type.arrow) for c in table.columns]).empty_table()
        con.register("batch", empty)
        got = [(r[0], r[1]) for r in con.execute("DESCRIBE SELECT * FROM batch").fetchall()]
        assert got == [(c.name, c.type.sql) for c in table.columns], table.name
        con.unregister("batch")


def test_both_conversions_and_the_other_batches_have_the_spec_schemas(spans: SpanFactory) -> None:
    """Reference and fused span conversions, log records and catalog rows all produce the spec's Arrow schemas."""
    recorded = [spans.attempt(i, items=2) for i in range(3)]
    recorded.append(spans.span({n.GEN_AI_OPERATION_NAME: "chat"}, [(n.EXCHANGE_PART_EVENT, {n.PART_NAME: "request"})],
                               name="chat"))  # fmt: skip
    reference = build_batch([from_readable(s) for s in recorded])
    fused = build_chunk(list(iter_valid(proto_request(recorded), set())))
    for batch in (reference, fused):
        assert sorted(name for name, _ in batch.items()) == sorted(
            ["otel_traces", "agent_attempts", "agent_attempt_inputs", "agent_exchange_parts"])
        for name, table in batch.items():
            assert table.schema.equals(_BY_NAME[name].arrow_schema()), name
    memory = InMemoryLogRecordExporter()
    provider = LoggerProvider()
    provider.add_log_record_processor(SimpleLogRecordProcessor(memory))
    provider.get_logger("t").emit(body={"structured": [1, 2]}, attributes={"k": "v"})
    logs = logs_table(encode_logs(memory.get_finished_logs()))
    assert logs is not None and logs.schema.equals(_BY_NAME["otel_logs"].arrow_schema())
    item = CatalogItem("att-0", "in-0", 0, label="a.txt", sha256="ab" * 32, size_bytes=5, captured_at_ns=1)
    artifacts = artifacts_table([AttemptRecord("att-0", "run-1", items=(item,))], 1)
    assert artifacts is not None and artifacts.schema.equals(_BY_NAME["agent_artifacts"].arrow_schema())


def test_released_migrations_are_unchanged() -> None:
    """The SQL of every released migration is what made the files in the field (change the spec by a new migration)."""
    changed = [m.version for m in MIGRATIONS
               if m.version in _RELEASED and hashlib.sha256(m.sql.encode()).hexdigest()[:16] != _RELEASED[m.version]]
    assert changed == [], (
        f"released migrations {changed} now give other SQL: existing files were made by the old SQL. Keep the "
        "released columns as they were in exporter/_tables.py and change them with a new migration (a new column "
        "goes at the end with since=<its migration>; to retype or drop one, first freeze the released migration's "
        "SQL as a literal string)")  # fmt: skip
    assert set(_RELEASED) <= {m.version for m in MIGRATIONS}


@pytest.mark.parametrize("columns", [
    (Column("a", VARCHAR), Column("b", VARCHAR, since=9), Column("c", VARCHAR)),  # a later column before an earlier one
    (Column("a", VARCHAR), Column("b", VARCHAR, since=9), Column("c", VARCHAR, since=8)),  # migrations out of order
    (Column("a", VARCHAR), Column("b", VARCHAR, since=2)),  # "added" by the migration that creates the table
    (Column("a", VARCHAR), Column("b", VARCHAR, nullable=False, since=9)),  # ADD COLUMN to rows that exist: nullable
    (Column("a", VARCHAR), Column("a", VARCHAR, since=9)),  # a name twice
    (Column("a", VARCHAR), Column("k", VARCHAR, fill=Fill.KEY, key_of="missing")),  # key of no column
])  # fmt: skip
def test_a_spec_out_of_step_with_how_migrations_work_is_refused(columns: tuple[Column, ...]) -> None:
    """A spec the migrations could not produce (order, nullability, names, keys) fails at import, not in the field."""
    with pytest.raises(ValueError):
        Table("t", 2, columns)
