"""Session lineage for one attempt: which strictly earlier turns of the same session it inherited.

Seed 000 "Shared web boundary": prior turns are only strictly earlier attempts of the same run
with the same non-null session id, ordered by start time then attempt id.  Attempts with a session
(or conversation) id but no run id — a framework on its own telemetry — are grouped by the session
alone (docs/encodings.md).  Null session ids are never grouped; equal or missing timestamps never
create inherited context — they make the ordering ambiguous, and the panel says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the records only annotate here
    from otel_inputs.viewer._records import AttemptRow, TurnRef


@dataclass(frozen=True)
class PriorTurns:
    turns: tuple[TurnRef, ...]
    ambiguous: bool
    """True when some same-session attempt could not be ordered against this one."""
    reason: str | None = None


def prior_turns(attempt: AttemptRow, session_turns: tuple[TurnRef, ...]) -> PriorTurns:
    """The strictly earlier same-run (or, without a run id, same-session) turns of ``attempt``, oldest first."""
    if attempt.session_id is None:
        return PriorTurns((), False, "no session id recorded")
    others = [t for t in session_turns if t.attempt_id != attempt.attempt_id]
    if attempt.started_ns is None:
        return PriorTurns((), bool(others), "this attempt has no recorded start time" if others else None)
    earlier = [t for t in others if t.started_ns is not None and t.started_ns < attempt.started_ns]
    unordered = [t for t in others if t.started_ns is None or t.started_ns == attempt.started_ns]
    earlier.sort(key=lambda t: (t.started_ns, t.attempt_id))
    reason = None
    if unordered:
        reason = f"{len(unordered)} attempt(s) of this session have a missing or equal start time"
    return PriorTurns(tuple(earlier), bool(unordered), reason)


def previous_turn_id(attempt: AttemptRow, prior: PriorTurns) -> str | None:
    """The immediately preceding turn: recorded explicitly, else the nearest unambiguous prior turn."""
    if attempt.previous_turn_attempt_id:
        return attempt.previous_turn_attempt_id
    if not attempt.is_legacy and attempt.turn_index == 1:
        return None
    if prior.turns and not prior.ambiguous:
        return prior.turns[-1].attempt_id
    return None


def inferred_turn_index(attempt: AttemptRow, prior: PriorTurns) -> int | None:
    """The attempt's turn in its session from the order of the session's recorded attempts, when it
    recorded none itself and that order is unambiguous (shown as inferred, never as recorded)."""
    if attempt.turn_index is not None or attempt.session_id is None or prior.ambiguous:
        return None
    return len(prior.turns) + 1
