"""Task extraction for legacy attempts (seed 000, Slice 1): known templates only, never a guess.

An attempt recorded without an input packet has only its exact user message.  When that message
was rendered from a *known* template, the work request sits between the ``### prompt`` heading
and the template's own next heading.  The registry below is deliberately small; a template is
known only when its first non-blank line matches exactly.

=====================  ==============================================  =======================
template               first non-blank line                            terminal heading
=====================  ==============================================  =======================
factory-implement      ``## Implement the work described in ### prompt``  ``### output contract``
factory-plan           ``## Plan the work described in ### prompt``       ``### plan format``
factory-review         ``## Review the change described in ### prompt``   ``### review checklist``
=====================  ==============================================  =======================

Extraction succeeds only when the ``### prompt`` heading and the terminal heading each occur
exactly once as whole lines, in that order, with a non-empty body between them.  Missing,
repeated or out-of-order boundaries, or an unknown first line, fall back to the whole message.
A correction turn (no extraction of its own) may recover the task only from the nearest strictly
prior turn of the same session and phase whose extraction succeeds; a phase change, unordered
timestamps or an ambiguous extraction on the way back yields the ambiguity note instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from otel_inputs.viewer._lineage import PriorTurns
from otel_inputs.viewer._records import AttemptRow

PROMPT_HEADING = "### prompt"


@dataclass(frozen=True)
class KnownTemplate:
    name: str
    first_line: str
    terminal_heading: str


KNOWN_TEMPLATES: tuple[KnownTemplate, ...] = (
    KnownTemplate("factory-implement", "## Implement the work described in ### prompt", "### output contract"),
    KnownTemplate("factory-plan", "## Plan the work described in ### prompt", "### plan format"),
    KnownTemplate("factory-review", "## Review the change described in ### prompt", "### review checklist"),
)

AMBIGUITY_NOTE = (
    "The stable task or inherited context could not be separated from this message ({reason}). "
    "The full exact user message is shown instead; nothing is inferred to be absent."
)


@dataclass(frozen=True)
class Extraction:
    status: Literal["extracted", "unknown_template", "ambiguous"]
    template: str | None = None
    task: str | None = None
    reason: str = ""


def extract_task(message: str | None) -> Extraction:
    """The task body of a known-template message, or why it could not be separated."""
    if not message:
        return Extraction("unknown_template", reason="no exact user message was recorded")
    lines = message.splitlines()
    first = next((ln.strip() for ln in lines if ln.strip()), "")
    template = next((t for t in KNOWN_TEMPLATES if t.first_line == first), None)
    if template is None:
        return Extraction("unknown_template", reason="the message does not match a known template")
    starts = [i for i, ln in enumerate(lines) if ln.strip() == PROMPT_HEADING]
    ends = [i for i, ln in enumerate(lines) if ln.strip() == template.terminal_heading]
    if len(starts) != 1 or len(ends) != 1:
        what = "missing" if not starts or not ends else "repeated"
        return Extraction("ambiguous", template.name, reason=f"the task boundaries are {what}")
    if ends[0] < starts[0]:
        return Extraction("ambiguous", template.name, reason="the task boundaries are out of order")
    body = "\n".join(lines[starts[0] + 1 : ends[0]]).strip("\n")
    if not body.strip():
        return Extraction("ambiguous", template.name, reason="the task section is empty")
    return Extraction("extracted", template.name, body)


@dataclass(frozen=True)
class LegacyTask:
    text: str | None
    derived: bool
    template: str | None
    source_attempt_id: str | None
    note: str
    ambiguous: bool


def legacy_task(attempt: AttemptRow, prior: PriorTurns, prompts: dict[str, str]) -> LegacyTask:
    """The task shown for a legacy attempt: own extraction, same-phase recovery, or the whole message."""
    message = attempt.user_prompt
    own = extract_task(message)
    if own.status == "extracted":
        return LegacyTask(
            own.task, True, own.template, None,
            f"Derived from the exact user message of this attempt (known template {own.template}).", False,
        )
    if message is None:
        return LegacyTask(None, False, None, None, "The exact user message was not recorded either.", False)
    if not prior.turns and not prior.ambiguous:
        return LegacyTask(message, False, None, None, f"Showing the whole exact user message: {own.reason}.", False)
    reason = _recover_reason(attempt, prior)
    if reason is None:
        for turn in reversed(prior.turns):
            if turn.phase != attempt.phase:
                reason = "the nearest earlier turn is in another phase"
                break
            found = extract_task(prompts.get(turn.attempt_id))
            if found.status == "extracted":
                return LegacyTask(
                    found.task, True, found.template, turn.attempt_id,
                    "Recovered from the exact user message of earlier turn "
                    f"{turn.attempt_id} (same session and phase, known template {found.template}).",
                    False,
                )
            if found.status == "ambiguous":
                reason = f"earlier turn {turn.attempt_id}: {found.reason}"
                break
        else:
            reason = "no earlier same-phase turn has a uniquely extractable task"
    return LegacyTask(message, False, None, None, AMBIGUITY_NOTE.format(reason=reason), True)


def _recover_reason(attempt: AttemptRow, prior: PriorTurns) -> str | None:
    if attempt.started_ns is None:
        return "this attempt has no recorded start time"
    if prior.ambiguous:
        return prior.reason or "the session's turns cannot be ordered"
    if attempt.phase is None:
        return "this attempt has no recorded phase"
    return None
