"""The receiver's limits as docs/ingest.md states them: what fits is accepted, what can never fit
is refused for good (413 / non-retryable status naming the limit), and "busy" always comes with a
retry delay -- never a retryable answer that can never succeed, never a refusal without RetryInfo."""

from __future__ import annotations

import gzip
import threading
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from exporter_helpers import query
from google.rpc import error_details_pb2, status_pb2
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from sink_client import post

from otel_inputs.exporter import OTLPSink, SinkConfig
from otel_inputs.exporter._grpc import TRACE_SERVICE

pytestmark = pytest.mark.timeout(300)

MiB = 1024 * 1024


def big_request(total_bytes: int, *, tag: int = 0, span_bytes: int = 256 * 1024) -> tuple[bytes, int]:
    """A valid traces request of about ``total_bytes`` (spans of ``span_bytes`` each) and its span count."""
    req = ExportTraceServiceRequest()
    ss = req.resource_spans.add().scope_spans.add()
    count = max(1, total_bytes // span_bytes)
    for i in range(count):
        sp = ss.spans.add(trace_id=bytes([1 + tag % 250]) * 16, span_id=(i + 1).to_bytes(8, "big"), name="big",
                          start_time_unix_nano=1, end_time_unix_nano=2)  # fmt: skip
        kv = sp.attributes.add(key="payload")
        kv.value.string_value = "x" * (span_bytes - 64)
    return req.SerializeToString(), count


def _spans(db: Path, tag: int) -> int:
    return query(db, 'SELECT count(*) FROM otel_traces WHERE "TraceId" = ?', [(bytes([1 + tag % 250]) * 16).hex()])[0][0]


@pytest.fixture
def sink(db_path: Path) -> Iterator[OTLPSink]:
    s = OTLPSink(db_path, port=0, grpc_port=0).start()
    yield s
    s.stop()


@pytest.mark.parametrize("mib", [17, 40, 63])
def test_http_body_up_to_the_cap_is_accepted_on_an_idle_receiver(sink: OTLPSink, db_path: Path, mib: int) -> None:
    """A 17, 40 or 63 MiB body (under the 64 MiB cap) gets 200 on an idle receiver and every span lands."""
    body, count = big_request(mib * MiB, tag=mib)
    assert len(body) < 64 * MiB
    status, _, reply = post(sink.endpoint, body, timeout=120)
    assert status == 200, (status, reply[:200])
    assert sink.flush(120)
    assert _spans(db_path, mib) == count


def test_http_gzip_body_inflating_past_the_memory_budget_is_accepted(sink: OTLPSink, db_path: Path) -> None:
    """A small gzip body that inflates to 40 MiB (over the 16 MiB in-flight budget, under the cap) gets 200."""
    body, count = big_request(40 * MiB, tag=99)
    status, _, reply = post(sink.endpoint, gzip.compress(body, 1), content_encoding="gzip", timeout=120)
    assert status == 200, (status, reply[:200])
    assert sink.flush(120)
    assert _spans(db_path, 99) == count


def test_http_body_over_the_cap_is_413_naming_the_limit_never_503(sink: OTLPSink) -> None:
    """A body over 64 MiB, declared or streamed, or inflating past it, is a non-retryable 413 that names the limit."""
    over = b"\x0a" * (64 * MiB + 1)
    status, headers, reply = post(sink.endpoint, over, timeout=120)
    assert status == 413 and b"67108864" in reply and "retry-after" not in headers
    bomb = gzip.compress(b"\0" * (64 * MiB + 1))
    status, headers, reply = post(sink.endpoint, bomb, content_encoding="gzip", timeout=120)
    assert status == 413 and b"67108864" in reply and "retry-after" not in headers


def _grpc_call(sink: OTLPSink, body: bytes, *, compression: grpc.Compression | None = None) -> bytes:
    assert sink.grpc_endpoint is not None
    with grpc.insecure_channel(sink.grpc_endpoint, options=[("grpc.max_send_message_length", 256 * MiB)]) as ch:
        call = ch.unary_unary(f"/{TRACE_SERVICE}/Export", request_serializer=None, response_deserializer=None)
        return call(body, timeout=120, compression=compression)


def _retry_info(exc: grpc.RpcError) -> error_details_pb2.RetryInfo | None:
    raw = dict(exc.trailing_metadata() or ()).get("grpc-status-details-bin")
    if raw is None:
        return None
    for detail in status_pb2.Status.FromString(raw).details:
        info = error_details_pb2.RetryInfo()
        if detail.Unpack(info):
            return info
    return None


def test_grpc_message_up_to_the_cap_is_accepted(sink: OTLPSink, db_path: Path) -> None:
    """A 63 MiB gRPC message is accepted and lands, as over HTTP."""
    body, count = big_request(63 * MiB, tag=63 + 100)
    _grpc_call(sink, body)
    assert sink.flush(120)
    assert _spans(db_path, 163) == count


@pytest.mark.parametrize("compressed", [False, True], ids=["plain", "gzip"])
def test_grpc_message_over_the_cap_is_refused_for_good_naming_the_limit(sink: OTLPSink, compressed: bool) -> None:
    """A gRPC message over 64 MiB (on the wire or once inflated) is RESOURCE_EXHAUSTED without RetryInfo (not retryable), naming the limit."""
    body = b"\x0a" * (64 * MiB + 1)
    with pytest.raises(grpc.RpcError) as err:
        _grpc_call(sink, body, compression=grpc.Compression.Gzip if compressed else None)
    assert err.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED, err.value
    assert "67108864" in (err.value.details() or "") and _retry_info(err.value) is None


def test_many_concurrent_grpc_calls_queue_or_are_told_when_to_retry(db_path: Path) -> None:
    """150 concurrent gRPC calls while the receiver is busy: each ends OK, or busy with a RetryInfo -- never a bare RESOURCE_EXHAUSTED."""
    sink = OTLPSink(db_path, port=0, grpc_port=0).start()
    bodies = [big_request(2048, tag=i, span_bytes=1024)[0] for i in range(150)]
    assert sink.grpc_endpoint is not None
    channel = grpc.insecure_channel(sink.grpc_endpoint)
    call = channel.unary_unary(f"/{TRACE_SERVICE}/Export", request_serializer=None, response_deserializer=None)
    try:
        # Hold the one decode slot, so every call that reaches a handler waits there: the calls pile up.
        assert sink.decode_slots.acquire(timeout=10)
        held = True
        try:
            futures = [call.future(b, timeout=120) for b in bodies]
            first_done = threading.Event()
            for f in futures:
                f.add_done_callback(lambda _f: first_done.set())
            first_done.wait(3)  # let them arrive (a refusal ends a call at once); the verdict below does not depend on it
            sink.decode_slots.release()
            held = False
            for f in futures:
                f.exception(timeout=120)  # waits for the end of the call
        finally:
            if held:
                sink.decode_slots.release()
        outcomes: list[str] = []
        for f in futures:
            exc = f.exception()
            if exc is None:
                outcomes.append("OK")
                continue
            assert isinstance(exc, grpc.RpcError)
            info = _retry_info(exc)
            assert exc.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.RESOURCE_EXHAUSTED) and info is not None, (
                f"{exc.code()} {exc.details()!r} without RetryInfo")
            outcomes.append("retry")
        assert sink.flush(60)
    finally:
        channel.close()
        sink.stop()
    landed = query(db_path, "SELECT count(*) FROM otel_traces")[0][0]
    assert landed == 2 * outcomes.count("OK")


def test_http_requests_share_the_memory_budget_and_a_busy_answer_can_succeed_later(db_path: Path) -> None:
    """While another body holds the in-flight budget a second one is answered 503 + Retry-After (without a reset), and succeeds once alone."""
    sink = OTLPSink(db_path, port=0, config=SinkConfig(max_inflight_bytes=MiB)).start()
    try:
        first, _ = big_request(3 * MiB, tag=7)
        second, count = big_request(3 * MiB, tag=8)
        assert sink.inflight.try_grow(0, 2 * MiB)  # another request's body, being read
        try:
            status, headers, reply = post(sink.endpoint, second, timeout=60)
        finally:
            sink.inflight.give(2 * MiB)
        assert status == 503 and headers.get("retry-after") == "1", (status, reply[:200])
        assert post(sink.endpoint, second, timeout=60)[0] == 200  # alone, it fits
        assert post(sink.endpoint, first, timeout=60)[0] == 200
        assert sink.flush(60)
    finally:
        sink.stop()
    assert _spans(db_path, 8) == count
