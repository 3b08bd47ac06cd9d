"""The store's catalog, published next to its objects for a fleet viewer, and opened read-only there.

A preview is vouched for by the catalog of the store that recorded it (permission, retention,
purge, revocation, part receipts, then the digest: :class:`~otel_inputs.store.EvidenceReader`).
A viewer on another machine has the spans (ClickHouse) and the bytes (the bucket) but not that
catalog, so each store publishes a consistent, read-only copy of it to
``<objects_url>/catalog/catalog.sqlite`` and the viewer runs the same reader over a store opened
on that copy: one readback path, no second catalog.

* Publish (:func:`publish_catalog`): ``sqlite3.Connection.backup`` into a temp file (readers and
  agent commits go on meanwhile), the copy switched to ``journal_mode=DELETE`` with
  ``published_at_ns`` and the publisher's host and pid in its ``meta``, then one upload (a single
  S3 PUT is atomic).  The uploader's thread publishes after a batch, at most once per
  ``OTEL_INPUTS_CATALOG_PUBLISH_S`` seconds (:class:`Publisher`); the maintenance commands that
  change what may be read publish at once.
* Open (:class:`FleetCatalogs`): only locations under the viewer's configured roots are fetched; the
  copy is downloaded to a cache directory keyed by URL, fetched again when the bucket object's
  ETag / size / mtime changes, checked (SQLite, ``quick_check``, the known schema, the publish
  stamp) and opened read-only (``mode=ro&immutable=1``; the catalog refuses every write on it).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import socket
import sqlite3
import tempfile
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlsplit, urlunsplit

from otel_inputs import names
from otel_inputs.store._catalog import MIGRATIONS
from otel_inputs.store._errors import _reason
from otel_inputs.types import ReadbackOutcome

if TYPE_CHECKING:
    from otel_inputs.store._remote import BucketLink, RemoteObjects
    from otel_inputs.store._store import ArtifactStore

_log = logging.getLogger(__name__)

CATALOG_KEY = "catalog/catalog.sqlite"  # under the store's objects URL, beside objects/
DEFAULT_INTERVAL_S = 10.0
BUSY_SHARE = 10  # background publishes wait at least 10x the last one's duration: a big catalog costs <= 10 %
RETRY_MAX_S = 300.0  # a failing bucket is retried ever less often, up to every 5 minutes
META_PUBLISHED_AT = "published_at_ns"
META_PUBLISHED_HOST = "published_by_host"
META_PUBLISHED_PID = "published_by_pid"
META_PUBLISHED_URL = "published_to"


class PublishError(RuntimeError):
    """The catalog could not be published; the local store is unchanged by that."""


def publish_interval(env: Mapping[str, str] | None = None) -> float | None:
    """Seconds between background publishes (``OTEL_INPUTS_CATALOG_PUBLISH_S``); ``None``: "off"."""
    raw = (os.environ if env is None else env).get(names.ENV_CATALOG_PUBLISH_S, "").strip()
    if raw.lower() == "off":
        return None
    try:
        return max(0.0, float(raw)) if raw else DEFAULT_INTERVAL_S
    except ValueError:
        return DEFAULT_INTERVAL_S


def snapshot_catalog(catalog_path: str, dest: str | os.PathLike[str], published_to: str) -> int:
    """A consistent copy of the catalog at ``dest`` (rollback journal, no WAL), stamped with when and by
    whom it was taken; returns ``published_at_ns`` (every commit before it is in the copy)."""
    published_at = time.time_ns()
    src = sqlite3.connect(catalog_path, timeout=30.0)
    try:
        dst = sqlite3.connect(os.fspath(dest), isolation_level=None)
        try:
            src.backup(dst)  # one step: one read transaction, so the copy is one consistent state
            dst.execute("PRAGMA journal_mode=DELETE")
            dst.execute("BEGIN")
            dst.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", [
                (META_PUBLISHED_AT, published_at), (META_PUBLISHED_HOST, socket.gethostname()),
                (META_PUBLISHED_PID, os.getpid()), (META_PUBLISHED_URL, published_to)])
            dst.execute("COMMIT")
        finally:
            dst.close()
    finally:
        src.close()
    return published_at


def publish_catalog(store: ArtifactStore, remote: RemoteObjects) -> int:
    """Publish the store's catalog to ``remote``'s ``catalog/catalog.sqlite``; returns ``published_at_ns``."""
    if not store.catalog.exists():
        raise PublishError(f"no catalog to publish at {store.catalog.path}")
    with tempfile.TemporaryDirectory(prefix=".publish-", dir=store.root) as tmp:
        path = os.path.join(tmp, "catalog.sqlite")
        published_at = snapshot_catalog(store.catalog.path, path, remote.url)
        remote.put_file(path, CATALOG_KEY)
    return published_at


class Publisher:
    """One store's publishing state in this process: changed since the last publish, and when that was."""

    def __init__(self, link: BucketLink) -> None:
        self.link = link
        self._lock = threading.Lock()
        self._dirty = True  # a new process publishes once: its catalog may have changed offline
        self._last = float("-inf")
        self._took = 0.0
        self._failures = 0
        self._logged = False
        self.last_error: str | None = None
        self.published_at_ns: int | None = None

    def changed(self) -> bool:
        """Mark the catalog changed; ``True`` when it was not already (so one wake-up per change)."""
        was, self._dirty = self._dirty, True
        return not was

    def due_in(self) -> float | None:
        """Seconds until a background publish is due (0: now), ``None`` when none is wanted."""
        interval = publish_interval()
        if not self._dirty or interval is None:
            return None
        wait = max(interval, BUSY_SHARE * self._took)
        if self._failures:
            wait = max(wait, min(RETRY_MAX_S, interval * 2 ** self._failures))
        return max(0.0, self._last + wait - time.monotonic())

    def publish_if_due(self, remote: RemoteObjects) -> None:
        """The uploader thread's publish: debounced, and a failure is logged once, never raised."""
        if self.due_in() == 0.0:
            try:
                self.publish(remote)
            except PublishError:
                pass

    def publish(self, remote: RemoteObjects, *, if_changed: bool = False) -> int | None:
        """Publish now (``if_changed``: only if the catalog changed since the last publish, waiting out
        one in flight); :class:`PublishError` (with the reason) when it fails."""
        with self._lock:
            if if_changed and not self._dirty:
                return None
            self._dirty = False  # a change during the copy sets it again, for the next publish
            started = time.monotonic()
            try:
                published = publish_catalog(self.link.store, remote)
            except Exception as exc:  # noqa: BLE001 - every failure is a reason to report
                self._dirty = True
                self._failures += 1
                self.last_error = exc.args[0] if isinstance(exc, PublishError) else _reason(exc)
                if not self._logged:  # once until a publish succeeds again, not once per batch
                    _log.warning("otel_inputs: catalog not published to %s (retried later): %s",
                                 remote.url, self.last_error)
                    self._logged = True
                raise PublishError(self.last_error) from exc
            finally:
                self._last = time.monotonic()
                self._took = self._last - started
            self._logged, self._failures, self.last_error, self.published_at_ns = False, 0, None, published
            return published


def publish_now(store: ArtifactStore) -> tuple[str, int] | None:
    """Publish the store's catalog to its bucket (configured, else the one the catalog recorded);
    ``None`` when the store has no bucket, :class:`PublishError` when publishing failed."""
    link = store.bucket
    url = link.url()
    if url is None:
        return None
    remote = link.remote()
    if remote is None:
        raise PublishError(f"object storage {url} cannot be opened (see the log)")
    return remote.url, link.publisher.publish(remote)


# -- the fleet viewer's side ----------------------------------------------------------------------
def utc_text(ns: int) -> str:
    return datetime.fromtimestamp(ns / 1e9, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def public_location(url: str | None) -> str | None:
    """``url`` without credentials, query or fragment (what a span may carry), ``None`` if unusable."""
    if not url:
        return None
    parts = urlsplit(url)
    if not parts.scheme:
        return None
    netloc = parts.netloc.rsplit("@", 1)[-1]
    return urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))


def _segments(url: str) -> tuple[str, str, tuple[str, ...]] | None:
    """(scheme, host, path segments) of a plain location; ``None`` for anything else (credentials,
    query, fragment, percent-escapes, ``.``/``..`` or empty segments): such a URL is never followed."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    # "%" too: a percent-encoded "/" or ".." must not reach a filesystem that would decode it
    if not parts.scheme or "@" in parts.netloc or parts.query or parts.fragment or "\\" in url or "%" in url:
        return None
    segs = tuple(s for s in parts.path.rstrip("/").split("/"))
    segs = segs[1:] if segs and segs[0] == "" else segs
    if any(s in ("", ".", "..") for s in segs) or any(ord(c) < 32 for c in url):
        return None
    return parts.scheme.lower(), parts.netloc.lower(), segs


def under_roots(location: str, roots: Iterable[str]) -> bool:
    """Whether ``location`` lies at or under one of ``roots`` (whole path segments, same scheme and host)."""
    loc = _segments(location)
    if loc is None:
        return False
    for root in roots:
        r = _segments(root)
        if r is not None and r[:2] == loc[:2] and loc[2][:len(r[2])] == r[2]:
            return True
    return False


class CatalogRefused(Exception):
    """The location's published catalog cannot vouch for anything; ``outcome`` says how to refuse."""

    def __init__(self, outcome: ReadbackOutcome, message: str) -> None:
        super().__init__(message)
        self.outcome = outcome


@dataclass(frozen=True)
class PublishedCatalog:
    """A store opened read-only on a published catalog: what vouches for a fleet viewer's previews."""

    location: str
    store: ArtifactStore
    published_at_ns: int
    host: str | None = None
    pid: int | None = None

    def describe(self) -> str:
        return f"the catalog of {self.location}, published {utc_text(self.published_at_ns)}"


def _check_snapshot(path: str, location: str) -> tuple[sqlite3.Connection, dict[str, Any]]:
    """Open a downloaded snapshot read-only and check it is a whole catalog of a schema this version knows."""
    uri = f"file:{quote(path)}?mode=ro&immutable=1"
    try:
        con = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
    except sqlite3.Error as exc:
        raise CatalogRefused(ReadbackOutcome.INTEGRITY_MISMATCH, f"the catalog published at {location} "
                             f"cannot be opened ({exc})") from exc
    try:
        problems = [r[0] for r in con.execute("PRAGMA quick_check")]
        if problems != ["ok"]:
            raise sqlite3.DatabaseError("; ".join(problems[:3]))
        applied = {r[0] for r in con.execute("SELECT name FROM _migrations")}
        meta = dict(con.execute("SELECT key, value FROM meta"))
    except sqlite3.Error as exc:
        con.close()
        raise CatalogRefused(ReadbackOutcome.INTEGRITY_MISMATCH, f"the catalog published at {location} is not a "
                             f"readable otel-inputs catalog ({exc})") from exc
    known = [name for name, _ in MIGRATIONS]
    newer = sorted(applied - set(known))
    older = [name for name in known if name not in applied]
    stamp = meta.get(META_PUBLISHED_AT)
    problem = None
    if newer:
        problem = (ReadbackOutcome.SOURCE_UNAVAILABLE, f"the catalog published at {location} has a newer schema "
                   f"({', '.join(newer)}) than this otel-inputs knows: upgrade the viewer")
    elif older:
        problem = (ReadbackOutcome.SOURCE_UNAVAILABLE, f"the catalog published at {location} has an older schema "
                   f"(without {', '.join(older)}): publish it again with this version (otel-inputs store publish)")
    elif not isinstance(stamp, int):
        problem = (ReadbackOutcome.INTEGRITY_MISMATCH, f"the catalog at {location} carries no publish stamp")
    if problem is not None:
        con.close()
        raise CatalogRefused(*problem)
    return con, meta


def default_cache_dir() -> Path:
    configured = os.environ.get(names.ENV_CATALOG_CACHE)
    if configured:
        return Path(configured)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "otel-inputs" / "catalogs"


@dataclass
class _Cached:
    """One downloaded copy: its users (pages holding it, see :meth:`FleetCatalogs.acquire`), and
    whether a newer copy has replaced it; a replaced copy is closed once its last user lets go."""

    version: str
    published: PublishedCatalog
    con: sqlite3.Connection
    users: int = 0
    pinned: bool = False  # handed out by open(), which has no release: never closed under its holder
    replaced: bool = False

    def close_if_unused(self) -> None:
        if self.replaced and not self.users and not self.pinned:
            self.con.close()  # its file was already unlinked: this frees the disk space too


class FleetCatalogs:
    """The published catalogs a fleet viewer may follow: only under ``roots``, cached under ``cache_dir``."""

    def __init__(self, roots: Iterable[str], cache_dir: str | os.PathLike[str] | None = None,
                 options: Mapping[str, Any] | None = None) -> None:
        self.roots = tuple(r.rstrip("/") for r in roots if r and r.strip())
        self.cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
        self.options = dict(options or {})
        self._lock = threading.Lock()
        self._open: dict[str, _Cached] = {}
        self._copies: dict[int, _Cached] = {}  # id(PublishedCatalog) -> its copy, while it may be released
        self.fetches = 0  # downloads made (a test and a benchmark count them)

    def open(self, location: str | None) -> PublishedCatalog:
        """The published catalog of the store at ``location`` (the attempt span's), or :class:`CatalogRefused`.

        The copy stays open for as long as the process runs; a viewer page uses :meth:`acquire` and
        :meth:`release` instead, so a copy a newer one replaced is closed once no page uses it."""
        return self._cached(location, use=False)

    def acquire(self, location: str | None) -> PublishedCatalog:
        """:meth:`open`, counted as one user of the copy until :meth:`release`."""
        return self._cached(location, use=True)

    def release(self, published: PublishedCatalog) -> None:
        """One user of ``published`` is done with it; a replaced copy without users is closed."""
        with self._lock:
            cached = self._copies.get(id(published))
            if cached is None or cached.published is not published:
                return
            cached.users -= 1
            if not cached.users:
                del self._copies[id(published)]
            cached.close_if_unused()

    def _cached(self, location: str | None, *, use: bool) -> PublishedCatalog:
        """The current copy for ``location`` (fetched when the published one changed), counted as a
        user (``use``) or pinned, under the same lock that replaces and closes copies."""
        if not location:
            raise CatalogRefused(ReadbackOutcome.NOT_FOUND, "the attempt span names no store location (its host "
                                 "had no bucket configured), so no published catalog can vouch for its previews")
        if not under_roots(location, self.roots):
            raise CatalogRefused(ReadbackOutcome.PERMISSION_DENIED, f"the attempt's store location {location!r} is "
                                 "not under this viewer's objects roots; it is not fetched")
        try:
            import fsspec

            fs, base = fsspec.core.url_to_fs(location, **self.options)
            key = base.rstrip("/") + "/" + CATALOG_KEY
            info = fs.info(key)
        except FileNotFoundError as exc:
            raise CatalogRefused(ReadbackOutcome.NOT_FOUND, f"the recording host has not published its catalog "
                                 f"(nothing at {location}/{CATALOG_KEY})") from exc
        except Exception as exc:  # noqa: BLE001 - an unreachable bucket is a refusal, never a crash
            raise CatalogRefused(ReadbackOutcome.SOURCE_UNAVAILABLE, f"the catalog published at {location} "
                                 f"cannot be read now ({_reason(exc)})") from exc
        version = json.dumps([str(info.get(k)) for k in ("ETag", "size", "LastModified", "mtime")])
        with self._lock:
            current = self._open.get(location)
            if current is None or current.version != version:
                fresh = _Cached(version, *self._fetch(fs, key, location, version))
                self._open[location] = fresh
                if current is not None:
                    current.replaced = True
                    current.close_if_unused()
                current = fresh
            if use:
                current.users += 1
                self._copies[id(current.published)] = current
            else:
                current.pinned = True
            return current.published

    def _fetch(self, fs: Any, key: str, location: str, version: str) -> tuple[PublishedCatalog, sqlite3.Connection]:
        from otel_inputs.store._store import ArtifactStore

        folder = self.cache_dir / hashlib.sha256(location.encode()).hexdigest()[:32]
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        path = folder / (hashlib.sha256(version.encode()).hexdigest()[:16] + ".sqlite")
        if not path.exists():  # a viewer restarted on an unchanged snapshot reuses its download
            tmp = folder / f".tmp-{os.getpid()}-{threading.get_ident()}"
            try:
                fs.get_file(key, str(tmp))
                os.chmod(tmp, 0o400)
                os.replace(tmp, path)
            except Exception as exc:  # noqa: BLE001
                tmp.unlink(missing_ok=True)
                raise CatalogRefused(ReadbackOutcome.SOURCE_UNAVAILABLE, f"the catalog published at {location} "
                                     f"could not be downloaded ({_reason(exc)})") from exc
            self.fetches += 1
        try:
            con, meta = _check_snapshot(str(path), location)
        except CatalogRefused:
            path.unlink(missing_ok=True)  # fetched again next time, in case it was a torn download
            raise
        for old in folder.glob("*.sqlite"):  # open connections keep their file; new opens use the new one
            if old != path:
                old.unlink(missing_ok=True)
        store = ArtifactStore(folder, create=False, objects_url=location, objects_options=self.options,
                              catalog_snapshot=(path, con))
        pid = meta.get(META_PUBLISHED_PID)
        host = meta.get(META_PUBLISHED_HOST)
        return PublishedCatalog(location, store, int(meta[META_PUBLISHED_AT]), host if isinstance(host, str) else None,
                                pid if isinstance(pid, int) else None), con
