"""Where else: the other attempts that had an item's bytes or path, and the runs that used a task.

From an item, :func:`item_elsewhere` lists the attempts (any run) whose inputs had the same
SHA-256, and those that had the same path (whatever its bytes were then).  From a task SHA-256,
:func:`task_drift` lists the runs that used it and, for each, how its first attempt's inputs
differed from this attempt's (new, gone and changed paths): the drift between runs of one task.
Labels and paths are content: they stay in the rows' ``label``/``path`` fields for the access layer.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from otel_inputs.viewer._access import Access, page_access
from otel_inputs.viewer._fleet import fleet_roots, gate_foreign_rows
from otel_inputs.viewer._format import time_text, value_text
from otel_inputs.viewer._queries import Backend, get_attempt, get_inputs, task_runs, where_else
from otel_inputs.viewer._records import AttemptRow, ElsewhereRow, InputRecord


@dataclass(frozen=True)
class ElsewhereItem:
    attempt_id: str
    run: str
    phase: str
    started: str
    seq: int
    label: str
    path: str


@dataclass(frozen=True)
class ElsewhereList:
    rows: tuple[ElsewhereItem, ...]
    total: int
    text: str


def _item(r: ElsewhereRow) -> ElsewhereItem:
    return ElsewhereItem(r.attempt_id, value_text(r.run_id), value_text(r.phase), time_text(r.started_ns), r.seq,
                         value_text(r.label), value_text(r.source_path, missing="none"))


def _gate_foreign(con: Backend, access: Access, rows: tuple[ElsewhereRow, ...]) -> tuple[list[ElsewhereRow], int]:
    """Other attempts' rows as this viewer may see them.  A fleet viewer has no store of its own: each
    row is decided by its own host's store facts (that host's purges and revocations), and a row no
    fact vouches for has its label and path withheld (fail closed; viewer/_fleet.py)."""
    if not fleet_roots():
        return access.gate_foreign(rows)
    return gate_foreign_rows(con, rows, access)


def _listing(con: Backend, what: str, *, sha256: str | None = None, source_path: str | None = None,
             exclude_attempt: str | None = None) -> ElsewhereList:
    found = where_else(con, sha256=sha256, source_path=source_path, exclude_attempt=exclude_attempt)
    access = page_access()
    visible, hidden = _gate_foreign(con, access, found.rows)  # runs this viewer may not see are left out
    rows = tuple(_item(r) for r in visible)
    total = found.total if access.sees_all else len(rows)
    if not total:
        return ElsewhereList((), 0, f"No other attempt you may see had {what}." if hidden or not access.sees_all
                             else f"No other attempt had {what}.")
    if not access.sees_all:  # a total over all runs would count runs this viewer may not see
        return ElsewhereList(rows, total, f"{total} input(s) of other attempts you may see had {what}.")
    more = f" (showing the newest {len(rows)})" if found.total > len(rows) else ""
    return ElsewhereList(rows, found.total, f"{found.total} input(s) of other attempts had {what}{more}.")


def item_elsewhere(con: Backend, item: InputRecord) -> tuple[ElsewhereList | None, ElsewhereList | None]:
    """(same SHA-256, same path) listings for ``item``; ``None`` where the item has no hash or path."""
    by_sha = _listing(con, "the same SHA-256", sha256=item.sha256, exclude_attempt=item.attempt_id) if item.sha256 else None
    by_path = (_listing(con, "the same path", source_path=item.source_path, exclude_attempt=item.attempt_id)
               if item.source_path else None)
    return by_sha, by_path


@dataclass(frozen=True)
class DriftRow:
    run: str
    attempts: int
    first_attempt_id: str
    started: str
    difference: str
    current: bool


WITHHELD = "(withheld)"


def _name(row: InputRecord | ElsewhereRow) -> str:
    return row.source_path or row.label or row.input_id or ""


def _files(inputs: tuple[InputRecord, ...]) -> dict[str, str | None]:
    return {_name(i): i.sha256 for i in inputs}


def _show_names(raw: tuple[InputRecord, ...], gated: Iterable[InputRecord | ElsewhereRow], into: dict[str, str]) -> None:
    """Map each recorded name to the one this viewer may see; a withheld name wins over a shown one,
    and an input missing from ``gated`` is withheld (fail closed)."""
    by_id = {g.input_id: g for g in gated}
    for row in raw:
        shown = by_id.get(row.input_id)
        name = _name(row)
        if into.get(name, name) == name:
            into[name] = _name(shown) if shown is not None else WITHHELD


def describe_difference(mine: dict[str, str | None], theirs: dict[str, str | None],
                        shown: dict[str, str] | None = None) -> str:
    """"same inputs" or "+N new, −N gone, N changed" of ``theirs`` against ``mine`` (by path and SHA-256).

    The counts compare what was recorded; the example names are ``shown``'s (what this viewer may see:
    a purged or revoked path is named as withheld, never spelled out)."""
    new = [k for k in theirs if k not in mine]
    gone = [k for k in mine if k not in theirs]
    changed = [k for k in theirs if k in mine and (theirs[k] is None or mine[k] is None or theirs[k] != mine[k])]
    if not (new or gone or changed):
        return "same inputs (paths and SHA-256)"
    parts = []
    if new:
        parts.append(f"{len(new)} new")
    if gone:
        parts.append(f"{len(gone)} gone")
    if changed:
        parts.append(f"{len(changed)} changed")
    examples = [(shown or {}).get(k, k) for k in (changed + new + gone)[:3]]
    return ", ".join(parts) + " (e.g. " + ", ".join(examples) + ")"


def task_drift(con: Backend, attempt: AttemptRow, inputs: tuple[InputRecord, ...],
               *, limit: int = 20) -> tuple[DriftRow, ...]:
    """The runs that used ``attempt``'s task SHA-256, each with how its first attempt's inputs differed.

    ``inputs`` are this attempt's inputs as the page shows them (labels and paths possibly withheld);
    the comparison reads the recorded rows, and names in the examples only what this viewer may see."""
    if not attempt.task_sha256:
        return ()
    access = page_access()
    recorded = get_inputs(con, attempt.attempt_id, attempt.started_ns, attempt.trace_id)
    mine = _files(recorded)
    mine_shown: dict[str, str] = {}
    _show_names(recorded, inputs, mine_shown)
    out = []
    runs = access.visible(task_runs(con, attempt.task_sha256, limit=limit))  # runs it may see only
    for tr in runs:
        shown = dict(mine_shown)
        if tr.first_attempt_id == attempt.attempt_id:
            theirs = mine
        else:
            first = get_attempt(con, tr.first_attempt_id)
            their_rows = get_inputs(con, tr.first_attempt_id, first.started_ns if first else None,
                                    first.trace_id if first else None)
            theirs = _files(their_rows)
            foreign = tuple(ElsewhereRow(i.attempt_id, tr.run_id, None, None, i.seq, i.label, i.source_path, i.sha256,
                                         i.input_id) for i in their_rows)
            _show_names(their_rows, _gate_foreign(con, access, foreign)[0], shown)
        out.append(DriftRow(value_text(tr.run_id), tr.attempts, tr.first_attempt_id, time_text(tr.first_started_ns),
                            describe_difference(mine, theirs, shown), tr.run_id == attempt.run_id))
    return tuple(out)
