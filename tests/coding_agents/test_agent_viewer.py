"""The viewer reads a coding session: each turn's page (AppTest) shows its prompt, its instruction files
loaded/delivered, its steps with auxiliary calls set apart, and its place in the session."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from agents_support import AgentSession, Collector
from corpus import load, replay
from streamlit.testing.v1 import AppTest

from otel_inputs import names

APP = str(Path(__file__).resolve().parents[2] / "viewer" / "app.py")
FIRST_TURN = "this is its first recorded turn"
# The page's parts drawn only once opened (docs/viewer.md): opened here, as a reader would.
LAZY_SECTIONS = ("page:current_msg", "page:messages", "page:parts_more", "page:steps_table")


def page(monkeypatch: pytest.MonkeyPatch, db: Path, attempt_id: str, store: Path | None = None,
         item: tuple[str, str] | None = None) -> list[str]:
    """Every string the attempt page shows, its on-demand parts opened (optionally with one instruction file opened)."""
    monkeypatch.setenv(names.ENV_DB, str(db))
    monkeypatch.delenv(names.ENV_CLICKHOUSE, raising=False)
    if store is not None:
        monkeypatch.setenv(names.ENV_STORE, str(store))
    else:
        monkeypatch.delenv(names.ENV_STORE, raising=False)
    at = AppTest.from_file(APP, default_timeout=90)
    at.query_params["attempt"] = attempt_id
    for key in LAZY_SECTIONS:
        at.session_state[key] = True
    at.run()
    assert not at.exception, at.exception
    if item is not None:
        at.selectbox(key=f"page:grp:{item[0]}:item").set_value(item[1]).run()
        assert not at.exception, at.exception
    out: list[str] = []
    for kind in ("text", "code", "markdown", "caption", "info", "warning", "error", "success", "title", "header",
                 "subheader"):  # fmt: skip
        out += [str(e.value) for e in at.get(kind)]
    out += [str(e.label) for e in at.get("expander")]
    for df in at.dataframe:
        out.append(df.value.to_csv(index=False))
    return out


def has(strings: list[str], *needles: str) -> bool:
    """Every needle is on the page (Markdown escapes left out)."""
    plain = [s.replace("\\", "") for s in strings]
    return all(any(n in s for s in plain) for n in needles)


@pytest.fixture(scope="module")
def corpus_db(tmp_path_factory: pytest.TempPathFactory) -> tuple[Collector, dict[str, list[tuple[Any, ...]]]]:
    tmp = tmp_path_factory.mktemp("viewer")
    c = Collector(tmp / "t.duckdb", tmp / "store").start()
    try:
        replay(c.endpoint, [r for name in ("claude-code-title-call", "codex", "gemini") for r in load(name)[0]])
    finally:
        c.stop()
    turns: dict[str, list[tuple[Any, ...]]] = {}
    for fmt, attempt, previous in c.rows("SELECT source_format, attempt_id, previous_turn_attempt_id FROM agent_attempts "
                                         "ORDER BY started_at"):  # fmt: skip
        turns.setdefault(fmt, []).append((attempt, previous))
    return c, turns


@pytest.mark.parametrize("fmt, runtime", [("claude_code", "Claude Code"), ("codex", "Codex"), ("gemini_cli", "Gemini CLI")])
def test_turn_two_page_names_turn_one_and_shows_its_own_prompt_files_and_steps(
        corpus_db: tuple[Collector, dict[str, list[tuple[Any, ...]]]], fmt: str, runtime: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Turn 2's page names turn 1 (never 'first recorded turn'), shows its own prompt, its instruction file with the loaded and delivered columns, and says it is a turn of the runtime."""
    c, turns = corpus_db
    (first, _), (second, previous) = turns[fmt]
    assert previous == first
    strings = page(monkeypatch, c.db, second)
    assert has(strings, first) and not has(strings, FIRST_TURN)
    assert has(strings, "Thanks. Now say goodbye.")
    assert has(strings, f"Instruction files of a {runtime} turn", "Instruction files: loaded")
    assert has(strings, ",loaded,delivered\n")  # the instruction files' table has both facts as columns


def test_auxiliary_calls_are_set_apart_and_what_codex_does_not_send_is_said(
        corpus_db: tuple[Collector, dict[str, list[tuple[Any, ...]]]], monkeypatch: pytest.MonkeyPatch) -> None:
    """Claude Code's session-title call and Gemini's router call are marked auxiliary and listed last; Codex's page says its request messages and AGENTS.md loading are not recorded by Codex."""
    c, turns = corpus_db
    claude = page(monkeypatch, c.db, turns["claude_code"][0][0])
    assert has(claude, "(auxiliary: generate_session_title)", "auxiliary call(s) not part of the turn itself")
    gemini = page(monkeypatch, c.db, turns["gemini_cli"][0][0])
    assert has(gemini, "(auxiliary: utility_router)")
    codex = page(monkeypatch, c.db, turns["codex"][0][0])
    assert has(codex, "not recorded by Codex", "not reported by runtime")


@pytest.mark.coding_agents
def test_a_real_claude_code_turns_instruction_file_opens_with_its_facts_and_verified_preview(
        claude_session: AgentSession, monkeypatch: pytest.MonkeyPatch) -> None:
    """On the real Claude Code session's first turn, opening CLAUDE.md shows loaded (InstructionsLoaded) and delivered facts and its preview read back from the hook's snapshot."""
    claude_session.check_ran()
    (attempt, input_id), = claude_session.rows(
        "SELECT i.attempt_id, i.input_id FROM agent_attempt_inputs i JOIN agent_attempts a USING (attempt_id) "
        "WHERE a.turn_index = 1 AND i.source_path LIKE '%/CLAUDE.md'")  # fmt: skip
    strings = page(monkeypatch, claude_session.db, attempt, store=claude_session.store,
                   item=("instruction_file", input_id))
    assert has(strings, "Loaded: reported — Claude Code reported it loaded (InstructionsLoaded: memory_type Project")
    assert has(strings, "Delivered: partial")
    assert has(strings, "# Project rules (CLAUDE.md)")  # the preview, read from the store and verified


def test_a_claude_code_version_whose_names_differ_lands_unmapped_and_the_runs_page_says_so(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Claude Code telemetry whose turn span is renamed (a version with other names) derives no attempt, keeps every record, and the runs page counts them per service instead of saying nothing was recorded."""
    from corpus import Request

    from otel_inputs.exporter._otlp import parse_protobuf

    renamed = []
    for r in load("claude-code-inline")[0]:
        if r.signal == "traces":
            req = parse_protobuf(r.body)
            for rs in req.resource_spans:
                for ss in rs.scope_spans:
                    for sp in ss.spans:
                        sp.name = sp.name.replace("claude_code.interaction", "claude_code.turn_v3")
            r = Request(r.path, r.content_type, req.SerializeToString())
        renamed.append(r)
    c = Collector(tmp_path / "t.duckdb", tmp_path / "store").start()
    try:
        replay(c.endpoint, renamed)
    finally:
        c.stop()
    assert c.rows("SELECT count(*) FROM agent_attempts") == [(0,)]
    spans, logs = c.rows("SELECT (SELECT count(*) FROM otel_traces), (SELECT count(*) FROM otel_logs "
                         "WHERE \"ServiceName\" = 'claude-code')")[0]  # fmt: skip
    monkeypatch.setenv(names.ENV_DB, str(c.db))
    monkeypatch.delenv(names.ENV_CLICKHOUSE, raising=False)
    at = AppTest.from_file(APP, default_timeout=90)
    at.run()
    assert not at.exception, at.exception
    shown = [str(t.value) for t in at.text]
    assert any(t.startswith(f"claude-code: {spans + logs} records ({spans} spans, {logs} log records), no attempts")
               for t in shown), shown
    assert "No attempts recorded yet." not in shown
