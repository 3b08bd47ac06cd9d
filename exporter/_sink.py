"""``OTLPSink``: an OTLP/HTTP trace receiver that lands spans through the same DuckDB write path.

Request threads only parse (protobuf is parsed in C) and validate each request, answer at once
(with ``partial_success`` for rejected spans) and queue the request's protobuf wire bytes (the
parsed message takes ~2.5x its wire size, so it is dropped once validated); ONE writer thread
parses each queued request again (~14 ms per 512 rich spans), converts it to Arrow (``decode_chunk_spans`` spans at a time, see
:mod:`otel_inputs.exporter._columns`) and owns every DuckDB write (and the periodic landing of store
manifests), so the file sees one regular writer and the sender never waits for the conversion.
Memory is bounded in bytes at both ends: request bodies being read or parsed
(``max_inflight_bytes``) and requests waiting for the writer (``max_queued_bytes``, their wire
bytes).  When either is full the client gets 503 + Retry-After and
retries later, so nothing accepted is dropped.  ``stop()`` stops accepting, then flushes
everything already accepted before returning.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import itertools
import logging
import os
import sys
import threading
import time
import zlib
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pyarrow as pa

from otel_inputs.exporter._db import SINK_WRITER_SETTINGS
from otel_inputs.exporter._manifests import ManifestScanner
from otel_inputs.exporter._arrow import BatchTables
from otel_inputs.exporter._columns import Fallback, build_chunk
from otel_inputs.exporter._otlp import (
    DecodedRequest, DecodeError, check_request, iter_valid, parse_json, parse_protobuf, record_of, response_body,
    status_body,
)  # fmt: skip
from otel_inputs.exporter._writer import DuckDBWriter, coalesce

_log = logging.getLogger(__name__)

TRACES_PATH = "/v1/traces"
_PROTOBUF_TYPES = frozenset({"application/x-protobuf", "application/protobuf"})
_JSON_TYPE = "application/json"
# google.rpc.Code values used in error bodies.
_RPC_INVALID_ARGUMENT = 3
_RPC_RESOURCE_EXHAUSTED = 8
_RPC_UNAVAILABLE = 14
_RPC_NOT_FOUND = 5
_RPC_UNIMPLEMENTED = 12


@dataclass(frozen=True)
class SinkConfig:
    max_body_bytes: int = 64 * 1024 * 1024  # after decompression, as the OTLP spec recommends
    # The queue holds accepted requests' protobuf wire bytes (~18 KB per 20-item packet span),
    # bounded in bytes; a full queue answers 503 + Retry-After.
    max_queued_bytes: int = 12 * 1024 * 1024
    max_queued_spans: int = 16_384
    max_batch_spans: int = 512  # the writer coalesces queued requests up to this many spans
    # Request bodies held while being read and decoded (wire bytes, then decompressed bytes).  One
    # request up to max_body_bytes is always admitted when nothing else is in flight.
    max_inflight_bytes: int = 16 * 1024 * 1024
    max_concurrent_decodes: int = 1  # parsing holds the GIL: more threads add memory, not speed
    # Spans converted to Arrow at a time (their Python objects are the conversion's transient
    # memory: ~14 MiB per 64 rich spans), and inserted per statement (fewer, larger inserts cost less CPU).
    decode_chunk_spans: int = 64
    insert_spans: int = 256
    socket_timeout_s: float = 10.0  # a silent client loses its thread after this, others are unaffected
    request_deadline_s: float = 30.0  # a client trickling bytes cannot hold a thread longer than this
    store_interval_s: float = 5.0
    retry_after_s: int = 1


@dataclass
class _Item:
    """One accepted request: its protobuf wire bytes, rejected positions, span count and bytes.

    Only the wire bytes wait in the queue: the writer parses them again when it converts, and the
    parsed message is released as soon as the last chunk is converted, before the commit."""

    wire: bytes | bytearray | None
    skip: set[tuple[int, int, int]]
    spans: int
    nbytes: int
    unconverted: int = 0  # spans whose conversion failed (logged once, counted after the write)


class _Queue:
    """A FIFO of accepted requests, bounded by the spans and the Arrow bytes it holds."""

    def __init__(self, max_spans: int, max_bytes: int) -> None:
        self.max_spans = max_spans
        self.max_bytes = max_bytes
        self._items: deque[_Item] = deque()
        self._spans = 0
        self._bytes = 0
        self._cond = threading.Condition(threading.RLock())  # re-entered by the writer's take

    def offer(self, item: _Item) -> bool:
        with self._cond:
            # An oversized single request is still taken when the queue is empty, so it can land.
            if self._items and (self._spans + item.spans > self.max_spans or self._bytes + item.nbytes > self.max_bytes):
                return False
            self._items.append(item)
            self._spans += item.spans
            self._bytes += item.nbytes
            self._cond.notify()
            return True

    def take(self, max_spans: int, timeout_s: float) -> list[_Item]:
        with self._cond:
            if not self._items:
                self._cond.wait(timeout_s)
            out: list[_Item] = []
            spans = 0
            while self._items and (not out or spans + self._items[0].spans <= max_spans):
                item = self._items.popleft()
                self._spans -= item.spans
                self._bytes -= item.nbytes
                spans += item.spans
                out.append(item)
            return out

    def wake(self) -> None:
        with self._cond:
            self._cond.notify_all()

    @property
    def nbytes(self) -> int:
        with self._cond:
            return self._bytes

    def __len__(self) -> int:
        with self._cond:
            return self._spans


class _Budget:
    """A byte budget for request bodies in flight; one request is always admitted when it is empty."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._used = 0
        self._lock = threading.Lock()

    def try_take(self, n: int) -> bool:
        with self._lock:
            if self._used and self._used + n > self.max_bytes:
                return False
            self._used += n
            return True

    def give(self, n: int) -> None:
        with self._lock:
            self._used -= n

    @property
    def used(self) -> int:
        with self._lock:
            return self._used


class _BodyTooLarge(Exception):
    pass


def _gunzip_bounded(data: bytes, cap: int) -> bytes:
    """Decompress gzip without ever producing more than ``cap`` bytes (gzip bombs stop here)."""
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    out = d.decompress(data, cap + 1)
    if len(out) > cap or d.unconsumed_tail:
        raise _BodyTooLarge
    out += d.flush()
    if len(out) > cap:
        raise _BodyTooLarge
    if not d.eof:
        raise zlib.error("truncated gzip stream")
    return out


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"
    server_version = "otel-inputs-collect"

    def setup(self) -> None:
        super().setup()
        self.connection.settimeout(self.server.sink.config.socket_timeout_s)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib signature
        _log.debug("collect: " + format, *args)

    def _reply(self, code: int, body: bytes, *, as_json: bool, headers: dict[str, str] | None = None,
               close: bool = False) -> None:  # fmt: skip
        self.send_response(code)
        self.send_header("Content-Type", _JSON_TYPE if as_json else "application/x-protobuf")
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        if close:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        self.wfile.write(body)

    def _error(self, code: int, rpc: int, message: str, *, as_json: bool, close: bool = False,
               headers: dict[str, str] | None = None) -> None:  # fmt: skip
        self._reply(code, status_body(rpc, message, as_json=as_json), as_json=as_json, close=close, headers=headers)

    def do_GET(self) -> None:  # noqa: N802 - stdlib naming
        self._error(405, _RPC_UNIMPLEMENTED, "use POST", as_json=True, headers={"Allow": "POST"})

    def _read_body(self, length: int, *, keep: bool = True) -> bytearray:
        """Read exactly ``length`` bytes into one buffer (no chunk list, no join copy); with
        ``keep=False`` the body is read and discarded through a small buffer."""
        deadline = time.monotonic() + self.server.sink.config.request_deadline_s
        buf = bytearray(length if keep else min(length, 1 << 16))
        view = memoryview(buf)
        pos = 0
        try:
            while pos < length:
                if time.monotonic() > deadline:
                    raise TimeoutError("request body too slow")
                target = view[pos : pos + min(length - pos, 1 << 20)] if keep else view[: min(length - pos, len(buf))]
                got = self.rfile.readinto1(target)
                if not got:
                    raise ConnectionError("client closed before the body was complete")
                pos += got
        finally:
            view.release()
        return buf if keep else bytearray()

    def _busy(self, as_json: bool) -> None:
        cfg = self.server.sink.config
        self._error(503, _RPC_UNAVAILABLE, "sink buffer full; retry later", as_json=as_json,
                    headers={"Retry-After": str(cfg.retry_after_s)})  # fmt: skip

    def do_POST(self) -> None:  # noqa: N802 - stdlib naming
        sink = self.server.sink
        cfg = sink.config
        media = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        as_json = media == _JSON_TYPE
        if self.path.split("?")[0] != TRACES_PATH:
            self._error(404, _RPC_NOT_FOUND, f"only {TRACES_PATH} is served", as_json=as_json, close=True)
            return
        if media not in _PROTOBUF_TYPES and not as_json:
            self._error(415, _RPC_INVALID_ARGUMENT, "Content-Type must be application/x-protobuf or application/json",
                        as_json=False, close=True)  # fmt: skip
            return
        encoding = (self.headers.get("Content-Encoding") or "identity").strip().lower()
        if encoding not in ("identity", "gzip"):
            self._error(415, _RPC_INVALID_ARGUMENT, "Content-Encoding must be gzip or identity", as_json=as_json, close=True)
            return
        try:
            length = int(self.headers.get("Content-Length", ""))
            if length < 0:
                raise ValueError
        except ValueError:
            self._error(411, _RPC_INVALID_ARGUMENT, "a valid Content-Length is required", as_json=as_json, close=True)
            return
        if length > cfg.max_body_bytes:
            # Not read at all: closing the connection discards it without buffering.
            self._error(413, _RPC_RESOURCE_EXHAUSTED, f"body over {cfg.max_body_bytes} bytes", as_json=as_json, close=True)
            return
        if not sink.inflight.try_take(length):
            # Too many bodies in memory already: read this one through a small buffer, then 503.
            try:
                self._read_body(length, keep=False)
            except (TimeoutError, OSError, ConnectionError):
                self.close_connection = True
                return
            self._busy(as_json)
            return
        held = length
        try:
            try:
                body: bytes | bytearray = self._read_body(length)
            except (TimeoutError, OSError, ConnectionError):
                self.close_connection = True
                return
            if encoding == "gzip":
                try:
                    body = _gunzip_bounded(body, cfg.max_body_bytes)
                except _BodyTooLarge:
                    self._error(413, _RPC_RESOURCE_EXHAUSTED, f"decompressed body over {cfg.max_body_bytes} bytes",
                                as_json=as_json, close=True)  # fmt: skip
                    return
                except zlib.error:
                    self._error(400, _RPC_INVALID_ARGUMENT, "body is not valid gzip", as_json=as_json)
                    return
                if len(body) > held:
                    if not sink.inflight.try_take(len(body) - held):
                        del body
                        self._busy(as_json)
                        return
                    held = len(body)
            if not sink.decode_slots.acquire(timeout=cfg.socket_timeout_s):
                del body
                self._busy(as_json)
                return
            try:
                item, decoded = sink.decode(body, as_json=as_json)
            except DecodeError as exc:
                self._error(400, _RPC_INVALID_ARGUMENT, str(exc), as_json=as_json)
                return
            finally:
                sink.decode_slots.release()
                del body
        finally:
            sink.inflight.give(held)
        if not sink.accept(item, decoded):
            self._busy(as_json)
            return
        self._reply(200, response_body(decoded, as_json=as_json), as_json=as_json)


def _load_libc() -> ctypes.CDLL | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.malloc_trim  # noqa: B018 - glibc only
        return libc
    except (OSError, AttributeError):
        return None


_LIBC = _load_libc()


def _release_free_memory() -> None:
    """Hand memory freed by the last batch back to the OS (glibc keeps it in its heaps otherwise),
    so the next batch's transient peak starts from the sink's real working set."""
    if _LIBC is not None:
        _LIBC.malloc_trim(0)


def skip_pandas_probe() -> None:
    """Let pyarrow record "no pandas" in a process that has not imported it (``otel-inputs collect``'s own).

    pyarrow's first ``pa.array(list)`` probes for pandas by importing it (+45 MiB RSS), only to
    recognise pandas inputs the sink never passes.  Probing once while the import is blocked makes
    pyarrow skip it; an explicit pandas conversion (``to_pandas``) still imports pandas later.  It
    is process-wide (pyarrow then no longer recognises pandas objects in ``pa.array``), so only the
    dedicated sink process calls it, never :meth:`OTLPSink.start` inside someone else's process."""
    if "pandas" in sys.modules:
        return
    sys.modules["pandas"] = None  # type: ignore[assignment] - makes `import pandas` raise ImportError
    try:
        pa.array([0], pa.int64())
    except Exception:  # noqa: BLE001 - only an optimisation
        pass
    finally:
        if sys.modules.get("pandas", 0) is None:
            del sys.modules["pandas"]


def use_system_memory_pool() -> None:
    """Make pyarrow allocate through malloc in ``otel-inputs collect``'s own process.

    pyarrow's default mimalloc pool keeps the pages of every converted batch (~20 MiB of the
    sink's resident memory, measured) where :func:`_release_free_memory`'s ``malloc_trim`` cannot
    return them.  It is process-wide, so only the dedicated sink process calls it."""
    pa.set_memory_pool(pa.system_memory_pool())


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 64

    def __init__(self, address: tuple[str, int], sink: OTLPSink) -> None:
        self.sink = sink
        super().__init__(address, _Handler)


class OTLPSink:
    """OTLP/HTTP receiver on ``/v1/traces`` writing into one DuckDB file (and store metadata)."""

    def __init__(
        self,
        db_path: str | os.PathLike[str],
        *,
        store: str | os.PathLike[str] | None = None,
        host: str = "127.0.0.1",
        port: int = 4318,
        config: SinkConfig | None = None,
    ) -> None:
        self.config = config or SinkConfig()
        self.host = host
        self.port = port
        self.store = Path(store) if store is not None else None
        self.writer: DuckDBWriter | None = None
        self.db_path = Path(db_path)
        self._queue = _Queue(self.config.max_queued_spans, self.config.max_queued_bytes)
        self.inflight = _Budget(self.config.max_inflight_bytes)
        self.decode_slots = threading.BoundedSemaphore(max(1, self.config.max_concurrent_decodes))
        self._server: _Server | None = None
        self._threads: list[threading.Thread] = []
        self._stopping = threading.Event()
        self._accepting = False
        self._scanner = ManifestScanner(self.store) if self.store is not None else None
        self._stop_lock = threading.Lock()
        self._accept_lock = threading.Lock()
        self._in_flight = 0
        self._stopped = False

    @property
    def address(self) -> tuple[str, int]:
        if self._server is None:
            raise RuntimeError("sink not started")
        host, port = self._server.server_address[:2]
        return str(host), int(port)

    @property
    def endpoint(self) -> str:
        host, port = self.address
        return f"http://{host}:{port}{TRACES_PATH}"

    def start(self) -> OTLPSink:
        self._server = _Server((self.host, self.port), self)
        self.writer = DuckDBWriter(self.db_path, source=f"collect:{self.address[1]}", settings=SINK_WRITER_SETTINGS)
        self._land_store()  # at startup, before the first span, so metadata is there early
        self._accepting = True
        writer_thread = threading.Thread(target=self._write_loop, name="otel-inputs-collect-writer", daemon=True)
        server_thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.2},
                                         name="otel-inputs-collect-http", daemon=True)  # fmt: skip
        self._threads = [writer_thread, server_thread]
        for t in self._threads:
            t.start()
        return self

    def decode(self, body: bytes | bytearray, *, as_json: bool) -> tuple[_Item, DecodedRequest]:
        """Parse and validate a request body (no conversion yet); raises DecodeError for an
        undecodable body.  The item keeps the protobuf wire bytes (a JSON body is re-encoded as
        protobuf), not the parsed message, so a queued request costs its wire size."""
        req = parse_json(body) if as_json else parse_protobuf(body)
        decoded = check_request(req)
        if not decoded.accepted:
            return _Item(None, decoded.skip, 0, 0), decoded
        wire = req.SerializeToString() if as_json else body
        return _Item(wire, decoded.skip, decoded.accepted, len(wire)), decoded

    def _produce(self, items: list[_Item]) -> Iterator[BatchTables]:
        """The taken requests' Arrow chunks, merged into inserts of about ``insert_spans`` spans
        (split where a span or attempt repeats, as :func:`coalesce` does)."""
        group: list[BatchTables] = []
        spans = 0
        for item in items:
            for tables in self._iter_tables(item):
                group.append(tables)
                spans += tables.span_count
                if spans >= self.config.insert_spans:
                    yield from coalesce(group)
                    group, spans = [], 0
        if group:
            yield from coalesce(group)

    def _iter_tables(self, item: _Item) -> Iterator[BatchTables]:
        """Convert one queued request into Arrow chunks, lazily and in request order (so a duplicate
        span later in the request still replaces an earlier copy).  Never raises; may run again
        for a retry or a spill, and yields the same chunks each time."""
        if item.wire is None or self.writer is None:
            return
        size = max(1, self.config.decode_chunk_spans)
        converted = 0
        try:
            # Parsed here, a local of this generator: freed when the last chunk is converted.
            valid = iter_valid(parse_protobuf(item.wire), item.skip)
            while chunk := list(itertools.islice(valid, size)):
                try:
                    tables = build_chunk(chunk)
                except Exception as exc:  # noqa: BLE001 - the reference path orders repeats and isolates bad spans
                    if not isinstance(exc, Fallback):
                        _log.warning("otel-inputs collect: fast conversion failed (%s: %s); using the reference path",
                                     type(exc).__name__, exc)  # fmt: skip
                    tables = self.writer.build([record_of(*v) for v in chunk])
                converted += len(chunk)
                del chunk
                yield tables
                del tables
        except Exception:  # noqa: BLE001 - a request that cannot be converted is counted, never kills the writer
            if not item.unconverted:
                item.unconverted = item.spans - converted
                _log.exception("otel-inputs collect: %d spans of an accepted request cannot be converted; dropped",
                               item.unconverted)  # fmt: skip

    def accept(self, item: _Item, decoded: DecodedRequest) -> bool:
        """Queue a converted request; False means "full, come back later"."""
        # Under the lock stop() takes, so no batch can slip in after the writer's final drain.
        with self._accept_lock:
            if not self._accepting:
                return False
            if item.spans and not self._queue.offer(item):
                return False
        if decoded.rejected and self.writer is not None:
            self.writer.count("spans_rejected", decoded.rejected)
        return True

    @property
    def queued_spans(self) -> int:
        return len(self._queue)

    def flush(self, timeout_s: float = 30.0) -> bool:
        """Wait until every span accepted so far is written (or spilled); False on timeout."""
        deadline = time.monotonic() + timeout_s
        while len(self._queue) or self._in_flight:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.01)
        return True

    def _write_loop(self) -> None:
        last_store = time.monotonic()
        while True:
            with self._queue._cond:  # take and mark in flight atomically, so flush() never sees a gap
                items = self._queue.take(self.config.max_batch_spans, timeout_s=0.2)
                self._in_flight = sum(i.spans for i in items)
            if items and self.writer is not None:
                # Converted while written: only one chunk's Arrow tables exist at a time, and the
                # parsed requests stay until the commit so a retry or spill can convert again.
                self.writer.write_lazy(lambda: self._produce(items))
                for item in items:  # counted once, however often the batch was produced
                    if item.unconverted:
                        self.writer.count("spans_unconvertible", item.unconverted)
                        self.writer.count("spans_dropped", item.unconverted)
            del items  # release the parsed requests before waiting for the next batch
            _release_free_memory()
            self._in_flight = 0
            if self._scanner is not None and time.monotonic() - last_store >= self.config.store_interval_s:
                self._land_store()
                last_store = time.monotonic()
            if self._stopping.is_set() and not len(self._queue):
                return

    def _land_store(self) -> None:
        if self._scanner is None or self.writer is None:
            return
        try:
            manifests, stat_keys = self._scanner.changed()
            if manifests:
                outcome = self.writer.land_manifests(manifests)
                if outcome.error is None:
                    self._scanner.commit(stat_keys)
            elif stat_keys:
                self._scanner.commit(stat_keys)
        except Exception:  # noqa: BLE001 - store trouble must not stop span ingestion
            _log.exception("otel-inputs collect: landing store manifests failed")

    def stop(self) -> None:
        """Stop accepting, flush every accepted span, land the store one last time.  Idempotent."""
        with self._stop_lock:
            if self._stopped:
                return
            self._stopped = True
        with self._accept_lock:
            self._accepting = False
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        self._stopping.set()
        self._queue.wake()
        for t in self._threads:
            t.join()
        self._land_store()

    def __enter__(self) -> OTLPSink:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


__all__ = ["OTLPSink", "SinkConfig", "TRACES_PATH"]
