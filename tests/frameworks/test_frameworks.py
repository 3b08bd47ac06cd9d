"""Each framework, on its own telemetry, lands one attempt per agent run with its real task, messages
and steps; the same rows come out of the ClickHouse projection (chdb); turn 2 of a session names
turn 1 (docs/encodings.md).  Two runs of one session each, bare and inside ``observer.attempt``."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from fake_openai import FakeOpenAI

HERE = Path(__file__).resolve().parent
AGENTS = HERE / "agents"
JS = HERE / "js"
SESSION = "sess-fw"
SYSTEM = "You are a careful assistant. Read files with the read_file tool before answering."
TASKS = ("Summarise notes/handoff.md in one line.", "Now list the open questions from that file.")
CONTENT = {"OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental",
           "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_ONLY"}  # fmt: skip

pytestmark = [pytest.mark.frameworks, pytest.mark.timeout(900)]


@dataclass(frozen=True)
class Case:
    script: str
    module: str  # the framework's import name: the case skips without it
    cfg: dict[str, Any] = field(default_factory=dict)
    session: bool = True  # whether the framework records the session id
    system_on_attempt: bool = True  # whether its run's root span (or first model step) records the system message


CASES = {
    "strands": Case("strands_agent.py", "strands", {"stream": True}),
    # With the latest conventions Strands puts the system instructions on its chat spans only: the
    # attempt span's own messages (the user's) are shown, the system message is on its model steps.
    "strands-latest-conventions": Case("strands_agent.py", "strands",
                                       {"env": {"OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental"}},
                                       system_on_attempt=False),
    "langgraph": Case("langgraph_agent.py", "langgraph"),
    "langgraph-stream": Case("langgraph_agent.py", "langgraph", {"stream": True}),
    "openai-agents-responses": Case("openai_agents_agent.py", "agents", session=False),
    "openai-agents-responses-stream": Case("openai_agents_agent.py", "agents", {"stream": True}, session=False),
    "openai-agents-chat": Case("openai_agents_agent.py", "agents", {"api": "chat"}, session=False),
    "adk-litellm": Case("adk_agent.py", "google.adk", {"env": CONTENT}),
    # Content on log events only: the tool span carries no arguments; its model call's output does.
    "adk-litellm-event-only": Case("adk_agent.py", "google.adk",
                                   {"env": {**CONTENT, "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "EVENT_ONLY"}}),
}


def _missing(module: str) -> str | None:
    try:
        found = importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        found = False
    return None if found else (f"{module} is not installed: pip install -e '.[frameworks]' "
                               "(the frameworks group of pyproject.toml, kept out of dev)")


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI(tool_arguments={"read_file": '{"path": "notes/handoff.md"}'}).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def chdb_sess(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    chdb_session = pytest.importorskip("chdb.session", reason="chdb (in-process ClickHouse) is not installed")
    sess = chdb_session.Session(str(tmp_path_factory.mktemp("chdb") / "s"))
    try:
        yield sess
    finally:
        sess.close()


def run_script(case: Case, tmp: Path, fake: FakeOpenAI, observed: bool) -> tuple[Path, dict[str, Any]]:
    db = tmp / "fw.duckdb"
    cfg = {"service": case.script.removesuffix(".py"), "db": str(db), "base_url": fake.base_url, "session": SESSION,
           "run_id": "run-observed", "observed": observed, **case.cfg}  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(AGENTS)}
    env.pop("OTEL_SEMCONV_STABILITY_OPT_IN", None)
    out = subprocess.run([sys.executable, str(AGENTS / case.script), json.dumps(cfg)], capture_output=True, text=True,
                         cwd=tmp, env=env, timeout=600)  # fmt: skip
    assert out.returncode == 0, out.stderr[-4000:]
    result = json.loads([ln for ln in out.stdout.splitlines() if ln.startswith("{")][-1])
    assert result["non_loopback"] == [], f"the framework contacted {result['non_loopback']} (only loopback is allowed)"
    return db, result


def rows(db: Path, sql: str, params: list[Any] | None = None) -> list[dict[str, Any]]:
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    try:
        cur = con.execute(sql, params or [])
        return [dict(zip([d[0] for d in cur.description], r)) for r in cur.fetchall()]
    finally:
        con.close()


def check_runs(db: Path, case: Case, observed: bool) -> list[dict[str, Any]]:
    """One attempt per agent run, with its task in its messages, a model step and the read_file tool step."""
    attempts = rows(db, "SELECT * FROM agent_attempts ORDER BY started_at")
    assert len(attempts) == 2, [(a["span_name"], a["source_format"]) for a in attempts]
    for index, (a, task) in enumerate(zip(attempts, TASKS)):
        steps = rows(db, "SELECT * FROM agent_attempt_steps WHERE attempt_id = ? ORDER BY seq", [a["attempt_id"]])
        kinds = [s["step_kind"] for s in steps]
        assert "model_call" in kinds, (a["span_name"], kinds)
        tools = [s for s in steps if s["step_kind"] == "tool_call"]
        assert [t["tool_name"] for t in tools] == ["read_file"], [(s["span_name"], s["step_kind"]) for s in steps]
        from otel_inputs.viewer import _queries as q

        with q.open_backend(db) as con:  # the page's steps: arguments from the tool span, else its model call
            shown = [x for x in q.get_steps(con, a["attempt_id"], None, a["trace_id"]) or () if x.step_kind == "tool_call"]
        assert "notes/handoff.md" in (shown[0].tool_arguments or ""), shown[0]
        if observed:
            assert (a["source_format"], a["run_id"]) == ("otel_inputs", "run-observed")
            continue
        (m,) = rows(db, "SELECT * FROM agent_attempt_messages WHERE attempt_id = ?", [a["attempt_id"]])
        assert task in (m["user_prompt"] or ""), (index, m)
        if case.system_on_attempt:
            assert SYSTEM in (m["system_prompt"] or ""), (index, m)
        if case.session:
            assert a["session_id"] == SESSION, a
    return attempts


FIRST_TURN = "No earlier turn of this session was recorded: this is its first recorded turn."


def check_page(db: Path, attempts: list[dict[str, Any]], case: Case, monkeypatch: pytest.MonkeyPatch) -> None:
    """Turn 2's attempt page (AppTest): its task and this dispatch are the recorded messages, never
    "not recorded" while section 6 shows them; with a session it names turn 1 and never claims to be
    the first recorded turn; this dispatch is turn 2's own instruction."""
    from landed import LAZY_SECTIONS, page_strings, shows
    from streamlit.testing.v1 import AppTest

    from otel_inputs import names
    from otel_inputs.viewer import _queries as q

    first, second = attempts
    with q.open_backend(db) as con:
        bundle = q.load_attempt(con, second["attempt_id"])
    assert bundle is not None and bundle.dispatch is not None
    assert bundle.dispatch.user_prompt is not None and TASKS[1] in bundle.dispatch.user_prompt
    assert TASKS[0] not in bundle.dispatch.user_prompt, bundle.dispatch
    if case.session:
        assert bundle.previous_turn_id == first["attempt_id"]
    monkeypatch.setenv(names.ENV_DB, str(db))
    monkeypatch.delenv(names.ENV_CLICKHOUSE, raising=False)
    at = AppTest.from_file(str(HERE.parents[1] / "viewer" / "app.py"), default_timeout=90)
    at.query_params["attempt"] = second["attempt_id"]
    for key in LAZY_SECTIONS:  # the page's on-demand parts opened, as a reader would
        at.session_state[key] = True
    at.run()
    assert not at.exception, at.exception
    strings = page_strings(at)
    assert not any("exact user message was not recorded" in t or "exact current message was not recorded" in t
                   for t in strings), strings  # fmt: skip
    if case.session:
        assert shows(at, first["attempt_id"]) and not shows(at, FIRST_TURN)


def check_parity(db: Path, tmp: Path, sess: Any, database: str) -> None:
    """The ClickHouse projection gives the same rows for the same otel_traces / otel_logs rows."""
    from ch_corpus import export_parquet, load_chdb
    from test_clickhouse_projection import _TABLES, _ch_rows, _duckdb_rows

    export_parquet(db, tmp)
    load_chdb(sess, tmp, database)
    try:
        formats = dict(_duckdb_rows(db, "agent_attempts", ["attempt_id", "source_format"], "attempt_id"))
        for table, (columns, order) in _TABLES.items():
            want, got = _duckdb_rows(db, table, columns, order), _ch_rows(sess, table, columns, order)
            assert len(got) == len(want), f"{table}: {len(got)} rows on ClickHouse, {len(want)} on DuckDB"
            for w, g in zip(want, got):
                differ = sorted(c for c, x, y in zip(columns, g, w) if x != y)
                attempt = dict(zip(columns, w)).get("attempt_id")
                assert not differ, f"{table}: the {formats.get(attempt)} encoding differs in {differ} (attempt {attempt})"
    finally:
        sess.query("USE default")


@pytest.mark.parametrize("observed", [False, True], ids=["bare", "observed"])
@pytest.mark.parametrize("name", list(CASES))
def test_framework_lands_one_attempt_per_run(name: str, observed: bool, tmp_path: Path, fake: FakeOpenAI,
                                             chdb_sess: Any, monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """The framework's two runs of one session land as two attempts (its own root span bare, the
    observer's packet when wrapped), each with its task and system message, a model step and the
    read_file tool step with its arguments; ClickHouse gives the same rows."""
    case = CASES[name]
    if (why := _missing(case.module)) is not None:
        pytest.skip(why)
    db, _ = run_script(case, tmp_path, fake, observed)
    attempts = check_runs(db, case, observed)
    if not observed:
        check_page(db, attempts, case, monkeypatch)
    check_parity(db, tmp_path, chdb_sess, "fw_" + name.replace("-", "_") + ("_obs" if observed else ""))


def _node_missing() -> str | None:
    if shutil.which("node") is None:
        return "node is not installed (Node.js >= 20.6 is needed for the Vercel AI SDK cases)"
    if not (JS / "node_modules" / "ai6").is_dir():
        return "the Vercel AI SDK is not installed: run `npm ci --prefix tests/frameworks/js`"
    return None


@pytest.mark.parametrize("version", ["6", "7"])
def test_vercel_ai_sdk_lands_one_attempt_per_call(version: str, tmp_path: Path, fake: FakeOpenAI, chdb_sess: Any,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The Vercel AI SDK (6 with its own ai.* spans, 7 with @ai-sdk/otel), exporting OTLP to
    otel-inputs collect, lands one attempt per generateText call with its task, system message,
    model steps and the read_file tool step; ClickHouse gives the same rows."""
    if (why := _node_missing()) is not None:
        pytest.skip(why)
    interop = importlib.util.spec_from_file_location("interop_conftest", HERE.parent / "interop" / "conftest.py")
    assert interop is not None and interop.loader is not None
    module = sys.modules.setdefault("interop_conftest", importlib.util.module_from_spec(interop))
    interop.loader.exec_module(module)  # tests/interop's otel-inputs collect process
    Collector, free_port = module.Collector, module.free_port
    collector = Collector(tmp_path / "fw.duckdb", tmp_path / "store", free_port(), None).start()
    try:
        out = subprocess.run(["node", str(JS / "vercel.mjs"), version, collector.http_endpoint, fake.base_url, SESSION],
                             capture_output=True, text=True, cwd=tmp_path, timeout=300)  # fmt: skip
    finally:
        collector.stop()
    assert out.returncode == 0, out.stderr[-4000:] + "\ncollector:\n" + collector.stderr[-2000:]
    case = Case("vercel.mjs", "", session=version == "6")  # @ai-sdk/otel does not send the telemetry metadata
    attempts = check_runs(tmp_path / "fw.duckdb", case, observed=False)
    check_page(tmp_path / "fw.duckdb", attempts, case, monkeypatch)
    check_parity(tmp_path / "fw.duckdb", tmp_path, chdb_sess, f"fw_vercel_{version}")
