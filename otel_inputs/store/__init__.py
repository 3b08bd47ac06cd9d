"""The artifact store's public face: everything ``exporter/``, ``viewer/`` and tools use of the store.

The modules behind it are private; this one re-exports what callers need (as
``opentelemetry.util.genai.invocation`` does for its invocation types).
"""

from __future__ import annotations

from otel_inputs.store._errors import ReadbackError, StoreCleanupError, StoreError, StoreWriteError
from otel_inputs.store._part_readback import PARTS_DIR, read_part, read_part_receipt
from otel_inputs.store._purge import (
    PurgeReport,
    PurgeState,
    delete_run,
    purge,
    purge_state,
    reapply_tombstones,
    reconcile_store,
)
from otel_inputs.store._readback import (
    AccessPolicy,
    EvidenceReader,
    PolicyError,
    ReadResult,
    Revocation,
    RevocationList,
    current_viewer,
    revoke_source,
)
from otel_inputs.store._retention import (
    GcReport,
    RetentionGate,
    RetentionPolicy,
    apply_retention,
    parse_size,
    scan_store,
    store_status,
)
from otel_inputs.store._store import ArtifactStore, AttemptStaging, StagedBlob, VerifiedSnapshot, attempt_key, write_all
from otel_inputs.types import ReadbackOutcome

__all__ = [
    "PARTS_DIR",
    "AccessPolicy",
    "ArtifactStore",
    "AttemptStaging",
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
    "StoreCleanupError",
    "StoreError",
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
    "reapply_tombstones",
    "reconcile_store",
    "revoke_source",
    "scan_store",
    "store_status",
    "write_all",
]
