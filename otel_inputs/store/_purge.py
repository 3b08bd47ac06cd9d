"""Purge and run deletion, ordered so that a purged snapshot can never be read back again.

One ``synchronous=FULL`` catalog transaction records the purge (``purges`` + ``purged`` rows, which
readback checks on every read, whatever stale reference a reader holds) and marks the covered
items ``evicted`` with reason ``purged``; only after it commits are object bytes that no available
item references deleted.  A crash after the commit leaves unreferenced bytes, which the next
retention pass or reconciliation removes; nothing comes back.  Bytes still referenced by an item
that was not purged stay.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

from otel_inputs._text import canonical_path
from otel_inputs.store._catalog import Role
from otel_inputs.store._store import DEFAULT_RECONCILE_AGE_S, ArtifactStore, attempt_key

PURGE_REASON = "purged"


@dataclass
class PurgeReport:
    purge_id: int | None = None
    attempts: int = 0
    items: int = 0
    deleted_objects: int = 0
    deleted_attempts: int = 0
    targets: list[str] = field(default_factory=list)


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
            "SELECT sha256 FROM items WHERE attempt_id = ? AND sha256 IS NOT NULL", [a])}
        digests |= {r[0] for a, i in inputs for r in con.execute(
            "SELECT sha256 FROM items WHERE attempt_id = ? AND input_id = ? AND sha256 IS NOT NULL", [a, i])}
        selector = {"attempt_ids": wanted, "run_id": run_id, "source_path": source_path}
        cur = con.execute("INSERT INTO purges (at_ns, selector_json, attempts, items) VALUES (?, ?, ?, ?)",
                          [time.time_ns(), json.dumps(selector), len(attempts), len(inputs)])
        report.purge_id = cur.lastrowid
        covered = [(a, "") for a in sorted(attempts)] + sorted(inputs)
        con.executemany("INSERT OR IGNORE INTO purged VALUES (?, ?, ?)", [(a, i, cur.lastrowid) for a, i in covered])
        seq = store.catalog.next_seq(con)
        mark = ("UPDATE items SET artifact_status = CASE artifact_status WHEN 'available' THEN 'evicted' "
                "ELSE artifact_status END, status_reason = ? WHERE attempt_id = ? AND (? = '' OR input_id = ?) "
                "AND coalesce(status_reason, '') != ?")
        for a, i in covered:
            report.items += con.execute(mark, [PURGE_REASON, a, i, i, PURGE_REASON]).rowcount
            con.execute("UPDATE attempts SET changed_seq = ? WHERE attempt_id = ?", [seq, a])
        report.attempts = len(attempts | {a for a, _ in inputs})
        if delete_records:
            for a in attempts:
                con.execute("DELETE FROM items WHERE attempt_id = ?", [a])
                con.execute("DELETE FROM parts WHERE attempt_id = ?", [a])
                report.deleted_attempts += con.execute("DELETE FROM attempts WHERE attempt_id = ?", [a]).rowcount
    for a in attempts:  # exchange-part bytes of a purged attempt go with it (after the commit)
        shutil.rmtree(store.root / "parts" / attempt_key(a), ignore_errors=True)
    report.deleted_objects = len(store.remove_objects(digests))
    report.targets = sorted(attempts) + sorted(f"{a}/{i}" for a, i in inputs)
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


def reconcile_store(store: ArtifactStore, *, min_age_s: float = DEFAULT_RECONCILE_AGE_S) -> dict[str, int]:
    """Start-up reconciliation: bytes a crashed purge or eviction left unreferenced, old orphan
    staging and orphan objects."""
    with store.catalog.read() as con:
        unreferenced = [r[0] for r in con.execute(
            "SELECT sha256 FROM objects WHERE sha256 NOT IN "
            "(SELECT sha256 FROM items WHERE artifact_status = 'available' AND sha256 IS NOT NULL)")]
    freed = store.remove_objects(unreferenced)
    stale = [(d,) for d in unreferenced if d not in freed and not store.objects.has(d)]
    with store.catalog.write(Role.MAINT) as con:  # rows of bytes already gone (see remove_objects)
        con.executemany("DELETE FROM objects WHERE sha256 = ? AND sha256 NOT IN (SELECT sha256 FROM items "
                        "WHERE artifact_status = 'available' AND sha256 IS NOT NULL)", stale)
    result = store.reconcile(min_age_s=min_age_s)
    result["unreferenced_removed"] = len(freed)
    return result
