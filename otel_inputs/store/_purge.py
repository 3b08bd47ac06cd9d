"""Purge and run deletion, ordered so that a purged snapshot can never be read back again: the purge is
recorded and its items marked in one ``synchronous=FULL`` transaction, and only then do bytes no available
item references go (docs/store.md, "Lifecycle of a snapshot"); and reconciliation after a crash.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from otel_inputs.text import canonical_path
from otel_inputs.store._catalog import MARK_PURGED, Role, item_changes, kept
from otel_inputs.store._changes import ItemChange, StoreChange
from otel_inputs.types import ItemState
from otel_inputs.store._objects import HEX64
from otel_inputs.store._store import ArtifactStore

DEFAULT_RECONCILE_AGE_S = 3600.0


@dataclass
class PurgeReport:
    purge_id: int | None = None
    attempts: int = 0
    items: int = 0
    deleted_objects: int = 0
    deleted_attempts: int = 0


def purge(store: ArtifactStore, *, attempt_ids: Iterable[str] = (), run_id: str | None = None,
          source_path: str | None = None, delete_records: bool = False) -> PurgeReport:
    """Purge the snapshots of attempts, of a run, or of every item captured from a source path
    (the path and everything under it, compared in the store's canonical path form)."""
    report = PurgeReport()
    wanted = list(dict.fromkeys(attempt_ids))
    with store.catalog.write(Role.MAINT) as con:
        attempts = {a for a in wanted if con.execute("SELECT 1 FROM attempts WHERE attempt_id = ?", [a]).fetchone()}
        if run_id is not None:
            attempts.update(r[0] for r in con.execute("SELECT attempt_id FROM attempts WHERE run_id = ?", [run_id]))
        inputs: set[tuple[str, str]] = set()
        if source_path is not None:
            src = canonical_path(source_path)
            under = src.rstrip("/") + "/"
            inputs = {(a, i) for a, i in con.execute(
                "SELECT attempt_id, input_id FROM items WHERE source_path = ? OR substr(source_path, 1, ?) = ?",
                [src, len(under), under]) if a not in attempts}
        if not attempts and not inputs:
            return report
        digests = {r[0] for a in attempts for r in con.execute(
            "SELECT sha256 FROM items WHERE attempt_id = ? AND sha256 IS NOT NULL UNION "
            "SELECT sha256 FROM parts WHERE attempt_id = ? AND sha256 IS NOT NULL", [a, a])}
        digests |= {r[0] for a, i in inputs for r in con.execute(
            "SELECT sha256 FROM items WHERE attempt_id = ? AND input_id = ? AND sha256 IS NOT NULL", [a, i])}
        selector = {"attempt_ids": wanted, "run_id": run_id, "source_path": source_path}
        cur = con.execute("INSERT INTO purges (at_ns, selector_json, attempts, items) VALUES (?, ?, ?, ?)",
                          [time.time_ns(), json.dumps(selector), len(attempts), len(inputs)])
        report.purge_id = cur.lastrowid
        covered = [(a, "") for a in sorted(attempts)] + sorted(inputs)
        con.executemany("INSERT OR IGNORE INTO purged VALUES (?, ?, ?)", [(a, i, cur.lastrowid) for a, i in covered])
        seq = store.catalog.next_seq(con)
        touched = attempts | {a for a, _ in inputs}
        for a in touched:
            report.items += con.execute(MARK_PURGED, [a]).rowcount
            con.execute("UPDATE attempts SET changed_seq = ? WHERE attempt_id = ?", [seq, a])
        report.attempts = len(touched)
        changes: list[ItemChange] = []
        if store.listeners:  # the covered attempts' state now (a deleted record: the attempt and its items)
            changes = item_changes(con, "t.attempt_id IN (SELECT value FROM json_each(?))", [json.dumps(sorted(touched))],
                                   seq)
            if delete_records:
                at = time.time_ns()
                changes = [replace(c, state=ItemState.DELETED, reason=None, at_ns=at) if c.attempt_id in attempts
                           else c for c in changes]
        if delete_records:
            for a in attempts:
                con.execute("DELETE FROM items WHERE attempt_id = ?", [a])
                con.execute("DELETE FROM parts WHERE attempt_id = ?", [a])
                report.deleted_attempts += con.execute("DELETE FROM attempts WHERE attempt_id = ?", [a]).rowcount
    if changes:
        store.notify(StoreChange(tuple(changes)))
    report.deleted_objects = len(store.remove_objects(digests))
    return report


@dataclass(frozen=True)
class PurgeState:
    """What the catalog says about one attempt: purged as a whole (when), and which inputs (when)."""

    attempt_purged_at_ns: int | None = None
    inputs_purged_at_ns: dict[str, int] = field(default_factory=dict)

    @property
    def attempt_purged(self) -> bool:
        return self.attempt_purged_at_ns is not None

    def input_purged_at_ns(self, input_id: str) -> int | None:
        """When this input was purged (by its attempt's purge or its own), else ``None``."""
        if self.attempt_purged_at_ns is not None:
            return self.attempt_purged_at_ns
        return self.inputs_purged_at_ns.get(input_id)


def purge_state(store: ArtifactStore, attempt_id: str) -> PurgeState:
    """The purge facts of ``attempt_id`` from the catalog: when it (or each purged input) was first purged."""
    try:
        with store.catalog.read() as con:
            rows = con.execute(
                "SELECT p.input_id, min(u.at_ns) FROM purged p JOIN purges u USING (purge_id) "
                "WHERE p.attempt_id = ? GROUP BY p.input_id", [attempt_id]).fetchall()  # fmt: skip
    except FileNotFoundError:
        return PurgeState()
    whole = next((at for input_id, at in rows if input_id == ""), None)
    return PurgeState(whole, {input_id: at for input_id, at in rows if input_id != ""})


def delete_run(store: ArtifactStore, run_id: str) -> PurgeReport:
    """Explicit run deletion: the purge record stays (so nothing resurrects), the run's attempt
    records and their unreferenced bytes go."""
    return purge(store, run_id=run_id, delete_records=True)


def reconcile_store(store: ArtifactStore, *, min_age_s: float = DEFAULT_RECONCILE_AGE_S,
                    now: float | None = None) -> dict[str, int]:
    """Finish what a crash interrupted: bytes a purge or eviction left unreferenced (and rows of
    bytes already gone), half-done removals, and staging or object files older than ``min_age_s``
    that the catalog does not name (younger ones may be a capture that has not committed yet)."""
    with store.catalog.read() as con:
        unreferenced = [r[0] for r in con.execute(f"SELECT sha256 FROM objects WHERE NOT {kept('objects.sha256')}")]
    freed = store.remove_objects(unreferenced)
    with store.catalog.write(Role.MAINT) as con:
        con.executemany(f"DELETE FROM objects WHERE sha256 = ? AND NOT {kept('objects.sha256')}",
                        [(d,) for d in unreferenced if d not in freed and not store.objects.has(d)])
        known = {r[0] for r in con.execute("SELECT sha256 FROM objects UNION SELECT sha256 FROM parts WHERE "
                                           f"sha256 IS NOT NULL AND {kept('parts.sha256')}")}
    now = time.time() if now is None else now
    result = {"staging_removed": store.objects.remove_old_staging(min_age_s, now),
              "objects_removed": store.objects.restore_or_drop_graveyard(known.__contains__),
              "unreferenced_removed": len(freed)}
    stray = []
    for entry in store.objects.iterate():
        try:
            if entry.name not in known and not entry.name.startswith(".") \
                    and now - entry.stat(follow_symlinks=False).st_mtime >= min_age_s:
                stray.append(entry.name)
        except FileNotFoundError:
            continue
    gone = store.remove_objects(stray)
    for name in stray:  # not a digest: nothing the store wrote
        if not HEX64.fullmatch(name):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(store.objects_dir / name)
                gone[name] = 0
    result["objects_removed"] += len(gone)
    return result
