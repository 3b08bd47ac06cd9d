"""A store's bucket: the background uploader that copies committed objects there, reads that fall
back to it, and the sweep that deletes what no available item references (docs/objects.md).

It subscribes to the store's change-listener seam (:mod:`otel_inputs.store._changes`) and is
attached only when a bucket is configured (or recorded by an earlier upload): :func:`attach`, as
opentelemetry-util-genai loads its ``_upload`` hook only when one is configured.  The catalog stays
the authority: ``remote_objects`` (migration ``m002``) records per object ``queued``, ``uploaded``,
``failed`` (with the reason) or ``deleting``; no row means the bytes are local only.  Only
``uploaded`` counts as stored in the bucket.

* Upload: the agent's thread only puts digests on a bounded queue (:class:`Uploader`); when it is
  full the upload is skipped and recorded ``failed`` / ``queue_full``.  One background thread
  records the batch ``queued``, re-hashes the local bytes, uploads and verifies them (see
  :meth:`RemoteObjects.put`) and records the outcome.  A process that dies first leaves ``queued``
  rows, or none; the next uploader (and ``otel-inputs store upload``) resumes both.
* Read: when the local copy is gone the store reads the bucket; the caller re-hashes the bytes
  against the recorded SHA-256 and refuses a mismatch, so a corrupted bucket object is never shown.
* Delete: after retention or purge removed local bytes, :meth:`BucketLink.sweep` deletes bucket
  objects that no available item references (the local rule), re-checked under the catalog's write
  lock before they are marked ``deleting``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import queue
import threading
import time
import weakref
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from enum import Enum
from typing import Any

from otel_inputs import names
from otel_inputs.store._catalog import Role, kept
from otel_inputs.store._changes import ItemChange, StoreChange
from otel_inputs.store._errors import ReadbackError
from otel_inputs.store._objects import HEX64
from otel_inputs.store._store import ArtifactStore
from otel_inputs.store.bucket._remote import RemoteObjects, reason
from otel_inputs.types import ItemState, ReadbackOutcome

_log = logging.getLogger(__name__)

DEFAULT_QUEUE_MAX = 1024  # objects waiting for upload; past it a commit's uploads are skipped (a gap)
BATCH = 64  # objects recorded queued (and then done) per catalog transaction
SKIPPED_MAX = 100_000  # skipped digests held for their queue_full row (memory stays bounded)
GATHER_S = 0.05  # a short queue waits this long before its batch starts
CHECK_CHUNK = 500  # digests re-checked per statement
UPLOAD_THREADS = 4  # uploads in flight at once
META_URL = "objects_url"  # the bucket the uploader used, so readers and sweeps find it without the env
QUEUE_FULL = "queue_full"


class RemoteState(Enum):
    QUEUED = "queued"
    UPLOADED = "uploaded"
    FAILED = "failed"
    DELETING = "deleting"


@dataclass(frozen=True)
class Placement:
    """Where one object's bytes are: locally, in the bucket, both; only ``uploaded`` counts there."""

    local: bool
    remote: RemoteState | None = None
    reason: str | None = None

    @property
    def in_bucket(self) -> bool:
        return self.remote is RemoteState.UPLOADED

    def describe(self) -> str:
        if self.in_bucket:
            return "local and bucket" if self.local else "bucket only"
        if not self.local:
            return "missing"
        if self.remote is RemoteState.QUEUED:
            return "local only (upload queued)"
        if self.remote is RemoteState.FAILED:
            return f"local only (upload failed: {self.reason})"
        return "local only"


def _upsert(con, digests: Iterable[str], state: RemoteState, reason: str | None, now: int) -> None:
    """Record a state for objects not already uploaded (an upload is never undone by a later queue)."""
    con.executemany(
        "INSERT INTO remote_objects (sha256, state, reason, tries, updated_at_ns) VALUES (?, ?, ?, 0, ?) "
        "ON CONFLICT (sha256) DO UPDATE SET state = excluded.state, reason = excluded.reason, "
        "updated_at_ns = excluded.updated_at_ns WHERE state != 'uploaded'",
        [(d, state.value, reason, now) for d in digests])


def _object_change(digest: str, why: str | None, seq: int, at_ns: int) -> ItemChange:
    """An object's upload outcome for the store's listeners: ``uploaded``, or ``upload_failed`` with the
    kind of failure only (its message may name the bucket's infrastructure)."""
    if why is None:
        return ItemChange("", digest, digest, ItemState.UPLOADED, None, seq, at_ns)
    return ItemChange("", digest, digest, ItemState.UPLOAD_FAILED, why.split(":", 1)[0], seq, at_ns)


class Uploader:
    """One background thread copying committed objects to the bucket, fed by a bounded queue."""

    def __init__(self, link: BucketLink, maxsize: int) -> None:
        self.link = link
        self.remote: RemoteObjects | None = None  # opened on the thread: importing s3fs takes a while
        self._queue: queue.Queue[str] = queue.Queue(maxsize)
        self._cond = threading.Condition()
        self._skipped: set[str] = set()
        self._outstanding = 0
        self._resume = False
        self._thread = threading.Thread(target=self._run, name="otel-inputs-upload", daemon=True)
        self._thread.start()
        self.resume()  # a new process first finishes what earlier ones left

    def submit(self, digests: Iterable[str]) -> int:
        """Queue uploads without ever waiting; returns how many were skipped (queue full)."""
        skipped = 0
        for digest in digests:
            with self._cond:
                self._outstanding += 1
            try:
                self._queue.put_nowait(digest)
            except queue.Full:
                skipped += 1
                with self._cond:
                    if len(self._skipped) < SKIPPED_MAX:
                        self._skipped.add(digest)
                    else:  # no row at all: still local only, and `store upload` finds it
                        self._outstanding -= 1
        return skipped

    def resume(self) -> None:
        """Ask the thread to pick up uploads left queued (or never queued) by earlier processes."""
        with self._cond:
            self._resume = True
            self._outstanding += 1
        try:
            self._queue.put_nowait("")
        except queue.Full:  # the thread is busy anyway and resumes before its next batch
            with self._cond:
                self._outstanding -= 1

    def flush(self, timeout: float = 30.0) -> bool:
        """Wait until everything submitted so far has an outcome recorded."""
        with self._cond:
            return self._cond.wait_for(lambda: self._outstanding <= 0, timeout)

    def _run(self) -> None:
        self.remote = self.link.remote(recorded=False)  # uploads go only where this process was told to
        while True:
            batch = [self._queue.get()]
            if self._queue.qsize() < BATCH - 1:
                # Let the attempt that just committed finish on the agent's thread before this one
                # competes for the interpreter; the batch grows meanwhile.
                time.sleep(GATHER_S)
            while len(batch) < BATCH:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            with self._cond:
                resume, self._resume = self._resume, False
                skipped, self._skipped = self._skipped, set()
            try:
                if self.remote is None:  # unusable (logged once): every object stays local only
                    continue
                self._record_skipped(skipped)
                self._upload(list(dict.fromkeys((self.link.pending() if resume else []) + [d for d in batch if d])))
            except Exception as exc:  # noqa: BLE001 - a background chore must never kill the thread
                _log.warning("otel_inputs: snapshot upload pass failed: %s", exc)
            finally:
                with self._cond:
                    self._outstanding -= len(batch) + len(skipped)
                    self._cond.notify_all()

    def _record_skipped(self, skipped: set[str]) -> None:
        if skipped:
            why, now = f"{QUEUE_FULL}: upload queue full, upload skipped", time.time_ns()
            with self.link.store.catalog.write(Role.MAINT, durable=False) as con:
                _upsert(con, skipped, RemoteState.FAILED, why, now)
                seq = self.link.store.catalog.next_seq(con)
            self.link.store.notify(StoreChange(tuple(_object_change(d, why, seq, now) for d in sorted(skipped))))

    def _upload(self, digests: list[str]) -> None:
        assert self.remote is not None
        for k in range(0, len(digests), BATCH):
            self.link.upload(self.remote, digests[k:k + BATCH])


class BucketLink:
    """A store's bucket: resolved on first use, its uploader, reads that fall back to it, the sweep.

    The URL is the one given to the store, else ``OTEL_INPUTS_OBJECTS_URL``; reads and sweeps
    also follow the URL the catalog recorded (a viewer or purge run without the variable still
    reaches the bucket the bytes went to).  Credentials and endpoints come from fsspec's own
    configuration (``FSSPEC_S3``, ``AWS_*``) or ``options``.
    """

    def __init__(self, store: ArtifactStore, url: str | None = None, options: Mapping[str, Any] | None = None,
                 queue_max: int | None = None) -> None:
        self.store = store
        self._url = url
        self._options = dict(options or {})
        self._queue_max = queue_max
        self._lock = threading.Lock()
        self._remotes: dict[str, RemoteObjects] = {}
        self._uploader: Uploader | None = None
        self._failed_url: str | None = None  # a URL fsspec could not open: said once, not per commit
        _links.add(self)

    def _after_fork_in_child(self) -> None:
        """The parent's uploader thread and lock do not exist here: the child starts its own."""
        self._lock = threading.Lock()
        self._uploader = None
        self._remotes = {}

    # -- configuration -----------------------------------------------------------------------
    def configured_url(self) -> str | None:
        return self._url or os.environ.get(names.ENV_OBJECTS_URL) or None

    def recorded_url(self) -> str | None:
        try:
            with self.store.catalog.read() as con:
                row = con.execute("SELECT value FROM meta WHERE key = ?", [META_URL]).fetchone()
        except (FileNotFoundError, OSError):
            return None
        except Exception:  # noqa: BLE001 - a damaged catalog has no bucket to offer
            return None
        return row[0] if row and isinstance(row[0], str) else None

    def url(self, *, recorded: bool = True) -> str | None:
        """The bucket's URL: the configured one, else (``recorded``) the one the catalog recorded."""
        return self.configured_url() or (self.recorded_url() if recorded else None)

    def remote(self, *, recorded: bool = True) -> RemoteObjects | None:
        """The bucket (``None`` when none is configured or it cannot be opened; the reason is logged)."""
        url = self.url(recorded=recorded)
        if url is None:
            return None
        found = self._remotes.get(url)
        if found is not None:
            return found
        with self._lock:
            if url not in self._remotes:
                try:
                    self._remotes[url] = RemoteObjects(url, self._options)
                except Exception as exc:  # noqa: BLE001 - a bad URL is a recorded gap, never a crash
                    if self._failed_url != url:
                        _log.warning("otel_inputs: object storage %s unusable: %s", url, reason(exc))
                        self._failed_url = url
                    return None
        return self._remotes[url]

    def uploader(self) -> Uploader | None:
        up = self._uploader
        if up is not None:
            return up
        if self.configured_url() is None:
            return None
        with self._lock:
            if self._uploader is None:
                self._uploader = Uploader(self, self._queue_size())
            return self._uploader

    def _queue_size(self) -> int:
        if self._queue_max is not None:
            return self._queue_max
        try:
            return max(1, int(os.environ.get(names.ENV_OBJECTS_QUEUE) or DEFAULT_QUEUE_MAX))
        except ValueError:
            return DEFAULT_QUEUE_MAX

    # -- the store's listener: called on the thread that changed the store, never waits ----------------
    def store_changed(self, change: StoreChange) -> None:
        if change.new_objects:
            self.committed(change.new_objects)
        if change.removal:
            self.sweep()  # the bucket's copies follow the same references as the local bytes

    # -- the agent's side: never waits ---------------------------------------------------------
    def committed(self, digests: Iterable[str]) -> None:
        """Objects just committed: queue their upload (called on the agent's thread)."""
        if self._uploader is None and self.configured_url() is None:
            return
        try:
            up = self.uploader()
            if up is not None:
                up.submit(digests)
        except Exception as exc:  # noqa: BLE001 - the upload is a background matter
            _log.warning("otel_inputs: snapshot upload not queued: %s", exc)

    def flush(self, timeout: float = 30.0) -> bool:
        """Wait until every upload submitted by this process has its outcome recorded."""
        up = self._uploader
        return True if up is None else up.flush(timeout)

    # -- the uploader thread's work --------------------------------------------------------------
    def pending(self, *, failed: bool = False) -> list[str]:
        """Referenced objects not yet in the bucket: rows left ``queued`` (``failed`` too when
        asked) and objects committed without a row (their process died before queuing them)."""
        states = "('queued', 'failed')" if failed else "('queued')"
        with self.store.catalog.read() as con:
            return [r[0] for r in con.execute(
                "SELECT o.sha256 FROM (SELECT sha256 FROM objects UNION SELECT sha256 FROM parts WHERE sha256 IS NOT NULL) "
                f"o LEFT JOIN remote_objects r USING (sha256) WHERE (r.sha256 IS NULL OR r.state IN {states}) "
                f"AND {kept('o.sha256')}")]

    def upload(self, remote: RemoteObjects, digests: list[str]) -> dict[str, str | None]:
        """Upload objects and record each outcome; {digest: None when uploaded, else the reason}."""
        if not digests:
            return {}
        catalog = self.store.catalog
        now = time.time_ns()
        with catalog.write(Role.MAINT, durable=False) as con:
            con.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", [META_URL, remote.url])
            _upsert(con, digests, RemoteState.QUEUED, None, now)
            done = {r[0] for k in range(0, len(digests), CHECK_CHUNK) for r in con.execute(
                "SELECT sha256 FROM remote_objects WHERE state = 'uploaded' AND sha256 IN "
                f"({', '.join('?' * len(digests[k:k + CHECK_CHUNK]))})", digests[k:k + CHECK_CHUNK])}
        todo = [d for d in digests if d not in done]
        # A PUT mostly waits on the network: a few in flight keep the link busy (s3fs runs them on
        # its own event loop; these threads only wait for them).
        with ThreadPoolExecutor(min(UPLOAD_THREADS, len(todo) or 1), thread_name_prefix="otel-inputs-upload") as pool:
            outcome: dict[str, str | None] = dict(zip(todo, pool.map(lambda d: self._upload_one(remote, d), todo)))
        with catalog.write(Role.MAINT, durable=False) as con:
            now = time.time_ns()
            con.executemany(
                "UPDATE remote_objects SET state = ?, reason = ?, tries = tries + 1, updated_at_ns = ? "
                "WHERE sha256 = ? AND state = 'queued'",
                [(RemoteState.FAILED.value if why else RemoteState.UPLOADED.value, why, now, d)
                 for d, why in outcome.items()])
            seq = catalog.next_seq(con)
        self.store.notify(StoreChange(tuple(_object_change(d, why, seq, now) for d, why in outcome.items())))
        for digest, why in outcome.items():
            if why:
                _log.warning("otel_inputs: snapshot %s not uploaded: %s", digest[:12], why)
        return outcome

    def _upload_one(self, remote: RemoteObjects, digest: str) -> str | None:
        try:
            with self.store.objects.open(digest) as fh:
                data = fh.read()
        except OSError:
            return "local copy gone before upload"
        if hashlib.sha256(data).hexdigest() != digest:
            return "integrity: local copy does not match its SHA-256, not uploaded"
        try:
            remote.put(digest, data)
        except Exception as exc:  # noqa: BLE001 - every bucket failure is a recorded reason
            return reason(exc)
        return None

    # -- reads ------------------------------------------------------------------------------------
    def read(self, digest: str, limit: int | None) -> bytes | None:
        """The bucket's bytes for an object whose local copy is gone; ``None`` without a bucket.
        A bucket that has no copy or cannot be reached is a :class:`ReadbackError` (not found)."""
        remote = self.remote()
        if remote is None:
            return None
        try:
            return remote.open(digest, limit)
        except FileNotFoundError as exc:
            raise ReadbackError(ReadbackOutcome.NOT_FOUND,
                                "snapshot bytes are missing from the store and the bucket") from exc
        except Exception as exc:  # noqa: BLE001 - an unreachable bucket is a refusal, never a crash
            raise ReadbackError(ReadbackOutcome.NOT_FOUND, f"local copy gone, bucket unreadable ({reason(exc)})") from exc

    def placements(self, digests: Iterable[str]) -> dict[str, Placement]:
        """Where each object's bytes are (the catalog's remote state and a stat of the local copy)."""
        listed = list(dict.fromkeys(d for d in digests if isinstance(d, str) and HEX64.fullmatch(d)))
        rows: dict[str, tuple[str, str | None]] = {}
        try:
            with self.store.catalog.read() as con:
                for k in range(0, len(listed), CHECK_CHUNK):
                    part = listed[k:k + CHECK_CHUNK]
                    rows.update((d, (s, r)) for d, s, r in con.execute(
                        f"SELECT sha256, state, reason FROM remote_objects WHERE sha256 IN ({', '.join('?' * len(part))})",
                        part))
        except FileNotFoundError:
            pass
        out = {}
        for d in listed:
            state, why = rows.get(d, (None, None))
            out[d] = Placement(self.store.objects.has(d), RemoteState(state) if state else None, why)
        return out

    # -- retention and purge ---------------------------------------------------------------------
    def sweep(self) -> int:
        """Delete bucket objects no available item references any more; returns how many went.

        Candidates are found without the write lock, then re-checked and marked ``deleting`` under
        it, so a capture that commits a reference first keeps its object.  A bucket that cannot be
        reached keeps the ``deleting`` rows for the next sweep.
        """
        catalog = self.store.catalog
        try:
            with catalog.read() as con:
                candidates = [r[0] for r in con.execute(
                    f"SELECT r.sha256 FROM remote_objects r WHERE NOT {kept('r.sha256')}")]
        except FileNotFoundError:
            return 0
        if not candidates:
            return 0
        remote = self.remote()
        if remote is None:
            return 0
        doomed: list[str] = []
        for k in range(0, len(candidates), CHECK_CHUNK):
            part = candidates[k:k + CHECK_CHUNK]
            with catalog.write(Role.MAINT, durable=False) as con:
                now_doomed = [r[0] for r in con.execute(
                    f"SELECT j.value FROM json_each(?) j WHERE NOT {kept('j.value')}", [json.dumps(part)])]
                con.executemany("UPDATE remote_objects SET state = 'deleting', updated_at_ns = ? WHERE sha256 = ?",
                                [(time.time_ns(), d) for d in now_doomed])
            doomed.extend(now_doomed)
        try:
            remote.delete(doomed)
        except Exception as exc:  # noqa: BLE001 - the rows stay 'deleting' for the next sweep
            _log.warning("otel_inputs: bucket objects not deleted (retried by the next sweep): %s", reason(exc))
            return 0
        with catalog.write(Role.MAINT) as con:
            con.executemany("DELETE FROM remote_objects WHERE sha256 = ? AND state = 'deleting'", [(d,) for d in doomed])
            # A capture that re-committed one of these meanwhile queued it again: its upload re-runs.
            again = [r[0] for k in range(0, len(doomed), CHECK_CHUNK) for r in con.execute(
                "SELECT sha256 FROM remote_objects WHERE sha256 IN "
                f"({', '.join('?' * len(doomed[k:k + CHECK_CHUNK]))})", doomed[k:k + CHECK_CHUNK])]
            con.executemany("UPDATE remote_objects SET state = 'queued' WHERE sha256 = ?", [(d,) for d in again])
        if again:
            self.committed(again)
        return len(doomed) - len(again)


_links: weakref.WeakSet[BucketLink] = weakref.WeakSet()


def attach(store: ArtifactStore) -> BucketLink:
    """Subscribe a bucket link to ``store`` (its configured URL, else ``OTEL_INPUTS_OBJECTS_URL``, else
    the one its catalog recorded); the one already attached if there is one."""
    found = next((x for x in store.listeners if isinstance(x, BucketLink)), None)
    if found is None:
        found = BucketLink(store, store.objects_url, store.objects_options)
        store.listeners.append(found)
        store.read_elsewhere = _read_bucket
    return found


def bucket_of(store: ArtifactStore) -> BucketLink | None:
    """The store's bucket link when it has a bucket (configured or recorded), else ``None``."""
    link = attach(store)
    return link if link.url() is not None else None


def _read_bucket(store: ArtifactStore, digest: str, limit: int | None) -> bytes | None:
    return attach(store).read(digest, limit)


def _after_fork_in_child() -> None:
    for link in list(_links):
        link._after_fork_in_child()


os.register_at_fork(after_in_child=_after_fork_in_child)


def item_placements(store: ArtifactStore, attempt_id: str) -> dict[str, Placement]:
    """{input id: where its bytes are} for the attempt's items that have a digest."""
    record = store.attempt(attempt_id)
    if record is None:
        return {}
    found = attach(store).placements(i.sha256 for i in record.items if i.sha256)
    return {i.input_id: found[i.sha256] for i in record.items if i.sha256 in found}


@dataclass
class SyncReport:
    uploaded: int = 0
    failed: dict[str, str] | None = None
    deleted: int = 0


def sync_bucket(store: ArtifactStore, *, retry_failed: bool = True) -> SyncReport:
    """``otel-inputs store upload``: upload every referenced object not yet in the bucket (rows
    left queued, failed ones too unless told not to, objects never queued), then sweep."""
    link = attach(store)
    remote = link.remote()
    if remote is None:
        raise RuntimeError(f"no bucket configured (set {names.ENV_OBJECTS_URL})")
    report = SyncReport(failed={})
    pending = link.pending(failed=retry_failed)
    for k in range(0, len(pending), BATCH):
        for digest, why in link.upload(remote, pending[k:k + BATCH]).items():
            if why:
                report.failed[digest] = why
            else:
                report.uploaded += 1
    report.deleted = link.sweep()
    return report


def bucket_counts(store: ArtifactStore) -> dict[str, int]:
    """Objects per remote state, and ``local_only``: referenced objects with no remote state yet."""
    with store.catalog.read() as con:
        counts = dict(con.execute("SELECT state, count(*) FROM remote_objects GROUP BY state"))
        counts["local_only"] = con.execute(
            "SELECT count(*) FROM objects o WHERE NOT EXISTS (SELECT 1 FROM remote_objects r WHERE r.sha256 = "
            f"o.sha256) AND {kept('o.sha256')}").fetchone()[0]
    return counts
