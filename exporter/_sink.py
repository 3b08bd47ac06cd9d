"""``OTLPSink``: the OTLP receiver (HTTP and gRPC, traces and logs) landing through the DuckDB write path.

Every request, whichever transport brought it, goes through :meth:`OTLPSink.ingest`: parse and
validate it (rejected items are answered in ``partial_success``), reserve room in the writer's
queue (full: 503 + Retry-After / ``RESOURCE_EXHAUSTED``), append its protobuf wire bytes to the
write-ahead log and wait for the group fsync (cannot: 503 / ``UNAVAILABLE``), and only then
answer 200 / OK.  So an acknowledged request survives ``kill -9``: the next start replays every
record the database has not landed.

ONE writer thread owns every DuckDB write (and the periodic landing of the store catalog's
artifact status).  Each queued request is parsed again and converted to Arrow
(:mod:`otel_inputs.exporter._convert`): under a backlog by worker processes, in pieces, while the
writer inserts the pieces already converted; for a small batch by the writer itself,
``decode_chunk_spans`` spans at a time; the write-ahead position is committed in the same
transaction as the rows, then the landed log segments are deleted.  The writer keeps its DuckDB
connection while there is work (DuckDB checkpoints when its own log passes a size, not at every
commit), hands the file to a waiting reader after the batch in progress or between two inserts of
span requests (spans replace by key, so a crash between such transactions re-lands them once), and
closes it when idle.  A write that fails stays in
the queue and the log and is retried on a reopened database; while it fails the queue fills and
senders are told to retry.  Memory is bounded in bytes at both ends: request bodies being read or
parsed (``max_inflight_bytes``) and requests waiting for the writer (``max_queued_bytes``, their
wire bytes).  ``stop()`` stops accepting, then lands everything already accepted before returning
(what it cannot land stays in the log for the next start).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import logging
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path


from otel_inputs.exporter._arrow import BatchTables
from otel_inputs.exporter._convert import Converted, Tally, convert_piece, iter_tables, worker_pool
from otel_inputs.exporter._db import SINK_WRITER_SETTINGS, others_waiting
from otel_inputs.exporter._grpc import GRPCServer
from otel_inputs.exporter._http import LOGS_PATH, TRACES_PATH, HTTPServer
from otel_inputs.exporter._logs import check_logs, logs_response, parse_logs_json, parse_logs_protobuf
from otel_inputs.exporter._artifacts import CatalogScanner
from otel_inputs.exporter._otlp import (
    DecodeError, check_request, parse_json, parse_protobuf, response_body,
)  # fmt: skip
from otel_inputs.exporter._wal import Kind, Ref, WALUnavailable, WriteAheadLog, wal_dir
from otel_inputs.exporter._writer import DuckDBWriter, Progress, coalesce

_log = logging.getLogger(__name__)

WAL_KEY = "collect"  # this sink's row in otel_inputs_ingest_progress (one receiving sink per file)
_RPC_INVALID_ARGUMENT = 3
_RPC_RESOURCE_EXHAUSTED = 8
_RPC_UNAVAILABLE = 14


@dataclass(frozen=True)
class SinkConfig:
    max_body_bytes: int = 64 * 1024 * 1024  # after decompression, as the OTLP spec recommends
    # Accepted requests not yet landed: their wire bytes wait in the write-ahead log on disk (~18 KB
    # per 20-item packet span), bounded in bytes and items; a full queue answers 503 + Retry-After.
    max_queued_bytes: int = 256 * 1024 * 1024
    max_queued_spans: int = 65_536  # spans and log records
    # The writer lands queued requests up to this many spans and wire bytes in one transaction (fewer
    # commits under a backlog of small spans).  The bytes bound the transaction's DuckDB memory (2,048
    # rich spans in one transaction outgrew a 24 MB buffer pool); one request is always taken.
    max_batch_spans: int = 2048
    max_batch_bytes: int = 4 * 1024 * 1024
    # A request finding the queue full waits this long for room before it is answered 503: the
    # writer frees room at every batch, so a short wait spares the sender a Retry-After pause.
    queue_wait_s: float = 2.0
    # Request bodies held while being read and decoded (wire bytes, then decompressed bytes; the
    # declared Content-Length is reserved at once).  A request alone in flight is always admitted up
    # to max_body_bytes, so over this a body is answered 503 only while others are in flight.
    max_inflight_bytes: int = 16 * 1024 * 1024
    max_concurrent_decodes: int = 1  # parsing holds the GIL: more threads add memory, not speed
    # Spans converted to Arrow at a time (their Python objects are the conversion's transient
    # memory: ~14 MiB per 64 rich spans), and inserted per statement (fewer, larger inserts cost less CPU).
    decode_chunk_spans: int = 64
    insert_spans: int = 256
    # Worker processes converting requests while the writer thread inserts (exporter/_convert.py);
    # 0: the writer converts.  Only a process of its own turns them on (`otel-inputs collect`:
    # default_workers()), because a started worker imports the starting process's main module.  A
    # batch goes to them from ``pool_from_bytes`` of requests: conversion costs per attribute, which
    # the wire bytes follow (512 rich spans are 9 MB, 2,048 small ones 0.4 MB, where handing off
    # costs more than it saves: measured 10k vs 13-15k small spans/s).  A request is converted in
    # pieces of at least ``insert_spans`` spans, at most 4 a worker.
    convert_workers: int = 0
    pool_from_bytes: int = 1024 * 1024
    # A piece not converted within this long is converted by the writer (a stuck worker), and the
    # workers are replaced; after ``pool_failures_off`` failed pools in a row the writer converts.
    piece_timeout_s: float = 120.0
    pool_failures_off: int = 3
    header_timeout_s: float = 10.0  # request line and headers must arrive within this
    request_deadline_s: float = 30.0  # a client trickling its body cannot hold a connection longer
    keep_alive_s: float = 5.0  # an idle keep-alive connection is closed after this
    max_connections: int = 64  # open HTTP connections (more are answered 503 at once); gRPC RPCs
    http_workers: int = 8  # threads parsing and making durable HTTP requests
    grpc_workers: int = 8
    refuse_after_db_failures: int = 3  # consecutive failed database writes before new requests get 503
    store_interval_s: float = 5.0
    retry_after_s: int = 1


@dataclass
class _Item:
    """One accepted request: where its protobuf wire bytes lie in the write-ahead log.

    The queue holds positions, not bytes (the Collector's persistent-queue pattern): the writer
    reads the bytes back and parses them when it converts, and the parsed message is released as
    soon as the last chunk is converted, before the commit.  So the queue's depth costs disk,
    not memory; only the requests handed to the conversion workers (the batch being landed and
    up to ``max_batch_bytes`` queued behind it, none over ``max_inflight_bytes``) hold their
    converted tables until they land."""

    ref: Ref
    spans: int  # spans or log records
    nbytes: int
    # Spans lost per piece (by its first span), from its first conversion: logged once, counted
    # after the write (the failed rest of a piece, and spans the reference conversion dropped).
    lost: dict[int, int] = field(default_factory=dict)
    # Its pieces being converted by the worker pool, when handed to it (with its batch, or ahead of
    # it while the batch before is landed); they stay with it across a retry.
    pieces: list[_Piece] | None = field(default=None, repr=False)

    @property
    def unconverted(self) -> int:
        return sum(self.lost.values())

    @property
    def seq(self) -> int:
        return self.ref.seq

    @property
    def kind(self) -> Kind:
        return self.ref.kind


@dataclass(frozen=True)
class _Piece:
    """Spans ``start``..``stop`` of a request, being converted by a worker."""

    start: int
    stop: int | None
    spans: int
    future: Future[Converted]
    pool: ProcessPoolExecutor


_WAITING = BatchTables(None, None, None)
"""Yielded while the workers convert and a process waits for the file: an insert of nothing, after
which the transaction may pause and hand the file over."""


@dataclass(frozen=True)
class Answer:
    """What :meth:`OTLPSink.ingest` decided; each transport renders it in its own terms."""

    ok: bool
    message: str = ""
    http_status: int = 200
    rpc_code: int = 0
    retry: bool = False  # 503 + Retry-After / RESOURCE_EXHAUSTED or UNAVAILABLE with RetryInfo
    unavailable: bool = False  # cannot be made durable (vs. merely full)
    render: Callable[[bool], bytes] | None = None

    def body(self, as_json: bool) -> bytes:
        return self.render(as_json) if self.render is not None else b""


def _invalid(message: str) -> Answer:
    return Answer(False, message, 400, _RPC_INVALID_ARGUMENT)


class _Queue:
    """A FIFO of accepted requests, bounded by the spans and the wire bytes it holds."""

    def __init__(self, max_spans: int, max_bytes: int) -> None:
        self.max_spans = max_spans
        self.max_bytes = max_bytes
        self._items: deque[_Item] = deque()
        self._spans = 0
        self._bytes = 0
        self._cond = threading.Condition(threading.RLock())  # re-entered by the writer's take

    def has_room(self, spans: int, nbytes: int) -> bool:
        with self._cond:
            # An oversized single request is still taken when the queue is empty, so it can land.
            return not self._items or (self._spans + spans <= self.max_spans and self._bytes + nbytes <= self.max_bytes)

    def wait_for_room(self, spans: int, nbytes: int, timeout_s: float) -> bool:
        """Wait up to ``timeout_s`` for room (the writer taking a batch makes it): a sender held a
        moment is far cheaper than one told to come back in a whole Retry-After second."""
        with self._cond:
            return self._cond.wait_for(lambda: self.has_room(spans, nbytes), timeout_s)

    def put(self, item: _Item) -> None:
        with self._cond:
            self._items.append(item)
            self._spans += item.spans
            self._bytes += item.nbytes
            self._cond.notify()

    def put_back(self, items: list[_Item]) -> None:
        """Return items the writer could not land to the front, in order."""
        with self._cond:
            for item in reversed(items):
                self._items.appendleft(item)
                self._spans += item.spans
                self._bytes += item.nbytes

    def peek(self, max_bytes: int) -> list[_Item]:
        """The items at the front, up to ``max_bytes`` of wire bytes (at least one), left in place."""
        with self._cond:
            out: list[_Item] = []
            nbytes = 0
            for item in self._items:
                if out and nbytes + item.nbytes > max_bytes:
                    break
                out.append(item)
                nbytes += item.nbytes
            return out

    def take(self, max_spans: int, timeout_s: float, max_bytes: int | None = None) -> list[_Item]:
        with self._cond:
            if not self._items:
                self._cond.wait(timeout_s)
            out: list[_Item] = []
            spans = nbytes = 0
            while self._items and (not out or (spans + self._items[0].spans <= max_spans and (
                    max_bytes is None or nbytes + self._items[0].nbytes <= max_bytes))):  # fmt: skip
                item = self._items.popleft()
                self._spans -= item.spans
                self._bytes -= item.nbytes
                spans += item.spans
                nbytes += item.nbytes
                out.append(item)
            if out:
                self._cond.notify_all()  # room for requests waiting in wait_for_room
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
    """A byte budget for request bodies in flight.  A request alone in flight may grow to any size
    (the body cap bounds it), so a body the cap admits always fits an idle receiver: "busy" is
    then only ever a state that passes."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._used = 0
        self._lock = threading.Lock()

    def try_grow(self, held: int, size: int) -> bool:
        """Grow one request's share from ``held`` to ``size`` bytes: yes when no other request holds
        any, or when everything fits the budget."""
        with self._lock:
            others = self._used - held
            if others and others + size > self.max_bytes:
                return False
            self._used += size - held
            return True

    def give(self, n: int) -> None:
        with self._lock:
            self._used -= n

    @property
    def used(self) -> int:
        with self._lock:
            return self._used


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


def _render(respond: Callable[..., bytes], checked: object, as_json: bool) -> bytes:
    """The response body of a checked request, in the request's encoding."""
    return respond(checked, as_json=as_json)


def _remove_rejected_spans(req: object, skip: set[tuple[int, int, int]]) -> None:
    for i, j, k in sorted(skip, reverse=True):
        del req.resource_spans[i].scope_spans[j].spans[k]  # type: ignore[attr-defined]


def _remove_rejected_logs(req: object, skip: set[tuple[int, int, int]]) -> None:
    for i, j, k in sorted(skip, reverse=True):
        del req.resource_logs[i].scope_logs[j].log_records[k]  # type: ignore[attr-defined]


class OTLPSink:
    """OTLP receiver: HTTP ``/v1/traces`` and ``/v1/logs``, and (when ``grpc_port`` is given)
    gRPC TraceService and LogsService, writing into one DuckDB file (and store metadata)."""

    def __init__(
        self,
        db_path: str | os.PathLike[str],
        *,
        store: str | os.PathLike[str] | None = None,
        host: str = "127.0.0.1",
        port: int = 4318,
        grpc_port: int | None = None,
        config: SinkConfig | None = None,
    ) -> None:
        self.config = config or SinkConfig()
        self.host = host
        self.port = port
        self.grpc_port = grpc_port
        self.store = Path(store) if store is not None else None
        self.writer: DuckDBWriter | None = None
        self.db_path = Path(db_path)
        self.wal = WriteAheadLog(wal_dir(self.db_path))
        self._queue = _Queue(self.config.max_queued_spans, self.config.max_queued_bytes)
        self.inflight = _Budget(self.config.max_inflight_bytes)
        self.decode_slots = threading.BoundedSemaphore(max(1, self.config.max_concurrent_decodes))
        self.http_pool = ThreadPoolExecutor(max_workers=self.config.http_workers,
                                            thread_name_prefix="otel-inputs-collect-ingest")  # fmt: skip
        self._http: HTTPServer | None = None
        self._grpc: GRPCServer | None = None
        self._threads: list[threading.Thread] = []
        self._stopping = threading.Event()
        self._accepting = False
        self._scanner = CatalogScanner(self.store) if self.store is not None else None
        self._stop_lock = threading.Lock()
        self._order_lock = threading.Lock()  # log order == queue order, so a landed mark covers all before it
        self._in_flight = 0
        self._pool: ProcessPoolExecutor | None = None
        self._pool_failures = 0  # failed pools in a row
        self._stopped = False
        self._db_error: str | None = None  # the last failed write, until one succeeds
        self._db_failures = 0  # consecutive failed writes
        self.replayed = 0  # records read back from the write-ahead log at start
        self._landed: int | None = None  # the database's landed mark, read by the writer's first batch

    # -- addresses -------------------------------------------------------------------------------
    @property
    def address(self) -> tuple[str, int]:
        if self._http is None:
            raise RuntimeError("sink not started")
        return self._http.address

    @property
    def endpoint(self) -> str:
        host, port = self.address
        return f"http://{host}:{port}{TRACES_PATH}"

    @property
    def logs_endpoint(self) -> str:
        host, port = self.address
        return f"http://{host}:{port}{LOGS_PATH}"

    @property
    def grpc_address(self) -> tuple[str, int] | None:
        return self._grpc.address if self._grpc is not None else None

    @property
    def grpc_endpoint(self) -> str | None:
        if self._grpc is None:
            return None
        host, port = self._grpc.address
        return f"{host}:{port}"

    # -- life cycle ------------------------------------------------------------------------------
    def start(self) -> OTLPSink:
        http = HTTPServer(self, self.host, self.port)
        try:
            grpc_server = GRPCServer(self, self.host, self.grpc_port) if self.grpc_port is not None else None
        except (RuntimeError, OSError) as exc:
            http.sock.close()
            raise OSError(f"cannot listen on {self.host}:{self.grpc_port} for OTLP/gRPC: {exc}") from exc
        self._http, self._grpc = http, grpc_server
        try:
            self.writer = DuckDBWriter(self.db_path, source=f"collect:{self.address[1]}",
                                       settings=SINK_WRITER_SETTINGS, keep_open=True)  # fmt: skip
            self._replay()  # no database access: a busy or broken file cannot stop the sink from starting
        except BaseException:
            http.sock.close()
            if grpc_server is not None:
                grpc_server.stop()
            raise
        self._land_store()  # at startup, before the first span, so metadata is there early
        self._accepting = True
        writer_thread = threading.Thread(target=self._write_loop, name="otel-inputs-collect-writer", daemon=True)
        self._threads = [writer_thread]
        writer_thread.start()
        http.start()
        if grpc_server is not None:
            grpc_server.start()
        return self

    def _replay(self) -> None:
        """Queue every record of the write-ahead log (acknowledged, maybe not landed before a crash);
        the writer skips those the database has already landed (it reads the mark first)."""
        for ref in self.wal.open():
            try:
                payload = self.wal.read(ref)
                if ref.kind is Kind.TRACES:
                    count = check_request(parse_protobuf(payload)).accepted
                else:
                    count = check_logs(parse_logs_protobuf(payload)).accepted
                del payload
            except (DecodeError, OSError):
                count = 0  # converted (and counted as unconvertible) by the writer, never silently
            self._queue.put(_Item(ref, count, ref.length))
            self.replayed += 1

    # -- the one way in ------------------------------------------------------------------------
    def busy_message(self) -> str:
        if self._db_error is not None:
            return f"sink cannot write the database ({self._db_error}); retry later"
        return "sink buffer full; retry later"

    def ingest(self, signal: str, body: bytes | bytearray, as_json: bool) -> Answer:
        """Validate, make durable and queue one request body of ``signal`` ('traces' or 'logs')."""
        if not self._accepting:
            return Answer(False, "sink is stopping; retry later", 503, _RPC_UNAVAILABLE, retry=True, unavailable=True)
        if not self.decode_slots.acquire(timeout=self.config.request_deadline_s):
            return Answer(False, self.busy_message(), 503, _RPC_RESOURCE_EXHAUSTED, retry=True)
        try:
            kind = Kind.TRACES if signal == "traces" else Kind.LOGS
            try:
                if kind is Kind.TRACES:
                    req, bad_ids = parse_json(body) if as_json else (parse_protobuf(body), None)
                    checked = check_request(req, bad_ids)
                    accepted, rejected, skip = checked.accepted, checked.rejected, checked.skip
                    render: Callable[[bool], bytes] = functools.partial(_render, response_body, checked)
                    if skip and accepted:
                        _remove_rejected_spans(req, skip)
                else:
                    req, bad_ids = parse_logs_json(body) if as_json else (parse_logs_protobuf(body), None)
                    checked_logs = check_logs(req, bad_ids)
                    accepted, rejected, skip = checked_logs.accepted, checked_logs.rejected, checked_logs.skip
                    render = functools.partial(_render, logs_response, checked_logs)
                    if skip and accepted:
                        _remove_rejected_logs(req, skip)
            except DecodeError as exc:
                return _invalid(str(exc))
            wire = req.SerializeToString() if (as_json or skip) and accepted else body
            del req
        finally:
            self.decode_slots.release()
        if rejected and self.writer is not None:
            self.writer.count("spans_rejected" if kind is Kind.TRACES else "logs_rejected", rejected)
        if not accepted:
            return Answer(True, render=render)
        if self._db_failures >= self.config.refuse_after_db_failures:
            # The log would keep it, but a database that keeps failing (unreadable file, schema too
            # new, disk full) may never land it: the sender keeps its data and retries instead.
            return Answer(False, self.busy_message(), 503, _RPC_UNAVAILABLE, retry=True, unavailable=True)
        with self._order_lock:
            if not self._accepting:
                return Answer(False, "sink is stopping; retry later", 503, _RPC_UNAVAILABLE, retry=True, unavailable=True)
            if not self._queue.wait_for_room(accepted, len(wire), self.config.queue_wait_s):
                return Answer(False, self.busy_message(), 503, _RPC_RESOURCE_EXHAUSTED, retry=True)
            try:
                item = _Item(self.wal.write(kind, wire), accepted, len(wire))
            except WALUnavailable as exc:
                return self._not_durable(exc)
            del wire
            self._queue.put(item)
        try:
            self.wal.sync(item.seq)
        except WALUnavailable as exc:
            return self._not_durable(exc)
        return Answer(True, render=render)

    def _not_durable(self, exc: WALUnavailable) -> Answer:
        _log.error("otel-inputs collect: refusing a request: %s", exc)
        return Answer(False, f"sink cannot make the request durable ({exc}); retry later", 503, _RPC_UNAVAILABLE,
                      retry=True, unavailable=True)  # fmt: skip

    # -- the writer ----------------------------------------------------------------------------
    def _produce(self, items: list[_Item], pausable: bool = False) -> Iterator[BatchTables]:
        """The taken requests' Arrow chunks, merged into inserts of about ``insert_spans`` spans
        (split where a span or attempt repeats, as :func:`coalesce` does).  With ``pausable``, a
        process waiting for the file ends the insert early, and while the workers still convert an
        empty batch lets the transaction pause for it (exporter/_writer.py)."""
        group: list[BatchTables] = []
        spans = 0
        for item in items:
            for tables in self._iter_tables(item, pausable):
                if tables is _WAITING:
                    yield from coalesce(group)
                    group, spans = [], 0
                    yield tables
                    continue
                group.append(tables)
                spans += tables.span_count + tables.log_count
                if spans >= self.config.insert_spans or (pausable and others_waiting(self.db_path)):
                    yield from coalesce(group)
                    group, spans = [], 0
        if group:
            yield from coalesce(group)

    def _iter_tables(self, item: _Item, pausable: bool = False) -> Iterator[BatchTables]:
        """Convert one queued request into Arrow chunks in request order (so a duplicate span later
        in the request still replaces an earlier copy): the worker pool's pieces when it took them,
        else here, lazily.  Never raises; may run again for a retry, and yields the same chunks."""
        if self.writer is None:
            return
        if item.pieces is not None:
            for piece in item.pieces:
                deadline = time.monotonic() + self.config.piece_timeout_s
                while not wait([piece.future], timeout=0.02).done and time.monotonic() < deadline:
                    if pausable and others_waiting(self.db_path):
                        yield _WAITING  # let a waiting reader in while the workers convert
                converted = self._piece_result(item, piece)
                self._tally(item, piece.start, piece.spans, converted.tally)
                yield from converted.tables
            return
        tally = Tally()
        try:
            body = self.wal.read(item.ref)
        except Exception as exc:  # noqa: BLE001 - a request that cannot be read back is counted, never kills the writer
            tally.complete = False
            tally.problems.append(f"{type(exc).__name__}: {exc}")
        else:
            yield from iter_tables(item.kind, body, tally, chunk_spans=self.config.decode_chunk_spans)
        self._tally(item, 0, item.spans, tally)

    def _piece_result(self, item: _Item, piece: _Piece) -> Converted:
        """A worker's tables; if the pool failed (a worker died, the pool is shut down), the same
        piece converted here."""
        try:
            converted = piece.future.result(timeout=0)  # done, or past piece_timeout_s: TimeoutError
            self._pool_failures = 0
            return converted
        except Exception as exc:  # noqa: BLE001 - conversion is pure: converting here again gives the same tables
            if piece.pool is self._pool:  # not a piece of workers already replaced
                self._pool_failed(exc)
            try:
                body = self.wal.read(item.ref)
            except Exception as read_exc:  # noqa: BLE001
                return Converted((), Tally(complete=False, problems=[f"{type(read_exc).__name__}: {read_exc}"]))
            return convert_piece(item.kind, body, piece.start, piece.stop, self.config.decode_chunk_spans)

    def _tally(self, item: _Item, start: int, spans: int, tally: Tally) -> None:
        """Record (once per piece) what a conversion lost, and log its problems."""
        if start in item.lost or (tally.complete and not tally.problems):
            return
        lost = tally.dropped + (0 if tally.complete else max(0, spans - tally.converted))
        item.lost[start] = lost
        for problem in tally.problems:
            _log.warning("otel-inputs collect: converting an accepted %s request: %s", item.kind.name.lower(), problem)
        if lost:
            _log.error("otel-inputs collect: %d %s of an accepted request cannot be converted; dropped", lost,
                       "spans" if item.kind is Kind.TRACES else "log records")  # fmt: skip

    def _submit(self, items: list[_Item]) -> None:
        """Hand the batch's requests to the worker pool in pieces, and the requests queued behind it
        (up to ``max_batch_bytes``), so the workers convert the next batch while this one is inserted
        and committed.  Nothing when the batch is small, there are no workers, or they failed
        ``pool_failures_off`` times in a row.  A request over ``max_inflight_bytes`` (its tables
        would all be held at once), one the writer already converted with a loss (it would be
        counted twice) and one that cannot be read back are left to the writer."""
        workers = self.config.convert_workers
        if (workers <= 0 or self._pool_failures >= self.config.pool_failures_off
                or sum(i.nbytes for i in items) < self.config.pool_from_bytes):  # fmt: skip
            return
        try:
            if self._pool is None:
                self._pool = worker_pool(workers)
        except Exception as exc:  # noqa: BLE001 - the writer converts instead
            self._pool_failed(exc)
            return
        pool = self._pool
        for item in items + self._queue.peek(self.config.max_batch_bytes):
            if (item.pieces and item.pieces[0].pool is pool) or (item.lost and not item.pieces) or (
                    item.nbytes > self.config.max_inflight_bytes):  # fmt: skip
                continue
            try:
                body = self.wal.read(item.ref)
            except Exception:  # noqa: BLE001 - the writer tries again and counts what it cannot convert
                continue
            # Pieces of at least insert_spans spans, at most 4 a worker: each piece parses the whole body.
            step = max(1, self.config.insert_spans, -(-item.spans // (4 * workers)))
            starts = (list(range(0, item.spans, step)) or [0]) if item.kind is Kind.TRACES else [0]
            try:
                item.pieces = [
                    _Piece(start, nxt, max(0, min(item.spans, nxt or item.spans) - start),
                           pool.submit(convert_piece, item.kind, body, start, nxt, self.config.decode_chunk_spans), pool)
                    for start, nxt in zip(starts, [*starts[1:], None])
                ]  # fmt: skip
            except Exception as exc:  # noqa: BLE001 - a broken pool (a worker died): the writer converts
                self._pool_failed(exc)
                return

    def _pool_failed(self, exc: BaseException) -> None:
        """The workers failed (could not start, a worker died, a piece timed out): count it, say so,
        and let go of them; the writer converts until the next batch starts new ones."""
        self._pool_failures += 1
        _log.warning("otel-inputs collect: conversion workers failed (%s: %s); converting in the writer until the "
                     "next batch starts new ones", type(exc).__name__, str(exc) or "timed out")  # fmt: skip
        self._drop_pool()

    def _drop_pool(self) -> None:
        """Let go of the workers without waiting for them: a stuck one is killed (the pool has no
        public way to), a dead one is already gone."""
        pool, self._pool = self._pool, None
        if pool is not None:
            for proc in list(getattr(pool, "_processes", {}).values()):
                proc.kill()
            pool.shutdown(wait=False, cancel_futures=True)

    @property
    def queued_spans(self) -> int:
        return len(self._queue)

    def flush(self, timeout_s: float = 30.0) -> bool:
        """Wait until every span accepted so far is written; False on timeout."""
        deadline = time.monotonic() + timeout_s
        while len(self._queue) or self._in_flight:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.01)
        return True

    def _write_loop(self) -> None:
        last_store = time.monotonic()
        backoff = 0.0
        failures_at_stop = 0
        while True:
            with self._queue._cond:  # take and mark in flight atomically, so flush() never sees a gap
                items = self._queue.take(self.config.max_batch_spans, timeout_s=0.2,
                                         max_bytes=self.config.max_batch_bytes)  # fmt: skip
                self._in_flight = sum(i.spans for i in items) or (1 if items else 0)
            if items and self.writer is not None:
                if self._land(items):
                    backoff = 0.0
                else:
                    self._queue.put_back(items)
                    if self._stopping.is_set():
                        failures_at_stop += 1
                        if failures_at_stop >= 3:
                            _log.error("otel-inputs collect: stopping with %d accepted spans not landed; they stay "
                                       "in %s for the next start", len(self._queue), self.wal.directory)  # fmt: skip
                            self._in_flight = 0
                            return
                    backoff = min(max(backoff * 2, 0.1), 2.0)
                    self._stopping.wait(backoff)
            if self.writer is not None:
                if items:
                    # Another process waiting for the file (a viewer's refresh) gets it now, after
                    # this one batch, not after the whole backlog.
                    self.writer.yield_to_waiters()
                else:
                    self.writer.release()  # idle: the file is free for readers and other writers
            del items  # release the parsed requests before waiting for the next batch
            _release_free_memory()
            self._in_flight = 0
            if self._scanner is not None and time.monotonic() - last_store >= self.config.store_interval_s:
                self._land_store()
                last_store = time.monotonic()
            if self._stopping.is_set() and not len(self._queue):
                if self.writer is not None:
                    self.writer.release()
                return

    def _land(self, items: list[_Item]) -> bool:
        """One transaction of ``items`` and their write-ahead position; False to retry later."""
        assert self.writer is not None
        if self._landed is None:  # first batch: which replayed records did the database already land?
            try:
                self._landed = self.writer.read_landed(WAL_KEY)
            except Exception as exc:  # noqa: BLE001 - retried like a failed write
                self._db_error = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
                self._db_failures += 1
                return False
            skipped = sum(1 for i in items if i.seq <= self._landed)
            if self.replayed:
                _log.warning("otel-inputs collect: %d acknowledged requests in %s were not yet landed; landing them",
                             self.replayed - skipped, self.wal.directory)  # fmt: skip
        last = items[-1].seq
        try:
            self.wal.sync(last)  # usually done already by the requests themselves (group commit)
        except WALUnavailable:
            pass  # what it could not make durable was answered 503: dropped just below, never landed
        # Only records known durable land: one whose fsync failed was refused, and landing it anyway
        # would land it twice once its sender retries (log records have no key).
        items = [i for i in items if i.seq > self._landed and self.wal.durable(i.seq)]
        if not items:
            self.wal.landed(last)
            return True
        # Converted while written (by the worker pool when it takes the batch, else here, one
        # chunk's Arrow tables at a time); a retry converts again, or reuses the workers' tables.
        # Spans replace by key, so a batch of span requests may land in several transactions when a
        # reader waits (the position lands with the last); log records have no key: one transaction.
        pausable = all(i.kind is Kind.TRACES for i in items)
        self._submit(items)

        def produce() -> Iterator[BatchTables]:
            return self._produce(items, pausable)

        outcome = self.writer.write_lazy(produce, progress=Progress(WAL_KEY, last), spill=False,
                                         pausable=pausable)  # fmt: skip
        if outcome.error is not None:
            self._db_error = outcome.error.splitlines()[0][:300]
            self._db_failures += 1
            return False
        self._db_error = None
        self._db_failures = 0
        for item in items:  # counted once, however often the batch was produced
            if item.unconverted and item.kind is Kind.TRACES:
                self.writer.count("spans_unconvertible", item.unconverted)
                self.writer.count("spans_dropped", item.unconverted)
            elif item.unconverted:
                self.writer.count("logs_dropped", item.unconverted)
        self.wal.landed(last)
        return True

    def _land_store(self) -> None:
        if self._scanner is None or self.writer is None:
            return
        try:
            records, stat_keys = self._scanner.changed()
            if records:
                outcome = self.writer.land_artifacts(records)
                if outcome.error is None:
                    self._scanner.commit(stat_keys)
            elif stat_keys:
                self._scanner.commit(stat_keys)
        except Exception:  # noqa: BLE001 - store trouble must not stop span ingestion
            _log.exception("otel-inputs collect: landing the store catalog's artifact status failed")

    def stop(self) -> None:
        """Stop accepting, land every accepted span, land the store one last time.  Idempotent."""
        with self._stop_lock:
            if self._stopped:
                return
            self._stopped = True
        with self._order_lock:
            self._accepting = False
        if self._http is not None:
            self._http.stop()
        if self._grpc is not None:
            self._grpc.stop()
        self.http_pool.shutdown(wait=True)
        self._stopping.set()
        self._queue.wake()
        for t in self._threads:
            t.join()
        self._land_store()
        if self.writer is not None:
            self.writer.release()
        self._drop_pool()
        self.wal.close()

    def __enter__(self) -> OTLPSink:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


__all__ = ["LOGS_PATH", "OTLPSink", "SinkConfig", "TRACES_PATH"]
