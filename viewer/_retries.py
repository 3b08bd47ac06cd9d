"""Retries as one logical operation: an initial send and the parse/check retries linked to it.

Every attempt belongs to exactly one operation, named by its *root* (the attempt reached by
following ``retry_of_attempt_id`` until it points nowhere known), so counting operations and
physical attempts never counts an attempt twice.  A cycle or an over-long chain stops the walk
(bounded); the attempt it stopped at is the root.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from otel_inputs.viewer._format import NOT_RECORDED, status_text

if TYPE_CHECKING:  # the records only annotate here
    from otel_inputs.viewer._records import AttemptListRow, RetryMember

MAX_RETRY_DEPTH = 50
"""A bound on walking retry links (a corrupt cycle must not loop)."""

SEND_WORDS = {"initial": "initial request", "parse_retry": "parse retry", "gate_retry": "check retry"}


def root_of(attempt_id: str, links: Mapping[str, str], known: Iterable[str] | None = None) -> str:
    """The first attempt of ``attempt_id``'s chain; ``known`` limits the walk to attempts present."""
    present = set(known) if known is not None else None
    seen = {attempt_id}
    cur = attempt_id
    for _ in range(MAX_RETRY_DEPTH):
        nxt = links.get(cur)
        if nxt is None or nxt in seen or (present is not None and nxt not in present):
            break
        seen.add(nxt)
        cur = nxt
    return cur


def family(attempt_id: str, links: Mapping[str, str]) -> set[str]:
    """Every attempt of ``attempt_id``'s operation: its root and everything that retries into it."""
    root = root_of(attempt_id, links)
    children: dict[str, list[str]] = {}
    for retry, target in links.items():
        children.setdefault(target, []).append(retry)
    out = {root}
    todo = [root]
    while todo:  # each attempt is added (and expanded) at most once: bounded by len(links)
        for child in children.get(todo.pop(), ()):
            if child not in out:
                out.add(child)
                todo.append(child)
    out.add(attempt_id)  # a walk stopped by a cycle still includes the attempt itself
    return out


@dataclass(frozen=True)
class Operation:
    """One logical operation: its physical attempts in time order (the first is the root)."""

    root_id: str
    attempts: tuple[AttemptListRow, ...]

    @property
    def count(self) -> int:
        return len(self.attempts)

    @property
    def sends(self) -> str:
        return " → ".join(NOT_RECORDED if a.is_legacy else SEND_WORDS.get(a.send_kind or "", a.send_kind or NOT_RECORDED)
                          for a in self.attempts)

    @property
    def last(self) -> AttemptListRow:
        return self.attempts[-1]


def group_operations(rows: Sequence[AttemptListRow], links: Mapping[str, str]) -> tuple[Operation, ...]:
    """The run's attempts grouped into operations (each attempt in exactly one), oldest first."""
    ids = [r.attempt_id for r in rows]
    buckets: dict[str, list[AttemptListRow]] = {}
    for r in rows:
        buckets.setdefault(root_of(r.attempt_id, links, ids), []).append(r)
    ops = [Operation(root, tuple(sorted(members, key=_order))) for root, members in buckets.items()]
    ops.sort(key=lambda o: _order(o.attempts[0]))
    return tuple(ops)


def _order(r: AttemptListRow | RetryMember) -> tuple[bool, int, str]:
    return (r.started_ns is None, r.started_ns or 0, r.attempt_id)


def position_text(ops: Sequence[Operation]) -> dict[str, str]:
    """``attempt id -> "1 of 3"`` (its place in its operation), for the run's attempt table."""
    out: dict[str, str] = {}
    for op in ops:
        for i, a in enumerate(op.attempts, 1):
            out[a.attempt_id] = f"{i} of {op.count}"
    return out


@dataclass(frozen=True)
class OperationLink:
    attempt_id: str
    text: str
    current: bool


def operation_summary(attempt_id: str, members: Sequence[RetryMember]) -> tuple[str, tuple[OperationLink, ...]]:
    """The attempt page's line ("physical attempt 2 of 3 of one operation") and one link per attempt."""
    if len(members) <= 1:
        return "One physical attempt: this send was not retried.", ()
    ordered = sorted(members, key=_order)
    links = []
    place = 0
    for i, m in enumerate(ordered, 1):
        kind = NOT_RECORDED if m.is_legacy else SEND_WORDS.get(m.send_kind or "", m.send_kind or NOT_RECORDED)
        if m.attempt_id == attempt_id:
            place = i
        links.append(OperationLink(m.attempt_id, f"{i}. {kind} · {m.attempt_id} · {status_text(m.status)}",
                                   m.attempt_id == attempt_id))
    return (f"One logical operation of {len(ordered)} physical attempts; this is attempt {place} of {len(ordered)}.",
            tuple(links))
