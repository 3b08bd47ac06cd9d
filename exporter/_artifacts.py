"""The store's catalog → ``agent_artifacts`` rows (metadata only; bytes stay in the store).

The store's catalog is the one authority on what was captured and what is still available; this
table is a one-way copy for SQL users (the viewer asks the store itself at render time).  Landing
an attempt replaces that attempt's rows.  What changed is found by the catalog's change number,
never by scanning store files.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from otel_inputs.store import ArtifactStore, AttemptRecord

from otel_inputs.exporter._arrow import ARTIFACT_SCHEMA, rows_table

_INT32_MAX = 2**31 - 1
_INT64_MAX = 2**63 - 1
BATCH = 5000  # attempts landed per scan: a huge backlog lands in bounded pieces

_ITEM_STR = ("input_id", "label", "source_kind", "delivery_mode", "source_path", "sha256",
             "snapshot_ref", "media_type", "preview_kind", "capture_status", "artifact_status",
             "status_reason", "detail")  # fmt: skip


def _s(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _i(value: Any, hi: int) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if 0 <= value <= hi else None


def artifact_rows(record: AttemptRecord, updated_at_us: int) -> list[dict[str, Any]]:
    """One row per catalog item; an attempt with no items gets one row with a NULL input id."""
    base = {
        "attempt_id": record.attempt_id,
        "run_id": _s(record.run_id),
        "session_id": _s(record.session_id),
        "manifest_coverage": _s(record.coverage),
        "manifest_decision": _s(record.decision),
        "manifest_gap_reason": _s(record.gap_reason),
        "manifest_committed_at": _i(record.committed_at_ns, _INT64_MAX),
        "updated_at": updated_at_us,
    }
    rows: list[dict[str, Any]] = []
    for item in record.items:
        row = dict(base)
        for key in _ITEM_STR:
            row[key] = _s(getattr(item, key))
        row["seq"] = _i(item.seq, _INT32_MAX)
        row["size_bytes"] = _i(item.size_bytes, _INT64_MAX)
        row["captured_at"] = _i(item.captured_at_ns, _INT64_MAX)
        if row["input_id"] is None or row["seq"] is None:
            row["row_problem"] = "catalog item lacks a valid input_id or seq"
        rows.append(row)
    if not rows:
        rows.append(dict(base))  # the attempt is recorded even when its packet is empty
    return rows


def artifacts_table(records: Iterable[AttemptRecord], updated_at_us: int) -> pa.Table | None:
    rows = [r for record in records for r in artifact_rows(record, updated_at_us)]
    if not rows:
        return None
    return rows_table(rows, ARTIFACT_SCHEMA)


def catalog_records(store_root: str | os.PathLike[str], attempt_ids: Iterable[str]) -> list[AttemptRecord]:
    """The catalog records of just these attempts (one query per batch of spans)."""
    ids = list(dict.fromkeys(attempt_ids))
    if not ids:
        return []
    try:
        return ArtifactStore(store_root, create=False).attempts(
            f"WHERE attempt_id IN ({', '.join('?' * len(ids))})", ids)
    except Exception:  # noqa: BLE001 - an unreadable catalog must not fail a span batch
        return []


@dataclass
class CatalogScanner:
    """Finds the attempts whose catalog record changed since the last landing (by change number)."""

    store_root: Path
    _seen_seq: int = 0

    def changed(self) -> tuple[list[AttemptRecord], Mapping[str, int]]:
        """(changed attempt records, a key for :meth:`commit` once they are landed)."""
        store = ArtifactStore(self.store_root, create=False)
        records = store.attempts("WHERE changed_seq > ? ORDER BY changed_seq LIMIT ?", [self._seen_seq, BATCH])
        if not records:
            return [], {}
        return records, {"changed_seq": max(r.changed_seq for r in records)}

    def commit(self, key: Mapping[str, int]) -> None:
        self._seen_seq = max(self._seen_seq, key.get("changed_seq", 0))
