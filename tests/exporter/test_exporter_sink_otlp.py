"""The stock Python OTLP exporters (HTTP and gRPC, traces and logs) against the real sink on
loopback, the in-process ``duckdb`` log exporter, and bad log and gRPC input."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from exporter_helpers import SpanFactory, query, query_dicts
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter as GrpcLogExporter
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpanExporter
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter as HttpLogExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpSpanExporter
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace.export import SpanExportResult
from sink_client import post, proto_request

from otel_inputs.exporter import DuckDBLogExporter, DuckDBSpanExporter, OTLPSink, SinkConfig
from otel_inputs.exporter._grpc import LOGS_SERVICE, TRACE_SERVICE

pytestmark = pytest.mark.timeout(90)

TRACE_ID = 0x0AF7651916CD43DD8448EB211C80319C
SPAN_ID = 0xB7AD6B7169203331


@pytest.fixture
def sink(db_path: Path) -> Iterator[OTLPSink]:
    s = OTLPSink(db_path, port=0, grpc_port=0).start()
    yield s
    s.stop()


def _log_records(n: int = 3, *, with_context: bool = True) -> list[Any]:
    """Real SDK log records: GenAI content events with structured bodies, under a span or not."""
    memory = InMemoryLogRecordExporter()
    provider = LoggerProvider(resource=Resource.create({"service.name": "agent-svc"}))
    provider.add_log_record_processor(SimpleLogRecordProcessor(memory))
    logger = provider.get_logger("tests.logs", "0.1")
    ctx = trace.set_span_in_context(trace.NonRecordingSpan(trace.SpanContext(
        TRACE_ID, SPAN_ID, is_remote=False, trace_flags=trace.TraceFlags(1))))  # fmt: skip
    for i in range(n):
        logger.emit(
            timestamp=1764460800000000000 + i, body={"role": "user", "content": f"hello {i}", "parts": [1, "two"]},
            attributes={"gen_ai.provider.name": "openai", "seq": i, "tags": ["a", "b"]},
            event_name="gen_ai.user.message", severity_text="INFO", context=ctx if with_context else None,
        )  # fmt: skip
    records = list(memory.get_finished_logs())
    provider.shutdown()
    return records


def _logs(db: Path) -> list[dict[str, Any]]:
    return query_dicts(db, 'SELECT * FROM otel_logs ORDER BY "Timestamp"')


def _wait(sink: OTLPSink) -> None:
    assert sink.flush(30)


def test_stock_http_exporters_land_traces_and_logs(spans: SpanFactory, sink: OTLPSink, db_path: Path) -> None:
    """The stock OTLP/HTTP span and log exporters (gzip) land spans and log records, structured values as JSON."""
    span_exp = HttpSpanExporter(endpoint=sink.endpoint, compression=Compression.Gzip, timeout=10)
    assert span_exp.export([spans.attempt(i) for i in range(2)]) is SpanExportResult.SUCCESS
    log_exp = HttpLogExporter(endpoint=sink.logs_endpoint, compression=Compression.Gzip, timeout=10)
    assert log_exp.export(_log_records()).name == "SUCCESS"
    span_exp.shutdown()
    log_exp.shutdown()
    _wait(sink)
    assert query(db_path, "SELECT count(*) FROM agent_attempts") == [(2,)]
    rows = _logs(db_path)
    assert len(rows) == 3
    first = rows[0]
    assert json.loads(first["Body"]) == {"role": "user", "content": "hello 0", "parts": [1, "two"]}
    assert first["TraceId"] == f"{TRACE_ID:032x}" and first["SpanId"] == f"{SPAN_ID:016x}"
    assert first["TraceFlags"] == 1 and first["EventName"] == "gen_ai.user.message"
    assert first["ServiceName"] == "agent-svc" and first["ScopeName"] == "tests.logs" and first["ScopeVersion"] == "0.1"
    assert first["LogAttributes"]["tags"] == '["a","b"]' and first["LogAttributes"]["seq"] == "0"
    assert first["SeverityText"] == "INFO"


def test_stock_grpc_exporters_land_traces_and_logs(spans: SpanFactory, sink: OTLPSink, db_path: Path) -> None:
    """The stock OTLP/gRPC span and log exporters (gzip) land the same rows as over HTTP."""
    span_exp = GrpcSpanExporter(endpoint=sink.grpc_endpoint, insecure=True, timeout=10,
                                compression=grpc.Compression.Gzip)  # fmt: skip
    batch = [spans.attempt(i, items=2) for i in range(3)]
    assert span_exp.export(batch) is SpanExportResult.SUCCESS
    log_exp = GrpcLogExporter(endpoint=sink.grpc_endpoint, insecure=True, timeout=10)
    assert log_exp.export(_log_records(2, with_context=False)).name == "SUCCESS"
    span_exp.shutdown()
    log_exp.shutdown()
    _wait(sink)
    assert query(db_path, "SELECT count(*) FROM agent_attempts") == [(3,)]
    assert query(db_path, "SELECT count(*) FROM agent_attempt_inputs") == [(6,)]
    rows = _logs(db_path)
    assert [(r["TraceId"], r["SpanId"]) for r in rows] == [("", ""), ("", "")]  # no trace context: empty, as ClickHouse


def test_grpc_and_http_land_identical_span_rows(spans: SpanFactory, tmp_path: Path) -> None:
    """The same spans through gRPC, through HTTP and through the in-process exporter give identical rows."""
    batch = [spans.attempt(i, items=3) for i in range(2)] + [spans.span({"plain": 1}, name="plain")]
    dbs = {k: tmp_path / f"{k}.duckdb" for k in ("grpc", "http", "direct")}
    DuckDBSpanExporter(dbs["direct"]).export(batch)
    s = OTLPSink(dbs["grpc"], port=0, grpc_port=0).start()
    try:
        assert GrpcSpanExporter(endpoint=s.grpc_endpoint, insecure=True, timeout=10).export(batch) is SpanExportResult.SUCCESS
    finally:
        s.stop()
    s = OTLPSink(dbs["http"], port=0).start()
    try:
        assert HttpSpanExporter(endpoint=s.endpoint, timeout=10).export(batch) is SpanExportResult.SUCCESS
    finally:
        s.stop()
    for table, order in (("otel_traces", '"SpanId"'), ("agent_attempts", "attempt_id")):
        rows = {k: query_dicts(db, f"SELECT * FROM {table} ORDER BY {order}") for k, db in dbs.items()}
        assert rows["grpc"] == rows["http"] == rows["direct"], table


def test_in_process_log_exporter_matches_the_sink(tmp_path: Path) -> None:
    """The in-process `duckdb` log exporter (entry point, OTEL_INPUTS_DB) lands the same rows as the sink does."""
    from importlib.metadata import entry_points

    (ep,) = [e for e in entry_points(group="opentelemetry_logs_exporter") if e.name == "duckdb"]
    assert ep.load() is DuckDBLogExporter
    records = _log_records()
    direct = tmp_path / "direct.duckdb"
    exporter = DuckDBLogExporter(direct)
    assert exporter.export(records).name == "SUCCESS"
    exporter.shutdown()
    viasink = tmp_path / "sink.duckdb"
    s = OTLPSink(viasink, port=0).start()
    try:
        assert post(s.logs_endpoint, encode_logs(records).SerializeToString())[0] == 200
    finally:
        s.stop()
    assert _logs(direct) == _logs(viasink) and len(_logs(direct)) == 3


def test_log_exporter_reads_the_database_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Constructed with no arguments (as OTEL_LOGS_EXPORTER=duckdb does), the log exporter writes to OTEL_INPUTS_DB."""
    target = tmp_path / "env.duckdb"
    monkeypatch.setenv("OTEL_INPUTS_DB", str(target))
    exporter = DuckDBLogExporter()
    assert exporter.export(_log_records(1)).name == "SUCCESS"
    exporter.shutdown()
    assert query(target, "SELECT count(*) FROM otel_logs") == [(1,)]


def test_bad_log_records_are_rejected_alone_with_partial_success(sink: OTLPSink, db_path: Path) -> None:
    """Log records with wrong-length ids are rejected in partial_success; valid ones (with or without context) land."""
    req = encode_logs(_log_records(2))
    bad = req.resource_logs[0].scope_logs[0].log_records.add()
    bad.CopyFrom(req.resource_logs[0].scope_logs[0].log_records[0])
    bad.trace_id = b"\x01" * 5
    nocontext = req.resource_logs[0].scope_logs[0].log_records.add()
    nocontext.CopyFrom(req.resource_logs[0].scope_logs[0].log_records[0])
    nocontext.ClearField("trace_id")
    nocontext.ClearField("span_id")
    status, _, reply = post(sink.logs_endpoint, req.SerializeToString())
    assert status == 200
    partial = ExportLogsServiceResponse.FromString(reply).partial_success
    assert partial.rejected_log_records == 1 and "trace_id must be 16 bytes" in partial.error_message
    _wait(sink)
    assert query(db_path, "SELECT count(*), count(*) FILTER (WHERE \"TraceId\" = '') FROM otel_logs") == [(3, 1)]


def test_undecodable_and_json_logs(sink: OTLPSink, db_path: Path) -> None:
    """A garbage logs body gets 400 and stores nothing; an OTLP/JSON logs body with hex ids lands."""
    assert post(sink.logs_endpoint, b"\x0a\xff\xff\xff\x0f\x01")[0] == 400
    doc = {"resourceLogs": [{"resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "js"}}]},
                             "scopeLogs": [{"scope": {"name": "js-scope"}, "logRecords": [{
                                 "timeUnixNano": "1764460800000000000", "traceId": f"{TRACE_ID:032x}",
                                 "spanId": f"{SPAN_ID:016x}", "body": {"kvlistValue": {"values": [
                                     {"key": "content", "value": {"stringValue": "hi"}}]}},
                                 "eventName": "gen_ai.system.message"}]}]}]}  # fmt: skip
    status, _, reply = post(sink.logs_endpoint, json.dumps(doc).encode(), content_type="application/json")
    assert status == 200 and json.loads(reply) == {}
    _wait(sink)
    (row,) = _logs(db_path)
    assert row["Body"] == '{"content":"hi"}' and row["SpanId"] == f"{SPAN_ID:016x}" and row["ServiceName"] == "js"


def test_huge_log_body_over_the_cap_is_refused_and_the_sink_stays_up(db_path: Path) -> None:
    """A log record whose body exceeds the request cap is refused 413 with a reason; nothing lands; later records do."""
    s = OTLPSink(db_path, port=0, grpc_port=0, config=SinkConfig(max_body_bytes=1_000_000)).start()
    try:
        req = encode_logs(_log_records(1))
        req.resource_logs[0].scope_logs[0].log_records[0].body.string_value = "x" * 2_000_000
        status, _, reply = post(s.logs_endpoint, req.SerializeToString())
        assert status == 413 and b"over 1000000 bytes" in reply
        with pytest.raises(grpc.RpcError) as err:
            _raw_grpc(s, LOGS_SERVICE, req.SerializeToString())
        assert err.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
        assert post(s.logs_endpoint, encode_logs(_log_records(1)).SerializeToString())[0] == 200
    finally:
        s.stop()
    assert query(db_path, "SELECT count(*) FROM otel_logs") == [(1,)]


def _raw_grpc(s: OTLPSink, service: str, body: bytes) -> bytes:
    with grpc.insecure_channel(s.grpc_endpoint, options=[("grpc.max_send_message_length", 64 << 20)]) as ch:
        call = ch.unary_unary(f"/{service}/Export", request_serializer=None, response_deserializer=None)
        return call(body, timeout=10)


def test_grpc_garbage_message_is_invalid_argument(sink: OTLPSink, db_path: Path) -> None:
    """An undecodable gRPC message is answered INVALID_ARGUMENT; nothing lands and the server keeps serving."""
    for service in (TRACE_SERVICE, LOGS_SERVICE):
        with pytest.raises(grpc.RpcError) as err:
            _raw_grpc(sink, service, b"\x0a\xff\xff\xff\x0f\x01")
        assert err.value.code() is grpc.StatusCode.INVALID_ARGUMENT and "not a valid protobuf" in err.value.details()
    reply = _raw_grpc(sink, TRACE_SERVICE, proto_request([]).SerializeToString())
    assert ExportTraceServiceResponse.FromString(reply) == ExportTraceServiceResponse()


def test_grpc_garbage_frames_do_not_take_the_server_down(sink: OTLPSink, spans: SpanFactory, db_path: Path) -> None:
    """Bytes that are not HTTP/2 sent to the gRPC port are dropped by the server; a real export still succeeds."""
    host, port = sink.grpc_address  # type: ignore[misc]
    for junk in (b"GET / HTTP/1.1\r\n\r\n", b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\xff" * 64, b"\x00" * 9 + b"garbage"):
        with socket.create_connection((host, port), timeout=5) as s:
            s.sendall(junk)
            s.settimeout(2)
            try:
                s.recv(1024)
            except (TimeoutError, ConnectionResetError):
                pass
    exp = GrpcSpanExporter(endpoint=sink.grpc_endpoint, insecure=True, timeout=10)
    assert exp.export([spans.attempt(0)]) is SpanExportResult.SUCCESS
    exp.shutdown()
    _wait(sink)
    assert query(db_path, "SELECT count(*) FROM agent_attempts") == [(1,)]


def test_grpc_partial_success_for_bad_spans(spans: SpanFactory, sink: OTLPSink, db_path: Path) -> None:
    """A gRPC request mixing valid spans and bad ids is OK with partial_success; the valid span lands."""
    req = proto_request([spans.attempt(0, items=1)])
    bad = req.resource_spans[0].scope_spans[0].spans.add()
    bad.CopyFrom(req.resource_spans[0].scope_spans[0].spans[0])
    bad.span_id = b"\x02" * 3
    resp = ExportTraceServiceResponse.FromString(_raw_grpc(sink, TRACE_SERVICE, req.SerializeToString()))
    assert resp.partial_success.rejected_spans == 1
    _wait(sink)
    assert query(db_path, "SELECT count(*) FROM otel_traces") == [(1,)]


def test_grpc_full_sink_is_resource_exhausted_with_retry_info(spans: SpanFactory, db_path: Path) -> None:
    """With the queue full, gRPC answers RESOURCE_EXHAUSTED carrying a google.rpc.RetryInfo; accepted spans land."""
    from google.rpc import error_details_pb2, status_pb2

    from otel_inputs.exporter._db import file_lock

    s = OTLPSink(db_path, port=0, grpc_port=0, config=SinkConfig(max_queued_spans=1, max_batch_spans=1, queue_wait_s=0.1)).start()
    ok = 0
    try:
        with file_lock(db_path, exclusive=True, timeout_s=5):
            failure = None
            for i in range(5):
                try:
                    _raw_grpc(s, TRACE_SERVICE, proto_request([spans.attempt(i)]).SerializeToString())
                    ok += 1
                except grpc.RpcError as exc:
                    failure = exc
            assert failure is not None and failure.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
            details = dict(failure.trailing_metadata())["grpc-status-details-bin"]
            status = status_pb2.Status.FromString(details)
            info = error_details_pb2.RetryInfo()
            assert status.details[0].Unpack(info) and info.retry_delay.seconds == 1
    finally:
        s.stop()
    assert ok >= 1 and query(db_path, "SELECT count(*) FROM agent_attempts") == [(ok,)]


def test_cli_serves_grpc_on_a_chosen_port_and_can_disable_it(tmp_path: Path) -> None:
    """`collect --grpc-port 0` prints the gRPC endpoint it bound; `--no-grpc` serves HTTP only."""
    import subprocess
    import sys

    exe = Path(sys.executable).with_name("otel-inputs")
    for extra, expect in ((["--grpc-port", "0"], True), (["--no-grpc"], False)):
        proc = subprocess.Popen([str(exe), "collect", "--db", str(tmp_path / "c.duckdb"), "--port", "0", *extra],
                                stderr=subprocess.PIPE, text=True)  # fmt: skip
        try:
            line = proc.stderr.readline() if proc.stderr else ""
            assert "listening on http://127.0.0.1:" in line
            assert ("OTLP/gRPC on 127.0.0.1:" in line) is expect, line
            if expect:
                endpoint = line.split("OTLP/gRPC on ")[1].split()[0]
                with grpc.insecure_channel(endpoint) as ch:
                    grpc.channel_ready_future(ch).result(timeout=10)
        finally:
            proc.terminate()
            proc.wait(30)
            time.sleep(0.1)
