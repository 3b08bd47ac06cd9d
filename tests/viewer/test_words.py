"""The one mapping from recorded status values to words, and the page's lines built from it."""

from __future__ import annotations

import itertools

import pytest

from otel_inputs.types import (
    ArtifactStatus,
    CaptureDecision,
    CaptureStatus,
    Coverage,
    PartCapture,
    PartDispatch,
    PartPersistence,
    SendKind,
    SourceKind,
)
from otel_inputs.viewer._draw import FIXED_WIDTHS, TABLE_BUDGET_PX, column_widths
from otel_inputs.viewer._evidence import NO_BYTES
from otel_inputs.viewer._format import STATUS_WORDS, status_text, status_word
from otel_inputs.viewer._panel import capture_text, common_placement, coverage_summary, item_row
from otel_inputs.viewer._records import AttemptRow, InputRecord

ENUMS = (ArtifactStatus, CaptureDecision, CaptureStatus, Coverage, PartCapture, PartDispatch, PartPersistence, SendKind,
         SourceKind)


@pytest.mark.parametrize("enum", ENUMS, ids=lambda e: e.__name__)
def test_every_recorded_status_value_has_words(enum: type) -> None:
    """Each value of the status enums the viewer shows is in the mapping, as words without underscores."""
    for member in enum:
        assert member.value in STATUS_WORDS, member
        assert "_" not in status_word(member.value)


def test_unmapped_absent_and_span_status_values() -> None:
    """A value the mapping lacks shows as itself (spaces for underscores), absent reads "not recorded", and
    OpenTelemetry's Unset says no error was reported (never "succeeded")."""
    assert status_word("some_new_state") == "some new state"
    assert status_word(None) == status_word("") == "not recorded"
    assert status_text("UNSET") == "no error reported" and status_text("ok") == "succeeded"
    assert status_text("error", "boom") == "failed: boom"


def test_capture_words_name_the_tripped_bound() -> None:
    """Over a capture limit names which limit when the detail records it, in either recorded form."""
    assert capture_text("limit_exceeded", "bound file_bytes tripped (at most 10485760 bytes per file)") == \
        "over the file size limit"
    assert capture_text("limit_exceeded", "file_count") == "over the file count limit"
    assert capture_text("limit_exceeded", None) == "over a capture limit"
    assert capture_text("unreadable", "symbolic link; not followed") == "unreadable"
    assert capture_text(None, None) == "unknown"


def _attempt(**kw: object) -> AttemptRow:
    base = dict(attempt_id="a", trace_id="t", span_id="s", run_id="r", session_id="s", phase="build",
                agent_name="builder", provider_name="p", request_model="m", send_kind="initial", turn_index=1,
                previous_turn_attempt_id=None, retry_of_attempt_id=None, task_prompt=None, task_source_kind=None,
                task_source_path=None, task_size_bytes=None, task_sha256=None, system_prompt=None, user_prompt=None,
                input_packet_version=1, input_coverage="complete", declared_input_count=9, captured_input_count=7,
                omitted_input_count=2, item_count=3, dropped_events_count=0, capture_decision="admitted",
                capture_gap_reason=None, coverage_reason=None, started_ns=1, ended_ns=2, status="unset",
                status_message=None, source_format="otel_inputs")
    base.update(kw)
    fields = AttemptRow.__dataclass_fields__
    return AttemptRow(**{k: v for k, v in base.items() if k in fields})


def _input(seq: int, capture: str, detail: str | None = None, placement: str = "local copy; bucket not configured",
           sha: str | None = "ab" * 32) -> InputRecord:
    base = dict(input_id=f"a-in{seq}", attempt_id="a", seq=seq, label=f"f{seq}", source_kind="context_handoff",
                delivery_mode="path_reference", source_path=f"/w/f{seq}", snapshot_ref=None, media_type="text/plain",
                preview_kind="text", size_bytes=1, sha256=sha, capture_status=capture,
                artifact_status="available" if capture == "captured" else "never_captured", detail=detail,
                placement=placement)
    fields = InputRecord.__dataclass_fields__
    return InputRecord(**{k: v for k, v in base.items() if k in fields})


def test_summary_line_in_a_reviewers_words() -> None:
    """The counts read "9 inputs declared, 7 captured, 2 left out (why)"; records that did not all arrive, and a
    capture decision other than admitted, are said; counts not recorded read unknown (a gap, never 0)."""
    inputs = (_input(0, "captured"), _input(1, "limit_exceeded", "bound file_bytes tripped (at most 1 bytes per file)"),
              _input(2, "unreadable", "symbolic link; not followed"))
    assert coverage_summary(_attempt(), inputs) == \
        "9 inputs declared, 7 captured, 2 left out (1 over the file size limit, 1 unreadable)."
    assert coverage_summary(_attempt(item_count=5), inputs).endswith(
        "; 3 of the 5 input records the span sent arrived.")
    gap = coverage_summary(_attempt(declared_input_count=None, captured_input_count=0, omitted_input_count=None,
                                    item_count=None, capture_decision="suppressed"), ())
    assert gap == ("inputs declared: unknown, 0 captured, left out: unknown; how many input records the span sent "
                   "was not recorded (0 arrived); content capture: capture suppressed.")


def test_placement_said_once_only_when_every_input_with_bytes_agrees() -> None:
    """One placement for every input that has bytes is said once (inputs without bytes do not count against it);
    two different placements need the column."""
    same = [item_row(_input(0, "captured")), item_row(_input(1, "unreadable", sha=None, placement=NO_BYTES))]
    assert common_placement(same) == "local copy; bucket not configured"
    differ = same + [item_row(_input(2, "captured", placement="local copy; upload queued — not yet in the bucket"))]
    assert common_placement(differ) is None
    assert common_placement([item_row(_input(0, "unreadable", sha=None, placement=NO_BYTES))]) == NO_BYTES


def test_every_combination_of_group_columns_fits_the_budget() -> None:
    """Whatever optional columns a group table has (bytes, change, read?, a coding turn's loaded and delivered), the
    widths add up to the budget at most, so no column is pushed off the right edge at 1400 px."""
    optional = ("bytes", "change", "read?", "loaded+delivered")
    for n in range(len(optional) + 1):
        for extra in itertools.combinations(optional, n):
            extra = tuple(c for e in extra for c in e.split("+"))
            columns = ["#", "label", "capture", "artifact", *extra, "size", "type"]
            widths = column_widths(columns)
            assert set(widths) == set(columns)
            assert sum(widths.values()) <= TABLE_BUDGET_PX + 1, (extra, widths)
            assert all(w >= 40 for w in widths.values())
    assert set(FIXED_WIDTHS) >= {"bytes", "size", "type"}
