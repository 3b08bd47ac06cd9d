"""otel-inputs: record what task and inputs each AI-agent attempt actually had, on its span."""

from __future__ import annotations

from otel_inputs._capture import ProviderAttachment, canonical_envelope_bytes, capture_attempt_inputs
from otel_inputs._lineage import SessionTracker
from otel_inputs._policy import (
    AdmissionDecision,
    AttemptAdmission,
    CaptureMode,
    CapturePolicy,
    admit,
)
from otel_inputs._record import AgentObserver, AttemptRecording
from otel_inputs._purge import PurgeReport, delete_run, purge, reapply_tombstones, reconcile_store
from otel_inputs._readback import (
    AccessPolicy,
    EvidenceReader,
    PolicyError,
    ReadResult,
    RevocationList,
    current_viewer,
    revoke_source,
)
from otel_inputs._retention import (
    GcReport,
    RetentionGate,
    RetentionPolicy,
    apply_retention,
    parse_size,
    scan_store,
    store_status,
)
from otel_inputs._request import RequestError, inline_request, resolve_request
from otel_inputs._snapshot import CaptureLimits
from otel_inputs._store import ArtifactStore, ReadbackError, StoreCleanupError, StoreError, VerifiedSnapshot
from otel_inputs._types import (
    AgentInputPacket,
    ArtifactStatus,
    Bound,
    CaptureDecision,
    CaptureStatus,
    Coverage,
    DeliveryMode,
    GapReason,
    InputItem,
    Lineage,
    PreviewKind,
    ResolvedRequest,
    SendKind,
    SourceKind,
    TaskSourceKind,
)

__all__ = [
    "AccessPolicy",
    "EvidenceReader",
    "GcReport",
    "PolicyError",
    "PurgeReport",
    "ReadResult",
    "RetentionGate",
    "RetentionPolicy",
    "RevocationList",
    "apply_retention",
    "current_viewer",
    "delete_run",
    "parse_size",
    "purge",
    "reapply_tombstones",
    "reconcile_store",
    "revoke_source",
    "scan_store",
    "store_status",
    "AdmissionDecision",
    "AgentObserver",
    "ArtifactStore",
    "AttemptAdmission",
    "AttemptRecording",
    "CaptureLimits",
    "CaptureMode",
    "CapturePolicy",
    "ProviderAttachment",
    "ReadbackError",
    "RequestError",
    "SessionTracker",
    "StoreCleanupError",
    "StoreError",
    "VerifiedSnapshot",
    "admit",
    "canonical_envelope_bytes",
    "capture_attempt_inputs",
    "inline_request",
    "resolve_request",
    "AgentInputPacket",
    "ArtifactStatus",
    "Bound",
    "CaptureDecision",
    "CaptureStatus",
    "Coverage",
    "DeliveryMode",
    "GapReason",
    "InputItem",
    "Lineage",
    "PreviewKind",
    "ResolvedRequest",
    "SendKind",
    "SourceKind",
    "TaskSourceKind",
]
