"""Opening the shared DuckDB file safely from several processes.

DuckDB allows one read-write process or many readers, never both, so every writer and reader
takes an ``fcntl.flock`` on a sidecar ``<db>.lock`` (exclusive for writers, shared for readers).
Readers and the in-process exporters hold a DuckDB connection only for one refresh or one batch;
the receiver's writer keeps its connection (and the exclusive flock) across batches, and a process
that has to wait says so on ``<db>.lock.wait`` (:class:`FileLock`), so that writer hands the file
over after the batch in progress.  Retries on ``duckdb.IOException`` cover foreign tools that open
the file without our lock.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import secrets
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

import duckdb

from otel_inputs.exporter._schema import check_version, migrate
from otel_inputs.exporter._wal import fsync_dir

_log = logging.getLogger(__name__)

# Offline machines: a stray extension call must fail fast, never try a download.
CONNECT_CONFIG = {"autoinstall_known_extensions": False, "autoload_known_extensions": False}

# Applied with SET on every writer connection (SET, not connect config, so an in-process reader
# opened with CONNECT_CONFIG never meets a "different configuration" error).  DuckDB's default
# memory_limit is 80% of RAM and its default threads is every core; for 512-1,024-span batches a
# 64 MB buffer pool and one thread cut the writer's transient peak by ~25-35 MiB (measured:
# first-batch VmHWM +79 MiB default, +53 MiB with both) without a throughput loss on 2 cores,
# where the sink's Python decoding already occupies the other core.  Larger work spills to
# <db>.tmp instead of failing.
#
# checkpoint_threshold '1B': every commit checkpoints at once, and DuckDB then skips writing the
# batch to the WAL first (auto_checkpoint_skip_wal_threshold).  A writer connection is closed
# after each batch, which checkpoints anyway, so this only drops the WAL copy: measured ~9% less
# writer CPU and a ~20 MiB smaller commit peak per 512 rich spans, same file size.
WRITER_SETTINGS: dict[str, str] = {"memory_limit": "64MB", "threads": "1", "checkpoint_threshold": "1B"}
# The ``otel-inputs collect`` sink's writer keeps its connection across batches, so it checkpoints
# on DuckDB's schedule (when DuckDB's own log passes checkpoint_threshold) and when it lets go of
# the file (idle, a reader waiting, stopping), not on every commit.  It keeps WRITER_SETTINGS'
# 64 MB buffer pool: checkpointing 16 MB of log in the 24 MB pool it had when every commit
# checkpointed failed to pin a block, and each failure cost a reopen and a retry.
SINK_WRITER_SETTINGS: dict[str, str] = {**WRITER_SETTINGS, "checkpoint_threshold": "16MB"}


class LockTimeout(TimeoutError):
    """The sidecar lock could not be taken within the allowed time."""


def lock_path(db_path: str | os.PathLike[str]) -> Path:
    return Path(f"{os.fspath(db_path)}.lock")


def spool_path(db_path: str | os.PathLike[str]) -> Path:
    return Path(f"{os.fspath(db_path)}.spool")


def wait_path(db_path: str | os.PathLike[str]) -> Path:
    return Path(f"{os.fspath(db_path)}.lock.wait")


class FileLock:
    """The sidecar flock, held until :meth:`release` (a writer that keeps its connection holds it
    across batches).

    A process that finds the lock taken says so while it waits: it holds a shared flock on
    ``<db>.lock.wait`` until it has the lock or gives up.  A holder that keeps the lock between
    batches asks :func:`others_waiting` after each batch and lets go, so a reader waits for at most
    the batch in progress, never for a writer's whole backlog."""

    def __init__(self, db_path: str | os.PathLike[str], *, exclusive: bool) -> None:
        self.db_path = db_path
        self.exclusive = exclusive
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self, timeout_s: float) -> None:
        """Take the lock, polling with backoff; a stuck holder yields a LockTimeout, not a hang."""
        path = lock_path(self.db_path)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        mode = (fcntl.LOCK_EX if self.exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB
        waiting: int | None = None
        try:
            deadline = time.monotonic() + timeout_s
            delay = 0.001
            while True:
                try:
                    fcntl.flock(fd, mode)
                    break
                except BlockingIOError:
                    if waiting is None:
                        waiting = _announce_waiting(self.db_path)
                    if time.monotonic() >= deadline:
                        raise LockTimeout(f"could not lock {path} within {timeout_s:.1f}s") from None
                    time.sleep(delay)
                    delay = min(delay * 2, 0.01)
        except BaseException:
            os.close(fd)
            raise
        finally:
            if waiting is not None:
                os.close(waiting)  # closing drops its flock
        self._fd = fd

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)


def _announce_waiting(db_path: str | os.PathLike[str]) -> int | None:
    """A shared flock on ``<db>.lock.wait``, held while this process waits for the sidecar lock
    (None when the file cannot be made: waiting then still works, only unannounced)."""
    try:
        fd = os.open(wait_path(db_path), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)  # blocks only for the instant a holder probes it
    except OSError:
        os.close(fd)
        return None
    return fd


def others_waiting(db_path: str | os.PathLike[str]) -> bool:
    """Whether another process (or thread) is waiting for the sidecar lock right now."""
    try:
        fd = os.open(wait_path(db_path), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        os.close(fd)  # drops the probe's flock if it was taken
    return False


@contextlib.contextmanager
def file_lock(db_path: str | os.PathLike[str], *, exclusive: bool, timeout_s: float) -> Iterator[None]:
    """Hold the sidecar flock for the block (see :class:`FileLock`)."""
    lock = FileLock(db_path, exclusive=exclusive)
    lock.acquire(timeout_s)
    try:
        yield
    finally:
        lock.release()


def apply_writer_settings(con: duckdb.DuckDBPyConnection, settings: Mapping[str, str] | None = None) -> None:
    """Bound the writer's DuckDB memory and threads (``settings``, WRITER_SETTINGS by default)."""
    for name, value in (WRITER_SETTINGS if settings is None else settings).items():
        con.execute(f"SET {name} = '{value}'")


# A DuckDB file holds its main header and two database headers before any data block; a file
# shorter than that holds no data (and neither does its absent WAL).
_HEADERS_BYTES = 3 * 4096
_DUCKDB_MAGIC = b"DUCK"  # at offset 8 of the main header


def _unfinished_creation(path: Path) -> bool:
    """Whether ``path`` is what a creation cut short leaves (a full disk, a crash): empty, or a
    DuckDB header prefix or zeros shorter than the headers, with no WAL beside it.  Such a file holds
    nothing; DuckDB refuses it for ever ("not a valid DuckDB database file").  Anything else, even
    a foreign small file, is left for the operator."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return False
    if size >= _HEADERS_BYTES or Path(f"{path}.wal").exists():
        return False
    with open(path, "rb") as fh:
        head = fh.read()
    return not any(head) or head[8:12] == _DUCKDB_MAGIC


def create_if_missing(db_path: str | os.PathLike[str]) -> None:
    """Create the database file atomically when it is missing, or replace an unfinished creation.

    DuckDB creating the file in place on a full disk leaves an empty or partial file that no later
    open accepts, so every later batch would be spooled and never land.  Instead the file is made
    beside it under a temporary name, fsynced, and only then linked into place.  Call it holding the
    writers' exclusive lock (every writer connection does, via :func:`connect_with_retry`).  Raises
    ``OSError`` / ``duckdb.Error`` when it cannot be made (the caller spools, as for any failed write)."""
    path = Path(db_path)
    replace = _unfinished_creation(path)
    if path.exists() and not replace:
        return
    for stale in path.parent.glob(f".{path.name}.creating-*"):  # left by a crash; ours, holding nothing
        stale.unlink(missing_ok=True)
    tmp = path.with_name(f".{path.name}.creating-{os.getpid()}-{secrets.token_hex(4)}")
    try:
        duckdb.connect(os.fspath(tmp), config=dict(CONNECT_CONFIG)).close()
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        if replace:
            _log.warning("otel-inputs: %s is an unfinished database creation (%d bytes, e.g. a full disk); "
                         "replacing it", path, path.stat().st_size)  # fmt: skip
            os.replace(tmp, path)
        else:
            os.link(tmp, path)
        fsync_dir(path.parent)
    finally:
        tmp.unlink(missing_ok=True)
        Path(f"{tmp}.wal").unlink(missing_ok=True)


def connect_with_retry(
    db_path: str | os.PathLike[str], *, read_only: bool, attempts: int = 6, first_delay_s: float = 0.02,
    settings: Mapping[str, str] | None = None,
) -> duckdb.DuckDBPyConnection:
    """Open the file, retrying the lock conflicts a foreign (lock-less) process can cause.

    A read-write connection gets the bounded ``settings`` (WRITER_SETTINGS by default); a missing
    file is created atomically first (:func:`create_if_missing`: the caller holds the writers' lock)."""
    if not read_only:
        create_if_missing(db_path)
    delay = first_delay_s
    for attempt in range(attempts):
        try:
            con = duckdb.connect(os.fspath(db_path), read_only=read_only, config=dict(CONNECT_CONFIG))
            if not read_only:
                try:
                    apply_writer_settings(con, settings)
                except BaseException:
                    con.close()
                    raise
            return con
        except duckdb.IOException:
            if attempt == attempts - 1:
                raise
            time.sleep(delay)
            delay *= 2
    raise AssertionError("unreachable")


def migrate_file(db_path: str | os.PathLike[str], *, timeout_s: float = 10.0) -> int:
    """Bring the file (created when absent) to this version's schema; return its schema version.

    The one short exclusive open that the viewer's start-up, tests and benchmarks use to make or
    upgrade a file: under the exclusive sidecar lock, as a writer, so it never races a batch.
    Raises :class:`LockTimeout` when another process holds the lock for ``timeout_s``,
    :class:`SchemaError` for a file from a newer (or another) otel-inputs, and ``duckdb.Error`` when
    DuckDB cannot open the file."""
    with file_lock(db_path, exclusive=True, timeout_s=timeout_s):
        con = connect_with_retry(db_path, read_only=False)
        try:
            return migrate(con)
        finally:
            con.close()


@contextlib.contextmanager
def read_connection(
    db_path: str | os.PathLike[str], *, timeout_s: float = 10.0
) -> Iterator[duckdb.DuckDBPyConnection]:
    """A short-lived read-only connection for one refresh (the viewer's way in); never cache it."""
    with file_lock(db_path, exclusive=False, timeout_s=timeout_s):
        con = connect_with_retry(db_path, read_only=True)
        try:
            check_version(con)
            yield con
        finally:
            con.close()
