"""OTLP/HTTP for the sink: Starlette routes served by uvicorn (httptools parser) in one thread.

The HTTP parsing (Content-Length and chunked bodies, trailers, keep-alive, pipelining, malformed
framing answered 400) is uvicorn's.  Added here, because uvicorn has no such settings: a header
deadline (a client that trickles its request line and headers is cut off, uvicorn's keep-alive
timer covers only the idle time between requests), a body deadline, a connection cap answered
503 + Retry-After at accept time, and an incremental, bounded gunzip that reads every gzip member.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
import zlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import uvicorn
from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Route
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from otel_inputs.exporter._otlp import status_body

if TYPE_CHECKING:
    from otel_inputs.exporter._sink import OTLPSink

_log = logging.getLogger(__name__)

TRACES_PATH = "/v1/traces"
LOGS_PATH = "/v1/logs"
_PROTOBUF_TYPES = frozenset({"application/x-protobuf", "application/protobuf"})
_JSON_TYPE = "application/json"
_RPC_INVALID_ARGUMENT = 3
_RPC_RESOURCE_EXHAUSTED = 8
_RPC_UNAVAILABLE = 14
_RPC_DEADLINE_EXCEEDED = 4


class BodyTooLarge(Exception):
    pass


class BadGzip(Exception):
    pass


class GzipStream:
    """Incremental gunzip of a multi-member stream, never producing more than ``cap`` bytes.

    RFC 1952 allows several members back to back (``cat a.gz b.gz``); each is decoded in turn, so
    none is silently dropped.  Anything after a member that is not another member is an error."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.out = bytearray()
        self._d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        self._member_started = False
        self._members = 0

    def feed(self, data: bytes) -> None:
        while data:
            room = self.cap - len(self.out) + 1
            try:
                chunk = self._d.decompress(data, room)
            except zlib.error as exc:
                raise BadGzip(str(exc)) from None
            self._member_started = True
            self.out += chunk
            if len(self.out) > self.cap:
                raise BodyTooLarge
            if self._d.unconsumed_tail:
                data = self._d.unconsumed_tail
                continue
            if self._d.eof:
                data = self._d.unused_data
                self._d = zlib.decompressobj(16 + zlib.MAX_WBITS)
                self._member_started = False
                self._members += 1
                continue
            data = b""

    def finish(self) -> bytearray:
        if self._member_started or not self._members:
            # Mid-member at the end of the body (or no member at all): the body is cut short.
            raise BadGzip("truncated gzip stream")
        return self.out


class _Protocol(HttpToolsProtocol):
    """uvicorn's httptools protocol plus a header deadline and a connection cap."""

    header_timeout_s: float = 10.0
    max_connections: int = 64

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._header_timer: asyncio.TimerHandle | None = None
        if len(self.connections) > self.max_connections:
            # Refused at once, with the retry hint, instead of holding a socket for it.
            transport.write(b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Type: application/json\r\n"
                            b"Content-Length: 52\r\nConnection: close\r\n\r\n"
                            b'{"code": 14, "message": "too many open connections"}')  # fmt: skip
            transport.close()
            return
        self._arm_header_timer()

    def _arm_header_timer(self) -> None:
        self._cancel_header_timer()
        self._header_timer = self.loop.call_later(self.header_timeout_s, self._header_timeout)

    def _cancel_header_timer(self) -> None:
        timer = getattr(self, "_header_timer", None)
        if timer is not None:
            timer.cancel()
            self._header_timer = None

    def _header_timeout(self) -> None:
        self._header_timer = None
        if not self.transport.is_closing():
            _log.info("otel-inputs collect: closing a connection whose request headers did not arrive in %.0f s",
                      self.header_timeout_s)  # fmt: skip
            self.transport.close()

    def on_headers_complete(self) -> None:
        self._cancel_header_timer()
        super().on_headers_complete()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing() and not self.pipeline:
            self._arm_header_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_header_timer()
        super().connection_lost(exc)


# A refused body is read and dropped up to this many times the cap before the answer (see _drain).
_DRAIN_FACTOR = 4


def _error(code: int, rpc: int, message: str, *, as_json: bool, headers: dict[str, str] | None = None,
           close: bool = False) -> Response:  # fmt: skip
    hdrs = dict(headers or {})
    if close:
        hdrs["Connection"] = "close"
    return Response(status_body(rpc, message, as_json=as_json), status_code=code,
                    media_type=_JSON_TYPE if as_json else "application/x-protobuf", headers=hdrs)  # fmt: skip


async def _stream(request: Request) -> AsyncIterator[bytes]:
    async for chunk in request.stream():
        if chunk:
            yield chunk


async def _drain(request: Request, limit: int, deadline_s: float) -> None:
    """Read and drop a refused, not yet started body (bounded in bytes and time) so the client reads the answer.

    Answering before the body is read and then closing resets a client that is still sending: it
    sees a connection error instead of the 413 and retries the same oversized request."""
    seen = 0
    try:
        async with asyncio.timeout(deadline_s):
            # The raw ASGI messages: request.stream() cannot be started again once partly read.
            while seen <= limit:
                message = await request.receive()
                if message["type"] != "http.request":
                    return
                seen += len(message.get("body", b""))
                if not message.get("more_body", False):
                    return
    except TimeoutError:
        return


def build_app(sink: OTLPSink) -> Starlette:
    cfg = sink.config

    async def receive_body(request: Request, gzip: bool, held: list[int], declared: int | None) -> bytearray:
        """The decoded body, read within the body deadline and capped after decoding.  Its bytes are
        taken from the in-flight budget (``held[0]``): the declared length at once, so a body is
        refused before it is read rather than half-way, then whatever decoding adds."""
        cap = cfg.max_body_bytes
        if declared and not sink.inflight.try_grow(held[0], declared):
            raise _Busy
        held[0] = max(held[0], declared or 0)
        plain = bytearray()
        unzip = GzipStream(cap) if gzip else None
        async with asyncio.timeout(cfg.request_deadline_s):
            async for chunk in _stream(request):
                if unzip is not None:
                    unzip.feed(chunk)
                    size = len(unzip.out)
                else:
                    plain += chunk
                    size = len(plain)
                    if size > cap:
                        raise BodyTooLarge
                if size > held[0]:
                    if not sink.inflight.try_grow(held[0], size):
                        raise _Busy
                    held[0] = size
        return unzip.finish() if unzip is not None else plain

    def handler(signal: str):  # noqa: ANN202 - a Starlette endpoint
        async def endpoint(request: Request) -> Response:
            media = (request.headers.get("content-type") or "").split(";")[0].strip().lower()
            as_json = media == _JSON_TYPE
            if media not in _PROTOBUF_TYPES and not as_json:
                return _error(415, _RPC_INVALID_ARGUMENT, "Content-Type must be application/x-protobuf or application/json",
                              as_json=False, close=True)  # fmt: skip
            encoding = (request.headers.get("content-encoding") or "identity").strip().lower()
            if encoding not in ("identity", "gzip"):
                return _error(415, _RPC_INVALID_ARGUMENT, "Content-Encoding must be gzip or identity",
                              as_json=as_json, close=True)  # fmt: skip
            raw_length = request.headers.get("content-length")
            declared = int(raw_length) if raw_length is not None and raw_length.isdigit() else None
            if declared is not None and declared > cfg.max_body_bytes:
                await _drain(request, _DRAIN_FACTOR * cfg.max_body_bytes, cfg.request_deadline_s)
                return _error(413, _RPC_RESOURCE_EXHAUSTED, f"body over {cfg.max_body_bytes} bytes, the request size limit",
                              as_json=as_json, close=True)  # fmt: skip
            held = [0]
            try:
                try:
                    body = await receive_body(request, encoding == "gzip", held, declared)
                except BodyTooLarge:
                    return _error(413, _RPC_RESOURCE_EXHAUSTED,
                                  f"decoded body over {cfg.max_body_bytes} bytes, the request size limit",
                                  as_json=as_json, close=True)  # fmt: skip
                except BadGzip as exc:
                    return _error(400, _RPC_INVALID_ARGUMENT, f"body is not valid gzip ({exc})", as_json=as_json,
                                  close=True)  # fmt: skip
                except _Busy:
                    # Read the rest and drop it (memory is not held) so the sender gets the 503 and its
                    # Retry-After, not a connection reset mid-body.
                    sink.inflight.give(held[0])
                    held[0] = 0
                    await _drain(request, _DRAIN_FACTOR * cfg.max_body_bytes, cfg.request_deadline_s)
                    return _retry(sink.busy_message(), as_json=as_json, close=True)
                except TimeoutError:
                    return _error(408, _RPC_DEADLINE_EXCEEDED,
                                  f"request body not complete within {cfg.request_deadline_s:.0f} s",
                                  as_json=as_json, close=True)  # fmt: skip
                except ClientDisconnect:
                    return Response(status_code=400)  # nobody reads it; nothing was stored
                answer = await asyncio.get_running_loop().run_in_executor(
                    sink.http_pool, sink.ingest, signal, body, as_json
                )
                del body
            finally:
                sink.inflight.give(held[0])
            if answer.ok:
                return Response(answer.body(as_json), status_code=200,
                                media_type=_JSON_TYPE if as_json else "application/x-protobuf")  # fmt: skip
            if answer.retry:
                return _retry(answer.message, as_json=as_json)
            return _error(answer.http_status, answer.rpc_code, answer.message, as_json=as_json)

        return endpoint

    return Starlette(routes=[Route(TRACES_PATH, handler("traces"), methods=["POST"]),
                             Route(LOGS_PATH, handler("logs"), methods=["POST"])])  # fmt: skip


class _Busy(Exception):
    pass


def _retry(message: str, *, as_json: bool, close: bool = False) -> Response:
    return _error(503, _RPC_UNAVAILABLE, message, as_json=as_json, headers={"Retry-After": "1"}, close=close)


class HTTPServer:
    """uvicorn on a socket bound here (so port 0 is known at once), in its own thread and loop."""

    def __init__(self, sink: OTLPSink, host: str, port: int) -> None:
        cfg = sink.config
        self.sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((host, port))
        self.sock.listen(128)
        protocol = type("OTLPHttpProtocol", (_Protocol,), {"header_timeout_s": cfg.header_timeout_s,
                                                            "max_connections": cfg.max_connections})  # fmt: skip
        config = uvicorn.Config(
            build_app(sink), http=protocol, lifespan="off", access_log=False, log_level="warning",
            timeout_keep_alive=int(cfg.keep_alive_s), limit_concurrency=cfg.max_connections * 2,
            timeout_graceful_shutdown=5, loop="asyncio",
        )  # fmt: skip
        self.server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._run, name="otel-inputs-collect-http", daemon=True)
        self._started = threading.Event()

    @property
    def address(self) -> tuple[str, int]:
        host, port = self.sock.getsockname()[:2]
        return str(host), int(port)

    def _run(self) -> None:
        asyncio.run(self.server.serve(sockets=[self.sock]))

    def start(self) -> None:
        self._thread.start()
        deadline = 10.0
        waited = 0.0
        while not self.server.started and self._thread.is_alive() and waited < deadline:
            self._started.wait(0.01)
            waited += 0.01

    def stop(self) -> None:
        self.server.should_exit = True
        self._thread.join(15)
        try:
            self.sock.close()
        except OSError:
            pass


__all__ = ["HTTPServer", "LOGS_PATH", "TRACES_PATH", "GzipStream"]
