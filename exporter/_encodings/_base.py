"""The interface every encoding module implements, and the small readers they share (docs/encodings.md).

An *encoding* is one way a producer spells an agent run on its spans: the project's own wire
(docs/wire.md), the GenAI conventions, OpenInference, OpenLLMetry, pydantic-ai, the Vercel AI SDK.
Each lives in one module of this package and exposes one :class:`Encoding`:

- ``recognises(attrs, span_name)``: whether the span is a GenAI span of this encoding (an attempt, or
  a step of one once nested under one), from its attributes and name alone;
- ``read(span)``: a :class:`Reading` of what this encoding recorded on the span: the operation it
  performed (which decides the step kind), session, agent, provider and models, token counts, tool
  name / call id / arguments, the messages it sent, and (the wire only) the task.

Every field of a :class:`Reading` is ``None`` when the encoding did not record it; nothing is
invented, and a value of the wrong type reads as absent (docs/encodings.md, "Nothing is invented").
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from otel_inputs.exporter._spans import SpanRecord, stringify

INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1
ROLE_SYSTEM = "system"
ROLE_USER = "user"


@dataclass(frozen=True, slots=True)
class Messages:
    """What a span (or a log record) says was sent: texts by role, the messages as JSON, and a note."""

    system: str | None = None
    user: str | None = None
    json: str | None = None
    note: str | None = None

    @property
    def empty(self) -> bool:
        return self.system is None and self.user is None and self.json is None


NO_MESSAGES = Messages()


@dataclass(frozen=True, slots=True)
class Reading:
    """What one encoding read from one span; ``None`` everywhere it recorded nothing."""

    operation: str | None = None  # the GenAI operation the span performed (decides its step kind)
    operation_name: str | None = None  # gen_ai.operation.name exactly as sent
    session_id: str | None = None
    agent_name: str | None = None
    provider_name: str | None = None
    request_model: str | None = None
    response_model: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    tool_name: str | None = None
    tool_call_id: str | None = None
    tool_arguments: str | None = None
    messages: Messages | None = None


READING_FIELDS = tuple(f for f in Reading.__slots__ if f not in ("operation", "messages"))


@dataclass(frozen=True, slots=True)
class Encoding:
    """One encoding: its name (the ``source_format`` of the spans it recognises first) and its two functions."""

    name: str
    recognises: Callable[[Mapping[str, Any], str], bool]  # (attributes, span name)
    read: Callable[[SpanRecord], Reading]


# --- small typed readers: a wrong type reads as absent, never as a coerced value ---------------


def string(attrs: Mapping[str, Any], key: str) -> str | None:
    value = attrs.get(key)
    return value if isinstance(value, str) else None


def nonempty(attrs: Mapping[str, Any], key: str) -> str | None:
    """A string attribute, with '' read as absent (so the next spelling is tried)."""
    return string(attrs, key) or None


def integer(value: Any, *, lo: int = 0, hi: int = INT32_MAX) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if lo <= value <= hi else None


def attr_int(attrs: Mapping[str, Any], key: str, *, hi: int = INT32_MAX) -> int | None:
    return integer(attrs.get(key), hi=hi)


def count(attrs: Mapping[str, Any], *keys: str) -> int | None:
    """The first of ``keys`` the span carries, as a token count (the first present key decides)."""
    for key in keys:
        if key in attrs:
            return integer(attrs[key], hi=INT64_MAX)
    return None


def text(value: Any) -> str | None:
    """A content attribute as text: strings as sent, structured AnyValues (SDK >= 1.45 sends maps and
    arrays) as the compact JSON the otel_traces map holds for them, so both readings agree."""
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple, Mapping)):
        return stringify(value)
    return None


# --- GenAI message JSON ---------------------------------------------------------------------------


def part_texts(parts: Any) -> list[str] | None:
    """Text of GenAI message parts; ``None`` when the shape is not recognisable."""
    if isinstance(parts, str):
        return [parts]
    if not isinstance(parts, list):
        return None
    texts: list[str] = []
    for part in parts:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, Mapping):
            content = part.get("content", part.get("text"))
            if part.get("type", "text") == "text" and isinstance(content, str):
                texts.append(content)
        else:
            return None
    return texts


def messages_text(raw: Any, role: str | None) -> str | None:
    """Text of the messages with ``role`` (or of a bare parts list); the exact JSON if unparseable."""
    raw = text(raw)
    if raw is None:
        return None
    try:
        doc = json.loads(raw)
    except ValueError:
        return raw  # plain text (deprecated gen_ai.prompt) or broken JSON: keep it exactly
    if isinstance(doc, Mapping):
        doc = [doc]
    if not isinstance(doc, list):
        return raw
    texts: list[str] = []
    for item in doc:
        if isinstance(item, Mapping) and "role" in item:
            if role is not None and item.get("role") != role:
                continue
            got = part_texts(item.get("parts", item.get("content")))
        else:
            got = part_texts([item]) if role is None or role == ROLE_SYSTEM else []
        if got is None:
            return raw
        texts.extend(got)
    return "\n\n".join(texts) if texts else (None if doc else raw)


def has_role(raw: str, role: str) -> bool:
    try:
        doc = json.loads(raw)
    except ValueError:
        return False
    return isinstance(doc, list) and any(isinstance(m, Mapping) and m.get("role") == role for m in doc)


def messages_of(system_raw: Any, input_raw: Any, note: str | None = None) -> Messages:
    """Messages from GenAI system-instructions and input-messages values (text or structured)."""
    system = messages_text(system_raw, None)
    raw_input = text(input_raw)
    user = messages_text(raw_input, ROLE_USER) if raw_input is not None else None
    if system is None and raw_input is not None and has_role(raw_input, ROLE_SYSTEM):
        system = messages_text(raw_input, ROLE_SYSTEM)
    return Messages(system, user, raw_input, note)


def indexed_messages(attrs: Mapping[str, Any], pattern: re.Pattern[str], role_key: str,
                     content_key: str) -> list[tuple[str, str]]:
    """(role, content) of flattened ``<prefix>.<i>.<role|content>`` attributes, in index order."""
    by_index: dict[int, dict[str, Any]] = {}
    for key, value in attrs.items():
        m = pattern.match(key)
        if m:
            by_index.setdefault(int(m.group(1)), {})[m.group(2)] = value
    out: list[tuple[str, str]] = []
    for _, msg in sorted(by_index.items()):
        role, content = msg.get(role_key), text(msg.get(content_key))
        if isinstance(role, str) and content is not None:
            out.append((role, content))
    return out


def flat_messages(messages: Sequence[tuple[str, str]], note: str | None = None) -> Messages:
    """Flattened (role, content) messages re-encoded as GenAI input-message JSON, content kept as sent."""

    def joined(role: str) -> str | None:
        texts = [c for r, c in messages if r == role]
        return "\n\n".join(texts) if texts else None

    encoded = json.dumps([{"role": r, "parts": [{"type": "text", "content": c}]} for r, c in messages],
                         ensure_ascii=False, separators=(",", ":"))  # fmt: skip
    return Messages(joined(ROLE_SYSTEM), joined(ROLE_USER), encoded, note)


def json_piece(role: str, content: Any) -> str:
    """One ``{"role":…,"content":…}`` message of a per-message event: a content that is JSON is kept
    as sent (its own text, not re-serialised, so the ClickHouse projection builds the same text),
    anything else as a JSON string."""
    raw = text(content)
    if raw is None:
        body = "null"
    else:
        try:
            json.loads(raw)
            body = raw
        except ValueError:
            body = json.dumps(raw, ensure_ascii=False)
    return '{"role":' + json.dumps(role, ensure_ascii=False) + ',"content":' + body + "}"
