"""The Vercel AI SDK's own telemetry (``experimental_telemetry``, ai <= 6; docs/encodings.md).

Recognised by ``ai.operationId``.  ``ai.generateText`` / ``ai.streamText`` / ``ai.generateObject`` /
``ai.streamObject`` is the call (an agent run: the attempt at the root); its
``ai.generateText.doGenerate`` (``.doStream``) spans are model calls, ``ai.toolCall`` spans tool
calls.  The call's ``ai.prompt`` is ``{"system": …, "prompt": … | "messages": […]}``; a model
call's ``ai.prompt.messages`` is the message list it sent (system message included).  The session
is ``ai.telemetry.metadata.sessionId`` (the metadata key the SDK's docs use), the agent its
``ai.telemetry.functionId``.  ai 7 with ``@ai-sdk/otel`` sends the GenAI conventions instead.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from otel_inputs import names as n

from otel_inputs.exporter._encodings._base import (
    ROLE_USER, Encoding, Messages, Reading, count, messages_of, messages_text, nonempty, string, text,
)  # fmt: skip
from otel_inputs.exporter._spans import SpanRecord

NAME = "vercel_ai"
_CALLS = frozenset({"ai.generateText", "ai.streamText", "ai.generateObject", "ai.streamObject"})
_MODEL_CALL_SUFFIXES = (".doGenerate", ".doStream")


def _operation_id(attrs: Mapping[str, Any]) -> str | None:
    value = string(attrs, n.VERCEL_OPERATION_ID)
    return value if value and value.startswith("ai.") else None


def recognises(attrs: Mapping[str, Any], span_name: str = "") -> bool:
    return _operation_id(attrs) is not None


def _operation(op: str) -> str:
    if op.endswith(_MODEL_CALL_SUFFIXES):
        return "chat"
    if op.endswith(".doEmbed"):
        return "embeddings"
    if op == n.VERCEL_TOOL_CALL_OPERATION:
        return n.OPERATION_EXECUTE_TOOL
    if op in _CALLS:
        return n.OPERATION_INVOKE_AGENT
    return "other"


def call_messages(raw: Any) -> Messages | None:
    """A call's ``ai.prompt``: its system text, the user text of its prompt or messages, kept as sent."""
    raw = text(raw)
    if raw is None:
        return None
    try:
        doc = json.loads(raw)
    except ValueError:
        return Messages(None, raw, raw)
    if not isinstance(doc, Mapping):
        return Messages(None, messages_text(raw, ROLE_USER), raw)
    system = doc.get("system") if isinstance(doc.get("system"), str) else None
    prompt = doc.get("prompt")
    if isinstance(prompt, str):
        user: str | None = prompt
    elif isinstance(doc.get("messages"), list) or isinstance(prompt, list):
        user = messages_text(text(doc.get("messages") if isinstance(doc.get("messages"), list) else prompt), ROLE_USER)
    else:
        user = None
    return Messages(system, user, raw)


def read(span: SpanRecord) -> Reading:
    attrs = span.attributes
    op = _operation_id(attrs)
    if op is None:
        return Reading()
    messages: Messages | None = None
    if n.VERCEL_PROMPT_MESSAGES in attrs:
        messages = messages_of(None, attrs[n.VERCEL_PROMPT_MESSAGES])
    elif n.VERCEL_PROMPT in attrs:
        messages = call_messages(attrs[n.VERCEL_PROMPT])
    return Reading(
        operation=_operation(op),
        session_id=nonempty(attrs, n.VERCEL_METADATA_SESSION_ID),
        agent_name=nonempty(attrs, n.VERCEL_FUNCTION_ID),
        provider_name=nonempty(attrs, n.VERCEL_MODEL_PROVIDER),
        request_model=nonempty(attrs, n.VERCEL_MODEL_ID),
        response_model=nonempty(attrs, n.VERCEL_RESPONSE_MODEL),
        input_tokens=count(attrs, n.VERCEL_USAGE_INPUT_TOKENS) if n.VERCEL_USAGE_INPUT_TOKENS in attrs
        else count(attrs, n.VERCEL_USAGE_PROMPT_TOKENS),
        output_tokens=count(attrs, n.VERCEL_USAGE_OUTPUT_TOKENS) if n.VERCEL_USAGE_OUTPUT_TOKENS in attrs
        else count(attrs, n.VERCEL_USAGE_COMPLETION_TOKENS),
        tool_name=nonempty(attrs, n.VERCEL_TOOL_CALL_NAME),
        tool_call_id=nonempty(attrs, n.VERCEL_TOOL_CALL_ID),
        tool_arguments=text(attrs.get(n.VERCEL_TOOL_CALL_ARGS)) if n.VERCEL_TOOL_CALL_ARGS in attrs
        else text(attrs.get(n.VERCEL_TOOL_CALL_INPUT)),
        messages=messages,
    )


ENCODING = Encoding(NAME, recognises, read)
