"""The OpenTelemetry GenAI conventions, in span attributes and span events (docs/encodings.md).

Recognised by ``gen_ai.operation.name``.  Messages are merged across where producers put them:

- ``gen_ai.system_instructions`` / ``gen_ai.input.messages`` as span attributes, else from the
  span's ``gen_ai.client.inference.operation.details`` events, field by field (Strands with
  ``gen_ai_latest_experimental`` sends one field per event);
- else the semconv <= 1.27 ``gen_ai.content.prompt`` event's ``gen_ai.prompt``;
- else the per-message span events ``gen_ai.system.message`` / ``gen_ai.user.message`` /
  ``gen_ai.assistant.message`` / ``gen_ai.tool.message`` in event order, the role from the event
  name and the content from its ``content`` attribute (Strands' default conventions, where the
  content is a JSON list of ``{"text": …}``);
- else the deprecated ``gen_ai.prompt`` attribute.

The GenAI content *log* records are read by ``genai_logs``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from otel_inputs import names as n

from otel_inputs.exporter._encodings._base import (
    ROLE_USER, Encoding, Messages, Reading, count, json_piece, messages_of, messages_text, nonempty, string, text,
)  # fmt: skip
from otel_inputs.exporter._spans import EventRecord, SpanRecord

NAME = "gen_ai"
MESSAGE_EVENTS = {n.EVENT_SYSTEM_MESSAGE: "system", n.EVENT_USER_MESSAGE: "user", n.EVENT_ASSISTANT_MESSAGE: "assistant",
                  n.EVENT_TOOL_MESSAGE: "tool"}  # fmt: skip
# The span events this encoding reads (the sink's fused path keeps only the events some reader needs).
SPAN_EVENTS = frozenset({n.EVENT_INFERENCE_DETAILS, n.EVENT_CONTENT_PROMPT, *MESSAGE_EVENTS})


def recognises(attrs: Mapping[str, Any], span_name: str = "") -> bool:
    return n.GEN_AI_OPERATION_NAME in attrs


def _first(attrs: Mapping[str, Any], events: Sequence[EventRecord], key: str) -> Any:
    """``key`` from the span's attributes, else from its first operation-details event carrying it."""
    if key in attrs:
        return attrs[key]
    for event in events:
        if event.name == n.EVENT_INFERENCE_DETAILS and key in event.attributes:
            return event.attributes[key]
    return None


def span_messages(span: SpanRecord) -> Messages | None:
    """The messages the GenAI conventions record on this span, merged across attributes and events."""
    attrs, events = span.attributes, span.events
    system_raw = _first(attrs, events, n.GEN_AI_SYSTEM_INSTRUCTIONS)
    input_raw = _first(attrs, events, n.GEN_AI_INPUT_MESSAGES)
    if system_raw is not None or input_raw is not None:
        return messages_of(system_raw, input_raw)
    for event in events:
        if event.name == n.EVENT_CONTENT_PROMPT and n.GEN_AI_PROMPT in event.attributes:
            prompt = event.attributes[n.GEN_AI_PROMPT]
            return Messages(None, messages_text(prompt, ROLE_USER), text(prompt))
    pieces = [json_piece(MESSAGE_EVENTS[e.name], e.attributes.get(n.EVENT_CONTENT_KEY))
              for e in events if e.name in MESSAGE_EVENTS]  # fmt: skip
    if pieces:
        return messages_of(None, "[" + ",".join(pieces) + "]")
    if n.GEN_AI_PROMPT in attrs:
        prompt = attrs[n.GEN_AI_PROMPT]
        return Messages(None, messages_text(prompt, ROLE_USER), text(prompt))
    return None


def _call_part_arguments(input_raw: Any) -> str | None:
    """The arguments of the first ``tool_call`` part of the input messages, compact JSON (Strands with
    ``gen_ai_latest_experimental`` records an executed tool's call this way)."""
    raw = text(input_raw)
    try:
        doc = json.loads(raw) if raw is not None else None
    except ValueError:
        return None
    for message in doc if isinstance(doc, list) else ():
        parts = message.get("parts") if isinstance(message, Mapping) else None
        for part in parts if isinstance(parts, list) else ():
            if isinstance(part, Mapping) and part.get("type") == "tool_call" and "arguments" in part:
                return json.dumps(part["arguments"], ensure_ascii=False, separators=(",", ":"))
    return None


def tool_arguments(span: SpanRecord) -> str | None:
    """An executed tool's arguments: ``gen_ai.tool.call.arguments``, else the span's
    ``gen_ai.tool.message`` event content (Strands' default), else the tool-call part of its input
    messages (Strands with ``gen_ai_latest_experimental``)."""
    attrs = span.attributes
    if n.GEN_AI_TOOL_CALL_ARGUMENTS in attrs:
        return text(attrs[n.GEN_AI_TOOL_CALL_ARGUMENTS])
    if string(attrs, n.GEN_AI_OPERATION_NAME) != n.OPERATION_EXECUTE_TOOL:
        return None
    for event in span.events:
        if event.name == n.EVENT_TOOL_MESSAGE and n.EVENT_CONTENT_KEY in event.attributes:
            return text(event.attributes[n.EVENT_CONTENT_KEY])
    return _call_part_arguments(_first(attrs, span.events, n.GEN_AI_INPUT_MESSAGES))


def read(span: SpanRecord) -> Reading:
    attrs = span.attributes
    operation = string(attrs, n.GEN_AI_OPERATION_NAME)
    arguments = tool_arguments(span)
    return Reading(
        operation=operation,
        operation_name=operation,
        session_id=nonempty(attrs, n.GEN_AI_CONVERSATION_ID),
        agent_name=string(attrs, n.GEN_AI_AGENT_NAME),
        provider_name=nonempty(attrs, n.GEN_AI_PROVIDER_NAME) or nonempty(attrs, n.GEN_AI_SYSTEM),
        request_model=nonempty(attrs, n.GEN_AI_REQUEST_MODEL),
        response_model=string(attrs, n.GEN_AI_RESPONSE_MODEL),
        input_tokens=count(attrs, n.GEN_AI_USAGE_INPUT_TOKENS),
        output_tokens=count(attrs, n.GEN_AI_USAGE_OUTPUT_TOKENS),
        tool_name=nonempty(attrs, n.GEN_AI_TOOL_NAME),
        tool_call_id=string(attrs, n.GEN_AI_TOOL_CALL_ID),
        tool_arguments=arguments,
        messages=span_messages(span),
    )


ENCODING = Encoding(NAME, recognises, read)


def output_tool_calls(raw: Any) -> dict[str, str]:
    """call id -> arguments (compact JSON) of the ``tool_call`` parts of a model call's
    ``gen_ai.output.messages``: where ADK (content on log events) leaves an executed tool's
    arguments, on the model call that asked for it."""
    out: dict[str, str] = {}
    value = text(raw)
    try:
        doc = json.loads(value) if value is not None else None
    except ValueError:
        return out
    for message in doc if isinstance(doc, list) else ():
        parts = message.get("parts") if isinstance(message, Mapping) else None
        for part in parts if isinstance(parts, list) else ():
            if (isinstance(part, Mapping) and part.get("type") == "tool_call" and isinstance(part.get("id"), str)
                    and "arguments" in part):  # fmt: skip
                args = part["arguments"]
                out.setdefault(part["id"], args if isinstance(args, str)
                               else json.dumps(args, ensure_ascii=False, separators=(",", ":")))
    return out
