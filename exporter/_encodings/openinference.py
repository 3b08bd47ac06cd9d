"""OpenInference (Arize Phoenix's instrumentations, docs/encodings.md): ``openinference.span.kind``,
flattened ``llm.input_messages.<i>.message.role|content``, ``llm.*`` models and token counts,
``session.id``, and ``input.value``: a ``TOOL`` span's input is its tool arguments (never a user
message); the input of an ``AGENT`` or ``LLM`` span without flattened messages is read as one
text, and says so.

A ``CHAIN`` span is a *container* (operation ``container``): the root of a LangGraph or LangChain
run, or a node or runnable inside one.  The root of a run is its attempt; a container below a
GenAI span is not listed as a step (its GenAI spans are).  A container records no messages of its
own: its input is the run's input, not what a model was sent (the first model step says that)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from otel_inputs import names as n

from otel_inputs.exporter._encodings._base import (
    Encoding, Messages, Reading, count, flat_messages, indexed_messages, nonempty, string, text,
)  # fmt: skip
from otel_inputs.exporter._spans import SpanRecord

NAME = "openinference"
OPERATION_CONTAINER = "container"
_KINDS = frozenset(n.OPENINFERENCE_LLM_KINDS + n.OPENINFERENCE_STEP_KINDS + (n.OPENINFERENCE_KIND_CHAIN,))
_OPERATIONS = {"LLM": "chat", "EMBEDDING": "embeddings", "AGENT": n.OPERATION_INVOKE_AGENT,
               "TOOL": n.OPERATION_EXECUTE_TOOL, n.OPENINFERENCE_KIND_CHAIN: OPERATION_CONTAINER}  # fmt: skip
_INPUT_AS_TEXT = frozenset({"LLM", "AGENT"})
INPUT_VALUE_NOTE = "from OpenInference input.value (the span's input as one text)"
_MESSAGES = re.compile(
    re.escape(n.OPENINFERENCE_INPUT_MESSAGES) + r"\.(\d+)\.(" + re.escape(n.OPENINFERENCE_MESSAGE_ROLE)
    + "|" + re.escape(n.OPENINFERENCE_MESSAGE_CONTENT) + r")$"
)


def _kind(attrs: Mapping[str, Any]) -> str | None:
    kind = attrs.get(n.OPENINFERENCE_SPAN_KIND)
    return kind if isinstance(kind, str) else None


def recognises(attrs: Mapping[str, Any], span_name: str = "") -> bool:
    return _kind(attrs) in _KINDS


def read(span: SpanRecord) -> Reading:
    attrs = span.attributes
    kind = _kind(attrs)
    known = kind in _KINDS
    flat = [] if kind == n.OPENINFERENCE_KIND_CHAIN else indexed_messages(
        attrs, _MESSAGES, n.OPENINFERENCE_MESSAGE_ROLE, n.OPENINFERENCE_MESSAGE_CONTENT)
    messages: Messages | None = flat_messages(flat) if flat else None
    value = string(attrs, n.OPENINFERENCE_INPUT_VALUE)
    if messages is None and value is not None and kind in _INPUT_AS_TEXT:
        messages = Messages(None, value, None, INPUT_VALUE_NOTE)
    return Reading(
        operation=_OPERATIONS.get(kind or "") if known else None,
        session_id=string(attrs, n.OPENINFERENCE_SESSION_ID),
        provider_name=nonempty(attrs, n.OPENINFERENCE_LLM_PROVIDER) or string(attrs, n.OPENINFERENCE_LLM_SYSTEM),
        request_model=string(attrs, n.OPENINFERENCE_MODEL_NAME),
        input_tokens=count(attrs, n.OPENINFERENCE_PROMPT_TOKENS),
        output_tokens=count(attrs, n.OPENINFERENCE_COMPLETION_TOKENS),
        tool_name=string(attrs, n.OPENINFERENCE_TOOL_NAME) if known else None,
        tool_arguments=text(attrs.get(n.OPENINFERENCE_INPUT_VALUE)) if kind == "TOOL" else None,
        messages=messages,
    )


ENCODING = Encoding(NAME, recognises, read)
