"""Disk-budget retention for the artifact store: evict the oldest snapshot bytes of ended attempts.

Snapshot bytes are kept by allocated disk space, never by age.  Two limits, both optional: a byte
budget for the store's objects and a minimum of free space on its filesystem; a third caps any one
run.  When a limit is crossed, the oldest terminal attempts' snapshots are marked ``evicted``
(reason ``disk_budget``) in their manifests, and bytes are deleted only once no available item
references them.  Running attempts (a live owner) and staged captures are protected.  Metadata,
hashes and provenance always stay.

Limits come from the environment (sizes accept K/M/G suffixes) or from flags of
``otel-inputs store gc``:

* ``OTEL_INPUTS_STORE_BUDGET``: snapshot byte budget of the whole store;
* ``OTEL_INPUTS_STORE_MIN_FREE``: minimum free bytes on the store's filesystem;
* ``OTEL_INPUTS_RUN_BUDGET``: snapshot byte cap for any single run.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import time
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from otel_inputs._store import ArtifactStore, available_digests

EVICTION_REASON = "disk_budget"
ENV_BUDGET = "OTEL_INPUTS_STORE_BUDGET"
ENV_MIN_FREE = "OTEL_INPUTS_STORE_MIN_FREE"
ENV_RUN_BUDGET = "OTEL_INPUTS_RUN_BUDGET"

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b)?\s*$", re.IGNORECASE)


def parse_size(text: str | int | None) -> int | None:
    """``"512M"`` → 536870912; ``None``/empty → ``None``; a clear ``ValueError`` otherwise."""
    if text is None or text == "":
        return None
    if isinstance(text, int):
        return text
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
        return cls(parse_size(env.get(ENV_BUDGET)), parse_size(env.get(ENV_MIN_FREE)),
                   parse_size(env.get(ENV_RUN_BUDGET)))

    @property
    def active(self) -> bool:
        return any(v is not None for v in (self.budget_bytes, self.min_free_bytes, self.run_budget_bytes))

    def describe(self) -> str:
        parts = []
        if self.budget_bytes is not None:
            parts.append(f"store budget {self.budget_bytes} bytes")
        if self.run_budget_bytes is not None:
            parts.append(f"run budget {self.run_budget_bytes} bytes")
        if self.min_free_bytes is not None:
            parts.append(f"min free {self.min_free_bytes} bytes")
        return ", ".join(parts) or "no limits"


@dataclass
class _Attempt:
    attempt_id: str
    run_id: str | None
    committed_at_ns: int
    protected: bool
    available: set[str] = field(default_factory=set)  # digests this attempt still holds


@dataclass
class StoreIndex:
    """What the store holds: attempts, their available digests, object sizes and staging bytes."""

    attempts: dict[str, _Attempt]
    object_bytes: dict[str, int]
    staging_bytes: int
    unreadable_manifests: list[str]

    def refcount(self) -> dict[str, int]:
        counts: dict[str, int] = defaultdict(int)
        for a in self.attempts.values():
            for d in a.available:
                counts[d] += 1
        return counts

    def total_bytes(self) -> int:
        return sum(self.object_bytes.values()) + self.staging_bytes

    def run_bytes(self) -> dict[str, int]:
        per_run: dict[str, set[str]] = defaultdict(set)
        for a in self.attempts.values():
            per_run[a.run_id or ""].update(a.available)
        return {run: sum(self.object_bytes.get(d, 0) for d in ds) for run, ds in per_run.items()}

    def protected_bytes(self) -> int:
        digests: set[str] = set()
        for a in self.attempts.values():
            if a.protected:
                digests |= a.available
        return sum(self.object_bytes.get(d, 0) for d in digests) + self.staging_bytes


def _allocated(st: os.stat_result) -> int:
    return getattr(st, "st_blocks", 0) * 512 or st.st_size


def _owner_alive(owner: Any) -> bool:
    if not isinstance(owner, dict) or owner.get("host") != socket.gethostname():
        return True  # another host's process: we cannot tell, so keep protecting it
    pid = owner.get("pid")
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def scan_store(store: ArtifactStore, progress: Callable[[int], None] | None = None) -> StoreIndex:
    """Index manifests, objects and staging (one pass each; no object bytes are read)."""
    attempts: dict[str, _Attempt] = {}
    bad: list[str] = []
    ended = store.ended_attempts()
    for n, body in enumerate(store.iter_manifests(), 1):
        if "error" in body:
            bad.append(body["error"])
            continue
        running = (body.get("state") == "running" and body["attempt_id"] not in ended
                   and _owner_alive(body.get("owner")))
        a = _Attempt(body["attempt_id"], body.get("run_id"), int(body.get("committed_at_ns") or 0), running)
        a.available.update(available_digests(body))
        attempts[a.attempt_id] = a
        if progress and n % 1000 == 0:
            progress(1000)
    sizes: dict[str, int] = {}
    with os.scandir(store.objects_dir) as it:
        for entry in it:
            try:
                st = entry.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue
            sizes[entry.name] = _allocated(st)
    staging = 0
    for dirpath, _dirs, files in os.walk(store.staging_dir):
        for f in files:
            try:
                staging += _allocated(os.lstat(os.path.join(dirpath, f)))
            except FileNotFoundError:
                pass
    return StoreIndex(attempts, sizes, staging, bad)


@dataclass
class GcReport:
    evicted_attempts: int = 0
    evicted_items: int = 0
    deleted_objects: int = 0
    freed_bytes: int = 0
    total_bytes_after: int = 0
    protected_bytes: int = 0
    over_budget_after: bool = False
    reasons: list[str] = field(default_factory=list)


def _mark_evicted(body: dict[str, Any]) -> int:
    """Mark a manifest's available items evicted (disk budget); return how many."""
    evicted = 0
    for item in body.get("items", ()) or ():
        if item.get("artifact_status") == "available":
            item["artifact_status"] = "evicted"
            item["status_reason"] = EVICTION_REASON
            item["evicted_at_ns"] = time.time_ns()
            evicted += 1
    return evicted


def _evict_attempt(store: ArtifactStore, attempt_id: str) -> int:
    evicted = 0

    def change(body: dict[str, Any]) -> bool:
        nonlocal evicted
        evicted = _mark_evicted(body)
        return evicted > 0

    store.modify_manifest(attempt_id, change)
    return evicted


EVICTION_BATCH = 256


def apply_retention(
    store: ArtifactStore,
    policy: RetentionPolicy,
    *,
    free_bytes: Callable[[str], int] | None = None,
    now: float | None = None,
    progress: Callable[[int], None] | None = None,
) -> GcReport:
    """Evict oldest terminal attempts' snapshots until every limit holds (or only protected bytes remain).

    Ordering is crash-safe: an attempt's manifest is marked evicted before any of its bytes are
    deleted, so a crash leaves at worst unreferenced bytes (removed by reconciliation), never a
    manifest that claims bytes that are gone.
    """
    report = GcReport()
    scan_started_ns = time.time_ns()
    index = scan_store(store, progress)
    measure_free = free_bytes or (lambda p: shutil.disk_usage(p).free)
    now = time.time() if now is None else now
    refcount = index.refcount()
    total = index.total_bytes()

    def over_global(freed_not_yet_deleted: int = 0) -> bool:
        if policy.budget_bytes is not None and total - freed_not_yet_deleted > policy.budget_bytes:
            return True
        if (policy.min_free_bytes is not None
                and measure_free(str(store.root)) + freed_not_yet_deleted < policy.min_free_bytes):
            return True
        return False

    last_refs: list[str] = []

    def release(batch: list[_Attempt]) -> None:
        """Mark a batch evicted (durably, one sync); its bytes go in one pass once all batches are marked."""
        if not batch:
            return
        counted: dict[str, int] = {}

        def change(body: dict[str, Any]) -> bool:
            counted[body["attempt_id"]] = _mark_evicted(body)
            return counted[body["attempt_id"]] > 0

        store.modify_manifests([a.attempt_id for a in batch], change)
        report.evicted_items += sum(counted.values())
        for attempt in batch:
            report.evicted_attempts += 1
            for digest in attempt.available:
                refcount[digest] -= 1
                if refcount[digest] <= 0:
                    last_refs.append(digest)
            attempt.available = set()
        if progress:
            progress(len(batch))

    def bytes_freed_by(attempt: _Attempt, pending: dict[str, int]) -> int:
        freed = 0
        for digest in attempt.available:
            pending[digest] = pending.get(digest, refcount[digest]) - 1
            if pending[digest] <= 0:
                freed += index.object_bytes.get(digest, 0)
        return freed

    def evict_until(candidates: list[_Attempt], still_over: Callable[[int], bool]) -> int:
        """Release candidates oldest first, in batches, until ``still_over(planned_freed)`` is false."""
        batch: list[_Attempt] = []
        pending: dict[str, int] = {}
        planned = 0
        for a in candidates:
            if not a.available:
                continue
            if not still_over(planned):
                break
            planned += bytes_freed_by(a, pending)
            batch.append(a)
            if len(batch) >= EVICTION_BATCH:
                release(batch)
                batch, pending = [], {}  # refcounts are now real; `planned` stays cumulative
        release(batch)
        return planned

    terminal = sorted((a for a in index.attempts.values() if not a.protected and a.available),
                      key=lambda a: (a.committed_at_ns, a.attempt_id))
    run_planned = 0
    if policy.run_budget_bytes is not None:
        for run, used in index.run_bytes().items():
            if used <= policy.run_budget_bytes:
                continue
            report.reasons.append(f"run {run!r} over its budget ({used} > {policy.run_budget_bytes})")
            cap = policy.run_budget_bytes
            start_used = used
            run_attempts = [a for a in terminal if (a.run_id or "") == run]
            run_planned += evict_until(run_attempts, lambda planned: start_used - planned > cap)
    if over_global(run_planned):
        report.reasons.append("store over its budget or under its free-space floor")
        start_total = total - run_planned
        free_at_start = (measure_free(str(store.root)) + run_planned) if policy.min_free_bytes is not None else None

        def still_over(planned: int) -> bool:
            if policy.budget_bytes is not None and start_total - planned > policy.budget_bytes:
                return True
            if free_at_start is not None and free_at_start + planned < policy.min_free_bytes:
                return True
            return False

        evict_until(terminal, still_over)
    if last_refs:
        # One removal pass (one re-read of manifests written since the scan) for every batch.
        deleted, _freed = store.remove_objects(last_refs, scan_started_ns)
        for digest in last_refs:
            if not store.object_path(digest).exists():
                size = index.object_bytes.pop(digest, 0)
                total -= size
                report.freed_bytes += size
        report.deleted_objects += deleted
    report.total_bytes_after = total
    report.protected_bytes = index.protected_bytes()
    report.over_budget_after = over_global()
    return report


def store_status(store: ArtifactStore, policy: RetentionPolicy) -> dict[str, Any]:
    """Usage against the limits, overall and per run, for ``otel-inputs store status``."""
    index = scan_store(store)
    disk = shutil.disk_usage(store.root)
    per_run = index.run_bytes()
    return {
        "store": str(store.root),
        "attempts": len(index.attempts),
        "objects": len(index.object_bytes),
        "object_bytes": sum(index.object_bytes.values()),
        "staging_bytes": index.staging_bytes,
        "protected_bytes": index.protected_bytes(),
        "budget_bytes": policy.budget_bytes,
        "run_budget_bytes": policy.run_budget_bytes,
        "min_free_bytes": policy.min_free_bytes,
        "free_bytes": disk.free,
        "runs": {run or "(no run)": used for run, used in sorted(per_run.items())},
        "unreadable_manifests": index.unreadable_manifests,
    }


class RetentionGate:
    """Keeps an observer's captures inside the limits without making the agent wait on storage.

    Before capture it says how many bytes may still be added (from a cached index plus what this
    process committed since); after a commit that crosses a limit it runs retention on a
    background thread, one pass at a time.
    """

    def __init__(self, store: ArtifactStore, policy: RetentionPolicy, *, refresh_s: float = 5.0,
                 free_bytes: Callable[[str], int] | None = None) -> None:
        import threading

        self.store = store
        self.policy = policy
        self.refresh_s = refresh_s
        self._free = free_bytes or (lambda p: shutil.disk_usage(p).free)
        self._lock = threading.Lock()
        self._index: StoreIndex | None = None
        self._indexed_at = 0.0
        self._added: dict[str | None, int] = defaultdict(int)
        self._gc_thread: threading.Thread | None = None
        self.last_report: GcReport | None = None

    def _fresh_index(self) -> StoreIndex:
        with self._lock:
            if self._index is None or time.monotonic() - self._indexed_at > self.refresh_s:
                self._index = scan_store(self.store)
                self._indexed_at = time.monotonic()
                self._added.clear()
            return self._index

    def remaining(self, run_id: str | None) -> int | None:
        if not self.policy.active:
            return None
        index = self._fresh_index()
        limits: list[int] = []
        added_total = sum(self._added.values())
        if self.policy.budget_bytes is not None:
            limits.append(self.policy.budget_bytes - index.total_bytes() - added_total)
        if self.policy.run_budget_bytes is not None and run_id is not None:
            limits.append(self.policy.run_budget_bytes - index.run_bytes().get(run_id, 0) - self._added[run_id])
        if self.policy.min_free_bytes is not None:
            try:
                limits.append(self._free(str(self.store.root)) - self.policy.min_free_bytes)
            except OSError:
                limits.append(0)
        left = max(0, min(limits)) if limits else None
        if left is not None and left <= 0:
            self.collect_in_background()
        return left

    def committed(self, run_id: str | None, nbytes: int) -> None:
        """Account bytes just committed; start retention in the background if a limit is crossed."""
        if not self.policy.active:
            return
        with self._lock:
            self._added[run_id] += nbytes
        if self.remaining(run_id) == 0:
            self.collect_in_background()

    def collect_in_background(self) -> None:
        import threading

        with self._lock:
            if self._gc_thread is not None and self._gc_thread.is_alive():
                return
            self._gc_thread = threading.Thread(target=self._collect, name="otel-inputs-retention", daemon=True)
            self._gc_thread.start()

    def _collect(self) -> None:
        try:
            self.last_report = apply_retention(self.store, self.policy, free_bytes=self._free)
        except Exception:  # noqa: BLE001 - retention must never take the agent down
            return
        with self._lock:
            self._index = None

    def wait(self, timeout: float | None = None) -> None:
        t = self._gc_thread
        if t is not None:
            t.join(timeout)
