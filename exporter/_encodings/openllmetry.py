"""OpenLLMetry (Traceloop's older shape, docs/encodings.md): indexed ``gen_ai.prompt.<i>.role|content``,
``llm.request.type`` and the older usage spellings; these spans send no ``gen_ai.operation.name``."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from otel_inputs import names as n

from otel_inputs.exporter._encodings._base import Encoding, Reading, count, flat_messages, indexed_messages, nonempty
from otel_inputs.exporter._spans import SpanRecord

NAME = "openllmetry"
# llm.request.type → the GenAI operation it corresponds to (for the step kind only: operation_name
# stays what the span sent, i.e. NULL for these spans).
_OPERATIONS = {"chat": "chat", "completion": "text_completion", "embedding": "embeddings"}
_MARKERS = tuple(f"{prefix}.0.{field}" for prefix in (n.OPENLLMETRY_PROMPT_PREFIX, n.OPENLLMETRY_COMPLETION_PREFIX)
                 for field in ("role", "content"))  # fmt: skip
_PROMPT = re.compile(re.escape(n.OPENLLMETRY_PROMPT_PREFIX) + r"\.(\d+)\.(role|content)$")


def recognises(attrs: Mapping[str, Any], span_name: str = "") -> bool:
    return n.OPENLLMETRY_REQUEST_TYPE in attrs or (n.GEN_AI_SYSTEM in attrs and any(k in attrs for k in _MARKERS))


def read(span: SpanRecord) -> Reading:
    attrs = span.attributes
    request_type = attrs.get(n.OPENLLMETRY_REQUEST_TYPE)
    flat = indexed_messages(attrs, _PROMPT, "role", "content")
    return Reading(
        operation=(_OPERATIONS.get(request_type, "chat") if isinstance(request_type, str) else "chat")
        if recognises(attrs) else None,
        provider_name=nonempty(attrs, n.GEN_AI_SYSTEM),
        input_tokens=count(attrs, n.GEN_AI_USAGE_PROMPT_TOKENS),
        output_tokens=count(attrs, n.GEN_AI_USAGE_COMPLETION_TOKENS),
        messages=flat_messages(flat) if flat else None,
    )


ENCODING = Encoding(NAME, recognises, read)
