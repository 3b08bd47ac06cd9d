"""The sink's memory savings: wire bytes in the queue, its own DuckDB settings, a malloc-backed Arrow pool only in `collect`."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest
from exporter_helpers import SpanFactory, query
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from sink_client import post, proto_request, span_json

from otel_inputs.exporter import OTLPSink, migrate
from otel_inputs.exporter._db import SINK_WRITER_SETTINGS, connect_with_retry, file_lock
from otel_inputs.exporter._wal import wal_dir
from otel_inputs.exporter._schema import MIGRATIONS
from otel_inputs.exporter._writer import DuckDBWriter

pytestmark = pytest.mark.timeout(60)


def test_accepted_request_is_logged_as_its_protobuf_wire_bytes(spans: SpanFactory, db_path: Path) -> None:
    """A protobuf request is made durable as its own body and a JSON one as its (smaller) protobuf re-encoding."""
    body = proto_request([spans.attempt(0, items=2)]).SerializeToString()
    doc = {"resourceSpans": [{"scopeSpans": [{"spans": [span_json("0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331")]}]}]}
    text = json.dumps(doc).encode()
    sink = OTLPSink(db_path, port=0).start()
    try:
        with file_lock(db_path, exclusive=True, timeout_s=5):  # the writer waits: both stay in the log
            assert post(sink.endpoint, body)[0] == 200
            assert post(sink.endpoint, text, content_type="application/json")[0] == 200
            records = [r for p in sorted(wal_dir(db_path).glob("wal-*.log")) for r in sink.wal._read_segment(p)]
    finally:
        sink.stop()
    assert [r.payload for r in records][0] == body and len(records) == 2
    assert len(records[1].payload) < len(text)
    assert ExportTraceServiceRequest.FromString(records[1].payload).resource_spans[0].scope_spans[0].spans[0].name


def test_requests_queued_as_wire_bytes_land_with_rejected_spans_skipped(spans: SpanFactory, db_path: Path) -> None:
    """Requests waiting as wire bytes are parsed again by the writer; the positions rejected at receipt stay skipped."""
    req = proto_request([spans.attempt(0, items=1), spans.attempt(1, items=2)])
    bad = req.resource_spans[0].scope_spans[0].spans.add()
    bad.CopyFrom(req.resource_spans[0].scope_spans[0].spans[0])
    bad.span_id = b"\x02" * 3
    sink = OTLPSink(db_path, port=0).start()
    try:
        for _ in range(3):  # queued behind each other; the repeats replace by key
            assert post(sink.endpoint, req.SerializeToString())[0] == 200
    finally:
        sink.stop()
    assert query(db_path, "SELECT attempt_id FROM agent_attempts ORDER BY 1") == [("att-0",), ("att-1",)]
    assert query(db_path, "SELECT count(*) FROM agent_attempt_inputs") == [(3,)]
    assert query(db_path, "SELECT count(*) FROM otel_traces") == [(2,)]


def test_sink_writer_has_its_own_bounded_settings_and_the_exporter_keeps_its_own(db_path: Path) -> None:
    """The sink's writer opens connections with SINK_WRITER_SETTINGS (its checkpoint threshold); other writers keep WRITER_SETTINGS."""
    sink = OTLPSink(db_path, port=0).start()
    try:
        assert sink.writer is not None and sink.writer.settings == SINK_WRITER_SETTINGS
    finally:
        sink.stop()
    assert DuckDBWriter(db_path).settings is None  # WRITER_SETTINGS, read at each connect
    con = connect_with_retry(db_path, read_only=False, settings=SINK_WRITER_SETTINGS)
    try:
        threshold = con.execute("SELECT current_setting('checkpoint_threshold')").fetchone()[0]
    finally:
        con.close()
    assert threshold.replace(" ", "") in ("15.2MiB", "16.0MB", "16MB")


def test_system_arrow_pool_only_in_the_collect_process(tmp_path: Path) -> None:
    """`otel-inputs collect` switches its own process to the malloc-backed Arrow pool; an OTLPSink started in an application does not."""
    default = pa.default_memory_pool().backend_name
    sink = OTLPSink(tmp_path / "app.duckdb", port=0).start()
    sink.stop()
    assert pa.default_memory_pool().backend_name == default
    script = textwrap.dedent(
        """
        import os, signal, sys, threading, time
        import pyarrow as pa
        from otel_inputs.exporter._collect_cli import collect
        seen = []
        def probe():
            time.sleep(1.0)
            seen.append(pa.default_memory_pool().backend_name)
            os.kill(os.getpid(), signal.SIGTERM)
        threading.Thread(target=probe, daemon=True).start()
        collect.main(["--db", sys.argv[1], "--port", "0"], standalone_mode=False)
        print("POOL", seen[0])
        """
    )
    out = subprocess.run([sys.executable, "-c", script, str(tmp_path / "sink.duckdb")], capture_output=True,
                         text=True, timeout=50, check=True)  # fmt: skip
    assert "POOL system" in out.stdout


def test_agent_attempts_run_index_is_dropped_by_a_new_migration(db_path: Path) -> None:
    """A database at schema 8 loses the agent_attempts_run index through migration 9; the unique attempt index stays."""
    con = duckdb.connect(str(db_path))
    try:
        con.execute("CREATE TABLE otel_inputs_schema (version INTEGER PRIMARY KEY, name VARCHAR NOT NULL, "
                    "applied_at TIMESTAMP NOT NULL)")  # fmt: skip
        for m in MIGRATIONS[:8]:
            con.execute(m.sql)
            con.execute("INSERT INTO otel_inputs_schema VALUES (?, ?, now())", [m.version, m.name])
        indexes = lambda: {r[0] for r in con.execute("SELECT index_name FROM duckdb_indexes()").fetchall()}  # noqa: E731
        assert "agent_attempts_run" in indexes()
        migrate(con)
        assert "agent_attempts_run" not in indexes()
        assert {"agent_attempts_attempt", "agent_artifacts_attempt"} <= indexes()
        assert con.execute("SELECT name FROM otel_inputs_schema WHERE version = 9").fetchone() == (
            "drop_agent_attempts_run_index",)
    finally:
        con.close()
