"""The GenAI content log records of a span (docs/encodings.md, "Exact messages"): the
``gen_ai.client.inference.operation.details`` records, field by field (the latest record carrying
``gen_ai.input.messages``, the latest carrying ``gen_ai.system_instructions``), else the
per-message records ``gen_ai.system.message`` / ``user`` / ``assistant`` / ``tool`` in time order,
the role from the event name and the content from the body's ``content``.  ``gen_ai.choice`` is
output and is not read as input."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from otel_inputs import names as n

from otel_inputs.exporter._encodings._base import Messages, messages_of

NAME = "gen_ai_logs"
ROLES = {n.EVENT_SYSTEM_MESSAGE: "system", n.EVENT_USER_MESSAGE: "user", n.EVENT_ASSISTANT_MESSAGE: "assistant",
         n.EVENT_TOOL_MESSAGE: "tool"}  # fmt: skip
LOG_EVENTS = (n.EVENT_INFERENCE_DETAILS, *ROLES)


@dataclass(frozen=True, slots=True)
class LogRecord:
    """One log record as landed in otel_logs (attribute values as the stored text)."""

    time_ns: int
    event_name: str | None
    body: str | None
    attributes: Mapping[str, str] = field(default_factory=dict)


def log_messages(records: Sequence[LogRecord]) -> Messages | None:
    """One span's messages from its content records (time-ordered), or ``None`` when none says any."""
    details = [r for r in records if r.event_name == n.EVENT_INFERENCE_DETAILS]
    inputs = [r.attributes[n.GEN_AI_INPUT_MESSAGES] for r in details if n.GEN_AI_INPUT_MESSAGES in r.attributes]
    systems = [r.attributes[n.GEN_AI_SYSTEM_INSTRUCTIONS] for r in details
               if n.GEN_AI_SYSTEM_INSTRUCTIONS in r.attributes]  # fmt: skip
    if inputs or systems:
        return messages_of(systems[-1] if systems else None, inputs[-1] if inputs else None)
    listed: list[dict[str, Any]] = []
    for r in records:
        role = ROLES.get(r.event_name or "")
        if role is None:
            continue
        content: Any = r.body
        try:
            doc = json.loads(r.body) if r.body else None
        except ValueError:
            doc = None
        if isinstance(doc, Mapping):
            content = doc.get("content")
        listed.append({"role": role, "content": content})
    if not listed:
        return None
    return messages_of(None, json.dumps(listed, ensure_ascii=False, separators=(",", ":")))
