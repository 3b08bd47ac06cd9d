"""The artifact store's public face: all that the other parts import of the store (its modules
are private; docs/store.md describes them).  Its bucket is :mod:`otel_inputs.store.bucket`,
imported only when one is configured (docs/objects.md).
"""

from __future__ import annotations

import os

from otel_inputs import names
from otel_inputs.store._catalog import AttemptRecord, CatalogItem
from otel_inputs.store._changes import ItemChange, StoreChange
from otel_inputs.store._errors import ReadbackError, StoreBusyError, StoreCleanupError, StoreError, StoreWriteError
from otel_inputs.store._purge import PurgeReport, PurgeState, delete_run, purge, purge_state, reconcile_store
from otel_inputs.store._readback import (AccessPolicy, EvidenceReader, PolicyError, ReadResult, RevocationList,
                                         revoke_source)
from otel_inputs.store._retention import GcReport, RetentionPolicy, apply_retention, store_status, store_usage
from otel_inputs.store._store import ArtifactStore, AttemptStaging, VerifiedSnapshot, snapshot_ref_for


def _open_bucket(store: ArtifactStore) -> None:
    """A store with a bucket configured gets its uploader now; any other reads a bucket its catalog
    recorded only when a local copy is missing (docs/objects.md)."""
    if store.objects_url or os.environ.get(names.ENV_OBJECTS_URL):
        from otel_inputs.store.bucket import attach

        attach(store)
    else:
        store.read_elsewhere = _read_recorded_bucket


def _read_recorded_bucket(store: ArtifactStore, digest: str, limit: int | None) -> bytes | None:
    from otel_inputs.store.bucket import attach

    return attach(store).read(digest, limit)


ArtifactStore.on_open.append(_open_bucket)


__all__ = [
    "AccessPolicy",
    "ArtifactStore",
    "AttemptRecord",
    "AttemptStaging",
    "CatalogItem",
    "EvidenceReader",
    "GcReport",
    "ItemChange",
    "PolicyError",
    "PurgeReport",
    "PurgeState",
    "ReadResult",
    "ReadbackError",
    "RetentionPolicy",
    "RevocationList",
    "StoreBusyError",
    "StoreChange",
    "StoreCleanupError",
    "StoreError",
    "StoreWriteError",
    "VerifiedSnapshot",
    "apply_retention",
    "delete_run",
    "purge",
    "purge_state",
    "reconcile_store",
    "revoke_source",
    "snapshot_ref_for",
    "store_status",
    "store_usage",
]
