"""The OTLP/HTTP sink on loopback: stock exporter in, same rows out; responses; store; signals."""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from exporter_helpers import SpanFactory, query, query_dicts
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from opentelemetry.sdk.trace.export import SpanExportResult

from otel_inputs.exporter import DuckDBSpanExporter, OTLPSink, SinkConfig
from otel_inputs.exporter._db import file_lock
from otel_inputs.store import ArtifactStore, AttemptRecord, CatalogItem
from sink_client import post, proto_request, span_json

pytestmark = pytest.mark.timeout(60)


def _sink(db: Path, **kw: object) -> OTLPSink:
    config = kw.pop("config", None)
    return OTLPSink(db, port=0, config=config, **kw).start()  # type: ignore[arg-type]


def test_stock_exporter_spans_land_identically_to_in_process(spans: SpanFactory, tmp_path: Path) -> None:
    """The same spans via the stock OTLP exporter (gzip) and via the in-process exporter give identical rows."""
    batch = [spans.attempt(i, items=3) for i in range(3)] + [spans.span({"plain": 1}, name="plain")]
    direct, viasink = tmp_path / "direct.duckdb", tmp_path / "sink.duckdb"
    DuckDBSpanExporter(direct).export(batch)
    sink = _sink(viasink)
    try:
        otlp = OTLPSpanExporter(endpoint=sink.endpoint, compression=Compression.Gzip, timeout=10)
        assert otlp.export(batch) is SpanExportResult.SUCCESS
        otlp.shutdown()
    finally:
        sink.stop()
    for table, order in (("agent_attempts", "attempt_id"), ("agent_attempt_inputs", "attempt_id, seq"),
                         ("otel_traces", '"SpanId"')):  # fmt: skip
        assert query_dicts(direct, f"SELECT * FROM {table} ORDER BY {order}") == query_dicts(
            viasink, f"SELECT * FROM {table} ORDER BY {order}"
        ), table
    assert query(viasink, "SELECT count(*) FROM agent_attempt_inputs") == [(9,)]


def test_partial_success_rejects_bad_ids_and_lands_the_rest(spans: SpanFactory, db_path: Path) -> None:
    """A request mixing valid spans and wrong-length ids gets partial_success; valid spans still land."""
    good = spans.attempt(0, items=1)
    req = proto_request([good])
    bad = req.resource_spans[0].scope_spans[0].spans.add()
    bad.CopyFrom(req.resource_spans[0].scope_spans[0].spans[0])
    bad.trace_id = b"\x01" * 5
    sink = _sink(db_path)
    try:
        status, headers, body = post(sink.endpoint, req.SerializeToString())
    finally:
        sink.stop()
    assert status == 200 and headers["content-type"] == "application/x-protobuf"
    resp = ExportTraceServiceResponse.FromString(body)
    assert resp.partial_success.rejected_spans == 1
    assert "trace_id must be 16 bytes, got 5" in resp.partial_success.error_message
    assert query(db_path, "SELECT attempt_id FROM agent_attempts") == [("att-0",)]
    assert dict(query(db_path, "SELECT metric, value FROM exporter_health"))["spans_rejected"] == 1


def test_full_success_response_has_no_partial_success(spans: SpanFactory, db_path: Path) -> None:
    """A fully valid protobuf request gets 200 with an ExportTraceServiceResponse whose partial_success is unset."""
    sink = _sink(db_path)
    try:
        status, _, body = post(sink.endpoint, proto_request([spans.attempt(0)]).SerializeToString())
        empty_status, _, _ = post(sink.endpoint, b"")  # an empty request is a valid, empty export
    finally:
        sink.stop()
    assert status == 200 and empty_status == 200
    assert not ExportTraceServiceResponse.FromString(body).HasField("partial_success")


def test_otlp_json_with_hex_ids_and_string_ints(db_path: Path) -> None:
    """OTLP/JSON (hex ids, lowerCamelCase, intValue as string) lands; the reply is JSON; bad hex is rejected."""
    good = span_json("0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331", seq="0")
    bad = span_json("zz", "b7ad6b7169203332", seq="0")
    doc = {"resourceSpans": [{"resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "js-agent"}}]},
                              "scopeSpans": [{"scope": {"name": "js"}, "spans": [good, bad]}]}]}  # fmt: skip
    sink = _sink(db_path)
    try:
        status, headers, body = post(sink.endpoint, json.dumps(doc).encode(), content_type="application/json")
    finally:
        sink.stop()
    assert status == 200 and headers["content-type"] == "application/json"
    assert json.loads(body)["partialSuccess"]["rejectedSpans"] == "1"
    rows = query(db_path, "SELECT attempt_id, turn_index, service_name, span_id FROM agent_attempts")
    assert rows == [("att-json", 2, "js-agent", "b7ad6b7169203331")]
    assert query(db_path, "SELECT seq, input_id FROM agent_attempt_inputs") == [(0, "in-json-0")]


@pytest.mark.parametrize(
    ("body", "headers", "expected"),
    [
        (b"\x0a\xff\xff\xff\x0f\x01", {}, 400),  # truncated protobuf
        (b"hello", {"Content-Type": "text/plain"}, 415),
        (b'{"resourceSpans": 5}', {"Content-Type": "application/json"}, 400),
        (b"{not json", {"Content-Type": "application/json"}, 400),
        (b"not gzip", {"Content-Encoding": "gzip"}, 400),
        (b"x", {"Content-Encoding": "br"}, 415),
    ],
)
def test_bad_requests_get_clear_4xx_and_store_nothing(db_path: Path, body: bytes, headers: dict[str, str], expected: int) -> None:
    """Undecodable bodies, wrong content types and unknown encodings get a 4xx with a message, nothing stored."""
    sink = _sink(db_path)
    try:
        status, _, reply = post(sink.endpoint, body, **{k.lower().replace("-", "_"): v for k, v in headers.items()})
    finally:
        sink.stop()
    assert status == expected and reply
    assert not db_path.exists() or query(db_path, "SELECT count(*) FROM otel_traces") == [(0,)]


def test_size_caps_and_gzip_bombs_get_413(db_path: Path) -> None:
    """Bodies over the cap, before or after decompression, get 413 and the sink keeps serving."""
    sink = _sink(db_path, config=SinkConfig(max_body_bytes=100_000))
    try:
        assert post(sink.endpoint, b"\0" * 100_001)[0] == 413
        bomb = gzip.compress(b"\0" * 50_000_000)  # ~50 KB on the wire, 50 MB inflated
        assert len(bomb) < 100_000
        assert post(sink.endpoint, bomb, content_encoding="gzip")[0] == 413
        assert post(sink.endpoint, b"", path="/v1/metrics")[0] == 404
        assert post(sink.endpoint, proto_request([]).SerializeToString())[0] == 200
    finally:
        sink.stop()


@pytest.mark.parametrize("config, requests, items", [
    (SinkConfig(max_queued_spans=2, max_batch_spans=1, queue_wait_s=0.1), 6, 0),
    (SinkConfig(max_queued_bytes=1, max_batch_spans=1, queue_wait_s=0.1), 5, 2),  # one byte: one request waits at a time
], ids=["span-bound", "byte-bound"])
def test_full_buffer_answers_503_with_retry_after_then_everything_lands(
        spans: SpanFactory, db_path: Path, config: SinkConfig, requests: int, items: int) -> None:
    """When the bounded queue (spans or bytes) is full the sink answers 503 + Retry-After; accepted spans all land later."""
    sink = _sink(db_path, config=config)
    bodies = [proto_request([spans.attempt(i, items=items)]).SerializeToString() for i in range(requests)]
    try:
        with file_lock(db_path, exclusive=True, timeout_s=5):  # the writer stalls on the file
            results = [post(sink.endpoint, b) for b in bodies]
        codes = [r[0] for r in results]
        assert 503 in codes and 200 in codes
        assert all(r[1].get("retry-after") == "1" for r in results if r[0] == 503)
    finally:
        sink.stop()
    accepted = sum(1 for c in codes if c == 200)
    assert query(db_path, "SELECT count(*) FROM agent_attempts") == [(accepted,)]


def test_slow_client_does_not_block_others(spans: SpanFactory, db_path: Path) -> None:
    """A client that sends half a request and stalls does not delay another client's export."""
    import socket

    sink = _sink(db_path, config=SinkConfig(request_deadline_s=5))
    try:
        host, port = sink.address
        slow = socket.create_connection((host, port))
        slow.sendall(b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\nContent-Length: 1000\r\n\r\nab")
        t0 = time.monotonic()
        status = post(sink.endpoint, proto_request([spans.attempt(0)]).SerializeToString())[0]
        assert status == 200 and time.monotonic() - t0 < 2
        slow.close()
    finally:
        sink.stop()
    assert query(db_path, "SELECT count(*) FROM agent_attempts") == [(1,)]


def _write_manifest(store: ArtifactStore, attempt_id: str) -> None:
    staging = store.begin_attempt(attempt_id)
    blob = staging.put_bytes(attempt_id.encode())
    staging.commit(AttemptRecord(attempt_id, "run-1", coverage="complete", decision="admitted", items=(
        CatalogItem(attempt_id, f"{attempt_id}-in", 0, sha256=blob.sha256, snapshot_ref=blob.snapshot_ref,
                    capture_status="captured", artifact_status="available", size_bytes=len(attempt_id)),)))  # fmt: skip


def test_store_catalog_status_lands_at_start_periodically_and_on_stop(tmp_path: Path, db_path: Path) -> None:
    """With a store, manifests present at start and written while running both reach agent_artifacts."""
    store = ArtifactStore(tmp_path / "store")
    _write_manifest(store, "att-early")
    sink = _sink(db_path, store=tmp_path / "store", config=SinkConfig(store_interval_s=0.2))
    try:
        _write_manifest(store, "att-late")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            time.sleep(0.3)
            with file_lock(db_path, exclusive=False, timeout_s=5):
                if query(db_path, "SELECT count(*) FROM agent_artifacts") == [(2,)]:
                    break
    finally:
        sink.stop()
    rows = query(db_path, "SELECT attempt_id, input_id FROM agent_artifacts ORDER BY 1")
    assert rows == [("att-early", "att-early-in"), ("att-late", "att-late-in")]


def test_collect_command_flushes_on_sigterm_and_exits_zero(spans: SpanFactory, tmp_path: Path, db_path: Path) -> None:
    """`otel-inputs collect` lands posted spans, and on SIGTERM flushes them and exits 0."""
    exe = Path(sys.executable).with_name("otel-inputs")
    proc = subprocess.Popen([str(exe), "collect", "--db", str(db_path), "--port", "0", "--grpc-port", "0"],
                            stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        line = proc.stderr.readline() if proc.stderr else ""
        assert "listening on http://127.0.0.1:" in line, line
        endpoint = line.split("listening on ")[1].split(" ")[0]
        otlp = OTLPSpanExporter(endpoint=endpoint, timeout=10)
        assert otlp.export([spans.attempt(i) for i in range(5)]) is SpanExportResult.SUCCESS
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    assert query(db_path, "SELECT count(*) FROM agent_attempts") == [(5,)]
    assert os.path.exists(db_path)
