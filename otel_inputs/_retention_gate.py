"""The observer's retention gate (docs/store.md, "Lifecycle of a snapshot"), built on the store's public face."""

from __future__ import annotations

import logging
import shutil
import threading
import time
from collections import defaultdict
from collections.abc import Callable

from otel_inputs.store import ArtifactStore, GcReport, RetentionPolicy, apply_retention, store_usage

_log = logging.getLogger(__name__)


class RetentionGate:
    """Keeps an observer's captures inside the limits without making the agent wait on storage.

    :meth:`remaining` answers from the last usage scan plus what this process committed since;
    scans and retention passes run on background threads, one at a time.  Only the first call waits
    for the first scan, at most ``first_wait_s``; until then byte budgets are unknown and only the
    free-space floor (one statvfs) applies.
    """

    def __init__(self, store: ArtifactStore, policy: RetentionPolicy, *, refresh_s: float = 5.0,
                 free_bytes: Callable[[str], int] | None = None, first_wait_s: float = 0.5) -> None:
        self.store = store
        self.policy = policy
        self.refresh_s = refresh_s
        self.first_wait_s = first_wait_s
        self._free = free_bytes or (lambda p: shutil.disk_usage(p).free)
        self._lock = threading.Lock()
        self._scan_lock = threading.Lock()
        self._scanned = threading.Event()
        self._known = False
        self._total = 0
        self._per_run: dict[str, int] = {}
        self._scanned_at = 0.0
        self._added: dict[str | None, int] = defaultdict(int)
        self._scan_thread: threading.Thread | None = None
        self._gc_thread: threading.Thread | None = None
        self.last_report: GcReport | None = None

    def start(self) -> None:
        """Begin the first scan in the background (an observer calls this when it opens the store)."""
        if self.policy.active:
            self._scan_in_background()

    def _scan_in_background(self) -> None:
        self._start("_scan_thread", self._scan, "otel-inputs-retention-scan")

    def _start(self, attr: str, target: Callable[[], None], name: str) -> None:
        with self._lock:
            if getattr(self, attr) is None or not getattr(self, attr).is_alive():
                setattr(self, attr, threading.Thread(target=target, name=name, daemon=True))
                getattr(self, attr).start()

    def _scan(self) -> None:
        with self._scan_lock:  # one scan at a time: each settles the commits counted before it began
            try:
                with self._lock:
                    added_before = dict(self._added)
                usage = store_usage(self.store, per_run=self.policy.run_budget_bytes is not None)
                with self._lock:
                    self._known, self._total, self._per_run = True, usage.total_bytes, usage.per_run or {}
                    self._scanned_at = time.monotonic()
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
            known = self._known
            stale = known and time.monotonic() - self._scanned_at > self.refresh_s
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
        self._start("_gc_thread", self._collect, "otel-inputs-retention")

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
