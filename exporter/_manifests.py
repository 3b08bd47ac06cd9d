"""Artifact-store manifests → ``agent_artifacts`` rows (metadata only; bytes stay in the store).

The store's manifest, with the eviction journal applied over it, is the durable authority on what
was captured and what is still available, so landing an attempt's manifest replaces that attempt's rows.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from otel_inputs.store import ArtifactStore, attempt_key
from otel_inputs.store._store_evictions import JOURNAL_DIR

_TS = pa.timestamp("ns")
_INT32_MAX = 2**31 - 1
_INT64_MAX = 2**63 - 1

_ITEM_STR = ("input_id", "label", "source_kind", "delivery_mode", "source_path", "sha256",
             "snapshot_ref", "media_type", "preview_kind", "capture_status", "artifact_status",
             "status_reason", "detail")  # fmt: skip

ARTIFACT_SCHEMA = pa.schema(
    [("attempt_id", pa.string()), ("input_id", pa.string()), ("run_id", pa.string()),
     ("session_id", pa.string()), ("seq", pa.int32()), ("label", pa.string()),
     ("source_kind", pa.string()), ("delivery_mode", pa.string()), ("source_path", pa.string()),
     ("sha256", pa.string()), ("size_bytes", pa.int64()), ("snapshot_ref", pa.string()),
     ("media_type", pa.string()), ("preview_kind", pa.string()), ("capture_status", pa.string()),
     ("artifact_status", pa.string()), ("status_reason", pa.string()), ("detail", pa.string()),
     ("captured_at", _TS), ("manifest_coverage", pa.string()), ("manifest_decision", pa.string()),
     ("manifest_gap_reason", pa.string()), ("manifest_committed_at", _TS),
     ("row_problem", pa.string()), ("updated_at", pa.timestamp("us"))]
)  # fmt: skip


def _s(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _i(value: Any, hi: int) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if 0 <= value <= hi else None


def manifest_rows(manifest: Mapping[str, Any], updated_at_us: int) -> list[dict[str, Any]]:
    """One row per manifest item; an attempt with no items gets one row with a NULL input id."""
    attempt_id = _s(manifest.get("attempt_id"))
    if not attempt_id:
        return []
    base = {
        "attempt_id": attempt_id,
        "run_id": _s(manifest.get("run_id")),
        "session_id": _s(manifest.get("session_id")),
        "manifest_coverage": _s(manifest.get("coverage")),
        "manifest_decision": _s(manifest.get("decision")),
        "manifest_gap_reason": _s(manifest.get("gap_reason")),
        "manifest_committed_at": _i(manifest.get("committed_at_ns"), _INT64_MAX),
        "updated_at": updated_at_us,
    }
    items = manifest.get("items")
    rows: list[dict[str, Any]] = []
    if not isinstance(items, list):
        items = []
    for item in items:
        row = dict(base)
        if not isinstance(item, Mapping):
            row["row_problem"] = "manifest item is not an object"
            rows.append(row)
            continue
        for key in _ITEM_STR:
            row[key] = _s(item.get(key))
        row["seq"] = _i(item.get("seq"), _INT32_MAX)
        row["size_bytes"] = _i(item.get("size_bytes"), _INT64_MAX)
        row["captured_at"] = _i(item.get("captured_at_ns"), _INT64_MAX)
        if row["input_id"] is None or row["seq"] is None:
            row["row_problem"] = "manifest item lacks a valid input_id or seq"
        rows.append(row)
    if not rows:
        rows.append(dict(base))  # the attempt's manifest exists even when its packet is empty
    return rows


def artifacts_table(manifests: Iterable[Mapping[str, Any]], updated_at_us: int) -> pa.Table | None:
    rows = [r for m in manifests for r in manifest_rows(m, updated_at_us)]
    if not rows:
        return None
    return pa.table(
        {f.name: pa.array([r.get(f.name) for r in rows], f.type) for f in ARTIFACT_SCHEMA},
        schema=ARTIFACT_SCHEMA,
    )


def manifests_for(store_root: str | os.PathLike[str], attempt_ids: Iterable[str]) -> list[dict[str, Any]]:
    """The committed manifests of just these attempts (a cheap per-batch look-up by key)."""
    store = ArtifactStore(store_root, create=False)
    found: list[dict[str, Any]] = []
    for attempt_id in attempt_ids:
        try:
            manifest = store.manifest(attempt_id)
        except Exception:  # noqa: BLE001 - an unreadable manifest must not fail a span batch
            continue
        if manifest is not None:
            found.append(manifest)
    return found


@dataclass
class ManifestScanner:
    """Finds manifests that are new or changed since the last scan (by name, size and mtime), and
    those an eviction journal file new since the last scan names (it changes no manifest file)."""

    store_root: Path
    _seen: dict[str, tuple[int, int]] = field(default_factory=dict)

    def changed(self) -> tuple[list[dict[str, Any]], dict[str, tuple[int, int]]]:
        """(changed manifests, their stat keys); call :meth:`commit` after they are landed."""
        manifests_dir = Path(self.store_root) / "manifests"
        current: dict[str, tuple[int, int]] = {}
        fresh: dict[str, tuple[int, int]] = {}
        try:
            entries = list(os.scandir(manifests_dir))
        except FileNotFoundError:
            return [], {}
        for entry in entries:
            if not entry.name.endswith(".json") or entry.name.startswith("."):
                continue
            try:
                st = entry.stat()
            except FileNotFoundError:
                continue
            key = current[entry.name] = (st.st_mtime_ns, st.st_size)
            if self._seen.get(entry.name) != key:
                fresh[entry.name] = key
        store = ArtifactStore(self.store_root, create=False)
        journal_keys = {f"{JOURNAL_DIR}/{n}": n for n in store.evictions.names()}
        new_journal = [n for k, n in journal_keys.items() if k not in self._seen]
        for line in store.evictions.lines_of(new_journal):
            try:
                aid = json.loads(line.partition("\t")[0])
                name = f"{attempt_key(aid)}.json"
            except (ValueError, TypeError):
                continue
            if name in current:
                fresh[name] = current[name]
        if not fresh and not new_journal:
            return [], {}
        manifests = [m for m in store.iter_manifests(sorted(fresh)) if "error" not in m]
        fresh.update({f"{JOURNAL_DIR}/{n}": (0, 0) for n in new_journal})
        return manifests, fresh

    def commit(self, stat_keys: Mapping[str, tuple[int, int]]) -> None:
        self._seen.update(stat_keys)
