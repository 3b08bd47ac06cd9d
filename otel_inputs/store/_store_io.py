"""Filesystem chores of the artifact store that must stay off (or cheap on) the agent's thread.

fsyncs happen on one background thread; manifest files are pre-created there so the agent's commit
only fills and renames one; attempts that end are appended to a per-process log instead of
rewriting their manifests.
"""

from __future__ import annotations

import json
import os
import queue
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

def syncfs(path: Path) -> None:
    """Flush the filesystem holding ``path`` (Linux syncfs), falling back to a global sync."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
        try:
            if libc.syncfs(fd) == 0:
                return
        finally:
            os.close(fd)
    except (OSError, AttributeError):
        pass
    os.sync()


def fsync_path(path: Path) -> None:
    fsync_file(path)
    fsync_dir(path.parent)


def fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


_SYNC_WINDOW_S = 0.05


class _BackgroundSync:
    """fsyncs committed manifests off the agent's thread.

    A manifest is visible and crash-safe (atomic rename) the moment ``commit`` returns; making it
    survive a power cut costs two fsyncs, which on a busy disk take milliseconds, so they happen
    here, gathered over ``_SYNC_WINDOW_S``: every fsync forces a journal commit that stalls the
    agent thread's next rename, so one per window instead of one per attempt.  Other chores run
    at once.  The queue is bounded: when it is full the fsync is skipped and the filesystem's own
    writeback (seconds) is what makes the manifest durable.
    """

    def __init__(self, maxsize: int = 1024) -> None:
        self._queue: queue.Queue[Path | Callable[[], None]] = queue.Queue(maxsize)
        self._pid = -1
        self._lock = threading.Lock()
        self.skipped = 0

    def submit(self, path: Path | Callable[[], None]) -> bool:
        if self._pid != os.getpid():
            with self._lock:
                if self._pid != os.getpid():  # first use, or first use after fork
                    self._queue = queue.Queue(self._queue.maxsize)
                    threading.Thread(target=self._run, name="otel-inputs-fsync", daemon=True).start()
                    self._pid = os.getpid()
        try:
            self._queue.put_nowait(path)
            return True
        except queue.Full:
            self.skipped += 1
            return False

    def _run(self) -> None:
        q = self._queue
        pending: list[Path] = []
        deadline = 0.0
        while True:
            try:
                item = q.get(timeout=max(0.0, deadline - time.monotonic()) if pending else None)
            except queue.Empty:
                item = None
            if callable(item):
                try:
                    item()
                except Exception:  # noqa: BLE001 - a background chore must never kill the thread
                    pass
                finally:
                    q.task_done()
            elif item is not None:
                if not pending:
                    deadline = time.monotonic() + _SYNC_WINDOW_S
                pending.append(item)
            if pending and time.monotonic() >= deadline:
                self._sync(pending)
                for _ in pending:
                    q.task_done()
                pending = []

    @staticmethod
    def _sync(paths: list[Path]) -> None:
        dirs: set[Path] = set()
        for path in paths:
            try:
                fsync_file(path)
                dirs.add(path.parent)
            except OSError:
                pass  # replaced or removed since: nothing left to make durable
        for directory in dirs:
            fsync_dir(directory)

    def flush(self) -> None:
        if self._pid == os.getpid():
            self._queue.join()


_background_sync = _BackgroundSync()


_SPARE_PREFIX = ".spare-"


def spare_owner_alive(name: str) -> bool:
    """Whether ``name`` is a spare manifest file of a process still running on this host."""
    if not name.startswith(_SPARE_PREFIX):
        return False
    pid = name[len(_SPARE_PREFIX):].split("-", 1)[0]
    if not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except (ProcessLookupError, OverflowError):
        return False
    except PermissionError:
        return True
    return True


class _SpareFiles:
    """Empty temp files created ahead of time in one directory, off the agent's thread.

    Creating a file in the manifests directory costs about a millisecond on a journaling filesystem
    (the directory update), most of an attempt's budget on the agent's thread; filling an already
    open file and renaming it costs a tenth of that.  Spares belong to the process that made them
    (a forked child makes its own) and are named like any interrupted write (``.<name>.tmp``), so a
    crash leaves only what reconciliation already removes.
    """

    _KEEP = 2

    def __init__(self, directory: Path) -> None:
        self._dir = directory
        self._pid = os.getpid()
        self._files: list[tuple[Path, int]] = []
        self._lock = threading.Lock()
        self._refilling = False

    def take(self) -> tuple[Path, int] | None:
        """A spare (path, open fd) for this process, and a refill scheduled in the background."""
        with self._lock:
            if self._pid != os.getpid():  # forked: the parent's spares are the parent's
                self._pid, self._files = os.getpid(), []
            spare = self._files.pop() if self._files else None
            if not self._refilling:
                self._refilling = _background_sync.submit(self._refill)
        return spare

    def _refill(self) -> None:
        try:
            while True:
                with self._lock:
                    if self._pid != os.getpid() or len(self._files) >= self._KEEP:
                        return
                path = self._dir / f"{_SPARE_PREFIX}{os.getpid()}-{secrets.token_hex(6)}.tmp"
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
                with self._lock:
                    self._files.append((path, fd))
        except OSError:
            return  # store full or read-only: the inline path reports it on the next write
        finally:
            with self._lock:
                self._refilling = False


class EndedLog:
    """This process's append-only record of attempts that have ended, one JSON-quoted id per line.

    Marking an attempt terminal by rewriting its manifest costs a file creation, a rename and an
    fsync per attempt; appending one line to an open file costs one write.  The log is not fsynced:
    it only matters while its process lives (retention treats every attempt of a dead owner as
    terminal anyway), and a torn last line is skipped by readers.
    """

    def __init__(self, directory: Path) -> None:
        self._dir = directory
        self._pid = -1
        self._fd = -1
        self._lock = threading.Lock()

    def append(self, attempt_id: str) -> None:
        """Record that ``attempt_id`` ended; raises ``OSError`` when the log cannot be written."""
        line = (json.dumps(attempt_id, ensure_ascii=True) + "\n").encode("ascii")
        with self._lock:
            if self._pid != os.getpid():  # first use, or first use after fork: the parent's fd is the parent's
                self._dir.mkdir(exist_ok=True)
                name = f"{os.getpid()}-{secrets.token_hex(4)}.log"
                self._fd = os.open(self._dir / name, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
                self._pid = os.getpid()
            fd = self._fd
        if os.write(fd, line) != len(line):
            raise OSError("short write to the ended-attempts log")


def _ended_lines(directory: Path) -> Iterator[bytes]:
    """Every complete line of every process's ended log under ``directory``.

    A missing or unusable directory yields nothing, so attempts stay protected (the safe side).
    """
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return
    for entry in entries:
        if not entry.name.endswith(".log"):
            continue
        try:
            with open(entry.path, "rb") as fh:
                data = fh.read()
        except OSError:
            continue
        yield from data.split(b"\n")[:-1]  # the last piece is empty or a torn write


def read_ended(directory: Path) -> set[str]:
    """Every attempt id recorded as ended by any process's log under ``directory``."""
    ended: set[str] = set()
    for line in _ended_lines(directory):
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, str):
            ended.add(value)
    return ended


def read_ended_quoted(directory: Path) -> set[str]:
    """Like :func:`read_ended`, but each id in its one-line JSON form (as the log and the manifest
    index write it), so 100,000 ended attempts cost no JSON decoding."""
    ended: set[str] = set()
    for line in _ended_lines(directory):
        if b"\\" in line or not line.isascii():  # not in canonical form: re-encode it
            try:
                value = json.loads(line)
            except ValueError:
                continue
            if isinstance(value, str):
                ended.add(json.dumps(value, ensure_ascii=True))
        else:
            ended.add(line.decode("ascii"))
    return ended
