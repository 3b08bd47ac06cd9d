"""``capture_attempt_inputs``: the whole seed-000 capture contract for one attempt."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import socket
import stat
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from otel_inputs import names
from otel_inputs._media import classify_bytes
from otel_inputs._policy import AdmissionDecision
from otel_inputs._snapshot import (
    _OPEN_FILE,
    STORE_BUDGET_DETAIL,
    Budget,
    CaptureLimits,
    FileOutcome,
    Incomplete,
    safe_text,
    walk_context_root,
)
from otel_inputs.store import (
    ArtifactStore,
    AttemptRecord,
    AttemptStaging,
    CatalogItem,
    StoreBusyError,
    StoreCleanupError,
    StoreError,
    snapshot_ref_for,
)
from otel_inputs.types import (
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
    SourceKind,
    TaskSourceKind,
)


_log = logging.getLogger("otel_inputs")


@dataclass(frozen=True)
class ProviderAttachment:
    """One attachment, held as bytes: the SAME list builds the provider request and is recorded.

    Build the provider call from ``attachment.data`` and pass the same list to the observer, so no
    second, invisible attachment path can exist.
    """

    label: str
    data: bytes = field(repr=False)
    source_path: str | None = None
    delivery_mode: DeliveryMode = DeliveryMode.PROVIDER_ATTACHMENT

    @classmethod
    def from_path(cls, path: str | os.PathLike[str], label: str | None = None) -> ProviderAttachment:
        """Read a regular file once (no FIFO, no device) into an attachment descriptor."""
        p = os.fspath(path)
        fd = os.open(p, _OPEN_FILE & ~os.O_NOFOLLOW)
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise ValueError(f"attachment {p!r} is not a regular file")
            os.set_blocking(fd, True)
            with os.fdopen(os.dup(fd), "rb") as fh:
                data = fh.read()
        finally:
            os.close(fd)
        return cls(label or Path(p).name, data, os.path.abspath(p))


def canonical_envelope_bytes(envelope: Any) -> bytes:
    """Canonical UTF-8 JSON of a previous envelope: sorted keys, no insignificant whitespace."""
    return json.dumps(envelope, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def input_id_for(attempt_id: str, seq: int) -> str:
    """A stable, opaque input id: never a host path."""
    return "in-" + hashlib.sha256(f"{attempt_id}\x00{seq}".encode("utf-8", "surrogatepass")).hexdigest()[:24]


@dataclass
class _Draft:
    label: str
    source_kind: SourceKind
    delivery_mode: DeliveryMode
    status: CaptureStatus
    source_path: str | None = None
    sha256: str | None = None
    size_bytes: int | None = None
    media_type: str | None = None
    preview_kind: PreviewKind = PreviewKind.NONE
    detail: str | None = None
    tmp_blob: bool = False  # bytes staged
    captured_at_ns: int = 0


def _held_bytes_draft(
    data: bytes,
    label: str,
    source_kind: SourceKind,
    delivery: DeliveryMode,
    source_path: str | None,
    staging: AttemptStaging | None,
    limits: CaptureLimits,
    budget: Budget,
) -> _Draft | Incomplete:
    now = time.time_ns()
    if staging is None:
        return _Draft(label, source_kind, delivery, CaptureStatus.NOT_APPLICABLE, source_path,
                      detail="metadata only: content not captured", captured_at_ns=now)
    if len(data) > limits.max_file_bytes:
        return _Draft(label, source_kind, delivery, CaptureStatus.LIMIT_EXCEEDED, source_path,
                      detail=limits.describe(Bound.FILE_BYTES), captured_at_ns=now)
    if budget.total_bytes + len(data) > limits.max_total_bytes:
        return Incomplete(Bound.TOTAL_BYTES)
    if not budget.fits_store(len(data)):
        return _Draft(label, source_kind, delivery, CaptureStatus.LIMIT_EXCEEDED, source_path,
                      detail=STORE_BUDGET_DETAIL, captured_at_ns=now)
    blob = staging.put_bytes(data)
    budget.total_bytes += len(data)
    budget.charge_store(len(data))
    media, preview = classify_bytes(data)
    if source_kind is SourceKind.PREVIOUS_ENVELOPE and preview is PreviewKind.TEXT:
        media = "application/json"  # we serialized it ourselves, so the content is known JSON
    return _Draft(label, source_kind, delivery, CaptureStatus.CAPTURED, source_path, blob.sha256,
                  blob.size_bytes, media, preview, None, True, now)


def _outcome_draft(root: str, outcome: FileOutcome, staging: AttemptStaging | None) -> _Draft:
    rel = "/".join(safe_text(p) for p in outcome.rel_parts)
    root_text = safe_text(os.path.abspath(os.fspath(root)))
    label = rel or root_text
    source_path = os.path.join(root_text, rel) if rel else root_text
    draft = _Draft(
        label, SourceKind.CONTEXT_HANDOFF, DeliveryMode.PATH_REFERENCE, outcome.status, source_path,
        outcome.sha256, outcome.size_bytes, outcome.media_type, outcome.preview_kind, outcome.detail,
        captured_at_ns=time.time_ns(),
    )
    if outcome.staged and staging is not None and outcome.sha256 is not None:
        if outcome.tmp is not None:
            staging.adopt(outcome.tmp, outcome.sha256, outcome.size_bytes or 0)
        draft.tmp_blob = True
    return draft


def capture_attempt_inputs(
    *,
    attempt_id: str,
    run_id: str,
    decision: AdmissionDecision,
    store: ArtifactStore | None,
    request: ResolvedRequest | None = None,
    lineage: Lineage | None = None,
    task_in_message: bool | None = None,
    previous_envelope: Any = None,
    envelope_in_message: bool = True,
    context_roots: Sequence[str | os.PathLike[str]] = (),
    attachments: Sequence[ProviderAttachment] = (),
    limits: CaptureLimits | None = None,
    clock: Callable[[], float] = time.monotonic,
    on_chunk: Callable[[tuple[str, ...]], None] | None = None,
    store_budget_bytes: int | None = None,
) -> AgentInputPacket:
    """Snapshot an attempt's declared inputs within the bounds and commit them to the store.

    Order of items: the prompt file, the previous envelope, each context root's entries in
    component-wise sorted order, then attachments.  Any store failure becomes a recorded gap.
    """
    return _capture(attempt_id, run_id, decision, store, request, lineage, task_in_message, previous_envelope,
                    envelope_in_message, context_roots, attachments, limits or CaptureLimits.from_env(), clock,
                    on_chunk, store_budget_bytes, clock())


def _capture(attempt_id, run_id, decision, store, request, lineage, task_in_message, previous_envelope,
             envelope_in_message, context_roots, attachments, limits, clock, on_chunk, store_budget_bytes,
             started: float) -> AgentInputPacket:
    """:func:`capture_attempt_inputs` within the time window that opened at ``started``: the metadata
    fallback after a store failure continues the attempt's window, it never opens a second one."""
    budget = Budget(limits, clock, started, on_chunk=on_chunk, store_left=store_budget_bytes)
    if decision.decision is CaptureDecision.SUPPRESSED:
        return AgentInputPacket(
            names.PACKET_VERSION, attempt_id, run_id, Coverage.PARTIAL, decision.decision,
            None, 0, None, (), lineage, request,
            decision.gap_reason.value if decision.gap_reason else None,
        )
    gap: str | None = decision.gap_reason.value if decision.gap_reason else None
    staging: AttemptStaging | None = None
    if decision.reads_content and store is not None:
        try:
            staging = store.begin_attempt(attempt_id)
        except (OSError, StoreError) as exc:
            return _metadata_fallback(
                attempt_id, run_id, decision, request, lineage, task_in_message, previous_envelope,
                envelope_in_message, context_roots, attachments, limits, clock,
                f"artifact store unavailable: {_safe_reason(exc)}", started,
            )
    drafts: list[_Draft] = []
    incomplete: Bound | None = None
    first_turn = lineage is None or lineage.turn_index == 1
    if task_in_message is None:
        task_in_message = first_turn
    try:
        if request is not None and request.source_kind is TaskSourceKind.PROMPT_FILE:
            mode = DeliveryMode.INLINE if task_in_message else DeliveryMode.SESSION_HISTORY
            label = "task prompt file " + safe_text(os.path.basename(request.source_path or "prompt"))
            d = _held_bytes_draft(request.raw_bytes, label, SourceKind.PROMPT_FILE, mode,
                                  request.source_path, staging, limits, budget)
            if isinstance(d, Incomplete):
                incomplete = d.bound
            else:
                drafts.append(d)
        if incomplete is None and previous_envelope is not None:
            mode = DeliveryMode.INLINE if envelope_in_message else DeliveryMode.SESSION_HISTORY
            d = _held_bytes_draft(canonical_envelope_bytes(previous_envelope), "previous envelope",
                                  SourceKind.PREVIOUS_ENVELOPE, mode, None, staging, limits, budget)
            if isinstance(d, Incomplete):
                incomplete = d.bound
            else:
                drafts.append(d)
        for root in context_roots if incomplete is None else ():
            for outcome in walk_context_root(root, staging, limits, budget):
                if isinstance(outcome, Incomplete):
                    incomplete = outcome.bound
                    break
                drafts.append(_outcome_draft(os.fspath(root), outcome, staging))
            if incomplete is not None:
                break
        for att in attachments if incomplete is None else ():
            if not budget.time_left():
                incomplete = Bound.WALL_TIME
                break
            d = _held_bytes_draft(att.data, safe_text(att.label), SourceKind.EXPLICIT_ATTACHMENT,
                                  att.delivery_mode, att.source_path, staging, limits, budget)
            if isinstance(d, Incomplete):
                incomplete = d.bound
                break
            drafts.append(d)
    except StoreError as exc:
        if staging is not None:
            _abort_quietly(staging)
        return _metadata_fallback(
            attempt_id, run_id, decision, request, lineage, task_in_message, previous_envelope,
            envelope_in_message, context_roots, attachments, limits, clock,
            f"artifact store unavailable: {_safe_reason(exc)}", started,
        )
    except Exception:
        if staging is not None:
            _abort_quietly(staging)
        raise
    store_error: str | None = None
    items = _finalize(attempt_id, drafts, incomplete, limits, available=staging is not None)
    coverage = Coverage.PARTIAL if (incomplete or decision.decision is CaptureDecision.METADATA_ONLY) else Coverage.COMPLETE
    if incomplete is not None:
        gap = gap or GapReason.LIMIT_EXCEEDED.value
    if budget.budget_refusals:
        coverage = Coverage.PARTIAL
        gap = gap or GapReason.CAPACITY_EXCEEDED.value
    packet = _packet(attempt_id, run_id, decision, coverage, items, incomplete, lineage, request, gap)
    if store is not None and decision.reads_content and staging is not None:
        try:
            staging.commit(attempt_record(packet))
        except (OSError, StoreError) as exc:
            store_error = f"snapshot could not be stored: {_safe_reason(exc)}"
            try:
                staging.abort()
            except StoreError as cleanup:
                _log.error("otel_inputs: %s", cleanup)  # the orphan path goes to the log, not the span
            items = _finalize(attempt_id, drafts, incomplete, limits, available=False, store_error=store_error)
            busy = GapReason.STORE_BUSY if isinstance(exc, StoreBusyError) else GapReason.STORE_UNAVAILABLE
            packet = _packet(attempt_id, run_id, decision, Coverage.PARTIAL, items, incomplete, lineage, request,
                             busy.value)
    return packet


def _safe_reason(exc: BaseException) -> str:
    """A one-line reason for a span attribute: the OS error text, never a host path."""
    if isinstance(exc, OSError):
        return exc.strerror or type(exc).__name__
    text = str(exc)
    return text if "/" not in text else type(exc).__name__


def _abort_quietly(staging: AttemptStaging) -> None:
    try:
        staging.abort()
    except StoreCleanupError as exc:
        # A run error naming the orphan; reconciliation removes it once it is past the age gate.
        _log.error("otel_inputs: %s", exc)


def _metadata_fallback(attempt_id, run_id, decision, request, lineage, task_in_message, previous_envelope,
                       envelope_in_message, context_roots, attachments, limits, clock, store_error, started):
    """The store failed: still list every item (metadata only), each saying why it has no snapshot."""
    gap = GapReason.STORE_UNAVAILABLE.value
    meta = AdmissionDecision(CaptureDecision.METADATA_ONLY, GapReason.STORE_UNAVAILABLE)
    packet = _capture(attempt_id, run_id, meta, None, request, lineage, task_in_message, previous_envelope,
                      envelope_in_message, context_roots, attachments, limits, clock, None, None, started)
    items = tuple(i if i.is_sentinel else replace(i, detail=store_error) for i in packet.items)
    return replace(packet, items=items, gap_reason=gap, decision=decision.decision)


def _finalize(
    attempt_id: str,
    drafts: list[_Draft],
    incomplete: Bound | None,
    limits: CaptureLimits,
    *,
    available: bool,
    store_error: str | None = None,
) -> tuple[InputItem, ...]:
    items: list[InputItem] = []
    for seq, d in enumerate(drafts):
        stored = available and d.tmp_blob and d.status is CaptureStatus.CAPTURED
        detail = d.detail
        if d.status is CaptureStatus.CAPTURED and not stored:
            detail = store_error or "snapshot was not stored"
        items.append(
            InputItem(
                input_id=input_id_for(attempt_id, seq),
                seq=seq,
                label=d.label,
                source_kind=d.source_kind,
                delivery_mode=d.delivery_mode,
                capture_status=d.status,
                artifact_status=ArtifactStatus.AVAILABLE if stored else ArtifactStatus.NEVER_CAPTURED,
                source_path=None if d.source_path is None else safe_text(d.source_path),
                snapshot_ref=snapshot_ref_for(d.sha256) if stored and d.sha256 else None,
                media_type=d.media_type,
                preview_kind=d.preview_kind,
                size_bytes=d.size_bytes,
                sha256=d.sha256,
                detail=detail,
                captured_at_ns=d.captured_at_ns,
            )
        )
    if incomplete is not None:
        seq = len(items)
        items.append(
            InputItem(
                input_id=input_id_for(attempt_id, seq),
                seq=seq,
                label="enumeration incomplete",
                source_kind=SourceKind.CONTEXT_HANDOFF,
                delivery_mode=DeliveryMode.PATH_REFERENCE,
                capture_status=CaptureStatus.ENUMERATION_INCOMPLETE,
                artifact_status=ArtifactStatus.NEVER_CAPTURED,
                detail=limits.describe(incomplete),
                captured_at_ns=time.time_ns(),
            )
        )
    return tuple(items)


def _packet(attempt_id, run_id, decision, coverage, items, incomplete, lineage, request, gap) -> AgentInputPacket:
    real = [i for i in items if not i.is_sentinel]
    captured = sum(1 for i in real if i.artifact_status is ArtifactStatus.AVAILABLE)
    declared = None if incomplete is not None else len(real)
    omitted = None if declared is None else declared - captured
    return AgentInputPacket(
        names.PACKET_VERSION, attempt_id, run_id, coverage, decision.decision,
        declared, captured, omitted, tuple(items), lineage, request, gap,
    )


def catalog_item(attempt_id: str, item: InputItem) -> CatalogItem:
    """An input item as the store's catalog records it."""
    return CatalogItem(
        attempt_id, item.input_id, item.seq, item.label, item.source_kind.value, item.delivery_mode.value,
        item.source_path, item.snapshot_ref, item.media_type, item.preview_kind.value, item.size_bytes,
        item.sha256, item.capture_status.value, item.artifact_status.value, None, item.detail,
        item.captured_at_ns,
    )


def attempt_record(packet: AgentInputPacket) -> AttemptRecord:
    """The store's own record of the attempt: the packet as committed, with its owner while running."""
    return AttemptRecord(
        packet.attempt_id, packet.run_id, packet.lineage.session_id if packet.lineage else None, "running",
        os.getpid(), socket.gethostname(), packet.coverage.value, packet.decision.value, packet.gap_reason,
        packet.declared_count, packet.captured_count, packet.omitted_count, time.time_ns(),
        items=tuple(catalog_item(packet.attempt_id, i) for i in packet.items),
    )
