"""The Streamlit pages, driven with Streamlit's AppTest against real fixture files."""

from __future__ import annotations


import duckdb
from apptest_helpers import boxes, open_item, run_app, table, table_cells, texts
from viewer_fixture import HOSTILE_LABEL, LEGACY_TASK, NOTES_V1, TASK_TEXT, WIDE_RUN, ViewerFixture

from otel_inputs import names
from otel_inputs.viewer._format import md_escape
from otel_inputs.viewer._panel import SECTION_TITLES



def test_deep_link_shows_sections_in_order_with_task_visible(env: ViewerFixture) -> None:
    """?attempt= opens the panel: six sections in order and the task in a plain text box outside any expander,
    with no st.code on the page (it would load the syntax highlighter)."""
    at = run_app(attempt=env.ids["review"])
    assert [s.value for s in at.subheader][:6] == [f"{i}. {t}" for i, t in enumerate(SECTION_TITLES, 1)]
    assert boxes(at, in_expanders=False)[0] == TASK_TEXT
    assert not at.code


def test_hostile_label_renders_as_plain_text_only(env: ViewerFixture) -> None:
    """A Markdown/HTML label is shown verbatim by st.text and never reaches a Markdown element."""
    at = run_app(attempt=env.ids["gate_retry"])
    assert HOSTILE_LABEL in table_cells(at)
    assert all("<img" not in m.value for m in at.markdown)
    open_item(at, "inline", "att-003-in1")
    assert any(t.startswith(f"#1  {HOSTILE_LABEL}\n") for t in texts(at))


def test_text_and_image_previews_open_on_demand(env: ViewerFixture) -> None:
    """Toggling a text preview shows the verified text; toggling an image preview shows an image."""
    at = run_app(attempt=env.ids["initial"])
    assert all(b.rstrip("\n") != NOTES_V1.rstrip("\n") for b in boxes(at))
    open_item(at, "path_reference", "att-001-in1")
    assert NOTES_V1.rstrip("\n") in [b.rstrip("\n") for b in boxes(at)]
    at = run_app(attempt=env.ids["review"])
    assert len(at.get("image")) == 0
    open_item(at, "path_reference", "att-004-in2")
    assert len(at.get("image")) == 1


def test_tampered_snapshot_preview_is_refused_by_name(env: ViewerFixture) -> None:
    """Opening a preview of changed bytes shows "integrity mismatch" and no content."""
    at = run_app(attempt=env.ids["review"])
    open_item(at, "path_reference", "att-004-in8")
    assert "Preview refused: integrity_mismatch (snapshot bytes do not match the recorded SHA-256)" in texts(at)
    assert "original bytes of a handoff file\n" not in boxes(at)


def test_unavailable_rows_state_their_reason_without_a_preview(env: ViewerFixture) -> None:
    """Evicted, symlink and over-limit rows say why, and the PDF row says there is no preview."""
    at = run_app(attempt=env.ids["review"])
    cells = table_cells(at)
    assert any(c.startswith("evicted (disk budget)") for c in cells)
    assert "never captured" in cells and "over the file size limit" in cells
    for input_id, reason in (("att-004-in7", "Unavailable: evicted (disk budget)"),
                             ("att-004-in4", "Unavailable: never captured (unreadable)"),
                             ("att-004-in5", "Unavailable: never captured (over a capture limit)"),
                             ("att-004-in6", "no preview for this type")):
        open_item(at, "path_reference", input_id)
        assert reason in texts(at), input_id
        assert all("Old plan" not in b for b in boxes(at))


def test_legacy_attempt_page_shows_the_exact_sentences(env: ViewerFixture) -> None:
    """A legacy attempt shows the legacy-task and no-packet sentences and the derived task."""
    at = run_app(attempt=env.ids["legacy"])
    infos = [i.value for i in at.info]
    assert md_escape(names.SENTENCE_LEGACY_TASK) in infos
    assert md_escape(names.SENTENCE_NO_PACKET) in infos
    assert boxes(at)[0] == LEGACY_TASK
    assert "Attachment state: not recorded." in [i.value.replace("\\", "") for i in at.info]


def test_prior_turn_button_navigates_to_that_attempt(env: ViewerFixture) -> None:
    """Clicking an inherited turn opens that attempt by deep link."""
    at = run_app(attempt=env.ids["gate_retry"])
    buttons = [b for b in at.button if b.key == "page:turn:0"]
    assert "att-001" in buttons[0].label.replace("\\", "")
    buttons[0].click().run()
    assert at.query_params["attempt"] in (["att-001"], "att-001")
    assert any(t.startswith("Attempt att-001 · ") for t in texts(at))


def test_runs_page_and_run_page_filters(env: ViewerFixture) -> None:
    """The runs page lists both runs; the run page filters its attempts by send kind."""
    at = run_app()
    runs = table(at, "run")
    assert list(runs["run"]) == [WIDE_RUN, env.run_id, env.legacy_run_id]
    at = run_app(run=env.run_id)
    assert list(table(at, "attempt")["attempt"]) == ["att-001", "att-002", "att-003", "att-004", "att-005"]
    at.selectbox(key="f_send").set_value("parse_retry").run()
    assert list(table(at, "attempt")["attempt"]) == ["att-002"]
    at.radio(key="f_sort").set_value("newest first")
    at.selectbox(key="f_send").set_value("any").run()
    assert list(table(at, "attempt")["attempt"])[0] == "att-005"


def test_exporter_health_loss_is_visible(env: ViewerFixture) -> None:
    """Non-zero spill and failure counters show as a warning on every page."""
    at = run_app()
    assert ":red-badge[:material/error: Exporter health: dropped]" in [m.value for m in at.markdown]
    assert "Telemetry was lost: 1 loss event(s) counted (see details)." in texts(at)
    details = table(at, "counter")  # inside the popover: drawn, shown on demand
    assert dict(zip(details["counter"], details["value"]))["spans spilled to disk (delayed)"] == 3


def test_unknown_attempt_and_missing_database_read_as_messages(env: ViewerFixture, monkeypatch, tmp_path) -> None:
    """An unknown attempt id and a missing database produce a message on the page, not a traceback."""
    at = run_app(attempt="no-such-attempt")
    assert any("No attempt with id" in e.value for e in at.error)
    monkeypatch.setenv(names.ENV_DB, str(tmp_path / "missing.duckdb"))
    at = run_app()
    assert any("No database missing" in e.value and "yet" in e.value for e in at.error), [e.value for e in at.error]


def test_newer_schema_database_reads_as_a_message(env: ViewerFixture, monkeypatch, tmp_path) -> None:
    """A database from a newer otel-inputs shows the schema message instead of crashing."""
    db = tmp_path / "newer.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE otel_inputs_schema (version INTEGER, name VARCHAR, applied_at TIMESTAMP)")
    con.execute("INSERT INTO otel_inputs_schema VALUES (99, 'future', now())")
    con.close()
    monkeypatch.setenv(names.ENV_DB, str(db))
    at = run_app()
    assert any("newer than this otel" in e.value.replace("\\", "") for e in at.error)


def test_changed_file_diff_opens_on_demand(env: ViewerFixture) -> None:
    """The check-retry turn offers a text diff of the changed notes file, read from verified snapshots."""
    at = run_app(attempt=env.ids["gate_retry"])
    at.toggle(key="page:diff:0").set_value(True).run()
    assert any("+- dry-run must not open the DB for writing" in c.value for c in at.code)
