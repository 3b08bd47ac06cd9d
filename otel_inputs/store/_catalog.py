"""The store's catalog: one SQLite file (WAL) of attempts, items, objects, evictions, purges, revocations
and part receipts (the bytes are :mod:`otel_inputs.store._objects`).  One connection per process and
:class:`Role`: ``AGENT`` commits ``synchronous=NORMAL`` within :data:`AGENT_BUSY_S` and never checkpoints
(:class:`_Chores` does), ``MAINT`` commits ``synchronous=FULL``, ``READ`` reads (docs/store.md, "Durability
and concurrency").  Schema changes are named migrations, recorded in ``_migrations``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, fields, replace
from enum import Enum
from pathlib import Path
from typing import Any

from otel_inputs.store._changes import ItemChange
from otel_inputs.store._errors import StoreBusyError, StoreWriteError
from otel_inputs.store._objects import HEX64, ObjectDB
from otel_inputs.types import ItemState

CATALOG_FILE = "catalog.db"
AGENT_BUSY_S = 0.05
AGENT_POLL_S = 0.0002
MAINT_BUSY_S = 30.0
CHECKPOINT_EVERY_S = 0.05

# Items a purge covers are marked purged (also when a stale writer commits the attempt again).
MARK_PURGED_ALL = ("UPDATE items SET artifact_status = CASE artifact_status WHEN 'available' THEN 'evicted' "
                   "ELSE artifact_status END, status_reason = 'purged' WHERE coalesce(status_reason, '') != 'purged' "
                   "AND EXISTS (SELECT 1 FROM purged p WHERE p.attempt_id = items.attempt_id "
                   "AND p.input_id IN ('', items.input_id))")
MARK_PURGED = MARK_PURGED_ALL + " AND attempt_id = ?"


def _revoked_at(path: str | None, revocations: Sequence[tuple[str, int]]) -> int | None:
    """When ``path`` was first revoked (itself or a folder above it), else ``None``; the comparison of
    :meth:`otel_inputs.store.RevocationList.match`, on the canonical text the catalog records."""
    if not isinstance(path, str):
        return None
    for revoked, at in revocations:
        if path == revoked or path.startswith(revoked.rstrip("/") + "/"):
            return at
    return None


def _state(status: str, reason: str | None) -> tuple[ItemState, str | None]:
    if reason == "purged":
        return ItemState.PURGED, None
    if status == "available":
        return ItemState.CAPTURED, None
    if status == "evicted":
        return ItemState.EVICTED, reason
    return ItemState.NOT_CAPTURED, reason or status


def item_changes(con: sqlite3.Connection, where: str, args: Sequence[Any], seq: int) -> list[ItemChange]:
    """The state now of the attempts ``where`` selects (SQL over ``attempts t``): the attempt itself (item
    ``""``), its items and its parts, each stamped ``seq`` and with the time it entered that state
    (docs/store.md, "Listening to changes").  Called inside the write transaction that changed them."""
    revocations = [(p, at) for p, at in con.execute(
        "SELECT source_path, at_ns FROM revocations WHERE source_path IS NOT NULL ORDER BY revocation_id")]
    out: list[ItemChange] = []
    attempts = con.execute(f"SELECT t.attempt_id, t.run_id, t.committed_at_ns, (SELECT min(u.at_ns) FROM purged p "
                           "JOIN purges u USING (purge_id) WHERE p.attempt_id = t.attempt_id AND p.input_id = '') "
                           f"FROM attempts t WHERE {where}", list(args)).fetchall()
    for aid, run, committed, purged_at in attempts:
        out.append(ItemChange(aid, "", None, ItemState.PURGED if purged_at else ItemState.CAPTURED, None, seq,
                              purged_at or committed, run))
        for input_id, digest, status, reason, path, captured, evicted, input_purged in con.execute(
                "SELECT i.input_id, i.sha256, i.artifact_status, i.status_reason, i.source_path, i.captured_at_ns, "
                "i.evicted_at_ns, (SELECT min(u.at_ns) FROM purged p JOIN purges u USING (purge_id) "
                "WHERE p.attempt_id = i.attempt_id AND p.input_id IN ('', i.input_id)) FROM items i "
                "WHERE i.attempt_id = ? ORDER BY i.seq", [aid]):
            state, why = _state(status, reason)
            at = {ItemState.PURGED: input_purged, ItemState.EVICTED: evicted}.get(state) or captured or committed
            out.append(ItemChange(aid, input_id, digest, state, why, seq, at, run, _revoked_at(path, revocations)))
        for part, digest, receipt in con.execute("SELECT part, sha256, receipt FROM parts WHERE attempt_id = ?", [aid]):
            state = ItemState.PURGED if purged_at else ItemState.CAPTURED if digest else ItemState.NOT_CAPTURED
            why = None if digest or purged_at else _receipt_reason(receipt)
            out.append(ItemChange(aid, f"part:{part}", digest, state, why, seq, purged_at or committed, run))
    return out


def _receipt_reason(receipt: str) -> str | None:
    try:
        body = json.loads(receipt)
        return str(body.get("persistence_reason") or body.get("persistence") or "") or None
    except (TypeError, ValueError, AttributeError):
        return None


def kept(digest: str) -> str:
    """SQL true when the object ``digest`` (a column or ``?``) must be kept: an available item names it,
    or a stored exchange part of an attempt that is not purged (docs/store.md)."""
    return (f"(EXISTS (SELECT 1 FROM items k WHERE k.sha256 = {digest} AND k.artifact_status = 'available') OR "
            f"EXISTS (SELECT 1 FROM parts k WHERE k.sha256 = {digest} AND NOT EXISTS (SELECT 1 FROM purged u "
            "WHERE u.attempt_id = k.attempt_id AND u.input_id = '')))")


class Role(Enum):
    AGENT = "agent"
    MAINT = "maint"
    READ = "read"


@dataclass(frozen=True, slots=True)
class CatalogItem:
    """One input item as the catalog records it (the columns of ``items``)."""

    attempt_id: str
    input_id: str
    seq: int | None
    label: str | None = None
    source_kind: str | None = None
    delivery_mode: str | None = None
    source_path: str | None = None
    snapshot_ref: str | None = None
    media_type: str | None = None
    preview_kind: str | None = None
    size_bytes: int | None = None
    sha256: str | None = None
    capture_status: str | None = None
    artifact_status: str = "never_captured"
    status_reason: str | None = None
    detail: str | None = None
    captured_at_ns: int | None = None
    evicted_at_ns: int | None = None


@dataclass(frozen=True)
class AttemptRecord:
    """One attempt as the catalog records it, with its items in ``seq`` order."""

    attempt_id: str
    run_id: str | None
    session_id: str | None = None
    state: str = "ended"  # capture commits "running" (protected while its owner lives); "ended" after
    owner_pid: int | None = None
    owner_host: str | None = None
    coverage: str | None = None
    decision: str | None = None
    gap_reason: str | None = None
    declared_count: int | None = None
    captured_count: int | None = None
    omitted_count: int | None = None
    committed_at_ns: int = 0
    ended_at_ns: int | None = None
    changed_seq: int = 0
    items: tuple[CatalogItem, ...] = field(default=())


ITEM_COLUMNS = tuple(f.name for f in fields(CatalogItem))
ATTEMPT_COLUMNS = tuple(f.name for f in fields(AttemptRecord) if f.name != "items")


@contextmanager
def transaction(con: sqlite3.Connection, role: Role = Role.MAINT) -> Iterator[sqlite3.Connection]:
    """``BEGIN IMMEDIATE`` … ``COMMIT``, rolled back on any exception."""
    _begin(con, role)
    try:
        yield con
        con.execute("COMMIT")
    except BaseException:
        if con.in_transaction:
            con.execute("ROLLBACK")
        raise


def _begin(con: sqlite3.Connection, role: Role) -> None:
    # The agent polls instead of using SQLite's busy handler, whose sleeps (1, 2, 5, 10 … ms)
    # would turn a 1 ms wait for a gc transaction into 3 or 8 ms.
    deadline = time.monotonic() + AGENT_BUSY_S
    while True:
        try:
            con.execute("BEGIN IMMEDIATE")
            return
        except sqlite3.OperationalError as exc:
            if role is not Role.AGENT or "locked" not in str(exc):
                raise
            if time.monotonic() > deadline:
                raise StoreBusyError(f"store_busy: catalog locked for more than {AGENT_BUSY_S * 1000:.0f} ms") from exc
        time.sleep(AGENT_POLL_S)


def _script(con: sqlite3.Connection, sql: str) -> None:
    """Run statements one by one (``executescript`` would commit the migration's transaction)."""
    statement = ""
    for line in sql.splitlines(keepends=True):
        statement += line
        if sqlite3.complete_statement(statement):
            con.execute(statement)
            statement = ""


def _m001_initial(con: sqlite3.Connection, root: Path) -> None:
    _script(con, """
    CREATE TABLE attempts (
      attempt_id TEXT PRIMARY KEY, run_id TEXT, session_id TEXT, state TEXT NOT NULL,
      owner_pid INTEGER, owner_host TEXT, coverage TEXT, decision TEXT, gap_reason TEXT,
      declared_count INTEGER, captured_count INTEGER, omitted_count INTEGER,
      committed_at_ns INTEGER NOT NULL, ended_at_ns INTEGER, changed_seq INTEGER NOT NULL);
    CREATE INDEX attempts_age ON attempts (committed_at_ns, attempt_id);
    CREATE INDEX attempts_running ON attempts (attempt_id) WHERE state = 'running';
    CREATE INDEX attempts_changed ON attempts (changed_seq);
    CREATE INDEX attempts_run ON attempts (run_id);
    CREATE TABLE items (
      attempt_id TEXT NOT NULL, input_id TEXT NOT NULL, seq INTEGER, label TEXT, source_kind TEXT,
      delivery_mode TEXT, source_path TEXT, snapshot_ref TEXT, media_type TEXT, preview_kind TEXT,
      size_bytes INTEGER, sha256 TEXT, capture_status TEXT, artifact_status TEXT NOT NULL,
      status_reason TEXT, detail TEXT, captured_at_ns INTEGER, evicted_at_ns INTEGER,
      PRIMARY KEY (attempt_id, input_id)) WITHOUT ROWID;
    CREATE INDEX items_available ON items (sha256) WHERE artifact_status = 'available';
    CREATE INDEX items_source ON items (source_path);
    CREATE TABLE objects (sha256 TEXT PRIMARY KEY, allocated INTEGER NOT NULL) WITHOUT ROWID;
    CREATE TABLE evictions (eviction_id INTEGER PRIMARY KEY, at_ns INTEGER NOT NULL, reason TEXT NOT NULL,
      attempts INTEGER NOT NULL, items INTEGER NOT NULL);
    CREATE TABLE purges (purge_id INTEGER PRIMARY KEY, at_ns INTEGER NOT NULL, selector_json TEXT NOT NULL,
      attempts INTEGER NOT NULL, items INTEGER NOT NULL);
    -- a purged row with input_id '' covers the whole attempt
    CREATE TABLE purged (attempt_id TEXT NOT NULL, input_id TEXT NOT NULL, purge_id INTEGER NOT NULL,
      PRIMARY KEY (attempt_id, input_id)) WITHOUT ROWID;
    CREATE TABLE revocations (revocation_id INTEGER PRIMARY KEY, source_path TEXT, sha256 TEXT,
      reason TEXT NOT NULL DEFAULT '', at_ns INTEGER NOT NULL);
    CREATE TABLE meta (key TEXT PRIMARY KEY, value) WITHOUT ROWID;
    INSERT INTO meta VALUES ('changed_seq', 0), ('objects', 0), ('object_bytes', 0);
    -- totals kept by triggers: a retention pass within budget reads two rows, not 100,000
    CREATE TRIGGER objects_added AFTER INSERT ON objects BEGIN
      UPDATE meta SET value = value + 1 WHERE key = 'objects';
      UPDATE meta SET value = value + NEW.allocated WHERE key = 'object_bytes'; END;
    CREATE TRIGGER objects_removed AFTER DELETE ON objects BEGIN
      UPDATE meta SET value = value - 1 WHERE key = 'objects';
      UPDATE meta SET value = value - OLD.allocated WHERE key = 'object_bytes'; END;
    """)


def _m002_remote_objects(con: sqlite3.Connection, root: Path) -> None:
    """Each object's copy in the bucket (:mod:`otel_inputs.store.bucket`): queued, uploaded,
    failed (with the reason) or deleting; no row means local only."""
    _script(con, """
    CREATE TABLE remote_objects (sha256 TEXT PRIMARY KEY, state TEXT NOT NULL, reason TEXT,
      tries INTEGER NOT NULL DEFAULT 0, updated_at_ns INTEGER NOT NULL) WITHOUT ROWID;
    CREATE INDEX remote_objects_state ON remote_objects (state);
    """)


def _m003_part_receipts(con: sqlite3.Connection, root: Path) -> None:
    con.execute(MARK_PURGED_ALL)  # purges were applied when read until now, marked at commit from now on
    # one exchange part's receipt (its JSON body)
    con.execute("CREATE TABLE parts (attempt_id TEXT NOT NULL, part TEXT NOT NULL, run_id TEXT, "
                "receipt TEXT NOT NULL, PRIMARY KEY (attempt_id, part)) WITHOUT ROWID")


def _m004_parts_as_objects(con: sqlite3.Connection, root: Path) -> None:
    """Exchange-part bytes become objects named by ``parts.sha256`` instead of files ``parts/<attempt
    key>/<part>.bin`` (docs/store.md, "Stores written by earlier versions")."""
    con.execute("ALTER TABLE parts ADD COLUMN sha256 TEXT")
    con.execute("UPDATE parts SET sha256 = json_extract(receipt, '$.sha256') "
                "WHERE json_extract(receipt, '$.persistence') = 'stored'")
    con.execute("CREATE INDEX parts_sha256 ON parts (sha256) WHERE sha256 IS NOT NULL")
    objects = ObjectDB(root, create=False)
    stored = con.execute("SELECT attempt_id, part, sha256 FROM parts WHERE sha256 IS NOT NULL").fetchall()
    for attempt_id, part, digest in stored:
        old = root / "parts" / hashlib.sha256(attempt_id.encode("utf-8", "surrogatepass")).hexdigest() / f"{part}.bin"
        if isinstance(digest, str) and HEX64.fullmatch(digest) and not objects.has(digest):
            try:
                if not old.is_symlink() and hashlib.sha256(old.read_bytes()).hexdigest() == digest:
                    os.link(old, objects.path(digest))
            except OSError:
                pass  # missing or unreadable: the part reads back as missing, as it would have
    shutil.rmtree(root / "parts", ignore_errors=True)


def _m005_store_id(con: sqlite3.Connection, root: Path) -> None:
    """A random id of this store, on its attempt spans and its facts (docs/wire.md, ``otel_inputs.store.id``)."""
    con.execute("INSERT OR IGNORE INTO meta VALUES ('store_id', lower(hex(randomblob(16))))")


MIGRATIONS: tuple[tuple[str, Callable[[sqlite3.Connection, Path], None]], ...] = (
    ("m001_initial", _m001_initial),
    ("m002_remote_objects", _m002_remote_objects),
    ("m003_part_receipts", _m003_part_receipts),
    ("m004_parts_as_objects", _m004_parts_as_objects),
    ("m005_store_id", _m005_store_id),
)


@dataclass
class _Conn:
    con: sqlite3.Connection
    lock: threading.Lock = field(default_factory=threading.Lock)


_conns: dict[tuple[str, Role], _Conn] = {}
_conns_lock = threading.RLock()  # re-entered: a first connection opens the MAINT one
_abandoned: list[_Conn] = []  # a parent's connections: never used or closed in a child


def _after_fork_in_child() -> None:
    global _conns_lock
    _abandoned.extend(_conns.values())
    _conns.clear()
    _conns_lock = threading.RLock()
    chores.reset()


class _Chores:
    """This process's one background thread for the catalog: ended marks (span end on the agent's
    thread costs a dict insert) and WAL checkpoints of agent commits, gathered over 50 ms.

    A mark lost to a crash costs nothing: retention treats a dead owner's attempts as ended.
    """

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self._cond = threading.Condition()
        self._ended: dict[str, tuple[Catalog, list[str]]] = {}
        self._checkpoint: set[str] = set()
        self._busy = False
        self._thread: threading.Thread | None = None

    def submit(self, catalog: Catalog, ended: str | None = None) -> None:
        with self._cond:
            if ended is not None:
                self._ended.setdefault(catalog.path, (catalog, []))[1].append(ended)
            else:
                self._checkpoint.add(catalog.path)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="otel-inputs-catalog", daemon=True)
                self._thread.start()
            self._cond.notify_all()

    def flush(self, timeout: float = 30.0) -> None:
        with self._cond:
            self._cond.wait_for(lambda: not (self._ended or self._busy), timeout)

    def _run(self) -> None:
        cons: dict[str, sqlite3.Connection] = {}
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._ended or self._checkpoint)
            time.sleep(CHECKPOINT_EVERY_S)
            with self._cond:
                ended, paths, self._ended, self._checkpoint = self._ended, self._checkpoint, {}, set()
                self._busy = True
            try:
                for catalog, ids in ended.values():
                    try:
                        catalog.mark_ended(ids)
                    except Exception:  # noqa: BLE001 - a background chore must never kill the thread
                        pass
                for path in paths:
                    try:
                        con = cons.get(path) or cons.setdefault(path, sqlite3.connect(path, timeout=1.0,
                                                                                      isolation_level=None))
                        con.execute("PRAGMA wal_checkpoint(PASSIVE)")
                    except sqlite3.Error:
                        pass  # the next commit asks again; readers see every commit meanwhile
            finally:
                with self._cond:
                    self._busy = False
                    self._cond.notify_all()


chores = _Chores()
os.register_at_fork(after_in_child=_after_fork_in_child)


class Catalog:
    """The catalog of the store at ``root``; files and schema appear on first use."""

    def __init__(self, root: Path, *, create: bool = True) -> None:
        self.root = root
        self.path = str(root / CATALOG_FILE)
        self.create = create
        self._store_id: str | None = None

    def exists(self) -> bool:
        return os.path.exists(self.path)

    def _conn(self, role: Role) -> _Conn:
        c = _conns.get((self.path, role))  # no lock on the agent's hot path
        if c is None:
            with _conns_lock:
                c = _conns.get((self.path, role)) or _conns.setdefault((self.path, role), _Conn(self._connect(role)))
        return c

    def _connect(self, role: Role) -> sqlite3.Connection:
        if not self.exists() and not self.create:
            raise FileNotFoundError(self.path)
        con = sqlite3.connect(self.path, timeout=AGENT_BUSY_S if role is Role.AGENT else MAINT_BUSY_S,
                              isolation_level=None, check_same_thread=False)
        con.execute("PRAGMA journal_mode=WAL")
        con.execute("PRAGMA synchronous=" + ("FULL" if role is Role.MAINT else "NORMAL"))
        if role is Role.AGENT:
            con.execute("PRAGMA wal_autocheckpoint=0")
            con.execute("PRAGMA busy_timeout=0")  # see _begin
        if role is not Role.MAINT:
            self._conn(Role.MAINT)  # the schema is migrated once, on the patient connection
        else:
            self._migrate(con, self.root)
        return con

    @staticmethod
    def _migrate(con: sqlite3.Connection, root: Path) -> None:
        con.execute("CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied_at_ns INTEGER NOT NULL)")
        done = {r[0] for r in con.execute("SELECT name FROM _migrations")}
        for name, apply in MIGRATIONS:
            if name in done:
                continue
            with transaction(con):
                if con.execute("SELECT 1 FROM _migrations WHERE name = ?", [name]).fetchone() is None:
                    apply(con, root)
                    con.execute("INSERT INTO _migrations VALUES (?, ?)", [name, time.time_ns()])

    @contextmanager
    def write(self, role: Role = Role.MAINT, *, durable: bool = True) -> Iterator[sqlite3.Connection]:
        """One write transaction (``BEGIN IMMEDIATE`` … ``COMMIT``) on this process's connection.

        ``durable=False`` on a MAINT connection commits without the WAL fsync: a series of such
        transactions is made durable by the next ordinary MAINT commit (its fsync covers the whole
        WAL), so a pass holds the write lock through one fsync instead of one per transaction.
        """
        c = self._conn(role)
        relaxed = not durable and role is Role.MAINT
        with c.lock:
            if relaxed:
                c.con.execute("PRAGMA synchronous=NORMAL")
            try:
                with transaction(c.con, role):
                    yield c.con
            finally:
                if relaxed:
                    c.con.execute("PRAGMA synchronous=FULL")
        if role is Role.AGENT:
            chores.submit(self)

    def sync_wal(self) -> None:
        """fsync the WAL without holding the write lock, so the ``FULL`` commit that follows a
        series of ``durable=False`` transactions has little left to flush while agents wait."""
        try:
            fd = os.open(self.path + "-wal", os.O_RDONLY | os.O_CLOEXEC)  # no SQLite lock lives on -wal
        except FileNotFoundError:
            return
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        c = self._conn(Role.READ)
        with c.lock:
            c.con.execute("BEGIN")  # one snapshot for everything read inside
            try:
                yield c.con
            finally:
                c.con.execute("ROLLBACK")

    def store_id(self) -> str:
        """This store's random id (catalog migration ``m005_store_id``)."""
        if self._store_id is None:
            with self.read() as con:
                self._store_id = con.execute("SELECT value FROM meta WHERE key = 'store_id'").fetchone()[0]
        return self._store_id

    @staticmethod
    def next_seq(con: sqlite3.Connection) -> int:
        """The change number of this write transaction (the exporter lands what changed after its last)."""
        con.execute("UPDATE meta SET value = value + 1 WHERE key = 'changed_seq'")
        return con.execute("SELECT value FROM meta WHERE key = 'changed_seq'").fetchone()[0]

    # -- writes ---------------------------------------------------------------------------------
    def commit_attempt(self, record: AttemptRecord, objects: Sequence[tuple[str, int]], present: Callable[[str], bool],
                       want_changes: bool = False) -> tuple[bool, list[ItemChange]]:
        """Record an attempt (replacing an earlier commit of the same id) with its items and objects;
        returns (intact, and with ``want_changes`` its state now: :func:`item_changes`).

        ``present(digest)`` is asked inside the transaction for every digest an item claims: a
        removal moves bytes aside before it re-checks the catalog under the same lock, so bytes
        seen present here cannot be removed after this commit names them.  If any is gone, every
        item is recorded ``never_captured`` (``store_race``) and intact is False.
        """
        try:
            with self.write(Role.AGENT) as con:
                claimed = {i.sha256 for i in record.items if i.artifact_status == "available" and i.sha256}
                intact = all(present(d) for d in claimed)
                items = record.items if intact else tuple(
                    replace(i, artifact_status="never_captured", status_reason="store_race")
                    if i.artifact_status == "available" else i for i in record.items)
                seq = self.next_seq(con)
                row = [getattr(record, c) for c in ATTEMPT_COLUMNS[:-1]] + [seq]
                con.execute(f"INSERT OR REPLACE INTO attempts ({', '.join(ATTEMPT_COLUMNS)}) "
                            f"VALUES ({', '.join('?' * len(ATTEMPT_COLUMNS))})", row)
                con.execute("DELETE FROM items WHERE attempt_id = ?", [record.attempt_id])
                con.executemany(f"INSERT INTO items VALUES ({', '.join('?' * len(ITEM_COLUMNS))})",
                                [tuple(getattr(i, c) for c in ITEM_COLUMNS) for i in items])
                con.execute(MARK_PURGED, [record.attempt_id])  # a stale writer: purged stays purged
                if intact:
                    con.executemany("INSERT OR IGNORE INTO objects VALUES (?, ?)", objects)
                changes = item_changes(con, "t.attempt_id = ?", [record.attempt_id], seq) if want_changes else []
        except (sqlite3.Error, UnicodeEncodeError, ValueError) as exc:
            raise StoreWriteError(f"catalog commit failed: {exc}") from exc
        return intact, changes

    def mark_ended(self, attempt_ids: Sequence[str]) -> None:
        """Not fsynced: a lost mark costs nothing (a dead owner's attempts count as ended)."""
        with self.write(Role.MAINT, durable=False) as con:
            seq = self.next_seq(con)
            con.executemany("UPDATE attempts SET state = 'ended', ended_at_ns = ?, changed_seq = ? "
                            "WHERE attempt_id = ? AND state = 'running'",
                            [(time.time_ns(), seq, a) for a in attempt_ids])

    # -- reads ----------------------------------------------------------------------------------
    def attempts(self, con: sqlite3.Connection, where: str = "", args: Sequence[Any] = ()) -> list[AttemptRecord]:
        """Attempts matching ``where`` (SQL over ``attempts``), each with its items."""
        rows = con.execute(f"SELECT {', '.join(ATTEMPT_COLUMNS)} FROM attempts {where}", args).fetchall()
        items: dict[str, list[CatalogItem]] = {r[0]: [] for r in rows}
        ids = list(items)
        for k in range(0, len(ids), 500):
            part = ids[k:k + 500]
            for r in con.execute(f"SELECT {', '.join(ITEM_COLUMNS)} FROM items WHERE attempt_id IN "
                                 f"({', '.join('?' * len(part))}) ORDER BY attempt_id, seq", part):
                items[r[0]].append(CatalogItem(*r))
        return [AttemptRecord(*r, items=tuple(items[r[0]])) for r in rows]
