"""What this dispatch sent that is new, told apart from the conversation it inherited (docs/encodings.md).

A framework's model request carries the whole conversation: turn 2's messages hold turn 1's user
message, its replies and tool results, then the new instruction.  Joining every user message buries
the new one, so the attempt page shows as *this dispatch's* user message only what is new:

1. when the previous turn of the session recorded its messages and they are a prefix of these (by
   user message), the user messages after that prefix: the earlier conversation is inherited;
2. else the user messages after the last reply in these messages (an assistant or tool message):
   what came before is inherited context, not matched against a recorded turn;
3. else (no reply in them) every user message: nothing earlier was in the request.

Nothing is inferred beyond that: without recorded messages there is no dispatch text, and the note
says where the text came from.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

_REPLY_ROLES = frozenset({"assistant", "tool", "model", "function"})


@dataclass(frozen=True)
class Dispatch:
    """This dispatch's new user message, how it was told apart, and how many messages came before it.

    Named ``user_prompt`` so the access layer withholds it with the other message content."""

    user_prompt: str | None
    note: str | None
    inherited: int = 0


def _part_text(part: Any) -> str | None:
    if isinstance(part, str):
        return part
    if isinstance(part, Mapping) and part.get("type", "text") == "text":
        value = part.get("content", part.get("text"))
        return value if isinstance(value, str) else None
    return None


def _content_text(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [t for t in (_part_text(p) for p in content) if t is not None]
        return "\n\n".join(texts) if texts else None
    return None


def conversation(messages_json: str | None) -> list[tuple[str, str | None]] | None:
    """(role, text) of each message of a recorded messages document, in order; ``None`` when it is
    not a message list (GenAI parts, role/content pairs, or a call's {"system", "messages"} prompt)."""
    if not messages_json:
        return None
    try:
        doc = json.loads(messages_json)
    except ValueError:
        return None
    if isinstance(doc, Mapping) and isinstance(doc.get("messages"), list):
        doc = doc["messages"]
    if not isinstance(doc, list):
        return None
    out: list[tuple[str, str | None]] = []
    for item in doc:
        if not isinstance(item, Mapping) or not isinstance(item.get("role"), str):
            return None
        out.append((item["role"], _content_text(item.get("parts", item.get("content")))))
    return out


def _users(conv: list[tuple[str, str | None]]) -> list[str | None]:
    return [t for r, t in conv if r == "user"]


def this_dispatch(messages_json: str | None, user_text: str | None, previous_json: str | None,
                  previous_id: str | None) -> Dispatch:  # fmt: skip
    """This dispatch's new user message (see the module docstring)."""
    conv = conversation(messages_json)
    if conv is None:
        return Dispatch(user_text, None)
    users = _users(conv)
    before = _users(conversation(previous_json) or []) if previous_json else []
    if before and len(users) > len(before) and users[: len(before)] == before:
        new = [t for t in users[len(before):] if t is not None]
        cut = [i for i, (r, _) in enumerate(conv) if r == "user"][len(before)]
        note = (f"New since the previous turn {previous_id}: its {len(before)} user message(s) and the replies "
                "after them are the inherited conversation.")
        return Dispatch("\n\n".join(new) or None, note, cut)
    last_reply = max((i for i, (r, _) in enumerate(conv) if r in _REPLY_ROLES), default=-1)
    if last_reply < 0:
        return Dispatch(user_text if user_text is not None else ("\n\n".join(t for t in users if t) or None), None)
    new = [t for r, t in conv[last_reply + 1:] if r == "user" and t is not None]
    note = (f"The user message(s) after the last reply in this request; the {last_reply + 1} message(s) before it "
            "are inherited conversation (not matched against a recorded turn).")
    return Dispatch("\n\n".join(new) or None, note, last_reply + 1)
