"""The ClickHouse path: otel_traces exported to Parquet loads unchanged into a ClickHouse-typed table.

Runs only where chdb (in-process ClickHouse) is importable; skipped otherwise.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from exporter_helpers import SpanFactory

from otel_inputs.exporter import DuckDBSpanExporter
from otel_inputs.exporter._db import connect_with_retry
from otel_inputs import names as n

chdb_session = pytest.importorskip("chdb.session", reason="chdb (in-process ClickHouse) is not installed")

# Column names and ClickHouse types of the Collector ClickHouse exporter's traces table (contrib
# exporter/clickhouseexporter traces_table.sql), written out here without its codecs and indexes.
_CH_TABLE = """
CREATE TABLE otel.otel_traces (
    Timestamp DateTime64(9),
    TraceId String,
    SpanId String,
    ParentSpanId String,
    TraceState String,
    SpanName LowCardinality(String),
    SpanKind LowCardinality(String),
    ServiceName LowCardinality(String),
    ResourceAttributes Map(LowCardinality(String), String),
    ScopeName String,
    ScopeVersion String,
    SpanAttributes Map(LowCardinality(String), String),
    Duration UInt64,
    StatusCode LowCardinality(String),
    StatusMessage String,
    Events Nested (Timestamp DateTime64(9), Name LowCardinality(String),
                   Attributes Map(LowCardinality(String), String)),
    Links Nested (TraceId String, SpanId String, TraceState String,
                  Attributes Map(LowCardinality(String), String))
) ENGINE = MergeTree
PARTITION BY toDate(Timestamp)
ORDER BY (ServiceName, SpanName, toDateTime(Timestamp), Timestamp)
"""


@pytest.mark.timeout(120)
def test_parquet_export_loads_into_clickhouse_unchanged(spans: SpanFactory, db_path: Path, tmp_path: Path) -> None:
    """DuckDB's otel_traces, copied to Parquet, inserts into the ClickHouse table with ids, maps and events intact."""
    batch = [spans.attempt(i, items=4) for i in range(5)]
    DuckDBSpanExporter(db_path).export(batch)
    parquet = tmp_path / "otel_traces.parquet"
    con = connect_with_retry(db_path, read_only=True)
    try:
        con.execute(f"COPY otel_traces TO '{parquet}' (FORMAT parquet)")
        expected = con.execute(
            'SELECT "SpanId", "SpanAttributes"[?], len("Events.Name"), epoch_ns("Events.Timestamp"[1]) '
            'FROM otel_traces ORDER BY "SpanId"', [n.ATTEMPT_ID]
        ).fetchall()
    finally:
        con.close()
    sess = chdb_session.Session(str(tmp_path / "chdb"))
    try:
        sess.query("CREATE DATABASE IF NOT EXISTS otel")
        sess.query(_CH_TABLE)
        sess.query(f"INSERT INTO otel.otel_traces SELECT * FROM file('{parquet}', Parquet)")
        out = sess.query(
            f"SELECT SpanId, SpanAttributes['{n.ATTEMPT_ID}'], length(Events.Name), "
            "toUnixTimestamp64Nano(Events.Timestamp[1]) FROM otel.otel_traces ORDER BY SpanId",
            "TabSeparated",
        ).bytes().decode()
    finally:
        sess.close()
    got = [tuple(line.split("\t")) for line in out.strip().splitlines()]
    assert got == [(s, a, str(e), str(t)) for s, a, e, t in expected]
    assert len(got) == 5
