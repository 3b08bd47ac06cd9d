"""The one write path: a batch of tables → one DuckDB transaction, or the spool, never nowhere.

Both the in-process exporter and the OTLP sink write through :class:`DuckDBWriter`.  Per batch it
takes the sidecar lock and a connection, replaces rows by key (so a replayed span or a Collector
retry never duplicates), drains any spooled batches, updates its health counters and commits.
The in-process exporters then close the connection and let go of the lock; the sink's writer
(``keep_open``) keeps both across batches, so DuckDB checkpoints on its own schedule rather than at
every close, and hands the file over when another process waits for it (after the batch, or
between two inserts of a span batch) or when it is idle.  Any failure closes the connection; the
retry reopens the database.  When a write fails after bounded retries the batch is written
atomically to ``<db>.spool/`` and drained by the next successful batch of any process.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import logging
import os
import secrets
import shutil
import socket
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.ipc as ipc

from otel_inputs.exporter._arrow import ARTIFACTS, ATTEMPTS, INPUTS, LOGS, PARTS, TRACES, BatchTables, build_reference
from otel_inputs.exporter._db import (
    WRITER_SETTINGS, FileLock, LockTimeout, connect_with_retry, others_waiting, spool_path,
)  # fmt: skip
from otel_inputs.exporter._artifacts import artifacts_table
from otel_inputs.exporter._schema import migrate
from otel_inputs.store import AttemptRecord
from otel_inputs.exporter._spans import SpanRecord
from otel_inputs.exporter._encodings.coding_agents import settle as settle_coding_agents
from otel_inputs.exporter._messages import settle_for_logs as settle_log_messages
from otel_inputs.exporter._steps import resolve as resolve_steps, step_trace_ids
from otel_inputs.exporter._tables import INGEST_PROGRESS, TABLES, sha256_key_sql

_log = logging.getLogger(__name__)

HEALTH_METRICS = ("spans_written", "spans_spilled", "spans_dropped", "batches_failed",
                  "spans_drained", "spans_rejected", "spans_unconvertible", "spool_quarantined",
                  "artifact_rows_written", "logs_written", "logs_rejected", "logs_dropped",
                  "spool_drain_failed", "spans_unmapped")  # fmt: skip
# A spool entry holds one Arrow IPC file per table of the batch, named after the table.
_TABLE_FILES = {name: f"{name}.arrow" for name in (TRACES, ATTEMPTS, INPUTS, ARTIFACTS, PARTS, LOGS)}
# Columns the INSERT computes from another column of the row (the viewer's where-else key, migration 13).
_KEY_COLUMNS = {t.name: t.key_columns() for t in TABLES if t.key_columns()}
_PROGRESS_TABLE = INGEST_PROGRESS.name
_BATCH_VIEW = "_otel_inputs_batch"
_KEYS_VIEW = "_otel_inputs_keys"


def default_source(prefix: str = "exporter") -> str:
    return f"{prefix}:{socket.gethostname()}:{os.getpid()}"


@dataclass(frozen=True)
class Progress:
    """A write-ahead log position landed in the same transaction as the rows it covers."""

    log: str
    seq: int


@dataclass(frozen=True)
class WriteOutcome:
    written: int = 0
    spilled: int = 0
    dropped: int = 0
    error: str | None = None
    logs_written: int = 0

    @property
    def durable(self) -> bool:
        """True when every span is either in the database or in the spool."""
        return self.dropped == 0


_WRITERS: weakref.WeakSet[DuckDBWriter] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    # A lock held by another thread at fork time would stay locked forever in the child.
    for writer in list(_WRITERS):
        writer._reinit_after_fork()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


class DuckDBWriter:
    """Writes batches into one DuckDB file shared with other writer processes and readers."""

    def __init__(
        self,
        db_path: str | os.PathLike[str],
        *,
        source: str | None = None,
        source_prefix: str = "exporter",
        lock_timeout_s: float = 10.0,
        connect_attempts: int = 6,
        drain_limit: int = 16,
        settings: Mapping[str, str] | None = None,
        keep_open: bool = False,
    ) -> None:
        self.db_path = Path(db_path)
        self.spool_dir = spool_path(self.db_path)
        self._fixed_source = source
        self._source_prefix = source_prefix
        self.source = source or default_source(source_prefix)
        self.lock_timeout_s = lock_timeout_s
        self.connect_attempts = connect_attempts
        self.drain_limit = drain_limit
        self.settings = settings  # SET on each connection; None: WRITER_SETTINGS as they are then
        # keep_open: the connection (and the exclusive sidecar lock) stay open across batches until
        # release() or yield_to_waiters(); else each batch opens and closes its own.
        self.keep_open = keep_open
        self._con: duckdb.DuckDBPyConnection | None = None
        self._con_lock: FileLock | None = None
        self._con_settings: Mapping[str, str] | None = None
        self.counters: dict[str, int] = dict.fromkeys(HEALTH_METRICS, 0)
        self._lock = threading.Lock()
        self._pending: dict[str, int] = {}
        self._pending_lock = threading.Lock()
        self._migrated = False
        _WRITERS.add(self)

    def _reinit_after_fork(self) -> None:
        # The parent's connection and flock are the parent's: forget them without closing.
        self._con = None
        self._con_lock = None
        self._lock = threading.Lock()
        self._pending_lock = threading.Lock()
        self._pending = {}
        self.counters = dict.fromkeys(HEALTH_METRICS, 0)
        if self._fixed_source is None:  # a per-process source names the child, not the parent
            self.source = default_source(self._source_prefix)

    # -- public ------------------------------------------------------------------------------
    def write_spans(self, spans: Sequence[SpanRecord], *, artifacts: Sequence[AttemptRecord] = ()) -> WriteOutcome:
        tables = self.build(spans)
        if artifacts:
            tables = dataclasses.replace(tables, artifacts=artifacts_table(artifacts, _now_us()))
        return self.write_tables(tables)

    def build(self, spans: Sequence[SpanRecord]) -> BatchTables:
        """The batch's Arrow tables; a span that cannot be represented is dropped and counted."""
        tables, problems = build_reference(spans)
        for problem in problems:
            _log.error("otel-inputs: %s", problem)
        if problems:
            self.count("spans_unconvertible", len(problems))
            self.count("spans_dropped", len(problems))
        return tables

    def land_artifacts(self, records: Sequence[AttemptRecord]) -> WriteOutcome:
        table = artifacts_table(records, _now_us())
        if table is None:
            return WriteOutcome()
        return self.write_tables(BatchTables(None, None, None, table))

    def count(self, metric: str, n: int) -> None:
        """Add to a health counter persisted with the next successful batch.  Safe to call from
        anywhere, also from a batch producer running inside :meth:`write_lazy` (the writer's lock is
        held there, so the count waits in ``_pending`` until the next batch takes it)."""
        with self._pending_lock:
            self._pending[metric] = self._pending.get(metric, 0) + n

    def _take_pending(self) -> None:
        # Called with self._lock held, before a transaction copies the counters.
        with self._pending_lock:
            pending, self._pending = self._pending, {}
        for metric, n in pending.items():
            self.counters[metric] = self.counters.get(metric, 0) + n

    def write_tables(self, tables: BatchTables) -> WriteOutcome:
        """Land one batch (and any spooled ones); spill it on failure.  Never raises."""
        return self.write_batches([tables])

    def write_batches(self, batches: Sequence[BatchTables]) -> WriteOutcome:
        """Land several batches in ONE transaction, in order (a later copy of a key replaces an
        earlier one), plus any spooled ones; spill them on failure.  Never raises."""
        try:
            merged = coalesce(batches)
        except Exception:  # noqa: BLE001 - merging is an optimisation: fall back to one by one
            merged = [b for b in batches if b.items()]
        return self.write_lazy(lambda: merged)

    def write_lazy(self, produce: Callable[[], Iterable[BatchTables]], *, progress: Progress | None = None,
                   spill: bool = True, pausable: bool = False) -> WriteOutcome:  # fmt: skip
        """Land every batch ``produce()`` yields in ONE transaction, inserting each as it is made,
        so only one batch's Arrow tables exist at a time (the sink converts while it writes).
        ``produce`` is called again to retry or to spill, so it must yield the same batches each
        time and never raise.  ``progress`` is recorded in the same transaction (the sink's
        write-ahead log position); with ``spill=False`` a failed batch is not spooled, only
        reported (the sink keeps it in its write-ahead log and retries).  With ``pausable`` (rows that
        all replace by key: spans, never log records) the transaction may commit between two batches
        when another process waits for the file, hand it over, and go on in a new transaction; only
        the last one records ``progress``, so after a crash mid-way the whole lot lands again,
        replacing what had landed.  Never raises."""
        # Every batch carries a mark, so a retry after a failure can tell "committed, then the
        # checkpoint failed" from "not committed" (log rows have no key to replace by).
        progress = progress or Progress(f"batch:{self.source}", secrets.randbits(62))
        with self._lock:
            self._take_pending()
            try:
                n, logs = self._commit(produce, progress, pausable=pausable)
                return WriteOutcome(written=n, logs_written=logs)
            except Exception as exc:  # noqa: BLE001 - every failure ends in the spool, not the caller
                error = f"{type(exc).__name__}: {exc}"
                self.counters["batches_failed"] += 1
                if not spill:
                    _log.warning("otel-inputs: DuckDB write failed (%s); kept for a retry", error)
                    return WriteOutcome(error=error)
                spilled = 0
                n = 0
                for tables in produce():
                    n += tables.span_count
                    try:
                        self._spill(tables)
                        spilled += tables.span_count
                        self.counters["spans_unmapped"] += tables.unmapped  # the spool keeps only the rows
                    except Exception as spill_exc:  # noqa: BLE001
                        self.counters["spans_dropped"] += tables.span_count
                        self.counters["logs_dropped"] += tables.log_count
                        _log.error("otel-inputs: batch of %d spans LOST: write failed (%s) and spool failed (%s)",
                                   tables.span_count, error, spill_exc)  # fmt: skip
                self.counters["spans_spilled"] += spilled
                if spilled < n:
                    return WriteOutcome(spilled=spilled, dropped=n - spilled, error=error)
                _log.warning("otel-inputs: DuckDB write failed (%s); %d spans spilled to %s",
                             error, n, self.spool_dir)  # fmt: skip
                return WriteOutcome(spilled=n, error=error)

    def drain_spool(self) -> bool:
        """Land everything spooled (e.g. at shutdown), ``drain_limit`` entries per transaction, while
        each round lands some; True when the spool is empty.  Never raises."""
        before: list[Path] = []
        while (entries := self.spooled_batches()) and entries != before:
            before = entries
            with self._lock:
                self._take_pending()
                try:
                    self._commit(list, None)
                except Exception as exc:  # noqa: BLE001 - the spool stays for the next writer of this file
                    _log.warning("otel-inputs: spool not drained (%s); %d batches wait in %s",
                                 f"{type(exc).__name__}: {exc}", len(self.spooled_batches()), self.spool_dir)
                    break
        return not self.spooled_batches()

    def read_landed(self, log: str) -> int:
        """The highest write-ahead record of ``log`` landed in the database (migrating it first);
        raises when the database cannot be opened."""
        with self._lock, self._connection(self.settings) as con:
            return landed_seq(con, log)

    def release(self) -> None:
        """Close a kept connection and let go of the sidecar lock (idle, stopping).  Never raises."""
        with self._lock:
            self._drop()

    def yield_to_waiters(self, wait_s: float = 2.0) -> bool:
        """When another process waits for the file (a viewer's refresh, another writer), close the
        kept connection, let go of the lock and give the waiters up to ``wait_s`` to take it before
        the next batch takes it back; True when it yielded.  Never raises."""
        with self._lock:
            if self._con is None or not others_waiting(self.db_path):
                return False
            self._drop()
        _wait_for_waiters(self.db_path, wait_s)
        return True

    @property
    def holds_connection(self) -> bool:
        return self._con is not None

    def spooled_batches(self) -> list[Path]:
        try:
            return sorted(p for p in self.spool_dir.iterdir() if p.is_dir() and p.name[0].isdigit())
        except FileNotFoundError:
            return []

    # -- internals -----------------------------------------------------------------------------
    def _commit(self, produce: Callable[[], Iterable[BatchTables]], progress: Progress | None, *,
                pausable: bool = False) -> tuple[int, int]:  # fmt: skip
        """One transaction of the produced batches (then drain the spool); returns spans and log
        records written.

        A failed transaction is retried once on a NEW connection without the memory limit:
        DuckDB invalidates a database after a fatal error (e.g. a checkpoint that could not pin a
        buffer), and only a reopen recovers it.  When ``progress`` shows the failed transaction
        did commit (a checkpoint failing after a durable COMMIT), it is not landed again."""
        before = self.counters["spans_written"], self.counters["logs_written"]
        staged: dict[str, int] = {}
        unbounded = {k: v for k, v in (self.settings or WRITER_SETTINGS).items() if k != "memory_limit"}
        try:
            drained = self._commit_on(produce, progress, self.settings, staged=staged, pausable=pausable)
        except duckdb.Error as exc:
            _log.warning("otel-inputs: DuckDB transaction failed (%s: %s); reopening the database to retry "
                         "without the memory limit", type(exc).__name__, str(exc).splitlines()[0][:200])
            drained = self._commit_on(produce, progress, unbounded, after_failure=True, staged=staged,
                                      pausable=pausable)  # fmt: skip
        if not drained:
            # A spool entry failed (e.g. its checkpoint under the bounded pool): one more drain on a
            # new connection without the limit, as for the batch itself; entry marks keep it exactly once.
            with self._connection(unbounded) as con:
                self._drain(con)
        return self.counters["spans_written"] - before[0], self.counters["logs_written"] - before[1]

    @contextlib.contextmanager
    def _connection(self, settings: Mapping[str, str] | None) -> Iterator[duckdb.DuckDBPyConnection]:
        """A read-write connection under the exclusive sidecar lock, migrated once.  With
        ``keep_open`` it is the kept one (opened when there is none, or when it was opened with other
        settings) and stays open after the block; any failure in the block closes it and lets go of
        the lock, so the next attempt reopens the database (DuckDB recovers from a fatal error, such
        as an invalidated database after a failed checkpoint, only by a reopen).  Call holding
        ``self._lock``."""
        if self._con is None or self._con_settings != settings:
            self._drop()
            self._open(settings)
        con = self._con
        assert con is not None
        try:
            if not self._migrated:
                migrate(con)
                self._migrated = True
            yield con
        except BaseException:
            self._drop()
            raise
        if not self.keep_open:
            self._drop()

    def _open(self, settings: Mapping[str, str] | None) -> duckdb.DuckDBPyConnection:
        lock = FileLock(self.db_path, exclusive=True)
        lock.acquire(self.lock_timeout_s)
        try:
            con = connect_with_retry(self.db_path, read_only=False, attempts=self.connect_attempts,
                                     settings=settings)  # fmt: skip
        except BaseException:
            lock.release()
            raise
        self._con, self._con_lock, self._con_settings = con, lock, settings
        return con

    def _hand_over(self) -> duckdb.DuckDBPyConnection:
        """Mid-transaction pause (the part so far committed): close, let the waiting processes take
        the file, then reopen it with the same settings."""
        settings = self._con_settings
        self._drop()
        _wait_for_waiters(self.db_path)
        return self._open(settings)

    def _drop(self) -> None:
        """Close the connection (DuckDB checkpoints on close) and release the lock; never raises (a
        close that cannot checkpoint leaves the committed rows in DuckDB's own log, replayed at the
        next open)."""
        con, lock = self._con, self._con_lock
        try:
            if con is not None:
                try:
                    con.close()
                except Exception as exc:  # noqa: BLE001
                    _log.warning("otel-inputs: closing the DuckDB connection failed (%s: %s)", type(exc).__name__,
                                 str(exc).splitlines()[0][:200])  # fmt: skip
            if lock is not None:
                lock.release()
        finally:
            self._con = self._con_lock = self._con_settings = None  # only now: holds_connection is exact

    def _commit_on(self, produce: Callable[[], Iterable[BatchTables]], progress: Progress | None,
                   settings: Mapping[str, str] | None, *, after_failure: bool = False,
                   staged: dict[str, int], pausable: bool = False) -> bool:  # fmt: skip
        """The transaction, then the spool drain; returns whether the drain met no failure."""
        with self._connection(settings) as con:
            if after_failure and progress is not None and landed_seq(con, progress.log) == progress.seq:
                # The COMMIT was durable; only what came after it (the checkpoint) failed.
                self.counters = dict(staged) or self.counters
                con.execute("CHECKPOINT")
            else:
                pause = _Pause(self) if pausable else None
                self.counters = _transaction(con, produce, self.source, self.counters, "spans_written", progress,
                                             staged, pause)  # fmt: skip
            return self._drain(self._con or con)  # a pause may have reopened the database

    def _drain(self, con: duckdb.DuckDBPyConnection) -> bool:
        """Land spooled batches, each in its own transaction.  An entry that reads back but does not
        land stays where it is: the failure may be the database's (memory, a fatal error), not the
        entry's, so only an entry that cannot be read at all is quarantined (in _load_spool).

        Each entry's transaction also records the entry's name (``spool:<name>`` in
        otel_inputs_ingest_progress).  An entry whose mark is already there was landed by a
        transaction that committed durably and then failed (a checkpoint after the COMMIT), or
        before a crash took the process ahead of its removal: it is removed, not landed again (log
        records have no key to replace by).  Marks of entries no longer spooled are cleared.  Returns
        False when an entry failed (it stays for the next drain)."""
        entries = self._load_spool()
        if not entries:
            return True
        _clear_spool_marks(con, [path.name for path, _ in entries] + [p.name for p in self.spooled_batches()])
        for path, batch in entries:
            mark = Progress(f"{_SPOOL_MARK}{path.name}", 1)
            try:
                if landed_seq(con, mark.log) == mark.seq:
                    # Its COMMIT was durable (the health rows with it): count it here too, then remove it.
                    self.counters["spans_drained"] += batch.span_count
                    self.counters["logs_written"] = self.counters.get("logs_written", 0) + batch.log_count
                    counters = self.counters
                else:
                    counters = _transaction(con, functools.partial(list, [batch]), self.source, self.counters,
                                            "spans_drained", mark)  # fmt: skip
            except Exception as exc:  # noqa: BLE001 - kept for the next drain; its mark says if it landed
                self.counters["spool_drain_failed"] = self.counters.get("spool_drain_failed", 0) + 1
                _log.warning("otel-inputs: spool entry %s not landed (%s: %s); kept for the next drain",
                             path, type(exc).__name__, str(exc).splitlines()[0][:200])  # fmt: skip
                return False
            self.counters = counters
            # Only after the commit: a crash before this re-drains, and the entry's mark makes that a no-op.
            shutil.rmtree(path, ignore_errors=True)
        return True

    def _quarantine(self, path: Path, exc: BaseException) -> None:
        bad = path.with_name(f"bad-{path.name}")
        _log.error("otel-inputs: spool entry %s cannot be landed (%s); moved to %s", path, exc, bad)
        try:
            os.replace(path, bad)
        except OSError:
            shutil.rmtree(path, ignore_errors=True)
        self.counters["spool_quarantined"] = self.counters.get("spool_quarantined", 0) + 1

    def _load_spool(self) -> list[tuple[Path, BatchTables]]:
        out: list[tuple[Path, BatchTables]] = []
        for path in self.spooled_batches()[: self.drain_limit]:
            try:
                loaded: dict[str, pa.Table | None] = {}
                for name, filename in _TABLE_FILES.items():
                    f = path / filename
                    loaded[name] = ipc.open_file(f).read_all() if f.exists() else None
            except Exception as exc:  # noqa: BLE001 - a corrupt spool entry is quarantined, not retried forever
                self._quarantine(path, exc)
                continue
            out.append((path, BatchTables(loaded[TRACES], loaded[ATTEMPTS], loaded[INPUTS], loaded[ARTIFACTS],
                                          loaded.get(PARTS), loaded.get(LOGS))))
        return out

    def _spill(self, tables: BatchTables) -> Path:
        self.spool_dir.mkdir(parents=True, exist_ok=True)
        token = f"{time.time_ns():020d}-{os.getpid()}-{secrets.token_hex(4)}"
        tmp = self.spool_dir / f".tmp-{token}"
        tmp.mkdir()
        for name, table in tables.items():
            target = tmp / _TABLE_FILES[name]
            with open(target, "wb") as fh:
                with ipc.new_file(fh, table.schema) as w:
                    w.write_table(table)
                fh.flush()
                os.fsync(fh.fileno())
        final = self.spool_dir / token
        os.rename(tmp, final)  # atomic: a drainer never sees a half-written batch
        return final


def _wait_for_waiters(db_path: Path, wait_s: float = 2.0) -> None:
    """Give the processes waiting for the sidecar lock up to ``wait_s`` to take it."""
    deadline = time.monotonic() + wait_s
    while others_waiting(db_path) and time.monotonic() < deadline:
        time.sleep(0.002)


class _Pause:
    """What lets a transaction of keyed rows commit between two batches and hand the file over."""

    def __init__(self, writer: DuckDBWriter) -> None:
        self.writer = writer

    def wanted(self) -> bool:
        return others_waiting(self.writer.db_path)

    def resume(self) -> duckdb.DuckDBPyConnection:
        return self.writer._hand_over()

    @property
    def con(self) -> duckdb.DuckDBPyConnection | None:
        return self.writer._con


def _now_us() -> int:
    return time.time_ns() // 1000


def _keys(tables: BatchTables) -> tuple[set[tuple[str, str]], set[str]]:
    spans: set[tuple[str, str]] = set()
    if tables.traces is not None:
        spans = set(zip(tables.traces.column("TraceId").to_pylist(), tables.traces.column("SpanId").to_pylist()))
    attempts = set(tables.attempts.column("attempt_id").to_pylist()) if tables.attempts is not None else set()
    return spans, attempts


def _concat(group: list[BatchTables]) -> BatchTables:
    if len(group) == 1:
        return group[0]

    def cat(tables: list[pa.Table | None]) -> pa.Table | None:
        present = [t for t in tables if t is not None and t.num_rows]
        return pa.concat_tables(present) if present else None

    return BatchTables(cat([b.traces for b in group]), cat([b.attempts for b in group]),
                       cat([b.inputs for b in group]), cat([b.artifacts for b in group]),
                       cat([b.parts for b in group]), cat([b.logs for b in group]),
                       sum(b.unmapped for b in group))  # fmt: skip


def coalesce(batches: Sequence[BatchTables]) -> list[BatchTables]:
    """Merge consecutive batches into as few as possible without putting two copies of a span or an
    attempt into one insert (keyed replace must still see them in order); artifacts stay alone."""
    out: list[BatchTables] = []
    group: list[BatchTables] = []
    seen_spans: set[tuple[str, str]] = set()
    seen_attempts: set[str] = set()
    for b in batches:
        if not b.items():
            continue
        if b.artifacts is not None:
            if group:
                out.append(_concat(group))
                group, seen_spans, seen_attempts = [], set(), set()
            out.append(b)
            continue
        spans, attempts = _keys(b)
        if group and (spans & seen_spans or attempts & seen_attempts):
            out.append(_concat(group))
            group, seen_spans, seen_attempts = [], set(), set()
        group.append(b)
        seen_spans |= spans
        seen_attempts |= attempts
    if group:
        out.append(_concat(group))
    return out


_SPOOL_MARK = "spool:"


def _clear_spool_marks(con: duckdb.DuckDBPyConnection, keep: list[str]) -> None:
    """Delete the landed marks of spool entries that are gone (autocommit; a failure is harmless:
    a stale mark names an entry that no longer exists)."""
    wanted = [f"{_SPOOL_MARK}{name}" for name in dict.fromkeys(keep)]
    stale = [r[0] for r in con.execute(f"SELECT log FROM {_PROGRESS_TABLE} WHERE log LIKE ?",
                                       [f"{_SPOOL_MARK}%"]).fetchall() if r[0] not in wanted]  # fmt: skip
    for start in range(0, len(stale), _ID_CHUNK):
        chunk = stale[start:start + _ID_CHUNK]
        con.execute(f"DELETE FROM {_PROGRESS_TABLE} WHERE log IN ({', '.join('?' * len(chunk))})", chunk)


def landed_seq(con: duckdb.DuckDBPyConnection, log: str) -> int:
    """The highest write-ahead record of ``log`` landed in this database (0: none)."""
    row = con.execute(f"SELECT landed_seq FROM {_PROGRESS_TABLE} WHERE log = ?", [log]).fetchone()
    return int(row[0]) if row else 0


def _transaction(con: duckdb.DuckDBPyConnection, produce: Callable[[], Iterable[BatchTables]], source: str,
                 counters: Mapping[str, int], count_as: str, progress: Progress | None = None,
                 staged: dict[str, int] | None = None, pause: _Pause | None = None) -> dict[str, int]:  # fmt: skip
    """One transaction; if WRITER_SETTINGS' memory_limit is too small for an unusually large batch,
    lift it for this connection and retry once instead of spilling (or quarantining) good data.
    A fatal error (the database invalidated) is not retried here: only a reopen recovers it.
    Returns the counters including this transaction's spans (under ``count_as``)."""
    try:
        return _transaction_once(con, produce(), source, counters, count_as, progress, staged, pause)
    except duckdb.Error as exc:
        if isinstance(exc, duckdb.FatalException) or not _out_of_memory(exc):
            raise
        if pause is not None and pause.con is not None:
            con = pause.con  # the connection a pause reopened
        _log.info("otel-inputs: batch exceeds the writer memory_limit; retrying with DuckDB's default")
        limit = (con.execute("SELECT current_setting('memory_limit')").fetchone() or ("",))[0]
        con.execute("RESET memory_limit")
        try:
            return _transaction_once(con, produce(), source, counters, count_as, progress, staged, pause)
        finally:
            with contextlib.suppress(duckdb.Error):  # a kept connection bounds the next batch again
                con.execute(f"SET memory_limit = '{limit}'")


def _out_of_memory(exc: BaseException) -> bool:
    # An insert raises OutOfMemoryException; a COMMIT that cannot allocate or pin a buffer raises
    # TransactionException.
    text = str(exc)
    return isinstance(exc, duckdb.OutOfMemoryException) or "could not allocate" in text or "failed to pin block" in text


def _transaction_once(con: duckdb.DuckDBPyConnection, batches: Iterable[BatchTables], source: str,
                      counters: Mapping[str, int], count_as: str, progress: Progress | None,
                      staged: dict[str, int] | None = None, pause: _Pause | None = None) -> dict[str, int]:  # fmt: skip
    """One transaction; ``staged`` receives the counters it commits just before the COMMIT, so a
    caller that finds the COMMIT durable after an error can adopt them.  With ``pause``, when
    another process waits for the file, the rows so far are committed (without ``progress``), the
    file is handed over, and the rest goes on in a new transaction."""
    out = dict(counters)
    con.execute("BEGIN TRANSACTION")
    try:
        for tables in batches:
            _insert(con, tables)
            out[count_as] += tables.span_count
            out["spans_unmapped"] = out.get("spans_unmapped", 0) + tables.unmapped
            out["logs_written"] = out.get("logs_written", 0) + tables.log_count
            if count_as == "spans_written" and tables.artifacts is not None:
                out["artifact_rows_written"] += tables.artifacts.num_rows
            if pause is not None and pause.wanted():
                _write_health(con, source, out)
                con.execute("COMMIT")
                con = pause.resume()
                con.execute("BEGIN TRANSACTION")
        if progress is not None:
            con.execute(f"DELETE FROM {_PROGRESS_TABLE} WHERE log = ?", [progress.log])
            con.execute(f"INSERT INTO {_PROGRESS_TABLE} VALUES (?, ?, now())", [progress.log, progress.seq])
        _write_health(con, source, out)
        # The commit checkpoints (checkpoint_threshold '1B') within the bounded buffer pool: lifting
        # the limit for every commit cost ~64 MiB of peak RSS.  With very large values a checkpoint
        # can fail to pin a buffer after the COMMIT was durable; _commit then reopens the database
        # and, seeing ``progress`` landed, only checkpoints without the limit.
        if staged is not None:
            staged.clear()
            staged.update(out)
        con.execute("COMMIT")
        return out
    except BaseException:
        try:
            con.execute("ROLLBACK")
        except Exception:  # noqa: BLE001
            pass  # already aborted (or closed by a failed pause): keep the original error, not the rollback's
        raise


def _insert(con: duckdb.DuckDBPyConnection, tables: BatchTables) -> None:
    """Replace-by-key then insert, table by table, inside the caller's transaction; then settle
    which GenAI spans of the touched traces are attempts and which are steps (``_steps``)."""
    _insert_tables(con, tables)
    try:
        if tables.traces is not None or tables.attempts is not None:
            resolve_steps(con, *step_trace_ids(tables.traces, tables.attempts))
        if tables.logs is not None:
            settle_log_messages(con, tables.logs)  # GenAI log records that came after their attempt
        settle_coding_agents(con, tables)  # Claude Code, Codex CLI, Gemini CLI turns (docs/coding-agents.md)
    except duckdb.Error:
        raise  # the transaction is aborted: retry or spill the batch as any failed write
    except Exception:  # noqa: BLE001 - a projection defect must never cost the spans: they land as they are
        _log.exception("otel-inputs: attempts, steps or log messages of this batch not settled; rows land as they are")


def _insert_tables(con: duckdb.DuckDBPyConnection, tables: BatchTables) -> None:
    for name, table in tables.items():
        con.register(_BATCH_VIEW, table)
        try:
            if name == TRACES:
                # Join against the two key columns only: joining the full batch view made DuckDB
                # materialise every nested event map first (measured ~170 ms vs ~6 ms per 512 spans).
                con.register(_KEYS_VIEW, table.select(["TraceId", "SpanId"]))
                try:
                    con.execute(
                        f'DELETE FROM otel_traces USING {_KEYS_VIEW} k '
                        'WHERE otel_traces."SpanId" = k."SpanId" AND otel_traces."TraceId" = k."TraceId"'
                    )
                finally:
                    _unregister(con, _KEYS_VIEW)
            elif name == ATTEMPTS:
                # A re-landed attempt replaces its inputs too, even if it now has none.  Deleting by
                # a join with the batch scans every table whole (~300 ms per batch at 10M input rows);
                # the unique index on agent_attempts finds the few re-landed ids with bound
                # parameters (~20 ms), and a batch of new attempts deletes nothing.
                for ids in _landed_attempt_ids(con, table.column("attempt_id").to_pylist()):
                    marks = ", ".join("?" * len(ids))
                    for target in (ATTEMPTS, INPUTS, PARTS):
                        con.execute(f"DELETE FROM {target} WHERE attempt_id IN ({marks})", ids)
            elif name == ARTIFACTS:
                con.execute(
                    f"DELETE FROM {ARTIFACTS} WHERE attempt_id IN (SELECT attempt_id FROM {_BATCH_VIEW})"
                )
            # By the batch's own column names: a spooled batch written before a migration added a column lacks it.
            into = [f'"{c}"' for c in table.column_names]
            values = list(into)
            for key in _KEY_COLUMNS.get(name, ()):
                if key.key_of in table.column_names:
                    into.append(f'"{key.name}"')
                    values.append(sha256_key_sql(f'"{key.key_of}"'))
            con.execute(f"INSERT INTO {name} ({', '.join(into)}) SELECT {', '.join(values)} FROM {_BATCH_VIEW}")
        finally:
            _unregister(con, _BATCH_VIEW)


_ID_CHUNK = 1000  # bound parameters per statement


def _landed_attempt_ids(con: duckdb.DuckDBPyConnection, attempt_ids: list[Any]) -> list[list[Any]]:
    """The batch's attempt ids already in agent_attempts, in chunks of at most ``_ID_CHUNK``."""
    wanted = list(dict.fromkeys(a for a in attempt_ids if a is not None))
    found: list[Any] = []
    for start in range(0, len(wanted), _ID_CHUNK):
        chunk = wanted[start:start + _ID_CHUNK]
        marks = ", ".join("?" * len(chunk))
        found += [r[0] for r in con.execute(
            f"SELECT attempt_id FROM {ATTEMPTS} WHERE attempt_id IN ({marks})", chunk).fetchall()]
    return [found[i:i + _ID_CHUNK] for i in range(0, len(found), _ID_CHUNK)]


def _unregister(con: duckdb.DuckDBPyConnection, view: str) -> None:
    try:
        con.unregister(view)
    except duckdb.Error:
        pass  # an aborted transaction refuses it; the original error must surface, and the view is replaced next time


def _write_health(con: duckdb.DuckDBPyConnection, source: str, counters: Mapping[str, int]) -> None:
    con.execute("DELETE FROM exporter_health WHERE source = ?", [source])
    metrics = sorted(counters)
    values_sql = ", ".join("(?, ?, ?, now())" for _ in metrics)
    params: list[Any] = []
    for m in metrics:
        params.extend([source, m, int(counters[m])])
    con.execute(f"INSERT INTO exporter_health VALUES {values_sql}", params)


__all__ = ["DuckDBWriter", "LockTimeout", "Progress", "WriteOutcome", "default_source", "landed_seq"]
