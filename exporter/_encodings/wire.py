"""The project's own wire (docs/wire.md): a span carrying an otel-inputs packet is always an attempt.

Its task, lineage and packet counts are read by :func:`packet_fields` into the attempt row; the
messages and GenAI fields it carries are the GenAI conventions' and are read by ``genai``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from otel_inputs import names as n

from otel_inputs.exporter._encodings._base import INT64_MAX, Encoding, Reading, attr_int, string
from otel_inputs.exporter._spans import SpanRecord

NAME = "otel_inputs"


def recognises(attrs: Mapping[str, Any], span_name: str = "") -> bool:
    return n.PACKET_VERSION_ATTR in attrs


def read(span: SpanRecord) -> Reading:
    attrs = span.attributes
    if not recognises(attrs):
        return Reading()
    # INTERNAL attempt spans name their model provider under our prefix (docs/wire.md).
    return Reading(operation=n.OPERATION_INVOKE_AGENT, provider_name=string(attrs, n.PROVIDER_NAME))


def packet_fields(span: SpanRecord) -> dict[str, Any]:
    """The attempt row's packet columns (task, lineage, counts, capture decision), as sent."""
    attrs = span.attributes
    return dict(
        attempt_id=string(attrs, n.ATTEMPT_ID) or span.span_id,  # '' is no id: fall back to the span
        run_id=string(attrs, n.RUN_ID),
        phase=string(attrs, n.PHASE),
        task_prompt=string(attrs, n.TASK_PROMPT),
        task_source_kind=string(attrs, n.TASK_SOURCE_KIND),
        task_source_path=string(attrs, n.TASK_SOURCE_PATH),
        task_size_bytes=attr_int(attrs, n.TASK_SIZE_BYTES, hi=INT64_MAX),
        task_sha256=string(attrs, n.TASK_SHA256),
        send_kind=string(attrs, n.SEND_KIND),
        turn_index=attr_int(attrs, n.TURN_INDEX),
        previous_turn_attempt_id=string(attrs, n.PREVIOUS_TURN_ATTEMPT_ID),
        retry_of_attempt_id=string(attrs, n.RETRY_OF_ATTEMPT_ID),
        input_packet_version=attr_int(attrs, n.PACKET_VERSION_ATTR),
        declared_input_count=attr_int(attrs, n.PACKET_DECLARED_COUNT),
        captured_input_count=attr_int(attrs, n.PACKET_CAPTURED_COUNT),
        omitted_input_count=attr_int(attrs, n.PACKET_OMITTED_COUNT),
        item_count=attr_int(attrs, n.PACKET_ITEM_COUNT),
        capture_decision=string(attrs, n.CAPTURE_DECISION),
        capture_gap_reason=string(attrs, n.CAPTURE_GAP_REASON),
    )


ENCODING = Encoding(NAME, recognises, read)
