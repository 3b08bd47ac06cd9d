"""Known-template task extraction and same-phase recovery for legacy attempts (seed 000 Slice 1)."""

from __future__ import annotations

from otel_inputs.viewer._legacy import KNOWN_TEMPLATES, extract_task, legacy_task
from otel_inputs.viewer._lineage import PriorTurns
from otel_inputs.viewer._records import AttemptRow, TurnRef

IMPL = KNOWN_TEMPLATES[0]


def msg(body: str, *, first: str = IMPL.first_line, end: str = IMPL.terminal_heading) -> str:
    return f"{first}\n\nContext.\n\n### prompt\n{body}\n\n{end}\nReply with JSON.\n"


def test_known_template_body_is_extracted_between_its_headings() -> None:
    """The task is exactly the text between ### prompt and the template's terminal heading."""
    ex = extract_task(msg("Do the thing.\n\nWith two paragraphs."))
    assert (ex.status, ex.template, ex.task) == ("extracted", "factory-implement", "Do the thing.\n\nWith two paragraphs.")


def test_each_registered_template_uses_its_own_terminal_heading() -> None:
    """A body ending at another template's heading is not cut there."""
    for t in KNOWN_TEMPLATES:
        assert extract_task(msg("x", first=t.first_line, end=t.terminal_heading)).task == "x"
    wrong = msg("x", first=KNOWN_TEMPLATES[1].first_line, end=KNOWN_TEMPLATES[0].terminal_heading)
    assert extract_task(wrong).status == "ambiguous"


def test_repeated_missing_or_unknown_boundaries_do_not_extract() -> None:
    """Repeated or missing headings are ambiguous and an unknown first line is not a known template."""
    assert extract_task(msg("a\n### prompt\nb")).status == "ambiguous"
    assert extract_task(msg("a\n### output contract\nb")).status == "ambiguous"
    assert extract_task(f"{IMPL.first_line}\n### prompt\nbody only\n").status == "ambiguous"
    assert extract_task(msg("a", first="## Something else")).status == "unknown_template"
    assert extract_task(f"{IMPL.first_line}\n### output contract\nx\n### prompt\ny\n").status == "ambiguous"
    assert extract_task(msg("   ")).status == "ambiguous"
    assert extract_task(None).status == "unknown_template"


def _attempt(aid: str, ns: int | None, phase: str, prompt: str) -> AttemptRow:
    return AttemptRow(attempt_id=aid, run_id="r", session_id="s", phase=phase, started_ns=ns, user_prompt=prompt)


def _turn(aid: str, ns: int, phase: str) -> TurnRef:
    return TurnRef(aid, ns, ns + 1, phase, None, None, True)


def test_correction_recovers_through_earlier_corrections_of_the_same_phase() -> None:
    """A second correction walks back past the first correction to the unique extraction."""
    prior = PriorTurns((_turn("a", 1, "impl"), _turn("b", 2, "impl")), False)
    lt = legacy_task(_attempt("c", 3, "impl", "fix it again"), prior, {"a": msg("Task A"), "b": "fix it"})
    assert (lt.text, lt.source_attempt_id, lt.derived, lt.ambiguous) == ("Task A", "a", True, False)


def test_recovery_stops_at_phase_change_and_ambiguous_extraction() -> None:
    """A phase change or an ambiguous earlier extraction yields the whole message and the ambiguity note."""
    prior = PriorTurns((_turn("a", 1, "impl"), _turn("b", 2, "plan")), False)
    lt = legacy_task(_attempt("c", 3, "impl", "fix"), prior, {"a": msg("Task A"), "b": "x"})
    assert lt.ambiguous and lt.text == "fix" and "another phase" in lt.note
    prior = PriorTurns((_turn("a", 1, "impl"),), False)
    lt = legacy_task(_attempt("c", 3, "impl", "fix"), prior, {"a": msg("A\n### prompt\nB")})
    assert lt.ambiguous and "repeated" in lt.note


def test_unordered_session_makes_recovery_ambiguous() -> None:
    """Equal or missing timestamps in the session never yield a recovered task."""
    prior = PriorTurns((_turn("a", 1, "impl"),), True, "1 attempt(s) of this session have a missing or equal start time")
    lt = legacy_task(_attempt("c", 3, "impl", "fix"), prior, {"a": msg("Task A")})
    assert lt.ambiguous and lt.text == "fix"
    lt = legacy_task(_attempt("c", None, "impl", "fix"), PriorTurns((), True, "x"), {})
    assert lt.ambiguous and "no recorded start time" in lt.note
