"""Disk-budget retention for the artifact store: evict the oldest snapshot bytes of ended attempts.

Snapshot bytes are kept by allocated disk space, never by age.  Two limits, both optional: a byte
budget for the store's objects and a minimum of free space on its filesystem; a third caps any one
run.  When a limit is crossed, the oldest terminal attempts' snapshots are marked ``evicted``
(reason ``disk_budget``) in their manifests, and bytes are deleted only once no available item
references them.  Running attempts (a live owner) and staged captures are protected.  Metadata,
hashes and provenance always stay.  A pass reads the manifests through the derived manifest index
(:mod:`otel_inputs.store._store_index`), so only manifests changed since the last pass are read.

Limits come from the environment (sizes accept K/M/G suffixes) or from flags of
``otel-inputs store gc``:

* ``OTEL_INPUTS_STORE_BUDGET``: snapshot byte budget of the whole store;
* ``OTEL_INPUTS_STORE_MIN_FREE``: minimum free bytes on the store's filesystem;
* ``OTEL_INPUTS_RUN_BUDGET``: snapshot byte cap for any single run.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import re
import shutil
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from otel_inputs import names
from otel_inputs.store._retention_evict import GcReport, _candidates, _evict, _Plan, still_running
from otel_inputs.store._store import ArtifactStore
from otel_inputs.store._store_evictions import mark_evicted
from otel_inputs.store._store_index import ManifestView, refresh
from otel_inputs.store._store_index import save as save_index
from otel_inputs.store._store_io import read_ended_quoted


_log = logging.getLogger(__name__)

GC_LOCK = "gc.lock"

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
        return cls(parse_size(env.get(names.ENV_STORE_BUDGET)), parse_size(env.get(names.ENV_STORE_MIN_FREE)),
                   parse_size(env.get(names.ENV_RUN_BUDGET)))

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
    """What the store holds: one row per manifest (see :class:`ManifestView`), object sizes and
    staging bytes; ``protected`` holds the rows of running attempts (a live owner, not ended)."""

    view: ManifestView
    object_bytes: dict[str, int]
    staging_bytes: int
    unreadable_manifests: list[str]
    protected: set[int] = field(default_factory=set)
    _runs: dict[str, str | None] = field(default_factory=dict, repr=False)

    @property
    def attempts(self) -> dict[str, _Attempt]:
        """Per attempt id (built on demand: retention itself works on the columns)."""
        v = self.view
        out: dict[str, _Attempt] = {}
        for i in range(len(v)):
            a = _Attempt(json.loads(v.aids[i]), self.run_of(i), int(v.committed[i]), i in self.protected,
                         set(v.digest_list(i)))
            out[a.attempt_id] = a
        return out

    def run_of(self, i: int) -> str | None:
        raw = self.view.runs[i]
        if raw not in self._runs:
            self._runs[raw] = json.loads(raw)
        return self._runs[raw]

    def refcount(self) -> Counter[str]:
        joined = ",".join(d for d in self.view.digests if d)
        return Counter(joined.split(",")) if joined else Counter()

    def total_bytes(self) -> int:
        return sum(self.object_bytes.values()) + self.staging_bytes

    def run_bytes(self) -> dict[str, int]:
        per_run: dict[str, set[str]] = defaultdict(set)
        for i, d in enumerate(self.view.digests):
            if d:
                per_run[self.run_of(i) or ""].update(d.split(","))
        return {run: sum(self.object_bytes.get(d, 0) for d in ds) for run, ds in per_run.items()}

    def protected_bytes(self) -> int:
        digests: set[str] = set()
        for i in self.protected:
            digests.update(self.view.digest_list(i))
        return sum(self.object_bytes.get(d, 0) for d in digests) + self.staging_bytes


def _allocated(st: os.stat_result) -> int:
    return getattr(st, "st_blocks", 0) * 512 or st.st_size


def scan_store(store: ArtifactStore, progress: Callable[[int], None] | None = None, *, persist: bool = True,
               cached: ManifestView | None = None) -> StoreIndex:
    """Index manifests (through the validated manifest index), objects and staging; no object bytes are read."""
    view = refresh(store.root, progress=progress, persist=persist, cached=cached)
    protected: set[int] = set()
    running = [i for i, owner in enumerate(view.running) if owner]
    if running:
        ended = read_ended_quoted(store.ended_dir)
        alive: dict[str, bool] = {}
        protected.update(i for i in running if still_running(view.aids[i], view.running[i], ended, alive))
    staging = 0
    for dirpath, _dirs, files in os.walk(store.staging_dir):
        for f in files:
            try:
                staging += _allocated(os.lstat(os.path.join(dirpath, f)))
            except FileNotFoundError:
                pass
    bad = [message for _ident, message in view.errors.values()]
    return StoreIndex(view, dict(view.object_sizes), staging, bad, protected)


def _mark_evicted(body: dict[str, Any]) -> int:
    """Mark a manifest's available items evicted (disk budget) now; return how many."""
    return mark_evicted(body, time.time_ns())


def _evict_attempt(store: ArtifactStore, attempt_id: str) -> int:
    """Mark one attempt's available items evicted (disk budget); how many were marked."""
    evicted = 0

    def change(body: dict[str, Any]) -> bool:
        nonlocal evicted
        evicted = _mark_evicted(body)
        return evicted > 0

    store.modify_manifest(attempt_id, change)
    return evicted


@contextmanager
def _gc_lock(store: ArtifactStore) -> Iterator[None]:
    """Passes take turns, so a second pass sees the first one's evictions instead of repeating them.

    Safety never rests on it (the object-removal protocol does): an unusable lock file only costs that.
    """
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


def apply_retention(
    store: ArtifactStore,
    policy: RetentionPolicy,
    *,
    free_bytes: Callable[[str], int] | None = None,
    now: float | None = None,
    progress: Callable[[int], None] | None = None,
) -> GcReport:
    """Evict oldest terminal attempts' snapshots until every limit holds (or only protected bytes remain).

    Ordering is crash-safe: manifests are marked evicted and synced before any of their bytes are
    deleted, so a crash leaves at worst unreferenced bytes (removed by reconciliation), never a
    manifest that claims bytes that are gone.
    """
    with _gc_lock(store):
        return _apply(store, policy, free_bytes or (lambda p: shutil.disk_usage(p).free), progress)


def _apply(store: ArtifactStore, policy: RetentionPolicy, measure_free: Callable[[str], int],
           progress: Callable[[int], None] | None) -> GcReport:
    report = GcReport()
    index = scan_store(store, progress, persist=False)
    total = index.total_bytes()

    def over_global(freed_not_yet_deleted: int = 0) -> bool:
        if policy.budget_bytes is not None and total - freed_not_yet_deleted > policy.budget_bytes:
            return True
        if (policy.min_free_bytes is not None
                and measure_free(str(store.root)) + freed_not_yet_deleted < policy.min_free_bytes):
            return True
        return False

    plan: _Plan | None = None
    run_planned = 0
    if policy.run_budget_bytes is not None:
        cap = policy.run_budget_bytes
        candidates: list[int] | None = None
        for run, used in index.run_bytes().items():
            if used <= cap:
                continue
            report.reasons.append(f"run {run!r} over its budget ({used} > {cap})")
            plan = plan or _Plan(index, index.refcount())
            candidates = _candidates(index) if candidates is None else candidates
            in_run = [i for i in candidates if (index.run_of(i) or "") == run]
            run_planned += plan.evict_until(in_run, lambda planned, start=used: start - planned > cap)
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

        plan = plan or _Plan(index, index.refcount())
        plan.evict_until(_candidates(index), still_over)
    view = index.view
    if plan is not None and plan.victims:
        view.objects_ident = ""  # the objects directory changes now: list it again next time
        deleted, view = _evict(store, plan, report, progress)
        for digest in deleted:
            size = index.object_bytes.pop(digest, 0)
            view.object_sizes.pop(digest, None)
            total -= size
            report.freed_bytes += size
            report.deleted_objects += 1
    report.total_bytes_after = total
    report.protected_bytes = index.protected_bytes()
    report.over_budget_after = over_global()
    if view.dirty:
        save_index(store.root, view)
    return report


def store_status(store: ArtifactStore, policy: RetentionPolicy) -> dict[str, Any]:
    """Usage against the limits, overall and per run, for ``otel-inputs store status``."""
    index = scan_store(store)
    disk = shutil.disk_usage(store.root)
    per_run = index.run_bytes()
    return {
        "store": str(store.root),
        "attempts": len(set(index.view.aids)),
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

    Before capture it says how many bytes may still be added: the totals of the last store scan plus
    what this process committed since.  Scans run on a background thread (at 100,000 manifests one
    takes a second or more); a stale index is used while its successor is built.  Only the very
    first call waits for the first scan, at most ``first_wait_s``; if that is not enough the byte
    budgets are unknown for now and only the free-space floor (one statvfs) is applied.  After a
    commit that crosses a limit retention runs in the background, one pass at a time.
    """

    def __init__(self, store: ArtifactStore, policy: RetentionPolicy, *, refresh_s: float = 5.0,
                 free_bytes: Callable[[str], int] | None = None, first_wait_s: float = 0.5) -> None:
        import threading

        self.store = store
        self.policy = policy
        self.refresh_s = refresh_s
        self.first_wait_s = first_wait_s
        self._free = free_bytes or (lambda p: shutil.disk_usage(p).free)
        self._lock = threading.Lock()
        self._scan_lock = threading.Lock()
        self._scanned = threading.Event()
        self._index: StoreIndex | None = None
        self._total = 0
        self._per_run: dict[str, int] = {}
        self._indexed_at = 0.0
        self._added: dict[str | None, int] = defaultdict(int)
        self._scan_thread: threading.Thread | None = None
        self._gc_thread: threading.Thread | None = None
        self.last_report: GcReport | None = None

    def start(self) -> None:
        """Begin the first scan in the background (an observer calls this when it opens the store)."""
        if self.policy.active:
            self._scan_in_background()

    def _scan_in_background(self) -> None:
        import threading

        with self._lock:
            if self._scan_thread is not None and self._scan_thread.is_alive():
                return
            self._scan_thread = threading.Thread(target=self._scan, name="otel-inputs-retention-scan", daemon=True)
            self._scan_thread.start()

    def _scan(self) -> None:
        with self._scan_lock:  # one scan at a time: each settles the commits counted before it began
            self._scan_locked()

    def _scan_locked(self) -> None:
        try:
            with self._lock:
                # Validate against our last view, not the saved file: only what changed since is read.
                cached = self._index.view if self._index is not None else None
                added_before = dict(self._added)
            index = scan_store(self.store, persist=cached is None, cached=cached)
            total, per_run = index.total_bytes(), index.run_bytes()
            with self._lock:
                self._index, self._total, self._per_run = index, total, per_run
                self._indexed_at = time.monotonic()
                for run, n in added_before.items():  # now in the scan; later commits stay counted
                    left = self._added.get(run, 0) - n
                    if left > 0:
                        self._added[run] = left
                    else:
                        self._added.pop(run, None)
        except Exception as exc:  # noqa: BLE001 - retention must never take the agent down
            _log.warning("otel_inputs: store scan for retention failed: %s", exc)
        finally:
            self._scanned.set()

    def remaining(self, run_id: str | None) -> int | None:
        if not self.policy.active:
            return None
        if not self._scanned.is_set():
            self._scan_in_background()
            self._scanned.wait(self.first_wait_s)
        with self._lock:
            known = self._index is not None
            stale = known and time.monotonic() - self._indexed_at > self.refresh_s
            total = self._total + sum(self._added.values())
            run_total = self._per_run.get(run_id or "", 0) + self._added.get(run_id, 0)
        if stale:
            self._scan_in_background()
        limits: list[int] = []
        if known and self.policy.budget_bytes is not None:
            limits.append(self.policy.budget_bytes - total)
        if known and self.policy.run_budget_bytes is not None and run_id is not None:
            limits.append(self.policy.run_budget_bytes - run_total)
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
        self._scan()  # already off the agent's thread: the next capture sees what the pass freed

    def wait(self, timeout: float | None = None) -> None:
        for t in (self._gc_thread, self._scan_thread):
            if t is not None:
                t.join(timeout)
