"""The public domain types of otel-inputs: every enum value here is a wire value, spelled exactly."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum


class _StrEnum(str, Enum):
    def __str__(self) -> str:  # so f-strings and span attributes carry the wire value
        return self.value


class SourceKind(_StrEnum):
    PROMPT_FILE = "prompt_file"
    PREVIOUS_ENVELOPE = "previous_envelope"
    CONTEXT_HANDOFF = "context_handoff"
    EXPLICIT_ATTACHMENT = "explicit_attachment"
    INSTRUCTION_FILE = "instruction_file"  # a coding agent's CLAUDE.md / AGENTS.md / GEMINI.md (hooks)


class TaskSourceKind(_StrEnum):
    INLINE_TEXT = "inline_text"
    PROMPT_FILE = "prompt_file"


class DeliveryMode(_StrEnum):
    INLINE = "inline"
    SESSION_HISTORY = "session_history"
    PATH_REFERENCE = "path_reference"
    PROVIDER_ATTACHMENT = "provider_attachment"


class CaptureStatus(_StrEnum):
    CAPTURED = "captured"
    MISSING = "missing"
    UNREADABLE = "unreadable"
    LIMIT_EXCEEDED = "limit_exceeded"
    CHANGED_DURING_CAPTURE = "changed_during_capture"
    ENUMERATION_INCOMPLETE = "enumeration_incomplete"
    NOT_APPLICABLE = "not_applicable"


class ArtifactStatus(_StrEnum):
    AVAILABLE = "available"
    EVICTED = "evicted"
    NEVER_CAPTURED = "never_captured"


class ItemState(_StrEnum):
    """An item's state as its store records it (docs/wire.md, the store fact ``otel_inputs.store.item_state``);
    whether its source was revoked is a separate flag, since retention's answer comes before revocation's."""

    CAPTURED = "captured"  # its bytes are stored and may be read (subject to the reader's checks)
    NOT_CAPTURED = "not_captured"  # recorded without bytes (a gap); the reason says why
    EVICTED = "evicted"  # retention took its bytes (reason: the limit)
    PURGED = "purged"
    DELETED = "deleted"  # its attempt's record went with its run (``store delete-run``)
    UPLOADED = "uploaded"  # an object's bucket copy is verified (object-level: no attempt)
    UPLOAD_FAILED = "upload_failed"  # an object's upload failed or was skipped (reason: the kind)


class ReadbackOutcome(_StrEnum):
    """The answer to one read of stored evidence: ``ok`` or the owner-facing refusal reason."""

    OK = "ok"
    PERMISSION_DENIED = "permission_denied"
    NOT_FOUND = "not_found"
    RETENTION_EXPIRED = "retention_expired"
    INTEGRITY_MISMATCH = "integrity_mismatch"
    SOURCE_UNAVAILABLE = "source_unavailable"
    TOO_LARGE = "too_large"


class Coverage(_StrEnum):
    COMPLETE = "complete"
    PARTIAL = "partial"
    NOT_RECORDED = "not_recorded"


class SendKind(_StrEnum):
    INITIAL = "initial"
    PARSE_RETRY = "parse_retry"
    GATE_RETRY = "gate_retry"

    @property
    def is_retry(self) -> bool:
        return self is not SendKind.INITIAL


class PreviewKind(_StrEnum):
    TEXT = "text"
    IMAGE = "image"
    NONE = "none"


class CaptureDecision(_StrEnum):
    ADMITTED = "admitted"
    METADATA_ONLY = "metadata_only"
    SUPPRESSED = "suppressed"


class GapReason(_StrEnum):
    """Why capture was suppressed or partial; recorded, never shown as "empty"."""

    POLICY_OPT_OUT = "policy_opt_out"
    TEMPORARY_RUN = "temporary_run"
    SAMPLED_OUT = "sampled_out"
    EXPIRED = "expired"
    CAPACITY_EXCEEDED = "capacity_exceeded"
    LIMIT_EXCEEDED = "limit_exceeded"
    STORE_UNAVAILABLE = "store_unavailable"
    STORE_BUSY = "store_busy"
    OBSERVER_ERROR = "observer_error"


class Bound(_StrEnum):
    """The capture bounds of seed 000; the tripped one is named in the sentinel's detail."""

    FILE_COUNT = "file_count"
    DEPTH = "depth"
    FILE_BYTES = "file_bytes"
    TOTAL_BYTES = "total_bytes"
    WALL_TIME = "wall_time"


class PartName(_StrEnum):
    LOGICAL_REQUEST = "logical_request"
    OBSERVABLE_OUTPUT = "observable_output"


class PartCapture(_StrEnum):
    CAPTURED = "captured"
    TRUNCATED = "truncated"
    NOT_CAPTURED = "not_captured"


class PartDispatch(_StrEnum):
    """What was known about dispatch when the part was recorded; ``unknown`` stays unknown."""

    DISPATCHED = "dispatched"
    NOT_DISPATCHED = "not_dispatched"
    UNKNOWN = "unknown"


class PartPersistence(_StrEnum):
    QUEUED = "queued"
    STORED = "stored"
    FAILED = "failed"
    TIMED_OUT = "timed_out"
    NOT_QUEUED = "not_queued"


class PartReason(_StrEnum):
    """Why a part was not fully captured (admission gap reasons of :class:`GapReason` also appear)."""

    PART_LIMIT = "part_limit"
    CAPACITY_EXCEEDED = "capacity_exceeded"
    UNENCODABLE = "unencodable"
    ALREADY_RECORDED = "already_recorded"
    STORE_UNAVAILABLE = "store_unavailable"
    OBSERVER_ERROR = "observer_error"


class PersistenceFailure(_StrEnum):
    """Bounded reason a queued part was not stored."""

    DISK_FULL = "disk_full"
    READ_ONLY = "read_only"
    PERMISSION_DENIED = "permission_denied"
    STORE_UNAVAILABLE = "store_unavailable"
    WRITE_ERROR = "write_error"


@dataclass(frozen=True)
class ResolvedRequest:
    """The work request exactly as resolved once, with its provenance kept."""

    text: str
    source_kind: TaskSourceKind
    source_path: str | None
    raw_bytes: bytes = field(repr=False)
    size_bytes: int
    sha256: str


@dataclass(frozen=True)
class Lineage:
    """Where an attempt sits in its reused model session."""

    attempt_id: str
    session_id: str | None
    send_kind: SendKind
    turn_index: int
    previous_turn_attempt_id: str | None = None
    retry_of_attempt_id: str | None = None


@dataclass(frozen=True)
class InputItem:
    """One declared input of an attempt, with its delivery mode and capture outcome."""

    input_id: str
    seq: int
    label: str
    source_kind: SourceKind
    delivery_mode: DeliveryMode
    capture_status: CaptureStatus
    artifact_status: ArtifactStatus
    source_path: str | None = None
    snapshot_ref: str | None = None
    media_type: str | None = None
    preview_kind: PreviewKind = PreviewKind.NONE
    size_bytes: int | None = None
    sha256: str | None = None
    detail: str | None = None
    captured_at_ns: int | None = None

    @property
    def is_sentinel(self) -> bool:
        return self.capture_status is CaptureStatus.ENUMERATION_INCOMPLETE


@dataclass(frozen=True)
class AgentInputPacket:
    """The versioned account of what one attempt was given; ``None`` counts mean unknown."""

    version: int
    attempt_id: str
    run_id: str
    coverage: Coverage
    decision: CaptureDecision
    declared_count: int | None
    captured_count: int
    omitted_count: int | None
    items: tuple[InputItem, ...]
    lineage: Lineage | None = None
    task: ResolvedRequest | None = None
    gap_reason: str | None = None
