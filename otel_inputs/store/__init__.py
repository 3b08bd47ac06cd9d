"""The artifact store's public face: all that ``exporter/``, ``viewer/`` and tools import of the
store (its modules are private; docs/store.md and docs/objects.md describe them)."""

from __future__ import annotations

from otel_inputs.store._catalog import CATALOG_FILE, AttemptRecord, CatalogItem
from otel_inputs.store._errors import ReadbackError, StoreBusyError, StoreCleanupError, StoreError, StoreWriteError
from otel_inputs.store._objects import write_all
from otel_inputs.store._purge import PurgeReport, PurgeState, delete_run, purge, purge_state, reconcile_store
from otel_inputs.store._remote import (
    Placement,
    RemoteObjects,
    RemoteState,
    SyncReport,
    bucket_counts,
    item_placements,
    sync_bucket,
)
from otel_inputs.store._readback import (
    PARTS_DIR,
    AccessPolicy,
    EvidenceReader,
    PolicyError,
    ReadResult,
    Revocation,
    RevocationList,
    current_viewer,
    read_part,
    read_part_receipt,
    record_part_receipt,
    revoke_source,
)
from otel_inputs.store._retention import (
    GcReport,
    RetentionGate,
    RetentionPolicy,
    StoreUsage,
    apply_retention,
    parse_size,
    store_status,
    store_usage,
)
from otel_inputs.store._store import (
    ArtifactStore,
    AttemptStaging,
    StagedBlob,
    VerifiedSnapshot,
    attempt_key,
    snapshot_ref_for,
)
from otel_inputs.types import ReadbackOutcome

__all__ = [
    "CATALOG_FILE",
    "PARTS_DIR",
    "Placement",
    "RemoteObjects",
    "RemoteState",
    "SyncReport",
    "bucket_counts",
    "item_placements",
    "sync_bucket",
    "AccessPolicy",
    "ArtifactStore",
    "AttemptRecord",
    "AttemptStaging",
    "CatalogItem",
    "EvidenceReader",
    "GcReport",
    "PolicyError",
    "PurgeReport",
    "PurgeState",
    "ReadResult",
    "ReadbackError",
    "ReadbackOutcome",
    "RetentionGate",
    "RetentionPolicy",
    "Revocation",
    "RevocationList",
    "StagedBlob",
    "StoreBusyError",
    "StoreCleanupError",
    "StoreError",
    "StoreUsage",
    "StoreWriteError",
    "VerifiedSnapshot",
    "apply_retention",
    "attempt_key",
    "current_viewer",
    "delete_run",
    "parse_size",
    "purge",
    "purge_state",
    "read_part",
    "read_part_receipt",
    "reconcile_store",
    "record_part_receipt",
    "revoke_source",
    "snapshot_ref_for",
    "store_status",
    "store_usage",
    "write_all",
]
