"""Recording an attempt on its span: the context-manager API runtimes instrument with.

Observation never vetoes the agent call: every failure in admission, capture, the store or
recording is caught here and becomes a recorded gap on the span.
"""

from __future__ import annotations

import logging
import os
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from opentelemetry import _logs, trace
from opentelemetry.trace import Link, Span, SpanKind, Status, StatusCode

from otel_inputs import names
from otel_inputs import _emit
from otel_inputs._capture import ProviderAttachment, capture_attempt_inputs
from otel_inputs._lineage import SessionTracker
from otel_inputs._parts import (
    EvidenceQueue,
    PartDispatch,
    PartLimits,
    PartName,
    PartReceipt,
    encode_logical_request,
    encode_observable_output,
    observe_part,
    record_part_event,
)
from otel_inputs._policy import AdmissionDecision, AttemptAdmission, CapturePolicy, admit
from otel_inputs._retention_gate import RetentionGate
from otel_inputs._snapshot import CaptureLimits
from otel_inputs.store import ArtifactStore, RetentionPolicy
from otel_inputs.store.facts import SCOPE as FACTS_SCOPE
from otel_inputs.store.facts import StoreFacts, attach_facts
from otel_inputs.types import (
    AgentInputPacket,
    CaptureDecision,
    Coverage,
    GapReason,
    InputItem,
    Lineage,
    ResolvedRequest,
    SendKind,
)

_log = logging.getLogger("otel_inputs")
_SCOPE = "otel_inputs"
_EVENT_IDENTITY = (names.GEN_AI_OPERATION_NAME, names.ATTEMPT_ID, names.RUN_ID, names.GEN_AI_AGENT_NAME,
                   names.GEN_AI_REQUEST_MODEL, names.GEN_AI_CONVERSATION_ID)


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("otel-inputs")
    except Exception:  # pragma: no cover - running from a source tree
        return "0"


def input_event_attributes(item: InputItem) -> dict[str, Any]:
    """The ``otel_inputs.input`` event attributes of one item; absent values are omitted."""
    attrs: dict[str, Any] = {
        names.INPUT_ID: item.input_id,
        names.INPUT_SEQ: item.seq,
        names.INPUT_LABEL: item.label,
        names.INPUT_SOURCE_KIND: item.source_kind.value,
        names.INPUT_DELIVERY_MODE: item.delivery_mode.value,
        names.INPUT_PREVIEW_KIND: item.preview_kind.value,
        names.INPUT_CAPTURE_STATUS: item.capture_status.value,
        names.INPUT_ARTIFACT_STATUS: item.artifact_status.value,
    }
    optional = {
        names.INPUT_SOURCE_PATH: item.source_path,
        names.INPUT_SNAPSHOT_REF: item.snapshot_ref,
        names.INPUT_MEDIA_TYPE: item.media_type,
        names.INPUT_SIZE_BYTES: item.size_bytes,
        names.INPUT_SHA256: item.sha256,
        names.INPUT_DETAIL: item.detail,
    }
    attrs.update({k: v for k, v in optional.items() if v is not None})
    return attrs


def packet_span_attributes(packet: AgentInputPacket, *, include_task_text: bool) -> dict[str, Any]:
    """Span-level packet summary, task provenance and lineage (absent means not recorded)."""
    attrs: dict[str, Any] = {
        names.PACKET_VERSION_ATTR: packet.version,
        names.PACKET_COVERAGE: packet.coverage.value,
        names.PACKET_CAPTURED_COUNT: packet.captured_count,
        names.PACKET_ITEM_COUNT: len(packet.items),
        names.CAPTURE_DECISION: packet.decision.value,
    }
    if packet.declared_count is not None:
        attrs[names.PACKET_DECLARED_COUNT] = packet.declared_count
    if packet.omitted_count is not None:
        attrs[names.PACKET_OMITTED_COUNT] = packet.omitted_count
    if packet.gap_reason:
        attrs[names.CAPTURE_GAP_REASON] = packet.gap_reason
    task = packet.task
    if task is not None:
        attrs[names.TASK_SOURCE_KIND] = task.source_kind.value
        if task.source_path is not None:
            attrs[names.TASK_SOURCE_PATH] = task.source_path
        if packet.decision is not CaptureDecision.SUPPRESSED:
            attrs[names.TASK_SIZE_BYTES] = task.size_bytes
        if include_task_text:
            attrs[names.TASK_SHA256] = task.sha256
            attrs[names.TASK_PROMPT] = task.text
    return attrs


def lineage_attributes(lineage: Lineage) -> dict[str, Any]:
    attrs: dict[str, Any] = {
        names.SEND_KIND: lineage.send_kind.value,
        names.TURN_INDEX: lineage.turn_index,
    }
    if lineage.previous_turn_attempt_id:
        attrs[names.PREVIOUS_TURN_ATTEMPT_ID] = lineage.previous_turn_attempt_id
    if lineage.retry_of_attempt_id:
        attrs[names.RETRY_OF_ATTEMPT_ID] = lineage.retry_of_attempt_id
    return attrs


@dataclass
class AttemptRecording:
    """What the caller gets inside ``with observer.attempt(...)``: the span, ids and the packet."""

    span: Span
    attempt_id: str
    run_id: str
    lineage: Lineage | None
    packet: AgentInputPacket | None
    decision: AdmissionDecision | None
    observation_errors: list[str] = field(default_factory=list)
    parts: EvidenceQueue | None = None
    part_receipts: dict[str, PartReceipt] = field(default_factory=dict)
    # Set by the observer: whether output text may go onto the span, and for which backends.
    output_on_span: bool = False
    backends: frozenset[_emit.Backend] = frozenset()
    # What the GenAI log event repeats from the span so a reader can tie it to the attempt.
    event_identity: dict[str, Any] = field(default_factory=dict)

    def record_request(self, *, route: str | None = None, model: str | None = None, messages: Any = None,
                       tools: Any = None, options: Any = None,
                       dispatch: PartDispatch | str | None = PartDispatch.UNKNOWN) -> PartReceipt:
        """Record the provider-neutral logical request as an exchange part (never blocks, never raises)."""
        return self._record_part(PartName.LOGICAL_REQUEST,
                                 lambda: encode_logical_request(route, model, messages, tools, options), dispatch)

    def record_output(self, *, text: str | None = None, tool_calls: Any = None, usage: Any = None,
                      settlement: Any = None,
                      dispatch: PartDispatch | str | None = PartDispatch.UNKNOWN) -> PartReceipt:
        """Record the observable output (text, tool calls, partial usage, settlement) as its own part."""
        receipt = self._record_part(PartName.OBSERVABLE_OUTPUT,
                                    lambda: encode_observable_output(text, tool_calls, usage, settlement), dispatch)
        if text is not None and self.output_on_span and self.backends:
            try:
                self.span.set_attributes(_emit.compat_output_attributes(self.backends, text))
            except Exception as exc:  # noqa: BLE001 - observation never vetoes
                self.observation_errors.append(f"compat output: {exc}")
        return receipt

    def _record_part(self, part: PartName, encode: Any, dispatch: Any) -> PartReceipt:
        receipt = observe_part(self.parts, self.decision, run_id=self.run_id, attempt_id=self.attempt_id,
                               part=part, encode=encode, dispatch=dispatch)
        self.part_receipts[receipt.part.value] = receipt
        record_part_event(self.span, receipt)
        return receipt


class AgentObserver:
    """Records each agent attempt on an ``invoke_agent`` span: task, lineage and input packet."""

    def __init__(
        self,
        *,
        tracer_provider: trace.TracerProvider | None = None,
        logger_provider: _logs.LoggerProvider | None = None,
        store: ArtifactStore | str | os.PathLike[str] | None = None,
        policy: CapturePolicy | None = None,
        limits: CaptureLimits | None = None,
        clock: Callable[[], float] = time.monotonic,
        agent_name: str | None = None,
        agent_id: str | None = None,
        provider_name: str | None = None,
        request_model: str | None = None,
        remote_agent: bool = False,
        tracker: SessionTracker | None = None,
        retention: RetentionPolicy | None = None,
        part_limits: PartLimits | None = None,
        backend_compat: str | Sequence[str] | None = None,
    ) -> None:
        self._tracer_provider = tracer_provider
        self._tracer = trace.get_tracer(_SCOPE, _version(), tracer_provider=tracer_provider)
        # The GenAI content log event goes through the logs API (global provider unless given).
        self._logger = _logs.get_logger(_SCOPE, _version(), logger_provider=logger_provider)
        self.backends = _emit.parse_backends(backend_compat)
        if store is None and os.environ.get(names.ENV_STORE):
            store = os.environ[names.ENV_STORE]
        self._store_root = store.root if isinstance(store, ArtifactStore) else store
        self._store: ArtifactStore | None = store if isinstance(store, ArtifactStore) else None
        self.policy = policy or CapturePolicy.from_env()
        self.limits = limits or CaptureLimits.from_env()
        self.clock = clock
        self.agent_name = agent_name
        self.agent_id = agent_id
        self.provider_name = provider_name
        self.request_model = request_model
        self.span_kind = SpanKind.CLIENT if remote_agent else SpanKind.INTERNAL
        self.tracker = tracker or SessionTracker()
        self.retention = retention if retention is not None else RetentionPolicy.from_env()
        self._gate: RetentionGate | None = None
        self._reconciled = False
        self.part_limits = part_limits or PartLimits.from_env()
        self._parts: EvidenceQueue | None = None
        self._facts: StoreFacts | None = None
        self._logger_provider = logger_provider

    def _open_store(self) -> ArtifactStore | None:
        if self._store is None and self._store_root is not None:
            self._store = ArtifactStore(self._store_root)  # may raise; caller turns it into a gap
        if self._store is not None and not self._reconciled:
            self._reconciled = True
            self._reconcile_in_background(self._store)
        if self._store is not None and self._gate is None and self.retention.active:
            self._gate = RetentionGate(self._store, self.retention)
            self._gate.start()
        if self._store is not None and self._parts is None:
            self._parts = EvidenceQueue(self._store, self.part_limits)
        if self._store is not None and self._facts is None:
            try:  # every change of an item's state, also as a log record (docs/wire.md, "The store fact")
                self._facts = attach_facts(self._store, _logs.get_logger(
                    FACTS_SCOPE, _version(), logger_provider=self._logger_provider))
            except Exception as exc:  # noqa: BLE001 - facts are telemetry: never a reason to fail capture
                _log.warning("otel_inputs: store facts not emitted: %s", exc)
        return self._store

    def _store_location(self) -> str | None:
        """The store's bucket location without credentials; ``None`` without a store or a bucket."""
        try:
            url = None
            if self._store is not None:
                url = self._store.objects_url or os.environ.get(names.ENV_OBJECTS_URL)
            elif self._store_root is not None:
                url = os.environ.get(names.ENV_OBJECTS_URL)
            if url:
                from otel_inputs.store.bucket import public_location  # only with a bucket (docs/objects.md)

                return public_location(url)
        except Exception:  # noqa: BLE001 - a location is a convenience for viewers, never a failure
            pass
        return None

    @staticmethod
    def _reconcile_in_background(store: ArtifactStore) -> None:
        """Start-up reconciliation (age-gated, so other live processes' captures are safe), off-thread."""
        import threading

        from otel_inputs.store import reconcile_store

        def run() -> None:
            try:
                reconcile_store(store)
            except Exception as exc:  # noqa: BLE001 - housekeeping must never take the agent down
                _log.warning("otel_inputs: store reconciliation failed: %s", exc)

        threading.Thread(target=run, name="otel-inputs-reconcile", daemon=True).start()

    def flush(self, timeout: float | None = None) -> bool:
        """Wait for queued exchange parts and ended marks (for shutdown and tests)."""
        ok = self._parts.flush(timeout) if self._parts is not None else True
        if self._store is not None:
            self._store.flush()
        return ok

    @property
    def retention_gate(self) -> RetentionGate | None:
        return self._gate

    @contextmanager
    def attempt(
        self,
        *,
        run_id: str,
        request: ResolvedRequest | None,
        phase: str | None = None,
        session_id: str | None = None,
        send_kind: SendKind | str = SendKind.INITIAL,
        retry_of_attempt_id: str | None = None,
        attempt_id: str | None = None,
        task_in_message: bool | None = None,
        previous_envelope: Any = None,
        envelope_in_message: bool = True,
        context_roots: Sequence[str | os.PathLike[str]] = (),
        attachments: Sequence[ProviderAttachment] = (),
        system_message: str | None = None,
        user_message: str | None = None,
        admission: AttemptAdmission | None = None,
        agent_name: str | None = None,
    ) -> Iterator[AttemptRecording]:
        """Open the attempt span, record the packet, and yield while the caller dispatches the model."""
        attempt_id = attempt_id or uuid.uuid4().hex
        agent = agent_name or self.agent_name
        errors: list[str] = []
        lineage: Lineage | None = None
        try:
            lineage = self.tracker.next_attempt(
                attempt_id, session_id=session_id, send_kind=send_kind, retry_of_attempt_id=retry_of_attempt_id
            )
        except Exception as exc:  # bad lineage input is the caller's bug, but must not stop the call
            errors.append(f"lineage: {exc}")
        attributes: dict[str, Any] = {
            names.GEN_AI_OPERATION_NAME: names.OPERATION_INVOKE_AGENT,
            names.RUN_ID: run_id,
            names.ATTEMPT_ID: attempt_id,
        }
        # The GenAI conventions keep gen_ai.provider.name for CLIENT (remote) agent spans only.
        provider_key = names.GEN_AI_PROVIDER_NAME if self.span_kind is SpanKind.CLIENT else names.PROVIDER_NAME
        for key, value in (
            (provider_key, self.provider_name),
            (names.GEN_AI_REQUEST_MODEL, self.request_model),
            (names.GEN_AI_AGENT_NAME, agent),
            (names.GEN_AI_AGENT_ID, self.agent_id),
            (names.GEN_AI_CONVERSATION_ID, session_id),
            (names.PHASE, phase),
        ):
            if value is not None:
                attributes[key] = value
        if lineage is not None:
            attributes.update(lineage_attributes(lineage))
        location = self._store_location()
        if location is not None:  # where a fleet viewer finds the catalog that vouches for the bytes
            attributes[names.STORE_OBJECTS_URL] = location
        attributes.update(_emit.compat_kind_attributes(self.backends))
        links = self._links(lineage)
        span_name = f"{names.SPAN_NAME_PREFIX} {agent}" if agent else names.SPAN_NAME_PREFIX
        span = self._tracer.start_span(span_name, kind=self.span_kind, attributes=attributes, links=links)
        identity = {k: attributes[k] for k in _EVENT_IDENTITY if k in attributes}
        recording = AttemptRecording(span, attempt_id, run_id, lineage, None, None, errors, backends=self.backends,
                                     event_identity=identity)
        try:
            _emit.warn_if_noop(self._tracer_provider or trace.get_tracer_provider(), span)
        except Exception:  # noqa: BLE001 - a warning must never stop the call
            pass
        try:
            self._observe(recording, request, task_in_message, previous_envelope, envelope_in_message,
                          context_roots, attachments, system_message, user_message,
                          admission or AttemptAdmission())
        except Exception as exc:  # observation never vetoes the agent call
            _log.warning("otel_inputs: observation failed for attempt %s: %s", attempt_id, exc)
            errors.append(f"observe: {exc}")
            try:
                span.set_attribute(names.CAPTURE_GAP_REASON, GapReason.OBSERVER_ERROR.value)
                if recording.packet is None:
                    span.set_attribute(names.PACKET_VERSION_ATTR, names.PACKET_VERSION)
                    span.set_attribute(names.PACKET_COVERAGE, Coverage.PARTIAL.value)
                    span.set_attribute(names.PACKET_CAPTURED_COUNT, 0)
                    span.set_attribute(names.PACKET_ITEM_COUNT, 0)
            except Exception:
                pass
        try:
            with trace.use_span(span, end_on_exit=False, record_exception=False, set_status_on_exception=False):
                yield recording
        except BaseException as exc:
            span.record_exception(exc)
            span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {exc}"[:512]))
            raise
        finally:
            span.end()
            if self._store is not None and recording.packet is not None:
                try:
                    self._store.mark_terminal_later(attempt_id)
                except Exception:  # noqa: BLE001 - observation never vetoes
                    pass

    def _links(self, lineage: Lineage | None) -> list[Link]:
        links: list[Link] = []
        if lineage is None:
            return links
        for target, kind in (
            (lineage.previous_turn_attempt_id, names.LINK_PREVIOUS_TURN),
            (lineage.retry_of_attempt_id, names.LINK_RETRY_OF),
        ):
            ctx = self.tracker.span_context(target)
            if ctx is not None:
                links.append(Link(ctx, {names.LINK_KIND: kind}))
        return links

    def _observe(self, rec: AttemptRecording, request: ResolvedRequest | None, task_in_message: bool | None,
                 previous_envelope: Any, envelope_in_message: bool, context_roots: Sequence[str | os.PathLike[str]],
                 attachments: Sequence[ProviderAttachment], system_message: str | None, user_message: str | None,
                 admission: AttemptAdmission) -> None:
        span = rec.span
        self.tracker.remember_span(rec.attempt_id, span.get_span_context())
        sampled = span.is_recording() and span.get_span_context().trace_flags.sampled
        store = None
        store_error = None
        if sampled:
            try:
                store = self._open_store()
                rec.parts = self._parts
                if store is not None and self._facts is not None:  # whose facts vouch for this attempt
                    span.set_attribute(names.STORE_ID, self._facts.store_id)
            except OSError as exc:
                store_error = exc
        decision = admit(self.policy, admission, sampled=bool(sampled),
                         store_root=store.root if store is not None else None)
        if store_error is not None and decision.decision is CaptureDecision.ADMITTED:
            decision = AdmissionDecision(CaptureDecision.METADATA_ONLY, GapReason.STORE_UNAVAILABLE)
        rec.decision = decision
        if not sampled:
            return  # nothing is recorded and nothing is copied for an unsampled attempt
        store_left = None
        if self._gate is not None and decision.decision is CaptureDecision.ADMITTED:
            try:
                store_left = self._gate.remaining(rec.run_id)
            except OSError:
                store_left = 0
        packet = capture_attempt_inputs(
            attempt_id=rec.attempt_id, run_id=rec.run_id, decision=decision, store=store,
            request=request, lineage=rec.lineage, task_in_message=task_in_message,
            previous_envelope=previous_envelope, envelope_in_message=envelope_in_message,
            context_roots=context_roots, attachments=attachments, limits=self.limits, clock=self.clock,
            store_budget_bytes=store_left,
        )
        rec.packet = packet
        if self._gate is not None:
            added = sum(i.size_bytes or 0 for i in packet.items if i.artifact_status.value == "available")
            self._gate.committed(rec.run_id, added)
        content = decision.decision is CaptureDecision.ADMITTED
        span.set_attributes(packet_span_attributes(packet, include_task_text=content))
        messages = self.policy.message_content
        if self.backends:
            task_text = packet.task.text if content and packet.task is not None else None
            span.set_attributes(_emit.compat_packet_attributes(self.backends, packet, task_text))
        rec.output_on_span = content and messages.on_span
        if content and messages.on_span:
            span.set_attributes(_emit.message_span_attributes(system_message, user_message))
        if content and messages.on_event:
            _emit.emit_operation_details(self._logger, span, rec.event_identity, system_message, user_message)
        for item in packet.items:
            span.add_event(names.INPUT_EVENT, input_event_attributes(item), timestamp=item.captured_at_ns or None)
