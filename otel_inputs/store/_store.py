"""The artifact store (docs/store.md): snapshot bytes as content-addressed objects plus the SQLite catalog
that says what they are; readback is only by (attempt id, input id), re-hashed against the recorded digest.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
import sqlite3
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, ClassVar

from otel_inputs.store._catalog import AttemptRecord, CatalogItem, Catalog, Role, chores, kept
from otel_inputs.store._changes import ItemChange, StoreChange, StoreListener, notify
from otel_inputs.store._errors import ReadbackError, StoreCleanupError, StoreError, StoreWriteError
from otel_inputs.store._objects import HEX64, IncompleteWrite, ObjectDB, write_all
from otel_inputs.types import ArtifactStatus, ItemState, PartName, PartPersistence, ReadbackOutcome

SNAPSHOT_REF_PREFIX = "sha256:"
REMOVE_CHUNK = 250  # objects moved aside, re-checked under the catalog's write lock and deleted at a time
_STATUSES = {s.value for s in ArtifactStatus}


def snapshot_ref_for(sha256: str) -> str:
    return SNAPSHOT_REF_PREFIX + sha256


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


class StagingFile:
    """A staged file open for writing: each :meth:`write` writes every byte or raises
    :class:`StoreWriteError` (the store's disk, not the source: a store gap)."""

    def __init__(self, fh: BinaryIO) -> None:
        self._fh = fh

    def write(self, data: bytes | memoryview) -> None:
        try:
            write_all(self._fh, data)
        except OSError as exc:
            raise StoreWriteError(f"cannot write capture staging: {exc.strerror or exc}") from exc

    def close(self) -> None:
        self._fh.close()

    def __enter__(self) -> StagingFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AttemptStaging:
    """One attempt's staging directory (created on first use); bytes land here before commit."""

    def __init__(self, store: ArtifactStore, path: Path) -> None:
        self.store = store
        self.path = path
        # digest -> (temp file, its expected size); None: already stored, only its age is refreshed
        self._blobs: dict[str, tuple[Path, int] | None] = {}
        self._closed = False
        self._created = False

    def open_temp(self) -> tuple[Path, StagingFile]:
        """Create a temp file for writing inside staging; a failure is a :class:`StoreWriteError`."""
        if not self._created:
            try:
                self.path.mkdir(mode=0o700, exist_ok=True)
            except OSError as exc:
                raise StoreWriteError(f"cannot create capture staging: {exc.strerror or exc}") from exc
            self._created = True
        tmp = self.path / f"tmp-{secrets.token_hex(8)}"
        try:
            return tmp, StagingFile(open(tmp, "xb", buffering=0))
        except OSError as exc:
            raise StoreWriteError(f"cannot write capture staging: {exc.strerror or exc}") from exc

    def put_bytes(self, data: bytes) -> StagedBlob:
        """Stage held bytes (a resolved prompt, an envelope); bytes already stored cost a stat."""
        digest = hashlib.sha256(data).hexdigest()
        if digest not in self._blobs:
            if self.store.has_object(digest):
                self._blobs[digest] = None
            else:
                tmp, fh = self.open_temp()
                with fh:
                    fh.write(data)
                self._blobs[digest] = (tmp, len(data))
        return StagedBlob(digest, len(data), snapshot_ref_for(digest))

    def adopt(self, tmp: Path, sha256: str, size_bytes: int) -> StagedBlob:
        """Take ownership of a temp file the caller wrote and hashed inside this staging dir."""
        if tmp.parent != self.path:
            raise StoreError("adopted file must live in the attempt's staging directory")
        if self._blobs.get(sha256) is not None:
            tmp.unlink(missing_ok=True)
        else:
            self._blobs[sha256] = (tmp, size_bytes)
        return StagedBlob(sha256, size_bytes, snapshot_ref_for(sha256))

    def reference_existing(self, digest: str) -> StagedBlob | None:
        """Register bytes already in the store (no copy needed); ``None`` if they are not there."""
        if digest in self._blobs or self.store.has_object(digest):
            self._blobs.setdefault(digest, None)
            return StagedBlob(digest, -1, snapshot_ref_for(digest))
        return None

    def discard(self, tmp: Path) -> None:
        tmp.unlink(missing_ok=True)

    def commit(self, record: AttemptRecord) -> None:
        """Install staged bytes as objects first, so a committed record never names bytes that are not there,
        then record the attempt (:meth:`Catalog.commit_attempt` re-checks each claimed object), then clean up."""
        if self._closed:
            raise StoreError("staging already closed")
        objects = self.store.objects
        sizes: list[tuple[str, int]] = []
        try:
            for digest, staged in self._blobs.items():
                if staged is None:
                    if not objects.freshen(digest):  # taken by gc since we looked
                        raise StoreWriteError(f"stored object {digest} vanished before commit")
                    sizes.append((digest, objects.size(digest)))
                else:
                    sizes.append((digest, objects.put(digest, *staged)))
        except IncompleteWrite as exc:
            raise StoreWriteError(str(exc)) from exc
        except OSError as exc:
            raise StoreWriteError(f"cannot install snapshot bytes: {exc.strerror or exc}") from exc
        intact, changes = self.store.catalog.commit_attempt(record, sizes, objects.has,
                                                            want_changes=bool(self.store.listeners))
        self._closed = True
        self._remove_dir()
        if not intact:
            raise StoreWriteError("deduplicated snapshot bytes were removed during commit")
        if self.store.listeners:  # new objects only: deduplicated ones were announced by their first commit
            self.store.notify(StoreChange(tuple(changes), tuple(d for d, s in self._blobs.items() if s is not None)))

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
    """A local directory holding snapshot bytes and the catalog that says what they are."""

    # Called with every store opened in this process: the public face registers the bucket's here, so
    # the core never imports it (docs/architecture.md, "Parts").
    on_open: ClassVar[list[Callable[[ArtifactStore], None]]] = []

    def __init__(self, root: str | os.PathLike[str], *, create: bool = True, objects_url: str | None = None,
                 objects_options: dict | None = None) -> None:
        """``objects_url``/``objects_options``: a bucket for copies of the bytes (docs/objects.md;
        default ``OTEL_INPUTS_OBJECTS_URL``), attached by :mod:`otel_inputs.store.bucket` through
        :attr:`listeners` and :attr:`read_elsewhere`."""
        self.root = Path(root)
        if create:
            self.root.mkdir(parents=True, exist_ok=True)
        self.objects = ObjectDB(self.root, create=create)
        self.objects_dir, self.staging_dir = self.objects.objects_dir, self.objects.staging_dir
        self.catalog = Catalog(self.root, create=create)
        self.objects_url, self.objects_options = objects_url, dict(objects_options or {})
        self.listeners: list[StoreListener] = []
        # where bytes whose local copy is gone may still be read (unverified: the caller re-hashes them)
        self.read_elsewhere: Callable[[ArtifactStore, str, int | None], bytes | None] | None = None
        for hook in self.on_open:
            hook(self)

    def notify(self, change: StoreChange) -> None:
        """Tell the listeners what a committed transaction changed (docs/store.md)."""
        notify(self.listeners, change)

    def holds_records(self) -> bool:
        """True when a store was ever written here (its catalog exists)."""
        return self.catalog.exists()

    # -- writing ---------------------------------------------------------------------------
    def begin_attempt(self, attempt_id: str) -> AttemptStaging:
        """The attempt's staging (raises :class:`StoreWriteError` if the store is unusable)."""
        if not os.path.isdir(self.staging_dir):
            # No path in the message: it can end up in span attributes that leave the machine.
            raise StoreWriteError("artifact store is not usable (its staging directory is missing)")
        key = hashlib.sha256(attempt_id.encode("utf-8", "surrogatepass")).hexdigest()  # no caller's id becomes a path
        return AttemptStaging(self, self.staging_dir / f"{key[:32]}.{os.getpid()}.{secrets.token_hex(4)}")

    def mark_terminal_later(self, attempt_id: str) -> None:
        """The attempt has ended (recorded off the caller's thread, see :class:`_catalog._Chores`)."""
        chores.submit(self.catalog, attempt_id)

    def mark_terminal(self, attempt_id: str) -> None:
        """The attempt has ended: its snapshots are no longer protected from retention."""
        self.catalog.mark_ended([attempt_id])

    def flush(self) -> None:
        """Wait until every ended mark submitted so far is recorded."""
        chores.flush()

    # -- reading ---------------------------------------------------------------------------
    def object_path(self, sha256: str) -> Path:
        if not HEX64.fullmatch(sha256):
            raise ReadbackError(ReadbackOutcome.NOT_FOUND, "not a snapshot digest")
        return self.objects.path(sha256)

    def has_object(self, sha256: str) -> bool:
        return self.objects.has(sha256)

    def attempt(self, attempt_id: str) -> AttemptRecord | None:
        """The committed record of an attempt, or ``None`` when the store has none."""
        found = self.attempts("WHERE attempt_id = ?", [attempt_id])
        return found[0] if found else None

    def attempts(self, where: str = "", args: Iterable[object] = ()) -> list[AttemptRecord]:
        """Every committed attempt (or those matching ``where``, SQL over ``attempts``)."""
        try:
            with self.catalog.read() as con:
                return self.catalog.attempts(con, where, list(args))
        except FileNotFoundError:
            return []

    def read_input(self, attempt_id: str, input_id: str, *, max_bytes: int | None = None) -> VerifiedSnapshot:
        """Return an input's snapshot bytes after verifying them against the recorded SHA-256."""
        record = self.attempt(attempt_id)
        if record is None:
            raise ReadbackError(ReadbackOutcome.NOT_FOUND, "no committed record for this attempt")
        item = next((i for i in record.items if i.input_id == input_id), None)
        if item is None:
            raise ReadbackError(ReadbackOutcome.NOT_FOUND, "unknown input id")
        check_retained(item)
        return self.read_item_bytes(item, max_bytes=max_bytes)

    def read_item_bytes(self, item: CatalogItem, *, max_bytes: int | None = None) -> VerifiedSnapshot:
        """The bytes of a catalog item, named by its recorded digest and verified against it."""
        digest, size = item.sha256, item.size_bytes
        if not isinstance(digest, str) or not HEX64.fullmatch(digest):
            raise ReadbackError(ReadbackOutcome.INTEGRITY_MISMATCH, "recorded digest is malformed")
        if size is not None and (not isinstance(size, int) or size < 0):
            raise ReadbackError(ReadbackOutcome.INTEGRITY_MISMATCH, "recorded size is malformed")
        if max_bytes is not None and size is not None and size > max_bytes:
            raise ReadbackError(ReadbackOutcome.TOO_LARGE, f"snapshot is {size} bytes, over the {max_bytes} byte limit")
        try:
            with self.objects.open(digest) as fh:
                data = fh.read(-1 if max_bytes is None else max_bytes + 1)
        except FileNotFoundError as exc:  # the local copy is gone: a copy elsewhere, verified below like any
            data = None
            if self.read_elsewhere is not None:
                data = self.read_elsewhere(self, digest, None if max_bytes is None else max_bytes + 1)
            if data is None:
                raise ReadbackError(ReadbackOutcome.NOT_FOUND, "snapshot bytes are missing from the store") from exc
        except OSError as exc:
            raise ReadbackError(ReadbackOutcome.NOT_FOUND, f"snapshot unreadable: {exc.strerror}") from exc
        if max_bytes is not None and len(data) > max_bytes:
            raise ReadbackError(ReadbackOutcome.TOO_LARGE, f"snapshot is over the {max_bytes} byte limit")
        if hashlib.sha256(data).hexdigest() != digest or (size is not None and size != len(data)):
            raise ReadbackError(ReadbackOutcome.INTEGRITY_MISMATCH, "snapshot bytes do not match the recorded SHA-256")
        return VerifiedSnapshot(item.attempt_id, item.input_id, data, digest)

    # -- exchange parts (otel_inputs._parts): receipts are catalog rows, bytes are objects -------------
    def put_part(self, receipt: Mapping[str, Any] | Callable[[], Mapping[str, Any]], data: bytes | None) -> None:
        """Record one exchange part's receipt, and its bytes as an object when ``data`` is given, durably
        (the bytes are fsynced before the ``synchronous=FULL`` commit that names them); raises on failure.
        ``receipt`` may be a function, called once the bytes are durable (so its times say when)."""
        digest, new = None, False
        if data is not None:
            digest = hashlib.sha256(data).hexdigest()
            if not self.objects.freshen(digest):
                tmp = self.staging_dir / f"part-{secrets.token_hex(8)}"
                with open(tmp, "xb", buffering=0) as fh:
                    write_all(fh, data)
                    os.fsync(fh.fileno())
                self.objects.put(digest, tmp, len(data))
                self.objects.sync()
                new = True
        receipt = receipt() if callable(receipt) else receipt
        if data is not None and (receipt.get("sha256") != digest or receipt.get("size_bytes") != len(data)):
            raise StoreError("part receipt does not describe the bytes given")
        attempt_id, part = receipt["attemptId"], _part_name(receipt["part"])
        with self.catalog.write(Role.MAINT) as con:
            # no ``objects`` row: part bytes stay outside the retention budget, as before m004 (docs/store.md)
            if digest is not None and not self.objects.has(digest):  # taken by a removal since
                raise StoreWriteError(f"stored object {digest} vanished before commit")
            con.execute("INSERT OR REPLACE INTO parts (attempt_id, part, run_id, receipt, sha256) VALUES (?, ?, ?, ?, ?)",
                        [attempt_id, part, receipt.get("runId"), json.dumps(dict(receipt), sort_keys=True), digest])
            seq = self.catalog.next_seq(con)
        if self.listeners:
            state = ItemState.CAPTURED if digest else ItemState.NOT_CAPTURED
            why = None if digest else str(receipt.get("persistence_reason") or receipt.get("persistence"))
            self.notify(StoreChange((ItemChange(attempt_id, f"part:{part}", digest, state, why, seq, time.time_ns(),
                                                receipt.get("runId")),), (digest,) if new else ()))

    def part_receipt(self, attempt_id: str, part_name: PartName | str) -> dict[str, Any]:
        """The recorded receipt of one exchange part; :class:`ReadbackError` otherwise."""
        part = _part_name(part_name)
        try:
            with self.catalog.read() as con:
                row = con.execute("SELECT receipt FROM parts WHERE attempt_id = ? AND part = ?", [attempt_id, part]).fetchone()
        except (FileNotFoundError, sqlite3.Error) as exc:
            raise ReadbackError(ReadbackOutcome.NOT_FOUND, f"part receipts unreadable ({exc})") from exc
        if row is None:
            raise ReadbackError(ReadbackOutcome.NOT_FOUND, "no stored receipt for this part")
        try:
            body = json.loads(row[0])
        except (TypeError, ValueError) as exc:
            raise ReadbackError(ReadbackOutcome.INTEGRITY_MISMATCH, "part receipt is not valid JSON") from exc
        if not isinstance(body, dict) or body.get("attemptId") != attempt_id or body.get("part") != part:
            raise ReadbackError(ReadbackOutcome.INTEGRITY_MISMATCH,
                                "part receipt does not belong to the requested attempt and part")
        return body

    def read_part(self, attempt_id: str, part_name: PartName | str) -> bytes:
        """The stored bytes of one part, returned only after their size and SHA-256 match the receipt."""
        receipt = self.part_receipt(attempt_id, part_name)
        if receipt.get("persistence") != PartPersistence.STORED.value:
            raise ReadbackError(ReadbackOutcome.NOT_FOUND,
                                f"part was not stored (persistence {receipt.get('persistence')!r})")
        digest, size = receipt.get("sha256"), receipt.get("size_bytes")
        if not isinstance(size, int) or isinstance(size, bool):
            raise ReadbackError(ReadbackOutcome.INTEGRITY_MISMATCH, "part receipt has a malformed digest or size")
        item = CatalogItem(attempt_id, f"part:{receipt['part']}", None, sha256=digest, size_bytes=size)
        try:
            return self.read_item_bytes(item).data
        except ReadbackError as exc:
            if exc.outcome is ReadbackOutcome.NOT_FOUND:
                raise ReadbackError(ReadbackOutcome.NOT_FOUND, "part bytes are missing from the store") from exc
            raise

    def is_purged(self, attempt_id: str, input_id: str | None = None) -> bool:
        """Whether a purge covers this attempt (or this one input of it)."""
        try:
            with self.catalog.read() as con:
                return con.execute("SELECT 1 FROM purged WHERE attempt_id = ? AND input_id IN ('', ?)",
                                   [attempt_id, input_id or ""]).fetchone() is not None
        except FileNotFoundError:
            return False

    # -- housekeeping ------------------------------------------------------------------------
    def remove_objects(self, digests: Iterable[str]) -> dict[str, int]:
        """Delete objects no available item (or kept part) names, re-checked under the catalog's write lock
        once moved aside (:meth:`ObjectDB.delete`); {digest: allocated bytes} of what went."""
        def keep(moved: set[str]) -> set[str]:
            # Not fsynced: a row a power cut brings back for deleted bytes only inflates the totals
            # until reconciliation drops it; it never makes bytes readable.
            with self.catalog.write(Role.MAINT, durable=False) as con:
                refs = {r[0] for r in con.execute(f"SELECT j.value FROM json_each(?) j WHERE {kept('j.value')}",
                                                  [json.dumps(sorted(moved))])}
                con.executemany("DELETE FROM objects WHERE sha256 = ?", [(d,) for d in moved - refs])
            return refs

        gone: dict[str, int] = {}
        listed = list(digests)
        for k in range(0, len(listed), REMOVE_CHUNK):  # short lock holds: agent commits slip in between
            gone.update(self.objects.delete(listed[k:k + REMOVE_CHUNK], keep))
        self.notify(StoreChange(freed_objects=tuple(gone), removal=True))  # copies elsewhere follow the same rule
        return gone


def _part_name(part_name: PartName | str) -> str:
    try:
        return PartName(part_name).value
    except ValueError:
        raise ReadbackError(ReadbackOutcome.NOT_FOUND, "unknown part name") from None


def check_retained(item: CatalogItem) -> None:
    """Raise :class:`ReadbackError` unless the item's snapshot is still retained (not purged/evicted)."""
    status = item.artifact_status
    if status not in _STATUSES:
        raise ReadbackError(ReadbackOutcome.INTEGRITY_MISMATCH, "catalog row has an unknown artifact status")
    if item.status_reason == "purged":
        raise ReadbackError(ReadbackOutcome.RETENTION_EXPIRED, "snapshot purged")
    if status == ArtifactStatus.EVICTED:
        raise ReadbackError(ReadbackOutcome.RETENTION_EXPIRED, f"snapshot evicted ({item.status_reason or 'evicted'})")
    if status != ArtifactStatus.AVAILABLE:
        raise ReadbackError(ReadbackOutcome.NOT_FOUND, "no snapshot was captured for this input")
