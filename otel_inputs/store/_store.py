"""The local artifact store: content-addressed snapshot bytes plus a durable manifest per attempt.

Layout under the store root::

    objects/<sha256 hex>             snapshot bytes, named by their SHA-256 (stored once)
    staging/<key>.<pid>.<rand>/      one attempt's capture in progress (same filesystem)
    manifests/<key>.json             the committed, durable record of one attempt
    ended/<pid>-<rand>.log           per process: ids of attempts that ended since their manifest was written
    evictions/<time>-<pid>-<rand>.log  per retention pass: the manifests it evicted, applied by every reader
                                     (see :mod:`otel_inputs.store._store_evictions`)
    index/manifests.idx              derived: what retention needs from every manifest, validated on use
                                     against the manifests directory (see :mod:`otel_inputs.store._store_index`)
    store.lock, gc.lock              manifest read-modify-write; one retention pass at a time

``<key>`` is the SHA-256 of the attempt id, so no caller-supplied id ever becomes a path.
Readback is only by (attempt id, input id): the object is named by the hash recorded in the
manifest, and the bytes are re-hashed before they are returned.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
import re
import secrets
import shutil
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from otel_inputs.store._store_evictions import journal_for
from otel_inputs.store._store_index import identity
from otel_inputs.store._store_index_sweep import (
    MTIME_SLACK_NS,
    digests_in_manifests_since,
    reconcile,
    referenced_digests,
    remove_objects,
)
from otel_inputs.store._store_io import EndedLog, _background_sync, _SpareFiles, fsync_path, read_ended, syncfs

from otel_inputs.store._errors import ReadbackError, StoreCleanupError, StoreError, StoreWriteError

MANIFEST_VERSION = 1
SNAPSHOT_REF_PREFIX = "sha256:"
DEFAULT_RECONCILE_AGE_S = 3600.0

_HEX64 = re.compile(r"^[0-9a-f]{64}$")


def available_digests(manifest: dict[str, Any]) -> Iterator[str]:
    """The SHA-256 of every item a manifest still claims available: what keeps object bytes alive."""
    for item in manifest.get("items", ()) or ():
        if item.get("artifact_status") == "available" and isinstance(item.get("sha256"), str):
            yield item["sha256"]


def attempt_key(attempt_id: str) -> str:
    return hashlib.sha256(attempt_id.encode("utf-8", "surrogatepass")).hexdigest()


def snapshot_ref_for(sha256: str) -> str:
    return SNAPSHOT_REF_PREFIX + sha256


def sha256_from_ref(ref: str | None) -> str | None:
    if not ref or not ref.startswith(SNAPSHOT_REF_PREFIX):
        return None
    digest = ref[len(SNAPSHOT_REF_PREFIX) :]
    return digest if _HEX64.match(digest) else None


def write_all(fh: BinaryIO, data: bytes | memoryview) -> None:
    """Write every byte of ``data`` to an unbuffered file: a raw write may write less than asked
    (a nearly full disk, a file-size limit) and says so only by its return value."""
    view = memoryview(data)
    while view:
        n = fh.write(view)
        if not n:
            raise OSError(errno.ENOSPC, "short write")
        view = view[n:]


@dataclass(frozen=True)
class StagedBlob:
    sha256: str
    size_bytes: int
    snapshot_ref: str


@dataclass(frozen=True)
class VerifiedSnapshot:
    """Bytes read back through the store, verified against the recorded SHA-256."""

    attempt_id: str
    input_id: str
    data: bytes
    sha256: str
    item: dict[str, Any]


class AttemptStaging:
    """One attempt's preallocated staging directory; bytes land here before commit."""

    def __init__(self, store: ArtifactStore, attempt_id: str, path: Path) -> None:
        self.store = store
        self.attempt_id = attempt_id
        self.path = path
        # digest -> (temp file, its expected size); None: already stored, only its age is refreshed
        self._blobs: dict[str, tuple[Path, int] | None] = {}
        self._closed = False
        self._created = False

    def temp_path(self) -> Path:
        """A fresh temp file name inside staging (created on first use), for a caller that copies itself."""
        if not self._created:
            try:
                self.path.mkdir(mode=0o700)
            except FileExistsError:
                pass
            except OSError as exc:
                raise StoreWriteError(f"cannot create capture staging: {exc.strerror or exc}") from exc
            self._created = True
        return self.path / f"tmp-{secrets.token_hex(8)}"

    def open_temp(self) -> tuple[Path, BinaryIO]:
        """Create a temp file for writing; a failure is a :class:`StoreWriteError`."""
        tmp = self.temp_path()
        try:
            return tmp, open(tmp, "xb", buffering=0)
        except OSError as exc:
            raise StoreWriteError(f"cannot write capture staging: {exc.strerror or exc}") from exc

    def has_object(self, digest: str) -> bool:
        return digest in self._blobs or self.store.has_object(digest)

    def put_bytes(self, data: bytes) -> StagedBlob:
        """Stage held bytes (a resolved prompt, an envelope) without rereading any source.

        Bytes already in the store are not written again: unchanged inputs across turns cost a stat.
        """
        digest = hashlib.sha256(data).hexdigest()
        if digest not in self._blobs:
            if self.store.has_object(digest):
                self._blobs[digest] = None
            else:
                tmp, fh = self.open_temp()
                try:
                    with fh:
                        write_all(fh, data)
                except OSError as exc:
                    raise StoreWriteError(f"cannot write capture staging: {exc.strerror or exc}") from exc
                self._blobs[digest] = (tmp, len(data))
        return StagedBlob(digest, len(data), snapshot_ref_for(digest))

    def adopt(self, tmp: Path, sha256: str, size_bytes: int) -> StagedBlob:
        """Take ownership of a temp file the caller wrote and hashed inside this staging dir."""
        if tmp.parent != self.path:
            raise StoreError("adopted file must live in the attempt's staging directory")
        if sha256 in self._blobs and self._blobs[sha256] is not None:
            tmp.unlink(missing_ok=True)
        else:
            self._blobs[sha256] = (tmp, size_bytes)
        return StagedBlob(sha256, size_bytes, snapshot_ref_for(sha256))

    def reference_existing(self, digest: str) -> StagedBlob | None:
        """Register bytes already in the store (no copy needed); ``None`` if they are not there."""
        if digest in self._blobs:
            return StagedBlob(digest, -1, snapshot_ref_for(digest))
        if self.store.has_object(digest):
            self._blobs[digest] = None
            return StagedBlob(digest, -1, snapshot_ref_for(digest))
        return None

    def discard(self, tmp: Path) -> None:
        tmp.unlink(missing_ok=True)

    def commit(self, manifest: dict[str, Any]) -> Path:
        """Move staged bytes into objects/, then write the manifest atomically, then clean up.

        Objects go first so a committed manifest never names bytes that are not there.
        """
        if self._closed:
            raise StoreError("staging already closed")
        for digest, staged in self._blobs.items():
            self.store._install_object(digest, staged)
        path = self.store._write_manifest(self.attempt_id, manifest, spare=True)
        self._closed = True
        self._remove_dir()
        # A concurrent gc may have moved an object aside before our manifest was visible to it; it
        # puts back what manifests written since its scan reference, so if an object is missing
        # now, gc decided before our manifest existed: the manifest must not claim it.
        gone = {d for d in self._blobs if not self.store.has_object(d)}
        if gone:
            def downgrade(body: dict[str, Any]) -> bool:
                for item in body.get("items", ()):
                    if item.get("sha256") in gone and item.get("artifact_status") == "available":
                        item["artifact_status"] = "never_captured"
                        item["status_reason"] = "store_race"
                return True

            self.store.modify_manifest(self.attempt_id, downgrade)
            raise StoreWriteError("deduplicated snapshot bytes were removed during commit")
        return path

    def abort(self) -> None:
        """Remove everything staged; raise :class:`StoreCleanupError` naming the orphan if that fails."""
        if self._closed:
            return
        self._closed = True
        self._remove_dir()

    def _remove_dir(self) -> None:
        if not self._created:
            return
        try:
            shutil.rmtree(self.path)
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise StoreCleanupError(str(self.path), exc) from exc


class ArtifactStore:
    """A local directory holding snapshot bytes and one durable manifest per attempt."""

    def __init__(self, root: str | os.PathLike[str], *, create: bool = True, sync_in_background: bool = True) -> None:
        self.root = Path(root)
        self.sync_in_background = sync_in_background
        self.objects_dir = self.root / "objects"
        self.staging_dir = self.root / "staging"
        self.manifests_dir = self.root / "manifests"
        self.tombstones_dir = self.root / "tombstones"
        self.ended_dir = self.root / "ended"  # created on first use: older stores lack it
        self._objects_prefix = os.path.join(self.objects_dir, "")
        self._staging_str, self._manifests_str = str(self.staging_dir), str(self.manifests_dir)
        if create:
            for d in (self.objects_dir, self.staging_dir, self.manifests_dir, self.tombstones_dir):
                d.mkdir(parents=True, exist_ok=True)
        self._tombstone_cache: tuple[int, frozenset[str], frozenset[tuple[str, str]]] | None = None
        self._spare_manifests = _SpareFiles(self.manifests_dir)
        self._ended_log = EndedLog(self.ended_dir)
        self.evictions = journal_for(self.root)

    @contextmanager
    def lock(self) -> Iterator[None]:
        """Exclusive store lock for read-modify-write of manifests (gc, purge, terminal marking).

        New captures never take it: they write new files and re-check deduplicated bytes instead.
        """
        fd = os.open(self.root / "store.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def modify_manifest(self, attempt_id: str, change: Callable[[dict[str, Any]], bool], *,
                        spare: bool = False) -> bool:
        """Apply ``change`` to a manifest under the store lock; it returns whether to write."""
        with self.lock():
            body = self.manifest(attempt_id)
            if body is None or not change(body):
                return False
            self._write_manifest(attempt_id, body, spare=spare)
            return True

    def mark_terminal_later(self, attempt_id: str) -> None:
        """Mark terminal cheaply: one line appended to this process's ended log (see :class:`EndedLog`).

        If the log cannot be written the manifest is rewritten off the caller's thread instead.
        """
        try:
            self._ended_log.append(attempt_id)
        except OSError:
            if not _background_sync.submit(lambda: self.mark_terminal(attempt_id)):
                pass  # queue full: the owner-liveness check in retention treats a dead owner's attempt as terminal

    def ended_attempts(self) -> set[str]:
        """Attempt ids that ended according to the processes' ended logs (their manifests may still say running)."""
        return read_ended(self.ended_dir)

    def mark_terminal(self, attempt_id: str) -> None:
        """The attempt has ended: its snapshots are no longer protected from retention."""

        def change(body: dict[str, Any]) -> bool:
            if body.get("state") == "terminal":
                return False
            body["state"] = "terminal"
            body["ended_at_ns"] = time.time_ns()
            return True

        self.modify_manifest(attempt_id, change)

    # -- writing ---------------------------------------------------------------------------
    def begin_attempt(self, attempt_id: str) -> AttemptStaging:
        """Preallocate the attempt's staging directory (raises ``OSError`` if the store is unusable)."""
        key = attempt_key(attempt_id)
        if not os.path.isdir(self._staging_str) or not os.path.isdir(self._manifests_str):
            # No path in the message: it can end up in span attributes that leave the machine.
            raise StoreWriteError("artifact store is not usable (its staging or manifests directory is missing)")
        path = self.staging_dir / f"{key[:32]}.{os.getpid()}.{secrets.token_hex(4)}"
        return AttemptStaging(self, attempt_id, path)

    def object_path(self, sha256: str) -> Path:
        if not _HEX64.match(sha256):
            raise ReadbackError("not_found", "not a snapshot digest")
        return self.objects_dir / sha256

    def has_object(self, sha256: str) -> bool:
        """Whether the store holds bytes for ``sha256`` (string paths: this runs several times per attempt)."""
        return bool(_HEX64.match(sha256)) and os.path.isfile(self._objects_prefix + sha256)

    def _install_object(self, digest: str, staged: tuple[Path, int] | None) -> None:
        final = self.object_path(digest)
        tmp = None if staged is None else staged[0]
        if tmp is None or self.has_object(digest):
            # Already stored: refresh its age so reconciliation cannot take it before our manifest lands.
            try:
                os.utime(self._objects_prefix + digest, follow_symlinks=False)
            except FileNotFoundError as exc:
                if tmp is None:  # taken by gc since we looked: the manifest must not claim it
                    raise StoreWriteError(f"stored object {digest} vanished before commit") from exc
            except OSError:
                pass
            if tmp is not None:
                tmp.unlink(missing_ok=True)
            return
        if os.stat(tmp).st_size != staged[1]:  # never name a short file by the full content's hash
            tmp.unlink(missing_ok=True)
            raise StoreWriteError(f"staged snapshot {digest} is incomplete (short write)")
        os.chmod(tmp, 0o444)
        os.replace(tmp, final)

    def modify_manifests(self, attempt_ids: Iterable[str], change: Callable[[dict[str, Any]], bool], *,
                         sync: bool = True, written: dict[str, tuple[str, dict[str, Any]]] | None = None) -> list[str]:
        """Batch form of :meth:`modify_manifest`: one lock, one filesystem sync for the whole batch.

        Returns the ids whose manifests were rewritten; they are durable when this returns unless
        ``sync`` is false (the caller then syncs before relying on them).  ``written`` receives
        {file name: (identity, body)} of each rewrite, taken from the written file after its rename.
        """
        changed: list[str] = []
        with self.lock():
            entries = self.evictions.entries()
            dir_fd = os.open(self.manifests_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            try:  # names relative to the directory: no path building or lookup per manifest
                for attempt_id in attempt_ids:
                    name = f"{attempt_key(attempt_id)}.json"
                    try:
                        with open(name, "rb", opener=lambda n, flags: os.open(n, flags, dir_fd=dir_fd)) as fh:
                            body = json.loads(fh.read())
                    except (OSError, ValueError):
                        continue
                    if not isinstance(body, dict) or body.get("attempt_id") != attempt_id:
                        continue
                    folded = self.evictions.apply(body, entries)  # a rewrite carries the journal's marks
                    if not change(body) and not folded:
                        continue
                    ident = self._rewrite(dir_fd, name, attempt_id, body)
                    if written is not None:
                        written[name] = (ident, body)
                    changed.append(attempt_id)
            finally:
                os.close(dir_fd)
            if changed and sync:
                syncfs(self.manifests_dir)  # one flush for the batch instead of two fsyncs per manifest
        return changed

    def _encode(self, attempt_id: str, manifest: dict[str, Any]) -> bytes:
        manifest.setdefault("manifest_version", MANIFEST_VERSION)
        manifest["attempt_id"] = attempt_id
        manifest.setdefault("committed_at_ns", time.time_ns())
        return json.dumps(manifest, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode(
            "utf-8", "surrogatepass")

    def _rewrite(self, dir_fd: int, name: str, attempt_id: str, body: dict[str, Any]) -> str:
        """Replace manifest ``name`` with ``body`` (not synced); see :meth:`_replace`."""
        return self._replace(dir_fd, name, self._encode(attempt_id, body))

    @staticmethod
    def _replace(dir_fd: int, name: str, data: bytes) -> str:
        """Write ``data`` to ``name`` in ``dir_fd`` through a temp file and a rename (removed on failure);
        the identity of our file after the rename (fstat of our own descriptor, so no later writer's
        file can be mistaken for it)."""
        tmp = f".{name}.{secrets.token_hex(4)}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666, dir_fd=dir_fd)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
            return identity(os.fstat(fd))
        except BaseException:
            try:
                os.unlink(tmp, dir_fd=dir_fd)
            except OSError:
                pass
            raise
        finally:
            os.close(fd)

    def _write_manifest(self, attempt_id: str, manifest: dict[str, Any], *, sync: bool = True,
                        spare: bool = False) -> Path:
        data = self._encode(attempt_id, dict(manifest))
        final = self.manifest_path(attempt_id)
        if not (spare and self._replace_spare(data, final)):
            dir_fd = os.open(self.manifests_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            try:
                self._replace(dir_fd, final.name, data)
            finally:
                os.close(dir_fd)
        if not sync:
            return final
        if self.sync_in_background:
            _background_sync.submit(final)
        else:
            fsync_path(final)
        return final

    def _replace_spare(self, data: bytes, final: Path) -> bool:
        """Write ``data`` through a spare file and rename it to ``final``; False if no spare served."""
        taken = self._spare_manifests.take()
        if taken is None:
            return False
        path, fd = taken
        try:
            with open(fd, "wb") as fh:  # closes fd
                fh.write(data)
            os.replace(path, final)
            return True
        except OSError:  # full disk, or a reconciler took the spare: the inline path decides
            try:
                os.unlink(path)
            except OSError:
                pass
            return False

    def flush(self) -> None:
        """Wait until every manifest committed so far is fsynced."""
        _background_sync.flush()

    def update_manifest(self, attempt_id: str, manifest: dict[str, Any]) -> Path:
        """Rewrite an existing manifest atomically (retention status changes)."""
        return self._write_manifest(attempt_id, manifest)

    # -- reading ---------------------------------------------------------------------------
    def manifest_path(self, attempt_id: str) -> Path:
        return self.manifests_dir / f"{attempt_key(attempt_id)}.json"

    def manifest(self, attempt_id: str) -> dict[str, Any] | None:
        """The committed manifest of an attempt, or ``None`` when the store has none."""
        try:
            raw = self.manifest_path(attempt_id).read_bytes()
        except FileNotFoundError:
            return None
        body = json.loads(raw)
        if body.get("attempt_id") != attempt_id:
            raise StoreError("manifest does not belong to the requested attempt")
        self.evictions.apply(body)
        return body

    def iter_manifests(self, names: Iterable[str] | None = None) -> Iterator[dict[str, Any]]:
        """Every committed manifest (or those of these file names, in order); unreadable ones yield
        a dict with an ``error`` key, a name that is gone yields nothing."""
        if names is None:
            try:
                names = sorted(e.name for e in os.scandir(self.manifests_dir))
            except FileNotFoundError:
                return
        evictions = self.evictions.entries()
        for name in names:
            if not name.endswith(".json") or name.startswith(".") or os.sep in name:
                continue
            try:
                with open(os.path.join(self._manifests_str, name), "rb") as fh:
                    body = json.loads(fh.read())
                if not isinstance(body, dict) or "attempt_id" not in body:
                    raise ValueError("manifest lacks attempt_id")
                self.evictions.apply(body, evictions)
                yield body
            except FileNotFoundError:
                continue
            except (OSError, ValueError) as exc:
                yield {"error": f"unreadable manifest {name}: {exc}", "file": name}

    def read_input(self, attempt_id: str, input_id: str, *, max_bytes: int | None = None) -> VerifiedSnapshot:
        """Return an input's snapshot bytes after verifying them against the recorded SHA-256."""
        try:
            manifest = self.manifest(attempt_id)
        except (OSError, ValueError, StoreError) as exc:
            raise ReadbackError("not_found", f"manifest unreadable ({type(exc).__name__})") from exc
        if manifest is None:
            raise ReadbackError("not_found", "no committed record for this attempt")
        item = next((i for i in manifest.get("items", ()) if i.get("input_id") == input_id), None)
        if item is None:
            raise ReadbackError("not_found", "unknown input id")
        self.check_retained(attempt_id, item)
        return self.read_item_bytes(attempt_id, item, max_bytes=max_bytes)

    def check_retained(self, attempt_id: str, item: dict[str, Any]) -> None:
        """Raise :class:`ReadbackError` unless the item's snapshot is still retained (not purged/evicted)."""
        if self.is_purged(attempt_id, item.get("input_id")) or item.get("status_reason") == "purged":
            raise ReadbackError("retention_expired", "snapshot purged")
        status = item.get("artifact_status")
        if status == "evicted":
            reason = item.get("status_reason") or "evicted"
            raise ReadbackError("retention_expired", f"snapshot evicted ({reason})")
        if status != "available":
            raise ReadbackError("not_found", "no snapshot was captured for this input")

    def read_item_bytes(self, attempt_id: str, item: dict[str, Any], *,
                        max_bytes: int | None = None) -> VerifiedSnapshot:
        """The bytes of a manifest item, named by its recorded digest and verified against it."""
        digest = item.get("sha256")
        if not isinstance(digest, str) or not _HEX64.match(digest):
            raise ReadbackError("integrity_mismatch", "recorded digest is malformed")
        size = item.get("size_bytes")
        if max_bytes is not None and isinstance(size, int) and size > max_bytes:
            raise ReadbackError("too_large", f"snapshot is {size} bytes, over the {max_bytes} byte limit")
        path = self.object_path(digest)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError as exc:
            if exc.errno in (errno.ENOENT, errno.ELOOP):
                raise ReadbackError("not_found", "snapshot bytes are missing from the store") from exc
            raise ReadbackError("not_found", f"snapshot unreadable: {exc.strerror}") from exc
        with os.fdopen(fd, "rb") as fh:
            limit = (max_bytes + 1) if max_bytes is not None else -1
            data = fh.read(limit)
        if max_bytes is not None and len(data) > max_bytes:
            raise ReadbackError("too_large", f"snapshot is over the {max_bytes} byte limit")
        if hashlib.sha256(data).hexdigest() != digest:
            raise ReadbackError("integrity_mismatch", "snapshot bytes do not match the recorded SHA-256")
        return VerifiedSnapshot(attempt_id, item.get("input_id"), data, digest, item)

    def is_purged(self, attempt_id: str, input_id: str | None = None) -> bool:
        """Whether a tombstone covers this attempt (or this one input of it)."""
        attempts, inputs = self._tombstones()
        return attempt_id in attempts or (input_id is not None and (attempt_id, input_id) in inputs)

    def _tombstones(self) -> tuple[frozenset[str], frozenset[tuple[str, str]]]:
        try:
            stamp = hash(tuple(sorted(os.listdir(self.tombstones_dir))))
        except FileNotFoundError:
            return frozenset(), frozenset()
        cached = self._tombstone_cache
        if cached is not None and cached[0] == stamp:
            return cached[1], cached[2]
        attempts: set[str] = set()
        inputs: set[tuple[str, str]] = set()
        for entry in sorted(os.scandir(self.tombstones_dir), key=lambda e: e.name):
            if not entry.name.endswith(".json"):
                continue
            try:
                with open(entry.path, "rb") as fh:
                    body = json.loads(fh.read())
            except (OSError, ValueError):
                continue  # a torn tombstone was never acted on: purge writes it before any change
            attempts.update(body.get("attempts", ()))
            inputs.update((a, i) for a, i in body.get("inputs", ()))
        self._tombstone_cache = (stamp, frozenset(attempts), frozenset(inputs))
        return self._tombstone_cache[1], self._tombstone_cache[2]

    def remove_objects(self, digests: Iterable[str], scan_started_ns: int) -> tuple[int, int]:
        """Delete objects that a scan started at ``scan_started_ns`` found unreferenced; (count, bytes).

        Manifests written since the scan (by mtime) are re-read after the objects are moved aside;
        see :mod:`otel_inputs.store._store_index_sweep` for the protocol.
        """
        since = scan_started_ns - MTIME_SLACK_NS
        deleted = remove_objects(self, digests, lambda: digests_in_manifests_since(self, since))
        return len(deleted), sum(deleted.values())

    # -- housekeeping ------------------------------------------------------------------------
    def referenced_digests(self) -> set[str]:
        return referenced_digests(self)

    def reconcile(self, *, min_age_s: float = DEFAULT_RECONCILE_AGE_S, now: float | None = None) -> dict[str, int]:
        """Remove staging and object bytes older than ``min_age_s`` that no committed manifest owns."""
        return reconcile(self, min_age_s, time.time() if now is None else now)
