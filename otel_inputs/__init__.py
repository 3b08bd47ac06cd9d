"""otel-inputs: record what task and inputs each AI-agent attempt actually had, on its span."""

from __future__ import annotations

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
