"""One span corpus landed twice: through the DuckDB path, and into the stock ClickHouse tables (chdb)
the way the Collector's clickhouseexporter writes them, under clickhouse/*.sql.

Shared by the projection test and the viewer-on-ClickHouse tests, so both backends are compared on
exactly the same spans and log records.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "exporter"))
from exporter_helpers import SpanFactory, input_event, packet_attributes  # noqa: E402
from test_clickhouse_projection import _apply, _single_spans, _traces  # noqa: E402

from otel_inputs import names as n  # noqa: E402
from otel_inputs.exporter import DuckDBLogExporter, migrate_file  # noqa: E402
from otel_inputs.exporter._db import connect_with_retry  # noqa: E402
from otel_inputs.exporter._spans import from_readable  # noqa: E402
from otel_inputs.exporter._writer import DuckDBWriter  # noqa: E402

DATABASE = "otel"


def viewer_spans() -> list[Any]:
    """Attempts that exercise the viewer's pages: a session of turns with a retry, a second run with
    the same task (task drift), inputs shared by SHA-256 and path across attempts (where else)."""
    spans = SpanFactory()
    out = [
        spans.attempt(8, items=3),
        spans.attempt(9, items=3, **{n.SEND_KIND: "parse_retry", n.RETRY_OF_ATTEMPT_ID: "att-8"}),
        spans.span({**packet_attributes(10, items=2), n.RUN_ID: "run-2"},
                   [(n.INPUT_EVENT, input_event(10, 0)),
                    (n.INPUT_EVENT, input_event(10, 1, **{n.INPUT_SHA256: "ee" * 32}))]),
    ]
    return [from_readable(s) for s in out]


def corpus() -> tuple[list[Any], list[Any]]:
    """Every span and log record of the corpus (the projection test's, plus the viewer's)."""
    records, logs = _traces()
    return _single_spans(SpanFactory()) + records + viewer_spans(), logs


def land_duckdb(tmp: Path, records: list[Any], logs: list[Any]) -> Path:
    """The corpus through the DuckDB path (one span per batch, children first), and its
    otel_traces / otel_logs rows as Parquet next to it for the ClickHouse side."""
    db = tmp / "t.duckdb"
    migrate_file(db)
    log_exporter = DuckDBLogExporter(db)  # the real in-process logs path
    log_exporter.export(logs)
    log_exporter.shutdown()
    for r in records:
        DuckDBWriter(db).write_spans([r])
    export_parquet(db, tmp)
    return db


def export_parquet(db: Path, tmp: Path) -> None:
    """``db``'s otel_traces / otel_logs rows as Parquet in ``tmp``: what :func:`load_chdb` inserts, as
    the stock exporter would have written them."""
    con = connect_with_retry(db, read_only=True)
    try:
        for table in ("otel_traces", "otel_logs"):
            con.execute(f"COPY {table} TO '{tmp / table}.parquet' (FORMAT parquet)")
    finally:
        con.close()


def load_chdb(sess: Any, tmp: Path, database: str = DATABASE, *, times: int = 2) -> None:
    """The stock DDL and the projection in ``database``, then the Parquet rows inserted ``times`` times
    (a retried Collector export inserts them again)."""
    _apply(sess, database)
    for _ in range(times):
        for table in ("otel_traces", "otel_logs"):
            sess.query(f"INSERT INTO {database}.{table} SELECT * FROM file('{tmp / table}.parquet', Parquet)")


# What differs by design between the two backends on a viewer page (left out when pages are compared).
BACKEND_LINES = ("Database: ", "Exporter counters: not recorded on this backend", "No exporter counters recorded yet.",
                 "Nothing dropped or waiting.", "Telemetry was lost", "span(s) waited on disk",
                 "Snapshot rows per run: not recorded on this backend", "No snapshots recorded for this run.")


def use_backend(monkeypatch: Any, source: str | Path) -> None:
    """Point the viewer at a DuckDB file (a Path) or a ClickHouse URL (a str), and only at it."""
    if isinstance(source, Path):
        monkeypatch.delenv(n.ENV_CLICKHOUSE, raising=False)
        monkeypatch.setenv(n.ENV_DB, str(source))
    else:
        monkeypatch.delenv(n.ENV_DB, raising=False)
        monkeypatch.setenv(n.ENV_CLICKHOUSE, source)
