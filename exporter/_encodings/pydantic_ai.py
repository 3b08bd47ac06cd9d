"""pydantic-ai (docs/encodings.md): GenAI conventions, plus the agent-run span's
``pydantic_ai.all_messages``, the whole conversation of the run (replies and tool results included)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from otel_inputs import names as n

from otel_inputs.exporter._encodings._base import Encoding, Reading, messages_of
from otel_inputs.exporter._spans import SpanRecord

NAME = "pydantic_ai"
ALL_MESSAGES_NOTE = "from pydantic_ai.all_messages: the whole agent run, its replies and tool results included"


def recognises(attrs: Mapping[str, Any], span_name: str = "") -> bool:
    return False  # its spans carry gen_ai.operation.name: the GenAI encoding recognises them


def read(span: SpanRecord) -> Reading:
    attrs = span.attributes
    if n.PYDANTIC_AI_ALL_MESSAGES not in attrs:
        return Reading()
    return Reading(messages=messages_of(None, attrs[n.PYDANTIC_AI_ALL_MESSAGES], ALL_MESSAGES_NOTE))


ENCODING = Encoding(NAME, recognises, read)
