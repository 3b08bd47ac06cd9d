"""Prior-turn lineage read from a real DuckDB file: run-scoped, same non-null session, strictly earlier."""

from __future__ import annotations

from otel_inputs.viewer._lineage import prior_turns
from otel_inputs.viewer._queries import get_attempt, get_session_turns, read_only
from viewer_fixture import FixtureBuilder


def _prior(db, attempt_id: str):
    with read_only(db) as con:
        a = get_attempt(con, attempt_id)
        return prior_turns(a, get_session_turns(con, a.run_id, a.session_id))


def test_prior_turns_exclude_other_runs_null_sessions_equal_and_later_times(builder: FixtureBuilder) -> None:
    """Only strictly earlier attempts of the same run and session count; ties are flagged ambiguous."""
    b = builder
    b.attempt("x1", 0, run_id="r1", session_id="s")
    b.attempt("x2", 1, run_id="r1", session_id="s")
    b.attempt("other-run", 1.5, run_id="r2", session_id="s")
    b.attempt("null-sess", 1.6, run_id="r1", session_id=None)
    b.attempt("tie", 2, run_id="r1", session_id="s")
    b.attempt("x3", 2, run_id="r1", session_id="s")
    b.attempt("later", 9, run_id="r1", session_id="s")
    db, _ = b.write()
    p = _prior(db, "x3")
    assert [t.attempt_id for t in p.turns] == ["x1", "x2"]
    assert p.ambiguous and "equal start time" in (p.reason or "")
    assert _prior(db, "null-sess").turns == ()
    clean = _prior(db, "x2")
    assert [t.attempt_id for t in clean.turns] == ["x1"] and not clean.ambiguous


def test_missing_start_time_never_creates_inherited_context(builder: FixtureBuilder) -> None:
    """An attempt without a start time inherits nothing and is marked ambiguous."""
    builder.attempt("y1", 0, run_id="r", session_id="s")
    builder.attempt("y2", None, run_id="r", session_id="s")
    db, _ = builder.write()
    p = _prior(db, "y2")
    assert p.turns == () and p.ambiguous
    assert _prior(db, "y1").ambiguous  # y2's missing time makes y1's ordering ambiguous too
