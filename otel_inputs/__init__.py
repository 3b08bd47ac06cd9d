"""otel-inputs: record what task and inputs each AI-agent attempt actually had, on its span.

This is the agent-facing API.  The artifact store's maintenance and readback live in
:mod:`otel_inputs.store`, the domain types in :mod:`otel_inputs.types`, wire and environment names
in :mod:`otel_inputs.names`.
"""

from __future__ import annotations

from otel_inputs._capture import ProviderAttachment, canonical_envelope_bytes, capture_attempt_inputs
from otel_inputs._lineage import SessionTracker
from otel_inputs._policy import AdmissionDecision, AttemptAdmission, CaptureMode, CapturePolicy, admit
from otel_inputs._record import AgentObserver, AttemptRecording
from otel_inputs._request import RequestError, inline_request, resolve_request
from otel_inputs._snapshot import CaptureLimits
from otel_inputs.store import ArtifactStore, RetentionPolicy
from otel_inputs.types import DeliveryMode, SendKind

__all__ = [
    "AdmissionDecision",
    "AgentObserver",
    "ArtifactStore",
    "AttemptAdmission",
    "AttemptRecording",
    "CaptureLimits",
    "CaptureMode",
    "CapturePolicy",
    "DeliveryMode",
    "ProviderAttachment",
    "RequestError",
    "RetentionPolicy",
    "SendKind",
    "SessionTracker",
    "admit",
    "canonical_envelope_bytes",
    "capture_attempt_inputs",
    "inline_request",
    "resolve_request",
]
