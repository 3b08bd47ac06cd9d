"""Memory bounds of the OTLP sink and the writer: byte-bounded queue, in-flight budget, chunked decode, DuckDB settings."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest
from exporter_helpers import SpanFactory, query
from sink_client import post, proto_request

from otel_inputs.exporter import OTLPSink, SinkConfig
from otel_inputs.exporter._arrow import build_batch
from otel_inputs.exporter._db import WRITER_SETTINGS, connect_with_retry, read_connection
from otel_inputs.exporter._spans import from_readable
from otel_inputs.exporter._writer import DuckDBWriter, coalesce

pytestmark = pytest.mark.timeout(60)


def _sink(db: Path, config: SinkConfig) -> OTLPSink:
    return OTLPSink(db, port=0, config=config).start()


def test_inflight_budget_full_answers_503_and_keeps_the_connection_usable(spans: SpanFactory, db_path: Path) -> None:
    """When request bodies in memory already fill the budget, a new body is read and discarded and answered 503 + Retry-After."""
    body = proto_request([spans.attempt(0)]).SerializeToString()
    sink = _sink(db_path, SinkConfig(max_inflight_bytes=len(body)))
    try:
        assert sink.inflight.try_grow(0, len(body))  # another request's body is "in memory"
        status, headers, _ = post(sink.endpoint, body)
        assert status == 503 and headers.get("retry-after") == "1"
        sink.inflight.give(len(body))
        assert post(sink.endpoint, body)[0] == 200
        assert sink.inflight.used == 0
    finally:
        sink.stop()
    assert query(db_path, "SELECT count(*) FROM agent_attempts") == [(1,)]


def test_chunked_decode_keeps_request_order_for_duplicates(spans: SpanFactory, db_path: Path) -> None:
    """Decoding one span per chunk, a span sent twice in one request lands once, as its later copy."""
    first = spans.attempt(0, items=2)
    req = proto_request([first, spans.attempt(1, items=1)])
    dup = req.resource_spans[0].scope_spans[0].spans.add()
    dup.CopyFrom(req.resource_spans[0].scope_spans[0].spans[0])
    dup.name = "renamed later copy"
    sink = _sink(db_path, SinkConfig(decode_chunk_spans=1))
    try:
        assert post(sink.endpoint, req.SerializeToString())[0] == 200
    finally:
        sink.stop()
    span_id = format(first.context.span_id, "016x")
    assert query(db_path, 'SELECT "SpanName" FROM otel_traces WHERE "SpanId" = ?', [span_id]) == [("renamed later copy",)]
    assert query(db_path, "SELECT count(*) FROM otel_traces") == [(2,)]
    assert query(db_path, "SELECT count(*) FROM agent_attempt_inputs") == [(3,)]


def test_coalesce_merges_disjoint_batches_and_splits_at_a_repeated_key(spans: SpanFactory) -> None:
    """Disjoint batches merge into one insert; a batch repeating an earlier span starts a new one."""
    a, b = from_readable(spans.attempt(0)), from_readable(spans.attempt(1))
    merged = coalesce([build_batch([a]), build_batch([b])])
    assert [m.span_count for m in merged] == [2]
    split = coalesce([build_batch([a]), build_batch([b]), build_batch([a])])
    assert [m.span_count for m in split] == [2, 1]


def test_write_batches_lands_repeated_span_once(spans: SpanFactory, db_path: Path) -> None:
    """Several batches in one transaction: a span in two of them lands once, with one attempt row."""
    a, b = from_readable(spans.attempt(0)), from_readable(spans.attempt(1))
    outcome = DuckDBWriter(db_path).write_batches([build_batch([a]), build_batch([b]), build_batch([a])])
    assert outcome.error is None and outcome.written == 3
    assert query(db_path, "SELECT count(*) FROM otel_traces") == [(2,)]
    assert query(db_path, "SELECT count(*) FROM agent_attempts") == [(2,)]


def test_writer_connection_gets_bounded_memory_and_threads(db_path: Path) -> None:
    """A read-write connection carries WRITER_SETTINGS; a read-only one opens alongside no conflict."""
    DuckDBWriter(db_path).write_batches([])
    con = connect_with_retry(db_path, read_only=False)
    try:
        assert con.execute("SELECT current_setting('threads')").fetchone()[0] == int(WRITER_SETTINGS["threads"])
        limit = con.execute("SELECT current_setting('memory_limit')").fetchone()[0]
        assert limit != duckdb.connect(":memory:").execute("SELECT current_setting('memory_limit')").fetchone()[0]
        assert limit.replace(" ", "").upper().startswith(("61.0MIB", "64.0MB", "61MIB", "64MB"))
    finally:
        con.close()
    with read_connection(db_path) as ro:
        assert ro.execute("SELECT count(*) FROM otel_traces").fetchone()[0] == 0


def test_batch_too_large_for_writer_memory_limit_lands_instead_of_spilling(
    spans: SpanFactory, db_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A batch that exceeds the writer's memory_limit is retried with DuckDB's default limit and lands, not spilled."""
    writer = DuckDBWriter(db_path)
    writer.write_batches([])  # schema created under the normal settings
    monkeypatch.setitem(WRITER_SETTINGS, "memory_limit", "1MB")
    batch = build_batch([from_readable(spans.attempt(i, items=20)) for i in range(64)])
    with caplog.at_level("INFO", logger="otel_inputs.exporter._writer"):
        outcome = writer.write_batches([batch])
    assert outcome.written == 64 and outcome.spilled == 0, outcome
    assert any("memory_limit" in r.getMessage() for r in caplog.records)
    assert query(db_path, "SELECT count(*) FROM agent_attempt_inputs") == [(64 * 20,)]
