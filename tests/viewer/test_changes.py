"""What changed since the previous turn, compared by SHA-256, with verified text diffs."""

from __future__ import annotations

from viewer_fixture import ViewerFixture

from otel_inputs.viewer._changes import text_diff
from otel_inputs.viewer._panel import build_panel
from otel_inputs.viewer._queries import load_attempt, read_only


def changes(fx: ViewerFixture, key: str):
    with read_only(fx.db_path) as con:
        return build_panel(load_attempt(con, fx.ids[key])).files.changes


def test_unchanged_changed_new_and_gone_are_marked(viewer_fixture: ViewerFixture) -> None:
    """Files are marked by SHA-256 against the same session's previous turn."""
    assert {r.key: r.mark for r in changes(viewer_fixture, "parse_retry").rows} == {
        "/work/handoff/notes.md": "unchanged", "/work/tasks/dry-run.md": "gone"}
    marks = {r.key: r.mark for r in changes(viewer_fixture, "gate_retry").rows}
    assert marks == {"/work/handoff/notes.md": "changed", "/work/gate/failure.txt": "new"}
    review = {r.key: r.mark for r in changes(viewer_fixture, "review").rows}
    assert review["/work/handoff/notes.md"] == "gone" and review["/work/handoff/review/summary.md"] == "new"


def test_first_turn_has_nothing_to_compare(viewer_fixture: ViewerFixture) -> None:
    """A first turn shows no change rows and says why."""
    ch = changes(viewer_fixture, "initial")
    assert ch.rows == () and "nothing to compare" in ch.note


def test_changed_text_file_diff_is_read_from_verified_snapshots(viewer_fixture: ViewerFixture) -> None:
    """The diff of a changed text file shows the added line, read from both verified snapshots."""
    row = next(r for r in changes(viewer_fixture, "gate_retry").rows if r.mark == "changed")
    assert row.diffable
    diff = text_diff(str(viewer_fixture.store_path), row)
    assert diff.refused is None
    assert "+- dry-run must not open the DB for writing" in diff.lines
