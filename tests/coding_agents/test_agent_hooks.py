"""The agent-side hook, run exactly as a coding agent runs it, against a real collector and store."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

from agents_support import ENTRY, Collector, run_hook, wait_queue_empty

from otel_inputs import names as n
from otel_inputs.hooks import worker
from otel_inputs.store import ArtifactStore


def _project(tmp_path: Path) -> Path:
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "CLAUDE.md").write_text("# rules\nbe brief\n", encoding="utf-8")
    (proj / "AGENTS.md").write_text("# agents\nuse tabs\n", encoding="utf-8")
    return proj


def _ups(proj: Path, prompt: str = "read notes.txt", **extra: str) -> str:
    return json.dumps({"session_id": "s-1", "prompt_id": "p-1", "cwd": str(proj), "hook_event_name": "UserPromptSubmit",
                       "prompt": prompt, **extra})  # fmt: skip


def test_prompt_hook_snapshots_each_instruction_file_and_sends_its_records(tmp_path: Path, collector: Collector) -> None:
    """A UserPromptSubmit hook lands one turn record and one record per present instruction file, whose bytes read back verified from the store."""
    proj = _project(tmp_path)
    done = run_hook("claude-code", _ups(proj), collector.store, collector.endpoint)
    assert (done.returncode, done.stdout) == (0, b"")
    assert wait_queue_empty(collector.store) == []
    collector.stop()
    turn = collector.rows("SELECT LogAttributes FROM otel_logs WHERE EventName = ?", [n.HOOK_TURN_EVENT])
    files = collector.rows("SELECT LogAttributes FROM otel_logs WHERE EventName = ? ORDER BY LogAttributes[?]",
                           [n.INSTRUCTION_FILE_EVENT, n.INPUT_SEQ])  # fmt: skip
    assert len(turn) == 1 and len(files) == 2
    attrs = dict(turn[0][0])
    assert attrs[n.HOOK_TURN_KEY] == "p-1" and attrs[n.HOOK_FILE_COUNT] == "2"
    assert "read notes.txt" not in json.dumps(attrs)  # the prompt text never leaves the hook
    store = ArtifactStore(collector.store)
    for (raw,) in files:
        f = dict(raw)
        assert f[n.INPUT_CAPTURE_STATUS] == "captured" and f[n.INPUT_SOURCE_KIND] == "instruction_file"
        snap = store.read_input(f[n.HOOK_CAPTURE_ID], f[n.INPUT_ID])
        assert snap.data == Path(f[n.INPUT_SOURCE_PATH]).read_bytes()


def test_instructions_loaded_hook_records_claude_codes_own_report(tmp_path: Path, collector: Collector) -> None:
    """An InstructionsLoaded hook records the reported file as reported_loaded with Claude Code's memory_type and load_reason."""
    proj = _project(tmp_path)
    payload = json.dumps({"session_id": "s-1", "cwd": str(proj), "hook_event_name": "InstructionsLoaded",
                          "file_path": str(proj / "CLAUDE.md"), "memory_type": "Project", "load_reason": "session_start"})
    assert run_hook("claude-code", payload, collector.store, collector.endpoint).returncode == 0
    assert wait_queue_empty(collector.store) == []
    collector.stop()
    rows = [dict(r[0]) for r in collector.rows("SELECT LogAttributes FROM otel_logs WHERE EventName = ?",
                                               [n.INSTRUCTION_FILE_EVENT])]  # fmt: skip
    assert [(r[n.INSTRUCTION_DISCOVERY], r[n.INSTRUCTION_MEMORY_TYPE], r[n.INSTRUCTION_LOAD_REASON]) for r in rows] == [
        ("reported_loaded", "Project", "session_start")]


def test_hook_exits_zero_silently_on_hostile_input_and_records_the_gap(tmp_path: Path) -> None:
    """Non-JSON, a JSON array, binary garbage and over-1-MiB input each end in exit 0, empty stdout and a job naming the gap."""
    store = tmp_path / "store"
    cases = {b"{not json": "not JSON", b"[1, 2, 3]": "not a JSON object", bytes(range(256)) * 8: "not JSON",
             b'{"cwd": "' + b"x" * (2 << 20) + b'"}': "larger than"}  # fmt: skip
    for payload, gap in cases.items():
        done = run_hook("claude-code", payload, store, "http://127.0.0.1:9", worker=False)
        assert (done.returncode, done.stdout) == (0, b""), done.stderr
        jobs = sorted((store / "hooks" / "queue").glob("*.json"))
        job = json.loads(jobs[-1].read_text(encoding="utf-8"))
        assert any(gap in g for g in job["gaps"]), (gap, job["gaps"])


def test_hook_never_waits_for_stdin_that_never_closes(tmp_path: Path) -> None:
    """A runtime that never closes the hook's stdin still gets exit 0 once the hook's own deadline passes, with the gap recorded."""
    store = tmp_path / "store"
    argv = [sys.executable, "-I", "-S", str(ENTRY), "--runtime", "codex", "--store", str(store), "--endpoint",
            "http://127.0.0.1:9", "--no-worker", "1"]  # fmt: skip
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdin is not None
    proc.stdin.write(b'{"cwd": "/')
    proc.stdin.flush()
    assert proc.wait(timeout=20) == 0  # far beyond the 2 s deadline: it did not hang
    proc.stdin.close()
    job = json.loads(next((store / "hooks" / "queue").glob("*.json")).read_text(encoding="utf-8"))
    assert any("bound" in g for g in job["gaps"])


def test_a_hook_killed_mid_write_leaves_nothing_a_worker_would_take(tmp_path: Path, collector: Collector) -> None:
    """A half-written job (the hook killed before its rename) is never claimed; complete jobs are still sent."""
    proj = _project(tmp_path)
    queue = collector.store / "hooks" / "queue"
    queue.mkdir(parents=True)
    (queue / ".00000000000000000001-1.json.tmp").write_bytes(b'{"v": 1, "runtime": "claude-code", "inp')
    argv = [sys.executable, "-I", "-S", str(ENTRY), "--runtime", "claude-code", "--store", str(collector.store),
            "--endpoint", collector.endpoint, "--no-worker", "1"]  # fmt: skip
    slow = subprocess.Popen(argv, stdin=subprocess.PIPE)
    time.sleep(0.3)
    slow.send_signal(signal.SIGKILL)  # killed while waiting for its input: no job at all
    slow.wait(timeout=10)
    assert run_hook("claude-code", _ups(proj), collector.store, collector.endpoint).returncode == 0
    assert wait_queue_empty(collector.store) == []
    collector.stop()
    assert collector.rows("SELECT count(*) FROM otel_logs WHERE EventName = ?", [n.HOOK_TURN_EVENT]) == [(1,)]
    assert (queue / ".00000000000000000001-1.json.tmp").exists()  # left alone, never parsed


def test_a_file_changed_after_the_hook_is_not_stored_as_the_dispatched_bytes(tmp_path: Path, collector: Collector) -> None:
    """When the file changes between the hook's digest and the worker's copy, the item says changed_during_capture and holds no bytes."""
    proj = _project(tmp_path)
    assert run_hook("claude-code", _ups(proj), collector.store, collector.endpoint, worker=False).returncode == 0
    (proj / "CLAUDE.md").write_text("# rules\nchanged after dispatch\n", encoding="utf-8")
    assert worker.run(collector.store, collector.endpoint) == 1
    collector.stop()
    got = {dict(r[0])[n.INPUT_LABEL]: dict(r[0]) for r in collector.rows(
        "SELECT LogAttributes FROM otel_logs WHERE EventName = ?", [n.INSTRUCTION_FILE_EVENT])}  # fmt: skip
    assert got["CLAUDE.md"][n.INPUT_CAPTURE_STATUS] == "changed_during_capture"
    assert got["CLAUDE.md"][n.INPUT_ARTIFACT_STATUS] == "never_captured"
    assert got["AGENTS.md"][n.INPUT_CAPTURE_STATUS] == "captured"


def test_a_job_the_collector_did_not_take_is_sent_by_a_later_worker(tmp_path: Path) -> None:
    """With the collector down the job stays queued (its snapshots already taken); the next worker sends it once the collector is up."""
    proj = _project(tmp_path)
    c = Collector(tmp_path / "t.duckdb", tmp_path / "store")
    assert run_hook("codex", _ups(proj, turn_id="t-1"), c.store, c.endpoint, worker=False).returncode == 0
    assert worker.run(c.store, c.endpoint) == 0
    (job,) = (c.store / "hooks" / "queue").glob("*.json")
    assert json.loads(job.read_text(encoding="utf-8"))["send_tries"] == 1
    c.start()
    try:
        assert worker.run(c.store, c.endpoint) == 1
    finally:
        c.stop()
    assert c.rows("SELECT count(*) FROM otel_logs WHERE EventName = ?", [n.HOOK_TURN_EVENT]) == [(1,)]
