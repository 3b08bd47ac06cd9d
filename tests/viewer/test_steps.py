"""The attempt's steps (C1) and the exact messages' source (C2), and the exporter health indicator."""

from __future__ import annotations


import pytest
from apptest_helpers import boxes, open_expander, run_app, table, table_cells, texts
from viewer_fixture import HOSTILE_LABEL, ViewerFixture

from otel_inputs.viewer._health import HealthState, health_model
from otel_inputs.viewer._queries import get_steps, read_only
from otel_inputs.viewer._records import HealthRow
from otel_inputs.viewer._steps import STEPS_NONE, steps_section



def test_steps_in_time_order_with_unknown_tokens_kept_unknown(viewer_fixture: ViewerFixture) -> None:
    """The review attempt's five steps come back in seq order; a model call without token counts says unknown."""
    with read_only(viewer_fixture.db_path) as con:
        steps = get_steps(con, "att-004")
        assert get_steps(con, "att-005") == ()
    assert steps is not None and [s.seq for s in steps] == [0, 1, 2, 3, 4]
    section = steps_section(steps)
    assert section.summary == "2 model call(s), 3 tool call(s), 0 other; tokens at least 5400 in / at least 320 out"
    assert [r.status for r in section.rows] == ["no error reported", "succeeded", "succeeded", "failed",
                                               "no error reported"]
    assert section.rows[4].tokens == "not recorded" and section.rows[0].duration == "2.50 s"
    assert steps_section(()).notes == (STEPS_NONE,)


def test_steps_table_on_the_page_with_hostile_tool_names_as_plain_text(env: ViewerFixture) -> None:
    """The steps table (drawn once its expander is opened, under the visible summary) lists kinds, names and
    arguments; a hostile tool name is a plain cell, never markup."""
    at = run_app(attempt=env.ids["review"])
    assert "2 model call(s), 3 tool call(s), 0 other; tokens at least 5400 in / at least 320 out" in texts(at)
    assert not any("kind" in df.value.columns for df in at.dataframe)
    steps = table(open_expander(at, "page:steps_table"), "kind")
    assert list(steps["kind"]) == ["model call", "tool call", "tool call", "tool call", "model call"]
    assert list(steps["name"])[1:4] == ["read_file", "Read", HOSTILE_LABEL]
    assert steps["arguments"][1] == '{"path": "/work/handoff/review/summary.md"}'
    assert all("<img" not in m.value and "<b>" not in m.value for m in at.markdown)
    assert "Unset" not in "\n".join(table_cells(at) + texts(at))


def test_message_source_labels(env: ViewerFixture) -> None:
    """C2's model_step row is shown with its label and note; without a C2 row the attempt span is named."""
    at = run_app(attempt=env.ids["gate_retry"])
    assert "Messages taken from the first model call." in texts(at)
    assert any("the attempt span recorded no messages" in i.value.replace("\\", "") for i in at.info)
    assert "The test gate failed (as sent)." not in boxes(at)  # drawn only once its expander is opened
    open_expander(at, "page:messages")
    assert "The test gate failed (as sent)." in boxes(at)
    assert "Messages from the attempt span." in texts(run_app(attempt=env.ids["initial"]))


def test_attempt_with_no_steps_says_not_recorded(env: ViewerFixture) -> None:
    """An attempt with no step rows says its steps were not recorded (never 'no steps')."""
    at = run_app(attempt=env.ids["opted_out"])
    assert any(STEPS_NONE in i.value.replace("\\", "") for i in at.info)


def _h(metric: str, value: int) -> HealthRow:
    return HealthRow("exp", metric, value, None)


@pytest.mark.parametrize(("rows", "state"), [
    ([], HealthState.UNKNOWN),
    ([_h("spans_written", 10), _h("spans_dropped", 0)], HealthState.OK),
    ([_h("spans_spilled", 4), _h("spans_drained", 4)], HealthState.OK),
    ([_h("spans_spilled", 4), _h("spans_drained", 1)], HealthState.SPILLED),
    ([_h("spans_spilled", 4), _h("batches_failed", 1)], HealthState.DROPPED),
])
def test_health_indicator_states(rows: list[HealthRow], state: HealthState) -> None:
    """Dropped beats spilled; spilled means not drained yet; no counters is unknown, never ok."""
    assert health_model(rows).state is state
