"""The shared attempt panel model, built from real DuckDB rows and real store snapshots."""

from __future__ import annotations

import hashlib

from viewer_fixture import HOSTILE_LABEL, LEGACY_TASK, TASK_TEXT, ViewerFixture

from otel_inputs import names
from otel_inputs.viewer._panel import SECTION_TITLES, PanelModel, build_panel
from otel_inputs.viewer._queries import load_attempt, read_only


def panel(fx: ViewerFixture, key: str) -> PanelModel:
    with read_only(fx.db_path) as con:
        bundle = load_attempt(con, fx.ids[key])
    assert bundle is not None
    return build_panel(bundle)


def test_sections_are_in_the_owner_facing_order_with_task_open(viewer_fixture: ViewerFixture) -> None:
    """The panel's sections come in seed order and the task section is open by default."""
    p = panel(viewer_fixture, "review")
    assert tuple(s.title for s in p.sections) == SECTION_TITLES
    assert p.task.expanded is True
    assert p.task.text == TASK_TEXT


def test_the_page_draws_its_sections_from_one_ordered_list(viewer_fixture: ViewerFixture) -> None:
    """The one section list names the panel's numbered sections in their order, then the steps."""
    from otel_inputs.viewer._panel import SECTIONS

    p = panel(viewer_fixture, "review")
    assert tuple(getattr(p, s.model) for s in SECTIONS if s.numbered) == p.sections
    assert [s.model for s in SECTIONS if not s.numbered] == ["steps"]


def test_task_provenance_shows_prompt_file_path_size_and_sha(viewer_fixture: ViewerFixture) -> None:
    """A prompt-file task shows its path, byte size and SHA-256 as provenance."""
    prov = dict(panel(viewer_fixture, "initial").task.provenance)
    assert prov["Source"] == "prompt file"
    assert prov["Prompt file path"] == "/work/tasks/dry-run.md"
    assert prov["SHA-256"] == hashlib.sha256(TASK_TEXT.encode()).hexdigest()
    assert prov["Size"] == f"{len(TASK_TEXT.encode())} B"


def test_every_item_appears_exactly_once_grouped_by_delivery_mode_in_seq_order(viewer_fixture: ViewerFixture) -> None:
    """Each input item is listed once, in the section of its delivery mode, keeping seq order."""
    p = panel(viewer_fixture, "review")
    seqs = [i.seq for i in p.all_items()]
    assert sorted(seqs) == list(range(10)) and len(seqs) == len(set(seqs))
    assert [g.title for g in p.dispatch.groups] == [names.DELIVERY_LABELS["inline"]]
    assert [g.title for g in p.files.groups] == [names.DELIVERY_LABELS["path_reference"]]
    assert [g.title for g in p.attachments.groups] == [names.DELIVERY_LABELS["provider_attachment"]]
    path_seqs = [i.seq for i in p.files.groups[0].items]
    assert path_seqs == sorted(path_seqs) == [1, 2, 3, 4, 5, 6, 7, 8]
    assert [i.label for i in p.attachments.groups[0].items] == ["diagram.png"]


def test_unavailable_items_carry_their_reason(viewer_fixture: ViewerFixture) -> None:
    """Unreadable, over-limit and evicted items say why their bytes are not available."""
    rows = {i.label: i for i in panel(viewer_fixture, "review").all_items()}
    assert rows["latest"].unavailable == "never captured (unreadable)"
    assert rows["latest"].detail == "symlink not followed"
    assert rows["build.log"].unavailable == "never captured (over a capture limit)"
    assert rows["build.log"].capture_status == "over the file size limit"  # the tripped bound, in words
    assert rows["old-plan.md"].unavailable == "evicted (disk budget)"
    # the store's row wins over the capture-time value, which stays visible beside it
    assert rows["old-plan.md"].artifact_status == "evicted (disk budget) (store; at capture: available)"
    assert rows["summary.md"].unavailable is None


def test_hostile_label_is_kept_verbatim_as_plain_text(viewer_fixture: ViewerFixture) -> None:
    """A label containing Markdown and HTML is carried to the view unchanged, for plain-text rendering."""
    labels = [i.label for i in panel(viewer_fixture, "gate_retry").all_items()]
    assert HOSTILE_LABEL in labels


def test_dispatch_names_send_kind_turn_and_what_was_added(viewer_fixture: ViewerFixture) -> None:
    """A check retry reads "check retry", with its turn index, retry target and per-mode additions."""
    d = panel(viewer_fixture, "gate_retry").dispatch
    assert (d.send_kind, d.turn_index, d.retry_of) == ("check retry", "3", "att-002")
    assert d.added_summary == "Added on this send: 1 included in message, 1 available by path, 0 attached to request."
    assert panel(viewer_fixture, "parse_retry").dispatch.send_kind == "parse retry"


def test_inherited_context_lists_strictly_earlier_same_session_turns(viewer_fixture: ViewerFixture) -> None:
    """The later-phase turn inherits the three earlier turns of its session, oldest first."""
    inh = panel(viewer_fixture, "review").inherited
    assert [t.attempt_id for t in inh.turns] == ["att-001", "att-002", "att-003"]
    assert [t.send_kind for t in inh.turns] == ["initial request", "parse retry", "check retry"]


def test_opted_out_attempt_reads_as_a_gap_with_unknown_counts(viewer_fixture: ViewerFixture) -> None:
    """Suppressed capture shows partial coverage, a gap note and "unknown" counts, never zero."""
    p = panel(viewer_fixture, "opted_out")
    cov = p.dispatch.coverage
    assert cov.coverage == "partial"
    assert (cov.declared, cov.omitted, cov.captured) == ("unknown", "unknown", "0")
    assert any("suppressed" in n and "policy opt out" in n for n in cov.notes)
    assert names.SENTENCE_EMPTY_PACKET not in cov.notes
    assert p.task.text is None and "not captured" in p.task.notes[0]
    assert any("coverage is partial" in n for n in p.files.notes)


def test_captured_empty_packet_says_no_files_were_supplied(builder) -> None:
    """A complete packet with no items shows the exact empty-packet sentence."""
    builder.attempt("e1", 0, run_id="r", session_id="s", send_kind="initial", turn_index=1,
                    declared_input_count=0, captured_input_count=0, omitted_input_count=0, item_count=0)
    db, _ = builder.write()
    with read_only(db) as con:
        p = build_panel(load_attempt(con, "e1"))
    assert names.SENTENCE_EMPTY_PACKET in p.dispatch.coverage.notes
    assert names.SENTENCE_EMPTY_PACKET in p.files.notes


def test_fewer_events_than_recorded_item_count_marks_coverage_partial(builder) -> None:
    """When the span dropped input events the panel reports partial coverage and how many arrived."""
    builder.attempt("d1", 0, run_id="r", session_id="s", send_kind="initial", turn_index=1, item_count=3)
    builder.add_input("d1", 0, "a.md", "context_handoff", "path_reference", source_path="/a.md", data=b"a",
                      media_type="text/markdown", preview_kind="text")
    db, _ = builder.write()
    with read_only(db) as con:
        cov = build_panel(load_attempt(con, "d1")).dispatch.coverage
    assert cov.coverage == "partial"
    assert any("Only 1 of 3 input events" in n for n in cov.notes)


def test_legacy_attempt_shows_legacy_sentences_and_derived_task(viewer_fixture: ViewerFixture) -> None:
    """A packet-less attempt shows both legacy sentences, a derived task and "not recorded" states."""
    p = panel(viewer_fixture, "legacy")
    assert p.task.text == LEGACY_TASK and p.task.derived
    assert p.task.notes[0] == names.SENTENCE_LEGACY_TASK
    assert names.SENTENCE_NO_PACKET in p.dispatch.coverage.notes
    assert p.dispatch.coverage.coverage == "not recorded"
    assert p.dispatch.send_kind == "not recorded"
    assert p.attachments.notes == ("Attachment state: not recorded.",)
    assert p.messages.user is not None and "### prompt" in p.messages.user


def test_legacy_correction_recovers_task_without_guessing_retry_kind(viewer_fixture: ViewerFixture) -> None:
    """A legacy correction recovers the task from the earlier same-phase turn and never names the retry kind."""
    p = panel(viewer_fixture, "legacy_correction")
    assert p.task.text == LEGACY_TASK
    assert ("Recovered from attempt", "leg-001") in p.task.provenance
    assert p.dispatch.send_kind == "not recorded"
    assert any("parse or a check correction was not recorded" in n for n in p.dispatch.notes)


def test_legacy_turn_in_another_phase_shows_ambiguity_and_whole_message(viewer_fixture: ViewerFixture) -> None:
    """A phase change makes recovery ambiguous: the whole message is shown with the ambiguity note."""
    p = panel(viewer_fixture, "legacy_other_phase")
    assert p.task.text == "Please review what you just did."
    assert not p.task.derived
    assert any("could not be separated" in n and "another phase" in n for n in p.task.notes)
