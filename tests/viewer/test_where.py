"""Where else: other attempts with the same SHA-256 or path, and the runs that used a task (drift)."""

from __future__ import annotations

import hashlib

from apptest_helpers import open_expander, open_item, run_app, table, texts
from viewer_fixture import HOSTILE_LABEL, NOTES_V1, NOTES_V2, WIDE_RUN, ViewerFixture

from otel_inputs.viewer._queries import get_attempt, get_inputs, read_only, where_else
from otel_inputs.viewer._where import describe_difference, item_elsewhere, task_drift



def test_same_sha_and_same_path_across_runs(viewer_fixture: ViewerFixture) -> None:
    """notes.md v1 was in att-001 and att-002; its path was in four attempts of two runs."""
    v1 = hashlib.sha256(NOTES_V1.encode()).hexdigest()
    with read_only(viewer_fixture.db_path) as con:
        found = where_else(con, sha256=v1)
        assert found.total == 2 and {r.attempt_id for r in found.rows} == {"att-001", "att-002"}
        item = get_inputs(con, "att-003", get_attempt(con, "att-003").started_ns)[0]
        by_sha, by_path = item_elsewhere(con, item)
    assert by_sha is not None and by_sha.total == 1 and by_sha.rows[0].attempt_id == "att-wide"  # v2 bytes
    assert by_path is not None and {r.attempt_id for r in by_path.rows} == {"att-001", "att-002", "att-wide"}
    assert {r.run for r in by_path.rows} == {viewer_fixture.run_id, WIDE_RUN}
    assert by_path.text == "3 input(s) of other attempts had the same path."


def test_task_drift_lists_runs_and_how_their_inputs_differed(viewer_fixture: ViewerFixture) -> None:
    """Both runs of the task are listed; the wide run's first attempt differs from att-001 by new and changed files."""
    with read_only(viewer_fixture.db_path) as con:
        a = get_attempt(con, "att-001")
        rows = task_drift(con, a, get_inputs(con, "att-001", a.started_ns))
    by_run = {r.run: r for r in rows}
    assert set(by_run) == {viewer_fixture.run_id, WIDE_RUN}
    assert by_run[viewer_fixture.run_id].difference == "same inputs (paths and SHA-256)"
    assert by_run[viewer_fixture.run_id].current and by_run[viewer_fixture.run_id].attempts == 4  # att-005: other task
    assert by_run[WIDE_RUN].difference.startswith("99 new, 1 gone, 1 changed")


def test_difference_words() -> None:
    """Unknown hashes count as changed, never as the same."""
    assert describe_difference({"a": "1"}, {"a": None}) == "1 changed (e.g. a)"
    assert describe_difference({}, {}) == "same inputs (paths and SHA-256)"


def test_item_where_else_on_the_page_links_to_the_other_attempt(env: ViewerFixture) -> None:
    """From the hostile-labelled item of the wide attempt, where-else lists nothing else; from notes.md it lists att-003 by SHA."""
    at = open_item(run_app(attempt="att-wide"), "path_reference", "att-wide-in0")
    at.toggle(key="page:where:att-wide-in0").set_value(True).run()
    assert "1 input(s) of other attempts had the same SHA-256." in texts(at)
    assert list(table(at, "attempt")["attempt"])[:1] == ["att-003"]
    at = open_item(at, "path_reference", "att-wide-in7")
    at.toggle(key="page:where:att-wide-in7").set_value(True).run()
    assert "No other attempt had the same path." in texts(at)
    assert any(t.startswith(f"#7  {HOSTILE_LABEL}\n") for t in texts(at))


def test_task_runs_toggle_shows_drift(env: ViewerFixture) -> None:
    """The task section's toggle lists the other runs of this task SHA-256 with their input drift, never this
    attempt's own run compared with itself."""
    at = run_app(attempt="att-wide")
    open_expander(at, "page:taskruns")
    drift = table(at, "its inputs vs this attempt's")
    assert list(drift["run"]) == [env.run_id]
    assert "1 other run(s) used this task" in " ".join(texts(at))
    assert NOTES_V2  # the wide attempt carries notes v2, att-001 v1: a change, shown by path


def test_task_drift_never_names_a_revoked_path_of_another_run(tmp_path, monkeypatch) -> None:
    """Once the changed file's path is revoked, the drift against the wide run keeps its counts but names
    that path as withheld, here and on the page, instead of spelling it out."""
    from viewer_fixture import build_fixture

    from otel_inputs import names
    from otel_inputs.store import ArtifactStore, revoke_source

    fx = build_fixture(tmp_path / "fx")
    monkeypatch.setenv(names.ENV_STORE, str(fx.store_path))
    monkeypatch.setenv(names.ENV_DB, str(fx.db_path))
    with read_only(fx.db_path) as con:
        a = get_attempt(con, "att-001")
        before = {r.run: r.difference for r in task_drift(con, a, get_inputs(con, "att-001", a.started_ns))}
    assert "/work/handoff/notes.md" in before[WIDE_RUN], before
    revoke_source(ArtifactStore(fx.store_path, create=False), "/work/handoff/notes.md", reason="leaked")
    with read_only(fx.db_path) as con:
        after = {r.run: r.difference for r in task_drift(con, a, get_inputs(con, "att-001", a.started_ns))}
    assert after[WIDE_RUN].startswith("99 new, 1 gone, 1 changed (e.g. (path withheld: source revoked"), after
    assert "/work/handoff/notes.md" not in after[WIDE_RUN]
    at = run_app(attempt="att-001")
    open_expander(at, "page:taskruns")
    cells = [str(v) for df in at.dataframe for v in df.value.to_numpy().ravel()]
    assert any("99 new, 1 gone, 1 changed" in c for c in cells), cells
    assert not any("/work/handoff/notes.md" in c for c in cells), cells
