"""OTLP/HTTP framing against the real sink on loopback: raw sockets for what stock clients never send."""

from __future__ import annotations

import gzip
import socket
import time
from pathlib import Path

import pytest
from exporter_helpers import SpanFactory, query
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from sink_client import post, proto_request

from otel_inputs.exporter import OTLPSink, SinkConfig

pytestmark = pytest.mark.timeout(90)


def _sink(db: Path, **cfg: object) -> OTLPSink:
    return OTLPSink(db, port=0, config=SinkConfig(**cfg)).start()  # type: ignore[arg-type]


def _raw(sink: OTLPSink, data: bytes, *, timeout: float = 10.0, then_wait: bool = True) -> bytes:
    """Send raw bytes, return everything the server answers until it closes or goes quiet."""
    with socket.create_connection(sink.address, timeout=timeout) as s:
        s.sendall(data)
        out = b""
        s.settimeout(2.0 if then_wait else 0.5)
        try:
            while chunk := s.recv(65536):
                out += chunk
                if b"\r\n\r\n" in out and _complete(out):
                    break
        except (TimeoutError, ConnectionResetError):
            pass
        return out


def _complete(resp: bytes) -> bool:
    head, _, body = resp.partition(b"\r\n\r\n")
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return len(body) >= int(value)
    return False


def _status(resp: bytes) -> int:
    assert resp.startswith(b"HTTP/1.1 "), resp[:200]
    return int(resp.split(b" ", 2)[1])


def _head(length_or_chunked: str, extra: str = "") -> bytes:
    return (f"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\n"
            f"{length_or_chunked}{extra}\r\n").encode()  # fmt: skip


def _chunked(body: bytes, size: int = 1000) -> bytes:
    out = b""
    for i in range(0, len(body), size):
        part = body[i : i + size]
        out += f"{len(part):x}\r\n".encode() + part + b"\r\n"
    return out + b"0\r\n\r\n"


def _count(db: Path) -> int:
    return query(db, "SELECT count(*) FROM otel_traces")[0][0] if db.exists() else 0


def test_chunked_body_without_content_length_lands(spans: SpanFactory, db_path: Path) -> None:
    """A body sent with Transfer-Encoding: chunked and no Content-Length (the JS SDK's way) is read and lands."""
    body = proto_request([spans.attempt(i) for i in range(3)]).SerializeToString()
    sink = _sink(db_path)
    try:
        resp = _raw(sink, _head("Transfer-Encoding: chunked\r\n") + _chunked(body))
        assert _status(resp) == 200
        ExportTraceServiceResponse.FromString(resp.partition(b"\r\n\r\n")[2])
    finally:
        sink.stop()
    assert _count(db_path) == 3


def test_chunked_body_with_trailers_lands(spans: SpanFactory, db_path: Path) -> None:
    """A chunked body followed by trailer fields is read whole and lands."""
    body = proto_request([spans.attempt(0)]).SerializeToString()
    sink = _sink(db_path)
    try:
        framed = _chunked(body)[: -len(b"\r\n")] + b"X-Checksum: abc\r\n\r\n"
        assert _status(_raw(sink, _head("Transfer-Encoding: chunked\r\n", "Trailer: X-Checksum\r\n") + framed)) == 200
    finally:
        sink.stop()
    assert _count(db_path) == 1


@pytest.mark.parametrize("framing", [
    b"zz\r\nabc\r\n0\r\n\r\n",  # a chunk size that is not hex
    b"3\r\nabcdef\r\n0\r\n\r\n",  # more data than the chunk size says
    b"-5\r\nabc\r\n0\r\n\r\n",  # a negative chunk size
], ids=["non-hex", "overlong", "negative"])
def test_bad_chunk_sizes_get_400_and_store_nothing(spans: SpanFactory, db_path: Path, framing: bytes) -> None:
    """Malformed chunk framing is answered 400 and nothing lands; the sink keeps serving."""
    sink = _sink(db_path)
    try:
        assert _status(_raw(sink, _head("Transfer-Encoding: chunked\r\n") + framing)) == 400
        assert post(sink.endpoint, proto_request([spans.attempt(0)]).SerializeToString())[0] == 200
    finally:
        sink.stop()
    assert _count(db_path) == 1


def test_both_content_length_and_chunked_is_refused(spans: SpanFactory, db_path: Path) -> None:
    """A request with both Content-Length and Transfer-Encoding: chunked (a smuggling shape) gets 400, nothing stored."""
    body = proto_request([spans.attempt(0)]).SerializeToString()
    sink = _sink(db_path)
    try:
        resp = _raw(sink, _head(f"Content-Length: {len(body)}\r\nTransfer-Encoding: chunked\r\n") + _chunked(body))
        assert _status(resp) == 400
    finally:
        sink.stop()
    assert _count(db_path) == 0


def test_missing_chunk_terminator_times_out_with_408_and_stores_nothing(spans: SpanFactory, db_path: Path) -> None:
    """A chunked body whose final chunk never comes is cut off at the body deadline (408); nothing lands."""
    body = proto_request([spans.attempt(0)]).SerializeToString()
    sink = _sink(db_path, request_deadline_s=1.0)
    try:
        with socket.create_connection(sink.address, timeout=10) as s:
            s.sendall(_head("Transfer-Encoding: chunked\r\n") + _chunked(body)[: -len(b"0\r\n\r\n")])
            t0 = time.monotonic()
            resp = s.recv(65536)
            assert _status(resp) == 408 and time.monotonic() - t0 < 5
    finally:
        sink.stop()
    assert _count(db_path) == 0


def test_chunked_body_over_the_cap_gets_413(db_path: Path) -> None:
    """A chunked body (no declared length) larger than the cap is refused with 413 once the cap is passed."""
    sink = _sink(db_path, max_body_bytes=10_000)
    try:
        assert _status(_raw(sink, _head("Transfer-Encoding: chunked\r\n") + _chunked(b"\0" * 20_000))) == 413
    finally:
        sink.stop()


def test_gzip_body_over_the_cap_only_after_decoding_gets_413_chunked_or_not(db_path: Path) -> None:
    """A small gzip body that inflates past the cap is refused 413, with Content-Length and chunked alike."""
    bomb = gzip.compress(b"\0" * 5_000_000)
    sink = _sink(db_path, max_body_bytes=1_000_000)
    try:
        assert len(bomb) < 1_000_000
        assert post(sink.endpoint, bomb, content_encoding="gzip")[0] == 413
        resp = _raw(sink, _head("Transfer-Encoding: chunked\r\n", "Content-Encoding: gzip\r\n") + _chunked(bomb, 4096))
        assert _status(resp) == 413
    finally:
        sink.stop()


def test_two_member_gzip_body_lands_both_members(spans: SpanFactory, db_path: Path) -> None:
    """A gzip body of two members (cat a.gz b.gz) is decoded whole: spans split across the members all land."""
    body = proto_request([spans.attempt(i) for i in range(4)]).SerializeToString()
    half = len(body) // 2
    two = gzip.compress(body[:half]) + gzip.compress(body[half:])
    sink = _sink(db_path)
    try:
        status, _, reply = post(sink.endpoint, two, content_encoding="gzip")
        assert status == 200 and not ExportTraceServiceResponse.FromString(reply).HasField("partial_success")
    finally:
        sink.stop()
    assert _count(db_path) == 4


def test_gzip_followed_by_garbage_gets_400(spans: SpanFactory, db_path: Path) -> None:
    """Bytes after the last gzip member that are not another member make the body invalid (400), nothing stored."""
    body = gzip.compress(proto_request([spans.attempt(0)]).SerializeToString()) + b"trailing junk"
    sink = _sink(db_path)
    try:
        assert post(sink.endpoint, body, content_encoding="gzip")[0] == 400
    finally:
        sink.stop()
    assert _count(db_path) == 0


def test_slow_headers_are_cut_off_at_the_header_deadline(spans: SpanFactory, db_path: Path) -> None:
    """A client trickling its headers is disconnected after the header deadline; others are served meanwhile."""
    sink = _sink(db_path, header_timeout_s=1.0)
    try:
        with socket.create_connection(sink.address, timeout=10) as slow:
            slow.sendall(b"POST /v1/traces HTTP/1.1\r\nHost: x\r\n")
            t0 = time.monotonic()
            assert post(sink.endpoint, proto_request([spans.attempt(0)]).SerializeToString())[0] == 200
            closed = False
            while time.monotonic() - t0 < 6:
                try:
                    slow.sendall(b"X-Slow: 1\r\n")  # keeps trickling: never a complete header block
                    slow.settimeout(0.3)
                    if slow.recv(1024) == b"":
                        closed = True
                        break
                except TimeoutError:
                    continue
                except (BrokenPipeError, ConnectionResetError):
                    closed = True
                    break
            assert closed and time.monotonic() - t0 < 5
    finally:
        sink.stop()


def test_connections_over_the_cap_get_503_with_retry_after(spans: SpanFactory, db_path: Path) -> None:
    """Past max_connections a new connection is answered 503 + Retry-After at once; a freed slot serves again."""
    sink = _sink(db_path, max_connections=3)
    held = [socket.create_connection(sink.address, timeout=5) for _ in range(3)]
    try:
        time.sleep(0.2)
        resp = _raw(sink, _head("Content-Length: 0\r\n"))
        assert _status(resp) == 503 and b"Retry-After: 1" in resp
        for s in held:
            s.close()
        held = []
        time.sleep(0.3)
        assert post(sink.endpoint, proto_request([spans.attempt(0)]).SerializeToString())[0] == 200
    finally:
        for s in held:
            s.close()
        sink.stop()


@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE", "PATCH"])
def test_other_methods_get_405_with_allow(db_path: Path, method: str) -> None:
    """Methods other than POST on an OTLP path are answered 405 with an Allow header."""
    sink = _sink(db_path)
    try:
        resp = _raw(sink, f"{method} /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n".encode())
        assert _status(resp) == 405 and b"allow: post" in resp.lower()
    finally:
        sink.stop()


def test_keep_alive_serves_several_requests_on_one_connection(spans: SpanFactory, db_path: Path) -> None:
    """Several requests on one kept-alive connection are each answered and all land."""
    import http.client

    sink = _sink(db_path)
    try:
        conn = http.client.HTTPConnection(*sink.address, timeout=10)
        for i in range(3):
            conn.request("POST", "/v1/traces", body=proto_request([spans.attempt(i)]).SerializeToString(),
                         headers={"Content-Type": "application/x-protobuf"})  # fmt: skip
            resp = conn.getresponse()
            resp.read()
            assert resp.status == 200 and resp.getheader("connection") != "close"
        conn.close()
    finally:
        sink.stop()
    assert _count(db_path) == 3
