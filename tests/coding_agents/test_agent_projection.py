"""The coding-agent projection on captured OTLP of the real CLIs, landed through a real ``otel-inputs collect``."""

from __future__ import annotations

import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from agents_support import Collector
from corpus import Request, load, replay

FIXTURES = ("claude-code-inline", "claude-code-title-call", "claude-code-file-bodies", "codex", "gemini")
ATTEMPT_COLS = ("attempt_id", "source_format", "session_id", "run_id", "turn_index", "previous_turn_attempt_id",
                "user_prompt", "system_prompt", "input_coverage", "coverage_reason", "request_model", "provider_name",
                "input_messages_json", "messages_note", "trace_id", "span_id", "started_at", "ended_at", "status")
STEP_COLS = ("attempt_id", "seq", "span_id", "step_kind", "span_name", "operation_name", "request_model", "input_tokens",
             "output_tokens", "tool_name", "tool_call_id", "tool_arguments", "status", "auxiliary", "request_record")
INPUT_COLS = ("attempt_id", "seq", "input_id", "source_kind", "source_path", "size_bytes", "sha256", "capture_status",
              "artifact_status", "delivery_mode", "loaded", "loaded_detail", "delivered", "delivered_detail",
              "capture_attempt_id")


class Landed:
    """A collector's database after some fixtures were replayed into it, read back as plain rows."""

    def __init__(self, c: Collector) -> None:
        self.c = c

    def table(self, name: str, cols: tuple[str, ...], where: str = "", params: list[Any] | None = None) -> list[dict[str, Any]]:
        order = "started_at" if name == "agent_attempts" else "attempt_id, seq"
        rows = self.c.rows(f"SELECT {', '.join(cols)} FROM {name} {where} ORDER BY {order}", params)
        return [dict(zip(cols, r)) for r in rows]

    def attempts(self) -> list[dict[str, Any]]:
        return self.table("agent_attempts", ATTEMPT_COLS)

    def steps(self, attempt_id: str) -> list[dict[str, Any]]:
        return self.table("agent_attempt_steps", STEP_COLS, "WHERE attempt_id = ?", [attempt_id])

    def inputs(self, attempt_id: str) -> list[dict[str, Any]]:
        return self.table("agent_attempt_inputs", INPUT_COLS, "WHERE attempt_id = ?", [attempt_id])

    def everything(self) -> dict[str, list[tuple[Any, ...]]]:
        return {name: sorted(tuple(r.values()) for r in self.table(name, cols)) for name, cols in
                (("agent_attempts", ATTEMPT_COLS), ("agent_attempt_steps", STEP_COLS), ("agent_attempt_inputs", INPUT_COLS))}


def land(tmp: Path, requests: list[Request], seed: int | None = None) -> Landed:
    c = Collector(tmp / "t.duckdb", tmp / "store").start()
    try:
        replay(c.endpoint, requests, seed=seed)
    finally:
        c.stop()
    return Landed(c)


@pytest.fixture(scope="module")
def landed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Landed]:
    """Each fixture landed in order, once, into its own database."""
    return {name: land(tmp_path_factory.mktemp(name), load(name)[0]) for name in FIXTURES}


def test_each_claude_code_turn_is_one_attempt_with_its_steps_prompt_and_lineage(landed: dict[str, Landed]) -> None:
    """Claude Code's two turns (the second from `claude -p --continue`, a new process) are two attempts of one session, the second linked to the first, each with its own prompt and its llm_request/tool steps."""
    got = landed["claude-code-inline"]
    first, second = got.attempts()
    assert (first["source_format"], first["session_id"]) == ("claude_code", second["session_id"])
    assert first["run_id"] == first["session_id"]
    assert (first["turn_index"], first["previous_turn_attempt_id"]) == (1, None)
    assert (second["turn_index"], second["previous_turn_attempt_id"]) == (2, first["attempt_id"])
    assert first["user_prompt"] == "Please read the file notes.txt and tell me the secret word."
    assert second["user_prompt"] == "Thanks. Now say goodbye."
    steps = got.steps(first["attempt_id"])
    assert [s["step_kind"] for s in steps] == ["model_call", "tool_call", "model_call"]
    read = steps[1]
    assert read["tool_name"] == "Read" and read["tool_arguments"].endswith('/proj/notes.txt"}')
    assert all(s["auxiliary"] is None for s in steps)


def test_a_request_body_cut_at_60_kb_is_partial_and_the_large_instruction_file_says_how_much_arrived(landed: dict[str, Landed]) -> None:
    """With inline raw bodies cut at 60 KB, each model step says partial, and the 70 KB CLAUDE.md reads loaded (InstructionsLoaded) and delivered partially, N of M bytes; AGENTS.md beside it reads present but not reported loaded."""
    got = landed["claude-code-inline"]
    first = got.attempts()[0]
    assert "cut at" in (got.steps(first["attempt_id"])[0]["request_record"] or "")
    assert first["input_messages_json"] is None and "partial" in first["messages_note"]
    claude_md, agents_md = got.inputs(first["attempt_id"])
    assert claude_md["source_path"].endswith("/CLAUDE.md") and claude_md["size_bytes"] > 61_440
    assert (claude_md["loaded"], claude_md["delivered"], claude_md["delivery_mode"]) == ("reported", "partial", "inline")
    assert "memory_type Project, load_reason session_start" in claude_md["loaded_detail"]
    assert f"of {claude_md['size_bytes']} bytes before the recorded request ends" in claude_md["delivered_detail"]
    assert agents_md["source_path"].endswith("/AGENTS.md")
    assert agents_md["loaded"] == "not_reported" and "CLAUDE.md in the same folder" in agents_md["loaded_detail"]
    assert agents_md["delivered"] == "not_in_recorded_part"  # the cut request cannot say absent
    assert claude_md["capture_attempt_id"] and claude_md["sha256"] and claude_md["capture_status"] == "captured"


def test_claude_codes_session_title_call_is_an_auxiliary_step_never_an_attempt(landed: dict[str, Landed]) -> None:
    """The session-title call (its events carry no trace context) is a step of turn 1 marked auxiliary; the turn is still one attempt."""
    got = landed["claude-code-title-call"]
    first, _second = got.attempts()
    steps = got.steps(first["attempt_id"])
    assert [s["auxiliary"] for s in steps if s["step_kind"] == "model_call"] == ["generate_session_title", None, None]
    assert "whole" in steps[0]["request_record"]
    assert len(got.attempts()) == 2


def test_claude_file_bodies_are_read_agent_side_and_never_opened_by_the_receiver(landed: dict[str, Landed]) -> None:
    """With OTEL_LOG_RAW_API_BODIES=file:DIR the hook reads each request body into the store at the turn's end, so the 70 KB CLAUDE.md reads delivered whole and AGENTS.md absent, while the receiver only matched the body's path."""
    got = landed["claude-code-file-bodies"]
    first = got.attempts()[0]
    record = got.steps(first["attempt_id"])[0]["request_record"]
    assert "written whole by Claude Code to " in record and "read agent-side into the store by the otel-inputs hook" in record
    claude_md, agents_md = got.inputs(first["attempt_id"])
    assert (claude_md["loaded"], claude_md["delivered"]) == ("reported", "whole")
    assert claude_md["delivered_detail"] == f"all {claude_md['size_bytes']} bytes, as at dispatch (the request body read agent-side)"
    assert (agents_md["loaded"], agents_md["delivered"]) == ("not_reported", "absent")


def test_each_codex_turn_is_one_attempt_and_what_codex_never_sends_says_so(landed: dict[str, Landed]) -> None:
    """Codex's `exec` and `exec resume --last` turns are two linked attempts; of ~990 spans only the sampling requests and exec_command are steps; AGENTS.md is present at dispatch with loading and delivery not reported by Codex."""
    got = landed["codex"]
    first, second = got.attempts()
    assert (second["turn_index"], second["previous_turn_attempt_id"]) == (2, first["attempt_id"])
    assert first["request_model"] == "gpt-offline" and first["user_prompt"].startswith("Please read the file")
    steps = got.steps(first["attempt_id"])
    assert [s["step_kind"] for s in steps] == ["model_call", "tool_call", "model_call"]
    assert steps[1]["tool_name"] == "exec_command" and steps[1]["tool_arguments"] == '{"cmd": "cat notes.txt"}'
    assert all(s["input_tokens"] == 21 for s in steps if s["step_kind"] == "model_call")
    assert "not recorded by Codex" in first["messages_note"] and first["input_messages_json"] is None
    (agents_md,) = got.inputs(first["attempt_id"])
    assert agents_md["source_path"].endswith("/AGENTS.md") and agents_md["capture_status"] == "captured"
    assert (agents_md["loaded"], agents_md["delivered"]) == ("not_reported_by_runtime", "request_not_recorded")
    assert agents_md["loaded_detail"] == "present at dispatch, loading not reported by Codex"


def test_each_gemini_prompt_is_one_attempt_with_routing_calls_auxiliary_and_gemini_md_delivered(landed: dict[str, Landed]) -> None:
    """Gemini's root llm_call traces group into one attempt per prompt: the router's classifier is an auxiliary step, schedule_tool_calls a step (never an attempt), the user message is this turn's prompt alone, GEMINI.md is reported loaded and delivered whole, and turn 2 links to turn 1."""
    got = landed["gemini"]
    first, second = got.attempts()
    assert first["source_format"] == "gemini_cli" and first["session_id"] == second["session_id"]
    assert (second["turn_index"], second["previous_turn_attempt_id"]) == (2, first["attempt_id"])
    assert second["user_prompt"] == "Thanks. Now say goodbye."  # not every user text of the history joined
    steps = got.steps(first["attempt_id"])
    assert [(s["step_kind"], s["auxiliary"]) for s in steps] == [
        ("model_call", "utility_router"), ("model_call", None), ("other", None), ("tool_call", None), ("model_call", None)]
    assert steps[2]["operation_name"] == "schedule_tool_calls"
    assert steps[3]["tool_name"] == "read_file" and steps[3]["tool_arguments"].endswith('/proj/notes.txt"}')
    assert first["input_messages_json"].startswith('[{"role":"user"') and "Gemini CLI" in first["system_prompt"]
    (gemini_md,) = got.inputs(first["attempt_id"])
    assert (gemini_md["loaded"], gemini_md["delivered"]) == ("reported", "whole")
    assert "--- Context from: " in gemini_md["loaded_detail"]


def test_sessions_of_three_runtimes_interleaved_in_one_collector_keep_their_own_rows(landed: dict[str, Landed], tmp_path: Path) -> None:
    """Five sessions of the three CLIs interleaved in one stream, one request at a time in shuffled order,
    land exactly the rows each lands alone and in order: arrival order, batching and neighbours change nothing."""
    mixed = [r for name in FIXTURES for r in load(name)[0]]
    together = land(tmp_path, mixed, seed=3).everything()
    for table in ("agent_attempts", "agent_attempt_steps", "agent_attempt_inputs"):
        alone = sorted(row for got in landed.values() for row in got.everything()[table])
        assert together[table] == alone, table


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is needed to watch the collector's file calls")
def test_the_receiver_never_opens_a_path_named_in_telemetry(tmp_path: Path) -> None:
    """Landing every fixture, the collector process makes no file system call on any project, instruction-file or body path the telemetry names."""
    named = set()
    for name in FIXTURES:
        requests, facts = load(name)
        named.add(facts["project"])
    c = Collector(tmp_path / "t.duckdb", tmp_path / "store").start()
    assert c.proc is not None
    trace = tmp_path / "strace.log"
    # Attached to the running collector (every thread): only what it does while landing is seen.
    watcher = subprocess.Popen(["strace", "-f", "-qq", "-e", "trace=%file", "-o", str(trace), "-p", str(c.proc.pid)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        time.sleep(1.0)
        assert watcher.poll() is None, "strace could not attach"
        replay(c.endpoint, [r for name in FIXTURES for r in load(name)[0]])
    finally:
        watcher.send_signal(signal.SIGINT)
        watcher.wait(timeout=30)
        c.stop()
    calls = trace.read_text(encoding="utf-8", errors="replace")
    assert str(tmp_path / "t.duckdb") in calls  # the watcher saw the collector's own file calls
    assert c.rows("SELECT count(*) FROM agent_coding_turns")[0][0] == 10
    touched = [p for p in named if p in calls or p.rsplit("/", 1)[0] + "/claude-code-bodies" in calls]
    assert touched == [], f"the collector touched paths named in telemetry: {touched}"

