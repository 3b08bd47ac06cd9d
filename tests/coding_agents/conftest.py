"""Fixtures of the coding-agent suite: a real ``otel-inputs collect``, and one two-turn session per CLI
(``drive.py`` in a network namespace) shared by the assertions (helpers: agents_support.py)."""

from __future__ import annotations

import fcntl
import json
from collections.abc import Iterator

import pytest
from agents_support import AgentSession, Collector, drive


@pytest.fixture()
def collector(tmp_path: Path) -> Iterator[Collector]:
    c = Collector(tmp_path / "t.duckdb", tmp_path / "store").start()
    try:
        yield c
    finally:
        c.stop()


def _once(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, name: str, runtime: str,
          *extra: str) -> AgentSession:
    """One drive.py run per test run, shared by every xdist worker (the first takes a lock and runs it,
    the others wait and read its report)."""
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if getattr(request.config, "workerinput", None) is not None else base
    out = shared / f"coding-agents-{name}"
    with open(shared / f"coding-agents-{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (out / "report.json").exists():
            return AgentSession(runtime, out, json.loads((out / "report.json").read_text(encoding="utf-8")))
        return drive(runtime, out, *extra)


@pytest.fixture(scope="session")
def claude_session(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> AgentSession:
    """Claude Code, two turns, inline raw bodies, a 70 KB CLAUDE.md (over the 60 KB body cut), OTLP/HTTP."""
    return _once(request, tmp_path_factory, "claude", "claude-code", "--large")


@pytest.fixture(scope="session")
def claude_file_session(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> AgentSession:
    """Claude Code, two turns, request bodies written whole to files (``file:``), the same 70 KB CLAUDE.md."""
    return _once(request, tmp_path_factory, "claude-file", "claude-code", "--large", "--raw-bodies", "file")


@pytest.fixture(scope="session")
def codex_session(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> AgentSession:
    """Codex CLI, two turns (exec, exec resume --last), OTLP/HTTP."""
    return _once(request, tmp_path_factory, "codex", "codex")


@pytest.fixture(scope="session")
def gemini_session(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> AgentSession:
    """Gemini CLI, two turns (-p, --resume latest), OTLP/gRPC."""
    return _once(request, tmp_path_factory, "gemini", "gemini", "--protocol", "grpc")
