"""Purge and run deletion, ordered so that a purged snapshot can never be read back again.

Order, each step durable before the next:

1. write a tombstone naming what is purged (fsynced): from here on readback refuses it, even
   through a stale manifest, an old reference or a DuckDB row;
2. mark the covered manifest items ``evicted`` with reason ``purged`` (metadata stays, bytes go);
3. delete object bytes that no available item references any more.

A process killed between steps leaves a tombstone whose effects are incomplete; ``reconcile``
(run at store start-up and by ``otel-inputs store gc``) re-applies every tombstone, so nothing
comes back.  Purging evidence touches nothing else: bytes still referenced by an item that was
not purged stay.
"""

from __future__ import annotations

import json
import os
import secrets
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from otel_inputs._text import canonical_path, safe_text
from otel_inputs.store._store import DEFAULT_RECONCILE_AGE_S, ArtifactStore
from otel_inputs.store._store_index import quote, refresh
from otel_inputs.store._store_io import fsync_dir

PURGE_REASON = "purged"


@dataclass
class PurgeReport:
    tombstone: str | None = None
    attempts: int = 0
    items: int = 0
    deleted_objects: int = 0
    deleted_manifests: int = 0
    targets: list[str] = field(default_factory=list)


def _write_tombstone(store: ArtifactStore, body: dict[str, Any]) -> str:
    name = f"{time.time_ns()}-{secrets.token_hex(4)}.json"
    tmp = store.tombstones_dir / f".{name}.tmp"
    with open(tmp, "xb") as fh:
        fh.write(json.dumps(body, sort_keys=True).encode("utf-8"))
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, store.tombstones_dir / name)
    fsync_dir(store.tombstones_dir)
    return name


def _select(store: ArtifactStore, attempt_ids: Iterable[str], run_id: str | None,
            source_path: str | None) -> tuple[set[str], set[tuple[str, str]]]:
    attempts = set(attempt_ids)
    inputs: set[tuple[str, str]] = set()
    if run_id is None and source_path is None:
        return attempts, inputs
    if source_path is None and run_id is not None:  # the index answers without reading every manifest
        view = refresh(store.root)
        wanted = quote(run_id)
        attempts.update(json.loads(a) for a, r in zip(view.aids, view.runs) if r == wanted)
        return attempts, inputs
    src = canonical_path(source_path)
    for body in store.iter_manifests():
        if "error" in body:
            continue
        if run_id is not None and body.get("run_id") == run_id:
            attempts.add(body["attempt_id"])
        if src is not None:
            for item in body.get("items", ()) or ():
                path = item.get("source_path")
                path = safe_text(path) if isinstance(path, str) else None
                if path is not None and (path == src or path.startswith(src.rstrip("/") + "/")):
                    inputs.add((body["attempt_id"], item["input_id"]))
    return attempts, inputs


def _apply(store: ArtifactStore, attempts: set[str], inputs: set[tuple[str, str]]) -> tuple[int, int]:
    """Mark covered items purged in their manifests; return (attempts touched, items marked)."""
    touched = marked = 0
    by_attempt: dict[str, set[str] | None] = {a: None for a in attempts}
    for a, i in inputs:
        if a not in attempts:
            by_attempt.setdefault(a, set()).add(i)  # type: ignore[union-attr]
    for attempt_id, only in by_attempt.items():
        count = 0

        def change(body: dict[str, Any]) -> bool:
            nonlocal count
            was = bool(body.get("purged"))
            for item in body.get("items", ()) or ():
                if only is not None and item.get("input_id") not in only:
                    continue
                if item.get("status_reason") == PURGE_REASON:
                    continue
                if item.get("artifact_status") == "available":
                    item["artifact_status"] = "evicted"
                item["status_reason"] = PURGE_REASON
                item["purged_at_ns"] = time.time_ns()
                count += 1
            if only is None:
                body["purged"] = True
            return count > 0 or (only is None and not was)

        if store.modify_manifest(attempt_id, change):
            touched += 1
            marked += count
    return touched, marked


def _remove_parts(store: ArtifactStore, attempt_id: str) -> None:
    """Exchange-part evidence of a purged attempt goes with it (after the tombstone)."""
    import shutil

    from otel_inputs.store._store import attempt_key

    shutil.rmtree(store.root / "parts" / attempt_key(attempt_id), ignore_errors=True)


def delete_unreferenced_objects(store: ArtifactStore, candidates: Iterable[str] | None = None) -> int:
    """Delete object bytes no available item references (only ``candidates`` when given)."""
    started = time.time_ns()
    referenced = store.referenced_digests()
    names = set(candidates) if candidates is not None else {
        e.name for e in os.scandir(store.objects_dir) if not e.name.startswith(".")}
    deleted, _freed = store.remove_objects(names - referenced, started)
    return deleted


def _digests_of(store: ArtifactStore, attempts: set[str], inputs: set[tuple[str, str]]) -> set[str]:
    digests: set[str] = set()
    wanted = {a for a, _ in inputs} | attempts
    for attempt_id in wanted:
        body = store.manifest(attempt_id)
        if body is None:
            continue
        for item in body.get("items", ()) or ():
            if attempt_id in attempts or (attempt_id, item.get("input_id")) in inputs:
                if isinstance(item.get("sha256"), str):
                    digests.add(item["sha256"])
    return digests


def purge(store: ArtifactStore, *, attempt_ids: Iterable[str] = (), run_id: str | None = None,
          source_path: str | None = None) -> PurgeReport:
    """Purge the snapshots of attempts, of a run, or of every item from a source path."""
    attempts, inputs = _select(store, attempt_ids, run_id, source_path)
    attempts = {a for a in attempts if store.manifest_path(a).exists()}  # unknown ids purge nothing
    report = PurgeReport()
    if not attempts and not inputs:
        return report
    digests = _digests_of(store, attempts, inputs)
    report.tombstone = _write_tombstone(store, {
        "created_at_ns": time.time_ns(), "attempts": sorted(attempts),
        "inputs": sorted([a, i] for a, i in inputs), "digests": sorted(digests),
        "selector": {"run_id": run_id, "source_path": source_path},
    })
    report.attempts, report.items = _apply(store, attempts, inputs)
    for attempt_id in attempts:
        _remove_parts(store, attempt_id)
    report.deleted_objects = delete_unreferenced_objects(store, digests)
    report.targets = sorted(attempts) + sorted(f"{a}/{i}" for a, i in inputs)
    return report


@dataclass(frozen=True)
class PurgeState:
    """What the tombstones say about one attempt: purged as a whole (when), and which inputs (when)."""

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


_PurgeIndex = tuple[dict[str, int], dict[str, dict[str, int]]]
_purge_index_cache: dict[str, tuple[tuple[str, ...], _PurgeIndex]] = {}


def _purge_index(store: ArtifactStore) -> _PurgeIndex:
    """Attempt -> first purge time, and attempt -> input -> first purge time, over every tombstone.

    Re-read whenever the set of tombstone files changes (tombstones are written once, never edited),
    so each call reflects every purge committed before it.
    """
    try:
        names = tuple(sorted(n for n in os.listdir(store.tombstones_dir) if n.endswith(".json")))
    except FileNotFoundError:
        return {}, {}
    key = str(store.tombstones_dir)
    cached = _purge_index_cache.get(key)
    if cached is not None and cached[0] == names:
        return cached[1]
    attempts: dict[str, int] = {}
    inputs: dict[str, dict[str, int]] = {}
    for name in names:  # in creation order: the first purge of a target gives its time
        try:
            with open(store.tombstones_dir / name, "rb") as fh:
                body = json.loads(fh.read())
        except (OSError, ValueError):
            continue  # a torn tombstone was never acted on: purge writes it before any change
        at = body.get("created_at_ns") if isinstance(body.get("created_at_ns"), int) else 0
        for attempt_id in body.get("attempts", ()):
            attempts.setdefault(attempt_id, at)
        for pair in body.get("inputs", ()):
            if len(pair) == 2:
                inputs.setdefault(pair[0], {}).setdefault(pair[1], at)
    _purge_index_cache[key] = (names, (attempts, inputs))
    return attempts, inputs


def purge_state(store: ArtifactStore, attempt_id: str) -> PurgeState:
    """The purge facts of ``attempt_id`` from the tombstones (the authority that outlives manifests)."""
    attempts, inputs = _purge_index(store)
    return PurgeState(attempts.get(attempt_id), dict(inputs.get(attempt_id, {})))


def delete_run(store: ArtifactStore, run_id: str) -> PurgeReport:
    """Explicit run deletion: tombstone, then remove the run's manifests and unreferenced bytes."""
    report = purge(store, run_id=run_id)
    attempts, _ = _select(store, (), run_id, None)
    for attempt_id in attempts:
        try:
            os.unlink(store.manifest_path(attempt_id))
            report.deleted_manifests += 1
        except FileNotFoundError:
            continue
    report.deleted_objects += delete_unreferenced_objects(store)
    return report


def reapply_tombstones(store: ArtifactStore) -> int:
    """Re-apply every tombstone (idempotent): finishes a purge that a crash interrupted."""
    attempts, inputs = store._tombstones()
    if not attempts and not inputs:
        return 0
    for a in attempts:
        _remove_parts(store, a)
    present_attempts = {a for a in attempts if store.manifest_path(a).exists()}
    present_inputs = {(a, i) for a, i in inputs if store.manifest_path(a).exists()}
    _touched, marked = _apply(store, present_attempts, present_inputs)
    digests: set[str] = set()
    for entry in os.scandir(store.tombstones_dir):
        if entry.name.endswith(".json"):
            try:
                with open(entry.path, "rb") as fh:
                    digests.update(json.loads(fh.read()).get("digests", ()))
            except (OSError, ValueError):
                continue
    delete_unreferenced_objects(store, digests)
    return marked


def reconcile_store(store: ArtifactStore, *, min_age_s: float = DEFAULT_RECONCILE_AGE_S) -> dict[str, int]:
    """Start-up reconciliation: finish interrupted purges, then remove old orphan staging and bytes."""
    marked = reapply_tombstones(store)
    result = store.reconcile(min_age_s=min_age_s)
    result["tombstoned_items_marked"] = marked
    return result
