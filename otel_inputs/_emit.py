"""What an attempt sends beyond its own otel-inputs attributes: GenAI messages, the GenAI content log
event, attributes other backends read, and the one warning for telemetry that goes nowhere.

Everything here is policy-gated by the caller (``_record.py``): these helpers are only called for
content that admission has already allowed.  Only the OpenTelemetry API is used.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Iterable, Mapping
from enum import Enum
from typing import Any

from opentelemetry import trace
from opentelemetry._logs import Logger, LogRecord
from opentelemetry.trace import Span

from otel_inputs import names
from otel_inputs.types import AgentInputPacket, CaptureDecision

_log = logging.getLogger("otel_inputs")


# --- the exact messages, in the GenAI JSON shapes -------------------------------------------------

def system_instructions(text: str) -> list[dict[str, Any]]:
    return [{"type": "text", "content": text}]


def input_messages(user_text: str) -> list[dict[str, Any]]:
    return [{"role": "user", "parts": [{"type": "text", "content": user_text}]}]


def message_span_attributes(system_message: str | None, user_message: str | None) -> dict[str, str]:
    """On spans the structured values travel as JSON strings (readable by every SDK and backend)."""
    attrs: dict[str, str] = {}
    if system_message is not None:
        attrs[names.GEN_AI_SYSTEM_INSTRUCTIONS] = json.dumps(system_instructions(system_message), ensure_ascii=False)
    if user_message is not None:
        attrs[names.GEN_AI_INPUT_MESSAGES] = json.dumps(input_messages(user_message), ensure_ascii=False)
    return attrs


def emit_operation_details(logger: Logger, span: Span, identity: Mapping[str, Any],
                           system_message: str | None, user_message: str | None) -> bool:
    """Emit ``gen_ai.client.inference.operation.details`` with the messages, correlated to ``span``.

    On log events the messages are structured values, as the conventions specify.  The record
    carries the span's context, so its TraceId/SpanId name the attempt span.
    """
    if system_message is None and user_message is None:
        return False
    attributes: dict[str, Any] = dict(identity)
    if system_message is not None:
        attributes[names.GEN_AI_SYSTEM_INSTRUCTIONS] = system_instructions(system_message)
    if user_message is not None:
        attributes[names.GEN_AI_INPUT_MESSAGES] = input_messages(user_message)
    logger.emit(LogRecord(context=trace.set_span_in_context(span), event_name=names.EVENT_INFERENCE_DETAILS,
                          attributes=attributes))
    return True


# --- attributes other backends read (opt-in) ------------------------------------------------------

class Backend(str, Enum):
    PHOENIX = "phoenix"
    LANGFUSE = "langfuse"


def parse_backends(raw: str | Iterable[str] | None) -> frozenset[Backend]:
    """``OTEL_INPUTS_BACKEND_COMPAT`` (comma-separated); unknown names are warned about and ignored."""
    if raw is None:
        raw = os.environ.get(names.ENV_BACKEND_COMPAT, "")
    items = raw.split(",") if isinstance(raw, str) else list(raw)
    out: set[Backend] = set()
    for item in (str(i).strip().lower() for i in items):
        if not item:
            continue
        try:
            out.add(Backend(item))
        except ValueError:
            _log.warning("otel_inputs: %s: unknown backend %r ignored (known: %s)", names.ENV_BACKEND_COMPAT,
                         item, ", ".join(b.value for b in Backend))
    return frozenset(out)


def packet_summary(packet: AgentInputPacket) -> str:
    """A readable JSON summary of the packet for backends that show one metadata blob.

    Labels are owner-facing text, so they appear only when capture was admitted.
    """
    admitted = packet.decision is CaptureDecision.ADMITTED
    summary: dict[str, Any] = {
        "coverage": packet.coverage.value,
        "decision": packet.decision.value,
        "declared": packet.declared_count,
        "captured": packet.captured_count,
        "omitted": packet.omitted_count,
        "gap_reason": packet.gap_reason,
        "inputs": [
            {k: v for k, v in {
                "seq": item.seq,
                "label": item.label if admitted else None,
                "source": item.source_kind.value,
                "delivery": item.delivery_mode.value,
                "status": item.capture_status.value,
                "bytes": item.size_bytes,
            }.items() if v is not None}
            for item in packet.items
        ],
    }
    if packet.task is not None:
        summary["task"] = {"source": packet.task.source_kind.value, "bytes": packet.task.size_bytes}
    return json.dumps({k: v for k, v in summary.items() if v is not None}, ensure_ascii=False)


def compat_kind_attributes(backends: frozenset[Backend]) -> dict[str, str]:
    """Span kind as each backend names it; no content, so set whenever compatibility is on."""
    attrs: dict[str, str] = {}
    if Backend.PHOENIX in backends:
        attrs[names.OPENINFERENCE_SPAN_KIND] = names.OPENINFERENCE_KIND_AGENT
    if Backend.LANGFUSE in backends:
        attrs[names.LANGFUSE_OBSERVATION_TYPE] = names.LANGFUSE_TYPE_AGENT
    return attrs


def compat_packet_attributes(backends: frozenset[Backend], packet: AgentInputPacket,
                             task_text: str | None) -> dict[str, str]:
    """The task as the span's input and the packet summary, in each backend's names.

    ``task_text`` is passed only when admission let the task text onto the span.
    """
    attrs: dict[str, str] = {}
    summary = packet_summary(packet)
    if Backend.PHOENIX in backends:
        attrs[names.OPENINFERENCE_METADATA] = json.dumps({"otel_inputs": json.loads(summary)}, ensure_ascii=False)
        if task_text is not None:
            attrs[names.OPENINFERENCE_INPUT_VALUE] = task_text
            attrs[names.OPENINFERENCE_INPUT_MIME_TYPE] = "text/plain"
    if Backend.LANGFUSE in backends:
        attrs[f"{names.LANGFUSE_OBSERVATION_METADATA}.otel_inputs_packet"] = summary
        if task_text is not None:
            attrs[names.LANGFUSE_OBSERVATION_INPUT] = task_text
    return attrs


def compat_output_attributes(backends: frozenset[Backend], text: str) -> dict[str, str]:
    attrs: dict[str, str] = {}
    if Backend.PHOENIX in backends:
        attrs[names.OPENINFERENCE_OUTPUT_VALUE] = text
        attrs[names.OPENINFERENCE_OUTPUT_MIME_TYPE] = "text/plain"
    if Backend.LANGFUSE in backends:
        attrs[names.LANGFUSE_OBSERVATION_OUTPUT] = text
    return attrs


# --- telemetry that goes nowhere ------------------------------------------------------------------

_warned_lock = threading.Lock()
_warned = False

NOOP_PROVIDER_WARNING = (
    "otel_inputs: attempts are being recorded into a no-op OpenTelemetry tracer provider, so nothing "
    "will be exported or land anywhere. Call otel_inputs.exporter.configure(db=...) once at start-up, "
    "pass tracer_provider= to AgentObserver, or run the program under `opentelemetry-instrument` with "
    "OTEL_TRACES_EXPORTER=duckdb (see docs/configuration.md)."
)


def is_noop_provider(provider: Any) -> bool:
    """True for the API's no-op provider and for the global proxy while no real provider is set."""
    if isinstance(provider, trace.NoOpTracerProvider):
        return True
    return isinstance(provider, trace.ProxyTracerProvider) and isinstance(trace.get_tracer_provider(),
                                                                          trace.ProxyTracerProvider)


def warn_if_noop(provider: Any, span: Span) -> bool:
    """Warn once per process when an attempt span is not recording because no provider exports it.

    A span dropped by a real provider's sampler is intentional and is not warned about.
    """
    global _warned
    if span.is_recording() or not is_noop_provider(provider):
        return False
    with _warned_lock:
        if _warned:
            return False
        _warned = True
    _log.warning(NOOP_PROVIDER_WARNING)
    return True
