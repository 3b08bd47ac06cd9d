from __future__ import annotations

import pytest

from otel_inputs import SendKind, SessionTracker


def test_turns_are_numbered_within_a_session() -> None:
    """Each attempt of a session gets the next turn index and points at the previous turn."""
    t = SessionTracker()
    a = t.next_attempt("a", session_id="s")
    b = t.next_attempt("b", session_id="s", send_kind=SendKind.PARSE_RETRY)
    c = t.next_attempt("c", session_id="s", send_kind="gate_retry", retry_of_attempt_id="a")
    assert (a.turn_index, a.previous_turn_attempt_id, a.retry_of_attempt_id) == (1, None, None)
    assert (b.turn_index, b.previous_turn_attempt_id, b.retry_of_attempt_id) == (2, "a", "a")
    assert (c.turn_index, c.previous_turn_attempt_id, c.retry_of_attempt_id) == (3, "b", "a")
    assert c.send_kind is SendKind.GATE_RETRY


def test_sessions_are_independent() -> None:
    """Two sessions keep separate turn counters."""
    t = SessionTracker()
    t.next_attempt("a", session_id="s1")
    x = t.next_attempt("x", session_id="s2")
    assert x.turn_index == 1 and x.previous_turn_attempt_id is None


def test_attempts_without_session_are_never_grouped() -> None:
    """Attempts with no session id are each turn 1 with no previous turn."""
    t = SessionTracker()
    a = t.next_attempt("a", session_id=None)
    b = t.next_attempt("b", session_id=None)
    assert a.turn_index == b.turn_index == 1
    assert b.previous_turn_attempt_id is None


def test_initial_send_cannot_claim_retry_of() -> None:
    """retry_of is only set on parse_retry or gate_retry."""
    with pytest.raises(ValueError):
        SessionTracker().next_attempt("a", session_id="s", retry_of_attempt_id="z")
    with pytest.raises(ValueError):
        SessionTracker().next_attempt("a", session_id="s", send_kind="resend")
