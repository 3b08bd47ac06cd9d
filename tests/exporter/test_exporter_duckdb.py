"""DuckDBSpanExporter against real DuckDB files: schema, values, idempotence, spool, health, fork."""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
import threading
from pathlib import Path

import duckdb
import pytest
from exporter_helpers import SpanFactory, query, query_dicts
from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.trace import Link, SpanContext, TraceFlags

from otel_inputs.exporter import DuckDBSpanExporter, SchemaError, migrate, migrate_file, read_connection
from otel_inputs.exporter._db import file_lock
from otel_inputs.exporter._schema import SCHEMA_VERSION
from otel_inputs import names as n
from otel_inputs.store import ArtifactStore, AttemptRecord, CatalogItem

CLICKHOUSE_COLUMNS = [
    "Timestamp", "TraceId", "SpanId", "ParentSpanId", "TraceState", "SpanName", "SpanKind",
    "ServiceName", "ResourceAttributes", "ScopeName", "ScopeVersion", "SpanAttributes", "Duration",
    "StatusCode", "StatusMessage", "Events.Timestamp", "Events.Name", "Events.Attributes",
    "Links.TraceId", "Links.SpanId", "Links.TraceState", "Links.Attributes",
]  # fmt: skip


def test_schema_migrates_and_refuses_newer_or_unknown(tmp_path: Path) -> None:
    """A fresh file migrates to the current version; a newer or foreign schema fails with a clear message."""
    con = duckdb.connect(str(tmp_path / "a.duckdb"))
    assert migrate(con) == SCHEMA_VERSION
    assert migrate(con) == SCHEMA_VERSION  # idempotent
    cols = [r[0] for r in con.execute("DESCRIBE otel_traces").fetchall()]
    assert cols == CLICKHOUSE_COLUMNS
    con.execute("INSERT INTO otel_inputs_schema VALUES (?, 'from_the_future', now())", [SCHEMA_VERSION + 1])
    with pytest.raises(SchemaError, match="newer than this otel-inputs"):
        migrate(con)
    con.close()
    con = duckdb.connect(str(tmp_path / "b.duckdb"))
    migrate(con)
    con.execute("UPDATE otel_inputs_schema SET name = 'something_else' WHERE version = 1")
    with pytest.raises(SchemaError, match="unknown migration 1"):
        migrate(con)
    con.close()


def test_trace_row_follows_clickhouse_value_conventions(spans: SpanFactory, db_path: Path) -> None:
    """otel_traces holds lowercase hex ids, SpanKind/StatusCode strings, stringified attributes and parallel event lists."""
    exporter = DuckDBSpanExporter(db_path)
    link_ctx = SpanContext(0xABC, 0xDEF, is_remote=True, trace_flags=TraceFlags(1))
    span = spans.span(
        {n.GEN_AI_OPERATION_NAME: "chat", n.TURN_INDEX: 7, "flag": True, "tags": ("a", "b")},
        [("first", {"k": 1}), ("second", {})],
        links=[Link(link_ctx, {n.LINK_KIND: n.LINK_PREVIOUS_TURN})],
    )
    assert exporter.export([span]) is SpanExportResult.SUCCESS
    (row,) = query_dicts(db_path, "SELECT * FROM otel_traces")
    assert row["TraceId"] == format(span.context.trace_id, "032x") and row["SpanId"].islower()
    assert len(row["SpanId"]) == 16 and row["ParentSpanId"] == ""
    assert row["SpanKind"] == "Internal" and row["StatusCode"] == "Unset"
    assert row["ServiceName"] == "agent-svc" and row["ScopeName"] == "tests.exporter" and row["ScopeVersion"] == "1.2.3"
    assert row["SpanAttributes"][n.TURN_INDEX] == "7" and row["SpanAttributes"]["flag"] == "true"
    assert row["SpanAttributes"]["tags"] == '["a","b"]'
    assert row["Events.Name"] == ["first", "second"] and row["Events.Attributes"][0] == {"k": "1"}
    assert len(row["Events.Timestamp"]) == 2
    assert row["Duration"] == span.end_time - span.start_time
    assert row["Links.TraceId"] == ["0" * 29 + "abc"] and row["Links.SpanId"] == ["0" * 13 + "def"]
    assert row["Links.Attributes"] == [{n.LINK_KIND: n.LINK_PREVIOUS_TURN}]
    ts_ns = query(db_path, 'SELECT epoch_ns("Timestamp"), epoch_ns("Events.Timestamp"[1]) FROM otel_traces')[0]
    assert ts_ns == (span.start_time, span.events[0].timestamp)


def test_sql_returns_each_attempt_exactly_as_recorded(spans: SpanFactory, db_path: Path) -> None:
    """agent_attempts and agent_attempt_inputs return task, lineage, coverage and inputs as recorded."""
    exporter = DuckDBSpanExporter(db_path)
    assert exporter.export([spans.attempt(0, items=2), spans.attempt(1, items=3)]) is SpanExportResult.SUCCESS
    rows = query(db_path, "SELECT attempt_id, task_prompt, turn_index, previous_turn_attempt_id, input_coverage, "
                          "declared_input_count FROM agent_attempts ORDER BY attempt_id")  # fmt: skip
    assert rows == [("att-0", "Fix the failing test 0.", 1, None, "complete", 2),
                    ("att-1", "Fix the failing test 1.", 2, "att-0", "complete", 3)]  # fmt: skip
    inputs = query(db_path, "SELECT attempt_id, seq, input_id, label, delivery_mode, size_bytes, sha256 "
                            "FROM agent_attempt_inputs ORDER BY attempt_id, seq")  # fmt: skip
    assert inputs[0] == ("att-0", 0, "in-0-0", "src/file_0.py", "path_reference", 100, "00" * 32)
    assert [(r[0], r[1]) for r in inputs] == [("att-0", 0), ("att-0", 1), ("att-1", 0), ("att-1", 1), ("att-1", 2)]


def test_reexport_does_not_duplicate_rows(spans: SpanFactory, db_path: Path) -> None:
    """Exporting the same spans again (spool replay, retry) leaves exactly one copy of every row."""
    exporter = DuckDBSpanExporter(db_path)
    batch = [spans.attempt(0, items=2), spans.span({"plain": 1}, name="plain")]
    for _ in range(3):
        assert exporter.export(batch) is SpanExportResult.SUCCESS
    counts = query(db_path, "SELECT (SELECT count(*) FROM otel_traces), (SELECT count(*) FROM agent_attempts), "
                            "(SELECT count(*) FROM agent_attempt_inputs)")  # fmt: skip
    assert counts == [(2, 1, 2)]


def test_relanded_attempt_replaces_its_inputs_in_mixed_chunked_batches(
        spans: SpanFactory, db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A re-landed attempt's inputs are replaced (even by fewer), new ones in the same batch land, across id chunks."""
    from otel_inputs.exporter import _writer

    monkeypatch.setattr(_writer, "_ID_CHUNK", 2)
    exporter = DuckDBSpanExporter(db_path)
    assert exporter.export([spans.attempt(i, items=3) for i in range(5)]) is SpanExportResult.SUCCESS
    relanded = [spans.attempt(i, items=1) for i in (0, 2, 4)] + [spans.attempt(i, items=2) for i in (5, 6)]
    assert exporter.export(relanded) is SpanExportResult.SUCCESS
    per_attempt = dict(query(db_path, "SELECT attempt_id, count(*) FROM agent_attempt_inputs GROUP BY attempt_id"))
    assert per_attempt == {"att-0": 1, "att-1": 3, "att-2": 1, "att-3": 3, "att-4": 1, "att-5": 2, "att-6": 2}
    assert query(db_path, "SELECT count(*), count(DISTINCT attempt_id) FROM agent_attempts") == [(7, 7)]


def _health(db: Path) -> dict[str, int]:
    return dict(query(db, "SELECT metric, value FROM exporter_health WHERE source LIKE 'exporter:%'"))


def test_locked_file_spills_then_drains_with_health_counts(spans: SpanFactory, db_path: Path) -> None:
    """While the file is held the batch goes to the spool; the next success drains it and counts both."""
    exporter = DuckDBSpanExporter(db_path, lock_timeout_s=0.2)
    assert exporter.export([spans.attempt(0)]) is SpanExportResult.SUCCESS
    with file_lock(db_path, exclusive=True, timeout_s=1):  # another writer holds the file
        assert exporter.export([spans.attempt(1)]) is SpanExportResult.FAILURE
    assert len(exporter.writer.spooled_batches()) == 1
    assert exporter.export([spans.attempt(2)]) is SpanExportResult.SUCCESS
    assert exporter.writer.spooled_batches() == []
    assert [r[0] for r in query(db_path, "SELECT attempt_id FROM agent_attempts ORDER BY 1")] == ["att-0", "att-1", "att-2"]
    health = _health(db_path)
    assert health["spans_written"] == 2 and health["spans_spilled"] == 1 and health["spans_drained"] == 1
    assert health["batches_failed"] == 1 and health["spans_dropped"] == 0


def test_unwritable_spool_counts_dropped_and_never_raises(spans: SpanFactory, db_path: Path) -> None:
    """When both the database and the spool fail, export returns FAILURE and the loss is counted."""
    exporter = DuckDBSpanExporter(db_path, lock_timeout_s=0.1)
    Path(f"{db_path}.spool").write_text("not a directory")
    with file_lock(db_path, exclusive=True, timeout_s=1):
        assert exporter.export([spans.attempt(0)]) is SpanExportResult.FAILURE
    assert exporter.writer.counters["spans_dropped"] == 1
    Path(f"{db_path}.spool").unlink()
    assert exporter.export([spans.attempt(1)]) is SpanExportResult.SUCCESS
    assert _health(db_path)["spans_dropped"] == 1


def test_newer_schema_file_spills_instead_of_raising(spans: SpanFactory, db_path: Path) -> None:
    """A database from a newer otel-inputs is refused with a logged error and the batch kept in the spool."""
    migrate_file(db_path)
    con = duckdb.connect(str(db_path))
    con.execute("INSERT INTO otel_inputs_schema VALUES (?, 'future', now())", [SCHEMA_VERSION + 1])
    con.close()
    exporter = DuckDBSpanExporter(db_path)
    assert exporter.export([spans.attempt(0)]) is SpanExportResult.FAILURE
    assert len(exporter.writer.spooled_batches()) == 1


def test_store_catalog_status_lands_with_its_attempt(spans: SpanFactory, db_path: Path, tmp_path: Path) -> None:
    """With a store, each exported attempt's manifest lands in agent_artifacts, replacing older rows."""
    store = ArtifactStore(tmp_path / "store")
    staging = store.begin_attempt("att-0")
    blob = staging.put_bytes(b"hello")
    item = CatalogItem("att-0", "in-0-0", 0, label="a.txt", source_kind="explicit_attachment",
                       delivery_mode="inline", snapshot_ref=blob.snapshot_ref, sha256=blob.sha256,
                       size_bytes=5, capture_status="captured", artifact_status="available",
                       captured_at_ns=123)  # fmt: skip
    staging.commit(AttemptRecord("att-0", "run-1", coverage="complete", decision="admitted", items=(item,)))
    exporter = DuckDBSpanExporter(db_path, store=tmp_path / "store")
    exporter.export([spans.attempt(0, items=1)])
    exporter.export([spans.attempt(0, items=1)])
    rows = query(db_path, "SELECT attempt_id, input_id, sha256, artifact_status, manifest_coverage FROM agent_artifacts")
    assert rows == [("att-0", "in-0-0", blob.sha256, "available", "complete")]


def test_read_connection_sees_rows_between_batches(spans: SpanFactory, db_path: Path) -> None:
    """A reader using read_connection sees committed rows and does not block the next batch."""
    exporter = DuckDBSpanExporter(db_path)
    exporter.export([spans.attempt(0)])
    with read_connection(db_path) as con:
        assert con.execute("SELECT count(*) FROM agent_attempts").fetchone() == (1,)
    assert exporter.export([spans.attempt(1)]) is SpanExportResult.SUCCESS


def _child_export(db: str, conn: object) -> None:
    # Runs in a forked child: the parent's exporter object must still work.
    exporter = _FORK_STATE["exporter"]
    factory = SpanFactory()
    result = exporter.export([factory.attempt(5)])
    conn.send((result is SpanExportResult.SUCCESS, exporter.writer.source))  # type: ignore[attr-defined]


_FORK_STATE: dict[str, object] = {}


def test_exporter_works_after_fork(spans: SpanFactory, db_path: Path) -> None:
    """A forked child reuses the parent's exporter safely and reports under its own health source."""
    exporter = DuckDBSpanExporter(db_path)
    exporter.export([spans.attempt(0)])
    _FORK_STATE["exporter"] = exporter
    # Hold the in-process lock at fork time: the child must not inherit it locked.
    held = threading.Event()
    release = threading.Event()

    def hold() -> None:
        with exporter.writer._lock:
            held.set()
            release.wait(5)

    t = threading.Thread(target=hold)
    t.start()
    held.wait(5)
    ctx = multiprocessing.get_context("fork")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=_child_export, args=(str(db_path), child))
    proc.start()
    ok, source = parent.recv() if parent.poll(30) else (False, "")
    proc.join(10)
    release.set()
    t.join()
    assert ok and source.endswith(f":{proc.pid}")
    assert [r[0] for r in query(db_path, "SELECT attempt_id FROM agent_attempts ORDER BY 1")] == ["att-0", "att-5"]


AUTOCONFIG_SCRIPT = """
import json, sys
sys.path.insert(0, sys.argv[1])
from exporter_helpers import input_event, packet_attributes
from opentelemetry import trace
from opentelemetry.sdk._configuration import _OTelSDKConfigurator
from otel_inputs import names as n
_OTelSDKConfigurator().configure()
tracer = trace.get_tracer("autoconf")
with tracer.start_as_current_span("invoke_agent dev", attributes=packet_attributes(0, items=1)) as span:
    span.add_event(n.INPUT_EVENT, input_event(0, 0))
trace.get_tracer_provider().shutdown()
"""


def test_sdk_autoconfiguration_with_env_lands_rows(db_path: Path) -> None:
    """OTEL_TRACES_EXPORTER=duckdb plus OTEL_INPUTS_DB configures the exporter via the entry point."""
    env = dict(os.environ, OTEL_TRACES_EXPORTER="duckdb", OTEL_METRICS_EXPORTER="none",
               OTEL_LOGS_EXPORTER="none", OTEL_SERVICE_NAME="autoconf-svc")  # fmt: skip
    env[n.ENV_DB] = str(db_path)
    proc = subprocess.run([sys.executable, "-c", AUTOCONFIG_SCRIPT, str(Path(__file__).parent)],
                          env=env, capture_output=True, text=True, timeout=60)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert query(db_path, "SELECT attempt_id, service_name FROM agent_attempts") == [("att-0", "autoconf-svc")]
    assert query(db_path, "SELECT count(*) FROM agent_attempt_inputs") == [(1,)]
    assert json.loads(json.dumps(query(db_path, "SELECT count(*) FROM otel_traces"))) == [[1]]
