"""The sink's write-ahead log: accepted request bodies made durable before the answer.

``otel-inputs collect`` answers 200 / gRPC OK only after the request's wire bytes are in this log
and fsynced (the OpenTelemetry Collector's persistent-queue pattern).  Concurrent requests share
fsyncs (group commit: whoever syncs covers every record written before it).  The writer thread
lands records in DuckDB and records the highest landed sequence number in the same transaction
(``otel_inputs_ingest_progress``), so a record is landed exactly once: a restart replays only
records past that mark, and segments wholly below it are deleted.

A failed fsync does not disable the log for good: the records written since the last successful
fsync (their senders were answered 503, and the kernel may have dropped their pages) are cut off
the segment and never landed -- the writer lands only records known durable -- and appends go on
in a new segment once that truncation is itself durable (on the next append, so the log recovers
by itself once the disk does).

Layout: ``<db>.ingest/wal-<first seq>.log`` segments of records
``crc32 (4) | length (4) | seq (8) | kind (1) | payload``, little-endian; the crc covers seq, kind
and payload.  A torn tail (crash mid-write, never acknowledged) fails its crc or length and is
cut off at replay; an undecodable record in the middle is skipped and moved aside (quarantined).
"""

from __future__ import annotations

import fcntl
import logging
import os
import struct
import threading
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from enum import IntEnum
from pathlib import Path

_log = logging.getLogger(__name__)

_HEADER = struct.Struct("<IIQB")
_SEGMENT_BYTES = 64 * 1024 * 1024  # a new segment past this, so landed ones can be deleted whole
_MAX_RECORD = 1 << 31


class Kind(IntEnum):
    """What a record's payload is: a protobuf request of one signal."""

    TRACES = 1
    LOGS = 2


@dataclass(frozen=True)
class Ref:
    """Where a record's payload lies, so the queue holds a position instead of the bytes."""

    seq: int
    kind: Kind
    path: Path
    offset: int
    length: int


@dataclass(frozen=True)
class Record:
    seq: int
    kind: Kind
    payload: bytes
    ref: Ref


class WALUnavailable(OSError):
    """The log cannot make a record durable (disk full, unwritable directory, failed fsync)."""


class WALBusy(RuntimeError):
    """Another process owns this log (a second ``collect`` on the same database)."""


def wal_dir(db_path: str | os.PathLike[str]) -> Path:
    return Path(f"{os.fspath(db_path)}.ingest")


class WriteAheadLog:
    """Append, group-fsync, replay and trim the sink's log of accepted requests."""

    def __init__(self, directory: Path, *, segment_bytes: int = _SEGMENT_BYTES) -> None:
        self.directory = directory
        self.segment_bytes = segment_bytes
        self._lock = threading.Lock()  # appends and segment switches
        self._sync_lock = threading.Lock()  # one fsync at a time; waiters find themselves covered
        self._fd: int | None = None
        self._segment: Path | None = None
        self._segment_size = 0
        self._written = 0  # highest seq written to the current fd
        self._synced = 0  # highest seq known durable (except voided ones)
        self._synced_size = 0  # bytes of the current segment known durable
        self._next = 1
        self._closed_segments: list[tuple[Path, int]] = []  # (path, last seq), oldest first
        self._owner_fd: int | None = None
        self._failed: OSError | None = None  # a failed fsync: the current fd's unsynced tail is suspect
        self._last_failure: OSError | None = None  # the last failed fsync, for the refusal's words
        self._voided: list[tuple[int, int]] = []  # seq ranges cut off after a failed fsync: never landed
        self.syncs = 0  # fsyncs of appended records (fewer than appends when requests share them)

    # -- life cycle -----------------------------------------------------------------------------
    def open(self, landed: int = 0) -> list[Ref]:  # noqa: A003 - the log's life cycle
        """Take ownership and find every intact record past ``landed`` (to replay; their payloads
        are read back one at a time with :meth:`read`); appends go to a new segment."""
        self.directory.mkdir(parents=True, exist_ok=True)
        owner = os.open(self.directory / "owner.lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(owner, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(owner)
            raise WALBusy(f"another otel-inputs collect is receiving into {self.directory}") from None
        self._owner_fd = owner
        pending: list[Ref] = []
        last = landed
        for path in self._segments():
            seg_last = 0
            for rec in self._read_segment(path):
                seg_last = max(seg_last, rec.seq)
                if rec.seq > landed:
                    pending.append(rec.ref)
            last = max(last, seg_last, _first_seq(path) - 1)
            if seg_last <= landed:  # wholly landed, or empty (created just before a crash)
                path.unlink(missing_ok=True)
            else:
                self._closed_segments.append((path, seg_last))
        self._next = last + 1
        self._synced = self._written = last
        return pending

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                try:
                    os.fsync(self._fd)
                except OSError:
                    pass
                os.close(self._fd)
                self._fd = None
            if self._owner_fd is not None:
                os.close(self._owner_fd)
                self._owner_fd = None

    # -- append ------------------------------------------------------------------------------------
    def append(self, kind: Kind, payload: bytes | bytearray | memoryview) -> Ref:
        """Write one record and return where it is once it is durable (fsynced).

        Raises :class:`WALUnavailable` when it cannot be made durable; the record then counts
        as never written (it is cut off at replay if a partial copy remains)."""
        ref = self.write(kind, payload)
        self.sync(ref.seq)
        return ref

    def write(self, kind: Kind, payload: bytes | bytearray | memoryview) -> Ref:
        """Write one record (not yet fsynced: see :meth:`sync`) and return where it is."""
        with self._lock:
            if self._failed is not None:
                self._recover()
            if self._fd is None or self._segment_size >= self.segment_bytes:
                self._rotate()
            assert self._fd is not None
            seq = self._next
            header = _HEADER.pack(zlib.crc32(payload, zlib.crc32(struct.pack("<QB", seq, kind))), len(payload), seq, kind)
            start = self._segment_size
            try:
                _write_all(self._fd, header)
                _write_all(self._fd, payload)
            except OSError as exc:
                # Cut the torn record off so the segment stays readable and later appends line up.
                try:
                    os.ftruncate(self._fd, start)
                    os.lseek(self._fd, start, os.SEEK_SET)
                except OSError as trunc_exc:
                    self._failed = trunc_exc  # recovered (cut to the durable size) by the next append
                raise WALUnavailable(f"cannot write the write-ahead log: {exc.strerror or exc}") from exc
            self._segment_size = start + len(header) + len(payload)
            self._next = seq + 1
            self._written = seq
            assert self._segment is not None
            return Ref(seq, kind, self._segment, start + _HEADER.size, len(payload))

    def read(self, ref: Ref) -> bytes:
        """A record's payload, read back from its segment (the page cache usually still holds it)."""
        with open(ref.path, "rb") as fh:
            fh.seek(ref.offset)
            data = fh.read(ref.length)
        if len(data) != ref.length:
            raise OSError(f"write-ahead record {ref.seq} truncated in {ref.path}")
        return data

    def sync(self, seq: int) -> None:
        """Return once every record up to ``seq`` is durable (one fsync covers all written before it);
        raises :class:`WALUnavailable` when record ``seq`` cannot be (it is then never landed)."""
        with self._sync_lock:
            with self._lock:
                if self._void(seq):
                    raise WALUnavailable(f"cannot fsync the write-ahead log: record {seq} was cut off after a "
                                         f"failed fsync ({self._failed_text})")  # fmt: skip
                if self._synced >= seq:
                    return
                if self._failed is not None:
                    raise WALUnavailable(f"cannot fsync the write-ahead log ({self._failed_text})")
                if self._fd is None:
                    raise WALUnavailable("write-ahead log closed")
                # A duplicate: a rotation may close the segment's fd while this fsync runs.
                fd, upto, segment, size = os.dup(self._fd), self._written, self._segment, self._segment_size
            try:
                os.fsync(fd)
                self.syncs += 1
            except OSError as exc:
                # After a failed fsync the kernel may have dropped the dirty pages: what was written
                # since the last good fsync is cut off at the next append (see _recover).
                with self._lock:
                    if self._segment == segment:
                        self._failed = exc
                    self._last_failure = exc
                raise WALUnavailable(f"cannot fsync the write-ahead log: {exc.strerror or exc}") from exc
            finally:
                os.close(fd)
            with self._lock:
                self._synced = max(self._synced, upto)
                if self._segment == segment:
                    self._synced_size = max(self._synced_size, size)

    def durable(self, seq: int) -> bool:
        """Whether record ``seq`` is known durable (fsynced, and not cut off after a failed fsync)."""
        with self._lock:
            return seq <= self._synced and not self._void(seq)

    def _void(self, seq: int) -> bool:
        return any(lo <= seq <= hi for lo, hi in self._voided)

    @property
    def _failed_text(self) -> str:
        exc = self._failed or self._last_failure
        return f"{exc.strerror or exc}" if isinstance(exc, OSError) else str(exc)

    def _recover(self) -> None:
        """After a failed fsync (called with self._lock held): cut the current segment back to what the
        last good fsync covered, make that durable, and continue in a new segment.  The records cut off
        were never acknowledged (their senders were answered 503) and are never landed.  Raises
        :class:`WALUnavailable` while the disk still fails; the next append tries again."""
        fd, segment = self._fd, self._segment
        try:
            if fd is not None:
                os.ftruncate(fd, self._synced_size)
                os.fsync(fd)
        except OSError as exc:
            raise WALUnavailable(f"cannot write the write-ahead log: still failing since a failed fsync "
                                 f"({exc.strerror or exc})") from exc  # fmt: skip
        if self._written > self._synced:
            self._voided.append((self._synced + 1, self._written))
            _log.error("otel-inputs collect: write-ahead records %d-%d were cut off after a failed fsync "
                       "(their senders were answered 503)", self._synced + 1, self._written)  # fmt: skip
        if fd is not None:
            os.close(fd)
            assert segment is not None
            self._closed_segments.append((segment, self._synced))
        self._fd, self._segment, self._synced_size = None, None, 0
        self._synced = max(self._synced, self._written)  # nothing of this fd is pending any more
        self._last_failure, self._failed = self._failed, None

    def _rotate(self) -> None:
        # Called with self._lock held.
        if self._fd is not None:
            try:
                os.fsync(self._fd)
            except OSError as exc:
                self._failed = exc  # the next append cuts the unsynced tail off (_recover)
                raise WALUnavailable(f"cannot fsync the write-ahead log: {exc.strerror or exc}") from exc
            os.close(self._fd)
            assert self._segment is not None
            self._closed_segments.append((self._segment, self._written))
            self._synced = max(self._synced, self._written)
            self._fd = None
        path = self.directory / f"wal-{self._next:020d}.log"
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        except OSError as exc:
            raise WALUnavailable(f"cannot create a write-ahead log segment: {exc.strerror or exc}") from exc
        try:
            fsync_dir(self.directory)
        except OSError as exc:
            os.close(fd)
            path.unlink(missing_ok=True)
            raise WALUnavailable(f"cannot sync the write-ahead log directory: {exc.strerror or exc}") from exc
        self._fd, self._segment, self._segment_size, self._synced_size = fd, path, 0, 0

    # -- trim --------------------------------------------------------------------------------------
    def landed(self, seq: int) -> None:
        """Every record up to ``seq`` is in DuckDB: delete segments that hold nothing newer."""
        with self._lock:
            keep: list[tuple[Path, int]] = []
            for path, last in self._closed_segments:
                if last <= seq:
                    path.unlink(missing_ok=True)
                else:
                    keep.append((path, last))
            self._closed_segments = keep
            # A wholly landed, large current segment is closed so the next trim can delete it.
            if self._fd is not None and self._written <= seq and self._segment_size >= self.segment_bytes // 4:
                self._rotate_quietly()

    def _rotate_quietly(self) -> None:
        try:
            self._rotate()
        except OSError:
            pass  # the next append retries the switch and reports it

    @property
    def last_seq(self) -> int:
        with self._lock:
            return self._written

    def disk_bytes(self) -> int:
        return sum(p.stat().st_size for p in self._segments() if p.exists())

    # -- reading -----------------------------------------------------------------------------------
    def _segments(self) -> list[Path]:
        return sorted(self.directory.glob("wal-*.log"))

    def _read_segment(self, path: Path) -> Iterator[Record]:
        """A segment's intact records; a torn tail is cut off, a bad record moved aside."""
        with open(path, "rb") as fh:
            data = fh.read()
        pos = 0
        good_end = 0
        while pos + _HEADER.size <= len(data):
            crc, length, seq, kind = _HEADER.unpack_from(data, pos)
            end = pos + _HEADER.size + length
            if length >= _MAX_RECORD or end > len(data):
                break  # torn tail: the append never completed, so it was never acknowledged
            payload = data[pos + _HEADER.size : end]
            if zlib.crc32(payload, zlib.crc32(struct.pack("<QB", seq, kind))) != crc or kind not in Kind._value2member_map_:
                self._quarantine(path, data[pos:end], seq)
            else:
                yield Record(seq, Kind(kind), payload, Ref(seq, Kind(kind), path, pos + _HEADER.size, length))
            pos = good_end = end
        if good_end < len(data):
            _log.warning("otel-inputs collect: cutting a torn record (%d bytes, never acknowledged) off %s",
                         len(data) - good_end, path)  # fmt: skip
            with open(path, "r+b") as fh:
                fh.truncate(good_end)
                os.fsync(fh.fileno())

    def _quarantine(self, path: Path, raw: bytes, seq: int) -> None:
        bad = self.directory / f"bad-{path.stem}-{seq}.rec"
        _log.error("otel-inputs collect: write-ahead record %d in %s is corrupt; moved to %s", seq, path, bad)
        bad.write_bytes(raw)


def _first_seq(path: Path) -> int:
    try:
        return int(path.stem.split("-", 1)[1])
    except (IndexError, ValueError):
        return 0


def _write_all(fd: int, data: bytes | bytearray | memoryview) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def fsync_dir(directory: Path) -> None:
    """fsync a directory, so the names just created or renamed in it survive a power cut."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


__all__ = ["Kind", "Record", "Ref", "WALBusy", "WALUnavailable", "WriteAheadLog", "wal_dir"]
