"""Snapshot bytes as content-addressed files, the store's bytes-only layer (it knows no catalog), shaped
like dvc-objects' ``ObjectDB``: ``objects/<sha256>``, ``objects/.gc-<sha256>`` (moved aside by a removal
not finished yet) and ``staging/<key>.<pid>.<rand>/`` (a capture in progress); docs/store.md has the layout.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import BinaryIO

HEX64 = re.compile(r"[0-9a-f]{64}")
GC_PREFIX = ".gc-"
UNLINK_THREADS = 8  # freeing a file's blocks waits on the disk (~0.2 ms here); unlinks overlap well


def write_all(fh: BinaryIO, data: bytes | memoryview) -> None:
    """Write every byte of ``data`` to an unbuffered file: a raw write may write less than asked
    (a nearly full disk, a file-size limit) and says so only by its return value."""
    view = memoryview(data)
    while view:
        n = fh.write(view)
        if not n:
            raise OSError(errno.ENOSPC, "short write")
        view = view[n:]


def allocated(st: os.stat_result) -> int:
    """Disk space a file takes (blocks), which is what a disk budget is about."""
    return getattr(st, "st_blocks", 0) * 512 or st.st_size


class IncompleteWrite(OSError):
    """A staged file is not the size its writer recorded: it must never be named by its hash."""


class ObjectDB:
    """Content-addressed files under ``<root>/objects``; staging under ``<root>/staging``."""

    def __init__(self, root: Path, *, create: bool = True) -> None:
        self.objects_dir = root / "objects"
        self.staging_dir = root / "staging"
        self._prefix = os.path.join(self.objects_dir, "")
        if create:
            for d in (self.objects_dir, self.staging_dir):
                d.mkdir(parents=True, exist_ok=True)

    def path(self, digest: str) -> Path:
        return self.objects_dir / digest

    def has(self, digest: str) -> bool:
        """Whether bytes for ``digest`` are there (string paths: this runs several times per attempt)."""
        return bool(HEX64.fullmatch(digest)) and os.path.isfile(self._prefix + digest)

    def put(self, digest: str, tmp: Path, size: int) -> int:
        """Install a staged file as object ``digest`` by rename, after checking it is ``size`` bytes
        (a short write never becomes an object); if the object exists the copy is dropped and the
        object's age refreshed.  Returns the object's allocated bytes."""
        st = os.stat(tmp)
        if st.st_size != size:
            tmp.unlink(missing_ok=True)
            raise IncompleteWrite(errno.EIO, f"staged snapshot {digest} has {st.st_size} of {size} bytes")
        if self.freshen(digest):
            tmp.unlink(missing_ok=True)
            return allocated(os.stat(self._prefix + digest))
        os.chmod(tmp, 0o444)
        os.replace(tmp, self._prefix + digest)
        return allocated(st)

    def sync(self) -> None:
        """fsync ``objects/`` itself, so the names of the objects just installed survive a power cut."""
        fd = os.open(self.objects_dir, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def freshen(self, digest: str) -> bool:
        """Refresh an existing object's age, so orphan reconciliation cannot take it before the
        catalog names it; False if it is not there."""
        try:
            os.utime(self._prefix + digest, follow_symlinks=False)
            return os.path.isfile(self._prefix + digest)
        except FileNotFoundError:
            return False
        except OSError:
            return self.has(digest)

    def open(self, digest: str) -> BinaryIO:
        """The object for reading, never through a symlink (``FileNotFoundError`` when absent)."""
        try:
            fd = os.open(self._prefix + digest, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise FileNotFoundError(errno.ENOENT, "object is a symbolic link") from exc
            raise
        return os.fdopen(fd, "rb")

    def size(self, digest: str) -> int:
        try:
            return allocated(os.lstat(self._prefix + digest))
        except OSError:
            return 0

    def iterate(self) -> Iterator[os.DirEntry[str]]:
        """Every entry of ``objects/`` (named by its digest), graveyard entries (``.gc-<digest>``) included."""
        try:
            yield from list(os.scandir(self.objects_dir))
        except FileNotFoundError:
            return

    def delete(self, digests: Iterable[str], keep: Callable[[set[str]], set[str]]) -> dict[str, int]:
        """Remove objects; returns {digest: allocated bytes} of what went.

        Each object is first moved aside (``.gc-<digest>``); then ``keep(moved)`` is asked which of
        them must stay after all (a capture that deduplicated against one committed meanwhile), and
        those are put back.  A capture checks its deduplicated objects inside its catalog
        transaction, so either it sees an object gone, or ``keep`` sees its commit.
        """
        moved: dict[str, tuple[str, int]] = {}
        for digest in digests:
            if not HEX64.fullmatch(digest):
                continue
            aside = os.path.join(self.objects_dir, GC_PREFIX + digest)
            try:
                size = allocated(os.lstat(self._prefix + digest))
                os.rename(self._prefix + digest, aside)
            except OSError:
                continue
            moved[digest] = (aside, size)
        if not moved:
            return {}
        for digest in keep(set(moved)) & moved.keys():
            aside, _ = moved.pop(digest)
            try:
                os.replace(aside, self._prefix + digest)
            except FileNotFoundError:
                continue

        def unlink_all(names: list[str]) -> list[str]:
            gone = []
            for digest in names:
                try:
                    os.unlink(moved[digest][0])
                except FileNotFoundError:
                    continue
                gone.append(digest)
            return gone

        names = list(moved)
        if len(names) > 64:
            with ThreadPoolExecutor(UNLINK_THREADS, thread_name_prefix="otel-inputs-gc") as pool:
                gone = [d for part in pool.map(unlink_all, [names[k::UNLINK_THREADS] for k in range(UNLINK_THREADS)])
                        for d in part]
        else:
            gone = unlink_all(names)
        return {digest: moved[digest][1] for digest in gone}

    def restore_or_drop_graveyard(self, referenced: Callable[[str], bool]) -> int:
        """Finish removals a crash interrupted: put back what is referenced, delete the rest."""
        removed = 0
        for entry in self.iterate():
            if not entry.name.startswith(GC_PREFIX):
                continue
            digest = entry.name.removeprefix(GC_PREFIX)
            try:
                if referenced(digest):
                    os.replace(entry.path, self._prefix + digest)
                else:
                    os.unlink(entry.path)
                    removed += 1
            except FileNotFoundError:
                continue
        return removed

    def remove_old_staging(self, min_age_s: float, now: float) -> int:
        """Staging left by crashed captures, once it is older than ``min_age_s``."""
        removed = 0
        try:
            entries = list(os.scandir(self.staging_dir))
        except FileNotFoundError:
            return 0
        for entry in entries:
            try:
                if now - entry.stat(follow_symlinks=False).st_mtime < min_age_s:
                    continue
                if entry.is_dir(follow_symlinks=False):
                    shutil.rmtree(entry.path)
                else:
                    os.unlink(entry.path)
                removed += 1
            except FileNotFoundError:
                continue
        return removed

    def staging_bytes(self) -> int:
        total = 0
        for dirpath, _dirs, files in os.walk(self.staging_dir):
            for f in files:
                try:
                    total += allocated(os.lstat(os.path.join(dirpath, f)))
                except FileNotFoundError:
                    pass
        return total
