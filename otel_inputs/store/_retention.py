"""Disk-budget retention (docs/store.md, "Lifecycle of a snapshot"): evict the oldest ended attempts' bytes
until the store budget, the free-space floor and the run budgets hold; marks are durable before bytes go.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import socket
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import groupby
from operator import itemgetter
from typing import Any

from otel_inputs import names
from otel_inputs.store._catalog import Role, item_changes
from otel_inputs.store._changes import ItemChange, StoreChange
from otel_inputs.store._store import ArtifactStore

GC_LOCK = "gc.lock"
EVICTION_REASON = "disk_budget"
CHUNK = 250  # attempts per eviction transaction: an agent commit waits at most one of them
CHUNK_PAUSE_S = 0.001  # agents poll the lock every 0.2 ms (_catalog.AGENT_POLL_S)
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b)?\s*$", re.IGNORECASE)


def parse_size(text: str | None) -> int | None:
    """``"512M"`` → 536870912; ``None``/empty → ``None``; a clear ``ValueError`` otherwise."""
    if not text:
        return None
    m = _SIZE.match(text)
    if not m:
        raise ValueError(f"not a size: {text!r} (use bytes or a K/M/G/T suffix)")
    mult = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}[m.group(2).lower()]
    return int(float(m.group(1)) * mult)


@dataclass(frozen=True)
class RetentionPolicy:
    budget_bytes: int | None = None
    min_free_bytes: int | None = None
    run_budget_bytes: int | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> RetentionPolicy:
        env = os.environ if env is None else env
        return cls(parse_size(env.get(names.ENV_STORE_BUDGET)), parse_size(env.get(names.ENV_STORE_MIN_FREE)),
                   parse_size(env.get(names.ENV_RUN_BUDGET)))

    @property
    def active(self) -> bool:
        return any(v is not None for v in (self.budget_bytes, self.min_free_bytes, self.run_budget_bytes))

    def describe(self) -> str:
        limits = (("store budget", self.budget_bytes), ("run budget", self.run_budget_bytes),
                  ("min free", self.min_free_bytes))
        return ", ".join(f"{name} {v} bytes" for name, v in limits if v is not None) or "no limits"


@dataclass
class GcReport:
    evicted_attempts: int = 0
    evicted_items: int = 0
    deleted_objects: int = 0
    freed_bytes: int = 0
    total_bytes_after: int = 0
    protected_bytes: int = 0
    over_budget_after: bool = False


@dataclass
class StoreUsage:
    """What the store holds now: object and staging bytes, per run when asked, what is protected."""

    object_bytes: int
    objects: int
    staging_bytes: int
    protected: set[str]
    per_run: dict[str, int] | None = None

    @property
    def total_bytes(self) -> int:
        return self.object_bytes + self.staging_bytes


def _owner_alive(pid: Any, host: Any) -> bool:
    if host != socket.gethostname():
        return True  # another host's process: we cannot tell, so keep protecting it
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, owned by someone else
        pass
    return True


def _protected(con) -> set[str]:
    """Running attempts whose owner may still be capturing (a dead owner's attempt has ended)."""
    alive: dict[tuple[Any, Any], bool] = {}
    out = set()
    for aid, pid, host in con.execute("SELECT attempt_id, owner_pid, owner_host FROM attempts WHERE state = 'running'"):
        if alive.setdefault((pid, host), _owner_alive(pid, host)):
            out.add(aid)
    return out


def _run_bytes(con) -> dict[str, int]:
    return {run or "": used for run, used in con.execute(
        "SELECT run_id, sum(allocated) FROM (SELECT DISTINCT a.run_id, i.sha256 FROM items i "
        "JOIN attempts a ON a.attempt_id = i.attempt_id WHERE i.artifact_status = 'available') "
        "JOIN objects USING (sha256) GROUP BY run_id")}


def _bytes_of(con, attempt_ids: set[str]) -> int:
    return con.execute("SELECT coalesce(sum(allocated), 0) FROM objects WHERE sha256 IN (SELECT i.sha256 FROM items i "
                       "JOIN json_each(?) j ON i.attempt_id = j.value WHERE i.artifact_status = 'available')",
                       [json.dumps(sorted(attempt_ids))]).fetchone()[0]


def store_usage(store: ArtifactStore, *, per_run: bool = False) -> StoreUsage:
    """The store's usage from the catalog (one snapshot) plus a walk of staging."""
    staging = store.objects.staging_bytes()
    try:
        with store.catalog.read() as con:
            totals = dict(con.execute("SELECT key, value FROM meta WHERE key IN ('objects', 'object_bytes')"))
            return StoreUsage(totals["object_bytes"], totals["objects"], staging, _protected(con),
                              _run_bytes(con) if per_run else None)
    except FileNotFoundError:
        return StoreUsage(0, 0, staging, set(), {} if per_run else None)


@contextmanager
def _gc_lock(store: ArtifactStore) -> Iterator[None]:
    """Passes take turns, so a second pass sees the first one's evictions instead of repeating them."""
    try:
        fd = os.open(store.root / GC_LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError:
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


@dataclass
class _Plan:
    """Victims oldest first, with the refcounts the plan leaves behind (read lazily, per digest)."""

    refcount: dict[str, int] = field(default_factory=dict)
    victims: list[tuple[str, int]] = field(default_factory=list)  # (attempt id, committed_at_ns)
    chosen: set[str] = field(default_factory=set)
    last_refs: list[str] = field(default_factory=list)

    def take(self, attempt_id: str, committed: int, digests: list[tuple[str, int, int]]) -> int:
        freed = 0
        for digest, refs, size in digests:
            left = self.refcount[digest] = self.refcount.get(digest, refs) - 1
            if left == 0:
                freed += size
                self.last_refs.append(digest)
        self.victims.append((attempt_id, committed))
        self.chosen.add(attempt_id)
        return freed


def _candidates(con, protected: set[str], run: str | None = None) -> Iterator[tuple[str, int, list[tuple[str, int, int]]]]:
    """(attempt id, committed_at_ns, [(digest, available refs, allocated)]) oldest first, of
    unprotected attempts; refs are counted only for the rows read (the index on available digests)."""
    sql = ("SELECT a.attempt_id, a.committed_at_ns, i.sha256, (SELECT count(*) FROM items r WHERE r.sha256 = i.sha256 "
           "AND r.artifact_status = 'available'), coalesce(o.allocated, 0) FROM attempts a JOIN items i "
           "ON i.attempt_id = a.attempt_id AND i.artifact_status = 'available' LEFT JOIN objects o ON o.sha256 = i.sha256 "
           + ("WHERE coalesce(a.run_id, '') = ? " if run is not None else "")
           + "ORDER BY a.committed_at_ns, a.attempt_id")
    for (aid, committed), rows in groupby(con.execute(sql, [run] if run is not None else []), itemgetter(0, 1)):
        if aid not in protected:
            yield aid, committed, [(digest, refs, size) for _, _, digest, refs, size in rows]


def apply_retention(store: ArtifactStore, policy: RetentionPolicy, *, free_bytes: Callable[[str], int] | None = None,
                    now: float | None = None, progress: Callable[[int], None] | None = None) -> GcReport:
    """Evict oldest ended attempts' snapshots until every limit holds (or only protected bytes remain).
    The marks are durable before any byte is deleted: a crash leaves at worst unreferenced bytes, never
    a record that claims bytes that are gone."""
    measure_free = free_bytes or (lambda p: shutil.disk_usage(p).free)
    with _gc_lock(store):
        report = GcReport()
        usage = store_usage(store, per_run=policy.run_budget_bytes is not None)
        total = usage.total_bytes
        free_at_start = measure_free(str(store.root)) if policy.min_free_bytes is not None else None

        def over(freed: int) -> bool:
            if policy.budget_bytes is not None and total - freed > policy.budget_bytes:
                return True
            return free_at_start is not None and free_at_start + freed < policy.min_free_bytes

        plan, planned = _Plan(), 0
        if usage.per_run or over(0):
            with store.catalog.read() as con:
                for run, used in sorted((usage.per_run or {}).items()):
                    cap = policy.run_budget_bytes
                    if cap is None or used <= cap:
                        continue
                    for aid, committed, digests in _candidates(con, usage.protected, run):
                        if used <= cap:
                            break
                        if aid not in plan.chosen:
                            freed = plan.take(aid, committed, digests)
                            used, planned = used - freed, planned + freed
                if over(planned):
                    for aid, committed, digests in _candidates(con, usage.protected):
                        if not over(planned):
                            break
                        if aid not in plan.chosen:
                            planned += plan.take(aid, committed, digests)
        if plan.victims:
            _mark(store, plan.victims, report, progress)
            if report.evicted_attempts:
                deleted = store.remove_objects(plan.last_refs)
                report.deleted_objects, report.freed_bytes = len(deleted), sum(deleted.values())
                total -= report.freed_bytes
        report.total_bytes_after = total
        with store.catalog.read() as con:
            report.protected_bytes = _bytes_of(con, usage.protected) + usage.staging_bytes
        if policy.min_free_bytes is not None:
            free_at_start = measure_free(str(store.root))
        report.over_budget_after = over(0)
        return report


def _mark(store: ArtifactStore, victims: list[tuple[str, int]], report: GcReport,
          progress: Callable[[int], None] | None) -> None:
    """Mark the victims' available items evicted, :data:`CHUNK` attempts per transaction, then make
    the marks durable (the caller deletes bytes only after this returns); an attempt committed
    again since the plan (another ``committed_at_ns``) is left alone."""
    at = time.time_ns()
    changes: list[ItemChange] = []
    for k in range(0, len(victims), CHUNK):
        chunk = victims[k:k + CHUNK]
        with store.catalog.write(Role.MAINT, durable=False) as con:
            report.evicted_items += con.executemany(
                "UPDATE items SET artifact_status = 'evicted', status_reason = ?, evicted_at_ns = ? WHERE attempt_id = ? "
                "AND artifact_status = 'available' AND EXISTS (SELECT 1 FROM attempts WHERE attempt_id = ? "
                "AND committed_at_ns = ?)", [(EVICTION_REASON, at, a, a, c) for a, c in chunk]).rowcount
            seq = store.catalog.next_seq(con)
            report.evicted_attempts += con.executemany(
                "UPDATE attempts SET changed_seq = ? WHERE attempt_id = ? AND committed_at_ns = ?",
                [(seq, a, c) for a, c in chunk]).rowcount
            if store.listeners:  # the victims' state now, for the store's listeners
                changes += item_changes(con, "t.attempt_id IN (SELECT value FROM json_each(?))",
                                        [json.dumps([a for a, _ in chunk])], seq)
        if progress:
            progress(len(chunk))
        time.sleep(CHUNK_PAUSE_S)  # let waiting agent commits take the write lock
    store.catalog.sync_wal()  # the chunks' bytes reach the disk while nobody waits for the lock
    with store.catalog.write(Role.MAINT) as con:  # FULL: its WAL fsync covers every chunk above
        con.execute("INSERT INTO evictions (at_ns, reason, attempts, items) VALUES (?, ?, ?, ?)",
                    [at, EVICTION_REASON, report.evicted_attempts, report.evicted_items])
    if changes:
        store.notify(StoreChange(tuple(changes)))


def store_status(store: ArtifactStore, policy: RetentionPolicy) -> dict[str, Any]:
    """Usage against the limits, overall and per run, for ``otel-inputs store status``."""
    usage = store_usage(store, per_run=True)
    with store.catalog.read() as con:
        protected = _bytes_of(con, usage.protected)
        attempts = con.execute("SELECT count(*) FROM attempts").fetchone()[0]
    return {
        "store": str(store.root),
        "attempts": attempts,
        "objects": usage.objects,
        "object_bytes": usage.object_bytes,
        "staging_bytes": usage.staging_bytes,
        "protected_bytes": protected + usage.staging_bytes,
        "budget_bytes": policy.budget_bytes,
        "run_budget_bytes": policy.run_budget_bytes,
        "min_free_bytes": policy.min_free_bytes,
        "free_bytes": shutil.disk_usage(store.root).free,
        "runs": {run or "(no run)": used for run, used in sorted((usage.per_run or {}).items())},
    }
