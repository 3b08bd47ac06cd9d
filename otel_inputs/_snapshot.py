"""Bounded, no-follow snapshotting of context-handoff trees into an attempt's staging directory.

Traversal uses directory file descriptors and ``O_NOFOLLOW`` opens relative to them, so a
directory swapped for a symlink mid-walk is refused rather than followed.  FIFOs, sockets and
devices are never opened.  Each file is copied once, hashed while copying, and its identity
(device, inode, size, mtime) is re-checked afterwards; a changed file is discarded.
"""

from __future__ import annotations

import errno
import hashlib
import logging
import os
import stat
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from otel_inputs import names
from otel_inputs._media import SNIFF_BYTES, Utf8Validator, classify
from otel_inputs.text import safe_text
from otel_inputs.store import AttemptStaging, StoreWriteError
from otel_inputs.types import Bound, CaptureStatus, PreviewKind

MAX_FILES = 100
MAX_DEPTH = 8
MAX_FILE_BYTES = 10 * 1024 * 1024
MAX_TOTAL_BYTES = 50 * 1024 * 1024
MAX_SECONDS = 5.0
_CHUNK = 1 << 20
_SMALL_FILE = 256 * 1024
_READ_SLACK = 64 * 1024  # room to see EOF (or growth) in the same read
_log = logging.getLogger("otel_inputs")
STORE_BUDGET_DETAIL = "snapshot disk budget exhausted (protected snapshots fill the store budget)"

_OPEN_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0)
_OPEN_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


@dataclass(frozen=True)
class CaptureLimits:
    """The seed-000 capture bounds; tests override them with tiny values."""

    max_files: int = MAX_FILES
    max_depth: int = MAX_DEPTH
    max_file_bytes: int = MAX_FILE_BYTES
    max_total_bytes: int = MAX_TOTAL_BYTES
    max_seconds: float = MAX_SECONDS

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> CaptureLimits:
        """The default bounds, with the wall-time bound from ``OTEL_INPUTS_CAPTURE_MAX_SECONDS`` when set
        (a slow or busy disk may need more than the default; docs/configuration.md)."""
        env = os.environ if env is None else env
        raw = (env.get(names.ENV_CAPTURE_MAX_SECONDS) or "").strip()
        if not raw:
            return cls()
        try:
            seconds = float(raw)
            if not 0 < seconds < float("inf"):
                raise ValueError(raw)
        except ValueError:
            _log.warning("otel_inputs: ignoring %s=%r (want a positive number of seconds); using %g",
                         names.ENV_CAPTURE_MAX_SECONDS, raw, MAX_SECONDS)
            return cls()
        return cls(max_seconds=seconds)

    def describe(self, bound: Bound) -> str:
        value = {
            Bound.FILE_COUNT: f"at most {self.max_files} files",
            Bound.DEPTH: f"at most {self.max_depth} directory levels below the context root",
            Bound.FILE_BYTES: f"at most {self.max_file_bytes} bytes per file",
            Bound.TOTAL_BYTES: f"at most {self.max_total_bytes} snapshot bytes per attempt",
            Bound.WALL_TIME: f"at most {self.max_seconds:g} s of capture time",
        }[bound]
        return f"bound {bound.value} tripped ({value})"


@dataclass
class Budget:
    """Shared across all sources of one attempt: files seen, bytes staged, the time window."""

    limits: CaptureLimits
    clock: Callable[[], float]
    started: float
    files: int = 0
    total_bytes: int = 0
    # Called after each copied chunk with the entry's relative parts: a seam that lets tests change
    # a real file mid-copy deterministically.  Never set in production.
    on_chunk: Callable[[tuple[str, ...]], None] | None = None
    # Bytes the store's disk budget still allows (None: no budget); a file that does not fit is
    # limit_exceeded and the walk goes on, so the packet still lists it.
    store_left: int | None = None
    budget_refusals: int = 0
    roots: int = 0  # declared context roots opened so far

    def fits_store(self, size: int) -> bool:
        if self.store_left is None or size <= self.store_left:
            return True
        self.budget_refusals += 1
        return False

    def charge_store(self, size: int) -> None:
        if self.store_left is not None:
            self.store_left -= size

    def time_left(self) -> bool:
        return self.clock() - self.started <= self.limits.max_seconds


@dataclass(frozen=True)
class FileOutcome:
    """What happened to one declared file or tree entry."""

    rel_parts: tuple[str, ...]
    status: CaptureStatus
    detail: str | None = None
    sha256: str | None = None
    size_bytes: int | None = None
    media_type: str | None = None
    preview_kind: PreviewKind = PreviewKind.NONE
    tmp: Path | None = None
    staged: bool = False  # bytes are in staging (tmp) or already in the store


@dataclass(frozen=True)
class Incomplete:
    """Enumeration stopped at a bound; nothing after this point was looked at."""

    bound: Bound


def _kind_name(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "named pipe (FIFO)"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    if stat.S_ISLNK(mode):
        return "symbolic link"
    return "special file"


def copy_regular_file(
    dir_fd: int | None,
    name: str,
    staging: AttemptStaging | None,
    limits: CaptureLimits,
    budget: Budget,
    rel_parts: tuple[str, ...],
) -> FileOutcome | Incomplete:
    """Copy one regular file into staging with hash, size and identity re-check; never follow a link."""
    try:
        st0 = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return FileOutcome(rel_parts, CaptureStatus.MISSING, "vanished before capture")
    except PermissionError:
        return FileOutcome(rel_parts, CaptureStatus.UNREADABLE, "permission denied")
    except OSError as exc:
        return FileOutcome(rel_parts, CaptureStatus.UNREADABLE, f"cannot stat: {exc.strerror}")
    if stat.S_ISLNK(st0.st_mode):
        return FileOutcome(rel_parts, CaptureStatus.UNREADABLE, "symbolic link; not followed")
    if not stat.S_ISREG(st0.st_mode):
        return FileOutcome(rel_parts, CaptureStatus.UNREADABLE, f"{_kind_name(st0.st_mode)}; not opened")
    if st0.st_size > limits.max_file_bytes:
        return FileOutcome(
            rel_parts, CaptureStatus.LIMIT_EXCEEDED, limits.describe(Bound.FILE_BYTES), size_bytes=None
        )
    if budget.total_bytes + st0.st_size > limits.max_total_bytes:
        return Incomplete(Bound.TOTAL_BYTES)
    if staging is not None and not budget.fits_store(st0.st_size):
        return FileOutcome(rel_parts, CaptureStatus.LIMIT_EXCEEDED, STORE_BUDGET_DETAIL)
    if staging is None:  # metadata only: identity known from lstat, no bytes read
        return FileOutcome(rel_parts, CaptureStatus.NOT_APPLICABLE, "metadata only: content not captured")
    try:
        fd = os.open(name, _OPEN_FILE, dir_fd=dir_fd)
    except FileNotFoundError:
        return FileOutcome(rel_parts, CaptureStatus.MISSING, "vanished before capture")
    except PermissionError:
        return FileOutcome(rel_parts, CaptureStatus.UNREADABLE, "permission denied")
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return FileOutcome(rel_parts, CaptureStatus.UNREADABLE, "replaced by a symbolic link; not followed")
        return FileOutcome(rel_parts, CaptureStatus.UNREADABLE, f"cannot open: {exc.strerror}")
    tmp: Path | None = None
    try:
        st1 = os.fstat(fd)
        if not stat.S_ISREG(st1.st_mode):
            return FileOutcome(rel_parts, CaptureStatus.UNREADABLE, f"{_kind_name(st1.st_mode)}; not read")
        if (st1.st_dev, st1.st_ino) != (st0.st_dev, st0.st_ino):
            return FileOutcome(rel_parts, CaptureStatus.CHANGED_DURING_CAPTURE, "replaced before it was opened")
        digest = hashlib.sha256()
        utf8 = Utf8Validator()
        head = b""
        copied = 0
        cap = limits.max_file_bytes + 1
        # Sized to the file: a zero-filled 1 MiB buffer per 4 KiB file costs more than reading it.
        buf = bytearray(min(_CHUNK, st1.st_size + _READ_SLACK))
        view = memoryview(buf)
        # Small files are hashed in memory first: when the store already holds them (an unchanged
        # file on a later turn) no temp file is created at all.
        small: list[bytes] | None = [] if st1.st_size <= _SMALL_FILE else None
        out = None
        if small is None:
            tmp, out = staging.open_temp()
        try:
            while copied < cap:
                n = os.readv(fd, [view[: min(_CHUNK, cap - copied)]])
                if n == 0:
                    break
                chunk = view[:n]
                digest.update(chunk)
                if small is not None:
                    small.append(bytes(chunk))
                    if copied + n > _SMALL_FILE:  # grew while we read: switch to a temp file
                        tmp, out = staging.open_temp()
                        out.write(b"".join(small))
                        small = None
                else:
                    out.write(chunk)
                utf8.feed(chunk)
                if len(head) < SNIFF_BYTES:
                    head += bytes(chunk[: SNIFF_BYTES - len(head)])
                copied += n
                if budget.on_chunk is not None:
                    budget.on_chunk(rel_parts)
        finally:
            if out is not None:
                out.close()
        utf8.feed(b"", final=True)
        if copied > limits.max_file_bytes:
            if tmp is not None:
                staging.discard(tmp)
            return FileOutcome(rel_parts, CaptureStatus.LIMIT_EXCEEDED, "grew past the per-file bound during capture")
        st2 = os.fstat(fd)
        try:
            st3 = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            if tmp is not None:
                staging.discard(tmp)
            return FileOutcome(rel_parts, CaptureStatus.CHANGED_DURING_CAPTURE, "deleted during capture")
        identity = (st1.st_dev, st1.st_ino, st1.st_size, st1.st_mtime_ns)
        if (
            identity != (st2.st_dev, st2.st_ino, st2.st_size, st2.st_mtime_ns)
            or (st3.st_dev, st3.st_ino) != (st1.st_dev, st1.st_ino)
            or copied != st2.st_size
        ):
            if tmp is not None:
                staging.discard(tmp)
            return FileOutcome(rel_parts, CaptureStatus.CHANGED_DURING_CAPTURE, "changed while it was being copied")
        if budget.total_bytes + copied > limits.max_total_bytes:
            if tmp is not None:
                staging.discard(tmp)
            return Incomplete(Bound.TOTAL_BYTES)
        budget.total_bytes += copied
        budget.charge_store(copied)
        hexdigest = digest.hexdigest()
        if small is not None and staging.reference_existing(hexdigest) is None:
            tmp, out = staging.open_temp()
            with out:
                out.write(b"".join(small))
        media, preview = classify(head, is_utf8=utf8.valid, size=copied)
        return FileOutcome(
            rel_parts,
            CaptureStatus.CAPTURED,
            None,
            hexdigest,
            copied,
            media,
            preview,
            tmp,
            staged=True,
        )
    except OSError as exc:
        if tmp is not None:
            staging.discard(tmp)
        return FileOutcome(rel_parts, CaptureStatus.UNREADABLE, f"read failed: {exc.strerror}")
    except StoreWriteError:
        if tmp is not None:
            staging.discard(tmp)
        raise
    finally:
        os.close(fd)


def walk_context_root(
    root: str | os.PathLike[str],
    staging: AttemptStaging | None,
    limits: CaptureLimits,
    budget: Budget,
) -> Iterator[FileOutcome | Incomplete]:
    """Yield every entry below ``root`` in component-wise sorted order, stopping at the first bound.

    Sorting compares path components as bytes, so the order is the same on every run and machine.
    """
    budget.roots += 1
    if budget.roots > limits.max_files:  # a declared root is a declared entry: bounded like files
        yield Incomplete(Bound.FILE_COUNT)
        return
    if not budget.time_left():
        yield Incomplete(Bound.WALL_TIME)
        return
    path = os.fspath(root)
    not_a_dir = FileOutcome((), CaptureStatus.UNREADABLE, "context root is not a directory (symlinks are not followed)")
    try:
        root_fd = os.open(path, _OPEN_DIR)
    except FileNotFoundError:
        yield FileOutcome((), CaptureStatus.MISSING, "context root does not exist")
        return
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            yield not_a_dir
        else:
            yield FileOutcome((), CaptureStatus.UNREADABLE, f"context root cannot be opened: {exc.strerror}")
        return
    try:
        # O_NOFOLLOW only guards the last component as spelled: "link/" and "link/." resolve the
        # link first.  The root must be the very directory its normalised spelling names, unlinked.
        try:
            named = os.lstat(os.path.normpath(os.path.abspath(path)))
            opened = os.fstat(root_fd)
        except OSError:
            named = None
        if named is None or stat.S_ISLNK(named.st_mode) or (named.st_dev, named.st_ino) != (opened.st_dev, opened.st_ino):
            yield not_a_dir
            return
        yield from _walk_dir(root_fd, (), 1, staging, limits, budget)
    finally:
        os.close(root_fd)


def _walk_dir(
    dir_fd: int,
    prefix: tuple[str, ...],
    depth: int,
    staging: AttemptStaging | None,
    limits: CaptureLimits,
    budget: Budget,
) -> Iterator[FileOutcome | Incomplete]:
    names: list[str] = []
    try:
        with os.scandir(dir_fd) as it:
            for entry in it:
                names.append(entry.name)
                if len(names) % 1024 == 0 and not budget.time_left():
                    yield Incomplete(Bound.WALL_TIME)
                    return
    except OSError as exc:
        yield FileOutcome(prefix, CaptureStatus.UNREADABLE, f"directory cannot be listed: {exc.strerror}")
        return
    if names and depth > limits.max_depth:
        yield Incomplete(Bound.DEPTH)
        return
    names.sort(key=os.fsencode)
    for name in names:
        if not budget.time_left():
            yield Incomplete(Bound.WALL_TIME)
            return
        rel = prefix + (name,)
        try:
            st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            st = None
        except OSError as exc:  # e.g. a directory that can be listed but not entered (no search bit)
            budget.files += 1
            if budget.files > limits.max_files:
                yield Incomplete(Bound.FILE_COUNT)
                return
            detail = "permission denied" if exc.errno in (errno.EACCES, errno.EPERM) else f"cannot stat: {exc.strerror}"
            yield FileOutcome(rel, CaptureStatus.UNREADABLE, detail)
            continue
        if st is not None and stat.S_ISDIR(st.st_mode):
            try:
                sub_fd = os.open(name, _OPEN_DIR, dir_fd=dir_fd)
            except OSError as exc:
                budget.files += 1
                if budget.files > limits.max_files:
                    yield Incomplete(Bound.FILE_COUNT)
                    return
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    yield FileOutcome(rel, CaptureStatus.UNREADABLE, "directory replaced by a symbolic link; not followed")
                elif exc.errno == errno.ENOENT:
                    yield FileOutcome(rel, CaptureStatus.MISSING, "directory vanished during capture")
                else:
                    yield FileOutcome(rel, CaptureStatus.UNREADABLE, f"directory cannot be opened: {exc.strerror}")
                continue
            try:
                for outcome in _walk_dir(sub_fd, rel, depth + 1, staging, limits, budget):
                    yield outcome
                    if isinstance(outcome, Incomplete):
                        return
            finally:
                os.close(sub_fd)
            continue
        budget.files += 1
        if budget.files > limits.max_files:
            yield Incomplete(Bound.FILE_COUNT)
            return
        if st is None:
            yield FileOutcome(rel, CaptureStatus.MISSING, "vanished before capture")
            continue
        outcome = copy_regular_file(dir_fd, name, staging, limits, budget, rel)
        yield outcome
        if isinstance(outcome, Incomplete):
            return
