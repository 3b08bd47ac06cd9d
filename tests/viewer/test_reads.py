"""'Was it read?': the truth table, the configurable read-tool mapping and path matching."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from apptest_helpers import open_item, run_app, table, texts
from viewer_fixture import FixtureBuilder, ViewerFixture

from otel_inputs import names
from otel_inputs.viewer._records import InputRecord, StepRecord
from otel_inputs.viewer._reads import DEFAULT_READ_TOOLS, ReadState, find_reads, load_read_tools, path_matches

ITEM = InputRecord("a-in0", "a", 0, label="notes.md", delivery_mode="path_reference",
                   source_path="/work/handoff/notes.md")
T = 1_767_261_600_000_000_000


def tool(name: str | None, args: dict | None, seq: int = 1) -> StepRecord:
    return StepRecord("a", f"s{seq}", seq=seq, step_kind="tool_call", tool_name=name, started_ns=T + seq * 10**9,
                      tool_arguments=json.dumps(args) if args is not None else None)


MODEL = StepRecord("a", "s0", seq=0, step_kind="model_call", request_model="m")
TOOLS = load_read_tools({})


@pytest.mark.parametrize(
    ("steps", "state", "text"),
    [
        ((MODEL, tool("read_file", {"path": "/work/handoff/notes.md"})), ReadState.READ,
         "read by read_file at 10:00:01.000"),
        ((MODEL, tool("read_file", {"path": "/work/other.md"}), tool("bash", {"path": "/work/handoff/notes.md"}, 2)),
         ReadState.NOT_READ, "no recorded read"),
        ((MODEL,), ReadState.NOT_RECORDED, "reads not recorded (no tool steps recorded for this attempt)"),
        ((), ReadState.NOT_RECORDED, "reads not recorded (no tool steps recorded for this attempt)"),
        (None, ReadState.NOT_RECORDED, "reads not recorded (no tool steps recorded for this attempt)"),
        ((tool("read_file", None),), ReadState.UNKNOWN, "unknown: 1 read-tool call(s) without recorded arguments"),
    ],
    ids=["read", "not-read-with-tool-steps", "only-model-steps", "no-steps", "no-steps-table", "arguments-not-recorded"],
)
def test_truth_table(steps, state: ReadState, text: str) -> None:  # noqa: ANN001
    """Read, not read (tool steps recorded), and not recorded are three different answers, never conflated."""
    finding = find_reads(ITEM, steps, TOOLS)
    assert finding is not None and (finding.state, finding.text) == (state, text)


def test_only_path_references_are_asked() -> None:
    """An inline item or one without a path gets no read finding at all."""
    inline = InputRecord("a-in1", "a", 1, delivery_mode="inline", source_path="/work/handoff/notes.md")
    assert find_reads(inline, (tool("read_file", {"path": "/work/handoff/notes.md"}),), TOOLS) is None


@pytest.mark.parametrize(("arg", "hit"), [
    ("/work/handoff/notes.md", True), ("/work/handoff/./notes.md", True), ("handoff/notes.md", True),
    ("notes.md", True), ("file:///work/handoff/notes.md", True), ("otes.md", False), ("/other/notes.md", False),
    (".", False), ("", False),
])
def test_path_matching(arg: str, hit: bool) -> None:
    """Equal after normalisation, or a relative tail on a segment boundary; nothing else."""
    assert path_matches(arg, "/work/handoff/notes.md") is hit


def test_mapping_is_configurable_inline_or_by_file(tmp_path: Path) -> None:
    """OTEL_INPUTS_READ_TOOLS adds tools, overrides arguments and removes defaults; a bad value keeps the defaults."""
    config = {"fetch_doc": "doc", "cat": ["target"], "view": None}
    tools = load_read_tools({names.ENV_READ_TOOLS: json.dumps(config)})
    assert tools.arguments_for("fetch_doc") == ("doc",) and tools.arguments_for("cat") == ("target",)
    assert tools.arguments_for("view") is None and tools.arguments_for("READ_FILE") == DEFAULT_READ_TOOLS["read_file"]
    f = tmp_path / "tools.json"
    f.write_text(json.dumps(config))
    assert load_read_tools({names.ENV_READ_TOOLS: str(f)}).tools == tools.tools
    assert find_reads(ITEM, (tool("fetch_doc", {"doc": "notes.md"}),), tools).state is ReadState.READ
    bad = load_read_tools({names.ENV_READ_TOOLS: '{"cat": 3}'})
    assert bad.tools == DEFAULT_READ_TOOLS and bad.problem and "ignored" in bad.problem
    missing = load_read_tools({names.ENV_READ_TOOLS: str(tmp_path / "nope.json")})
    assert missing.tools == DEFAULT_READ_TOOLS and missing.problem


@pytest.fixture()
def env(viewer_fixture: ViewerFixture, monkeypatch: pytest.MonkeyPatch) -> ViewerFixture:
    monkeypatch.setenv(names.ENV_DB, str(viewer_fixture.db_path))
    monkeypatch.setenv(names.ENV_STORE, str(viewer_fixture.store_path))
    monkeypatch.delenv(names.ENV_READ_TOOLS, raising=False)
    return viewer_fixture


def test_page_shows_the_three_answers_in_the_files_table(env: ViewerFixture) -> None:
    """The review attempt's files table says who read what; an attempt with only a model call says reads were not recorded."""
    at = run_app(attempt=env.ids["review"])
    reads = dict(zip(table(at, "read?")["label"], table(at, "read?")["read?"]))
    assert reads["summary.md"] == "read by read_file at 10:05:04.000"
    assert reads["screenshot.png"] == "read by Read at 10:05:05.000"
    assert reads["photo.jpg"] == "no recorded read"
    open_item(at, "path_reference", "att-004-in3")
    assert any("Was it read? no recorded read" in t for t in texts(at))
    at = run_app(attempt=env.ids["initial"])  # one answer for every file: said once above the table, no column
    assert "Was it read? reads not recorded (no tool steps recorded for this attempt) (every item of this group)" \
        in texts(at)
    assert not any("read?" in df.value.columns for df in at.dataframe)


def test_database_without_steps_table_never_says_not_read(builder: FixtureBuilder, monkeypatch: pytest.MonkeyPatch) -> None:
    """On a database from before steps existed, a path item reads 'reads not recorded' and the steps say why."""
    builder.with_steps_table = False
    builder.attempt("old-1", 0, run_id="r", session_id="s", send_kind="initial", turn_index=1, item_count=1)
    builder.add_input("old-1", 0, "a.md", "context_handoff", "path_reference", source_path="/w/a.md", data=b"# a\n",
                      media_type="text/markdown", preview_kind="text")
    db, store = builder.write()
    monkeypatch.setenv(names.ENV_DB, str(db))
    monkeypatch.setenv(names.ENV_STORE, str(store))
    at = run_app(attempt="old-1")
    assert "Was it read? reads not recorded (no tool steps recorded for this attempt) (every item of this group)" \
        in texts(at)
    assert "no recorded read" not in "\n".join(texts(at))
    assert any("this database has no steps table" in i.value for i in at.info)
