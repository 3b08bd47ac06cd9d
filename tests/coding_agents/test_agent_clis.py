"""The real CLIs (npm, pinned), set up with ``otel-inputs setup``, two turns each, offline in a network
namespace, landed through ``otel-inputs collect``: one attempt per turn, with what the runtime sent."""

from __future__ import annotations

from typing import Any

import pytest
from agents_support import AgentSession

from otel_inputs.store import ArtifactStore

pytestmark = pytest.mark.coding_agents


def _attempts(s: AgentSession) -> list[dict[str, Any]]:
    cols = ("attempt_id", "source_format", "session_id", "turn_index", "previous_turn_attempt_id", "user_prompt",
            "input_coverage", "messages_note", "input_messages_json")
    return [dict(zip(cols, r)) for r in s.rows(f"SELECT {', '.join(cols)} FROM agent_attempts ORDER BY started_at")]


def _inputs(s: AgentSession, attempt_id: str) -> list[dict[str, Any]]:
    cols = ("input_id", "source_path", "sha256", "capture_status", "loaded", "delivered", "delivered_detail",
            "capture_attempt_id")
    return [dict(zip(cols, r)) for r in s.rows(f"SELECT {', '.join(cols)} FROM agent_attempt_inputs "
                                               "WHERE attempt_id = ? ORDER BY seq", [attempt_id])]  # fmt: skip


def _kinds(s: AgentSession, attempt_id: str) -> list[tuple[str, str | None]]:
    return s.rows("SELECT step_kind, auxiliary FROM agent_attempt_steps WHERE attempt_id = ? ORDER BY seq", [attempt_id])


def _two_turns(s: AgentSession, source_format: str) -> tuple[dict[str, Any], dict[str, Any]]:
    s.check_ran()
    assert s.report["setup"]["exit"] == 0, s.report["setup"]
    assert s.report["interfaces"] == ["lo"] and s.report["hook_jobs_left"] == []
    first, second = _attempts(s)
    assert first["source_format"] == second["source_format"] == source_format
    assert first["session_id"] and first["session_id"] == second["session_id"]
    assert (first["turn_index"], second["turn_index"], second["previous_turn_attempt_id"]) == (1, 2, first["attempt_id"])
    assert first["user_prompt"] == "Please read the file notes.txt and tell me the secret word."
    assert second["user_prompt"] == "Thanks. Now say goodbye."
    return first, second


def _preview_is_the_file(s: AgentSession, item: dict[str, Any]) -> None:
    """The instruction file's snapshot reads back verified, byte for byte the project's file."""
    snap = ArtifactStore(s.store).read_input(item["capture_attempt_id"], item["input_id"])
    assert snap.data == (s.project / item["source_path"].rsplit("/", 1)[-1]).read_bytes()


def test_claude_code_offline_session_lands_one_attempt_per_turn_with_its_instruction_files(claude_session: AgentSession) -> None:
    """Claude Code 2.1.197's two turns land as two linked attempts whose CLAUDE.md is loaded (its own report) and partly delivered in a body cut at 60 KB, with the snapshot in the store."""
    first, _ = _two_turns(claude_session, "claude_code")
    assert [k for k, _ in _kinds(claude_session, first["attempt_id"])] == ["model_call", "tool_call", "model_call"]
    claude_md, agents_md = _inputs(claude_session, first["attempt_id"])
    assert (claude_md["loaded"], claude_md["delivered"]) == ("reported", "partial")
    assert (agents_md["loaded"], agents_md["delivered"]) == ("not_reported", "not_in_recorded_part")
    _preview_is_the_file(claude_session, claude_md)
    _preview_is_the_file(claude_session, agents_md)


def test_claude_code_file_bodies_are_read_agent_side_and_the_large_claude_md_reads_delivered_whole(
        claude_file_session: AgentSession) -> None:
    """With OTEL_LOG_RAW_API_BODIES=file: set by otel-inputs setup, the Stop hook reads Claude Code's request bodies into the store, so the 70 KB CLAUDE.md reads delivered whole and the messages come from the stored body."""
    first, second = _two_turns(claude_file_session, "claude_code")
    claude_md, agents_md = _inputs(claude_file_session, first["attempt_id"])
    assert (claude_md["loaded"], claude_md["delivered"]) == ("reported", "whole")
    assert (agents_md["loaded"], agents_md["delivered"]) == ("not_reported", "absent")
    _preview_is_the_file(claude_file_session, claude_md)
    notes = claude_file_session.rows("SELECT request_record FROM agent_attempt_steps WHERE attempt_id = ? AND "
                                     "step_kind = 'model_call'", [second["attempt_id"]])
    assert notes and all(n and "read agent-side into the store" in n for (n,) in notes), notes


def test_codex_offline_session_lands_one_attempt_per_turn_and_says_what_codex_does_not_send(codex_session: AgentSession) -> None:
    """Codex CLI 0.171.0's exec and exec resume --last land as two linked attempts; AGENTS.md is present at dispatch with loading and delivery not reported by Codex."""
    first, _ = _two_turns(codex_session, "codex")
    assert [k for k, _ in _kinds(codex_session, first["attempt_id"])] == ["model_call", "tool_call", "model_call"]
    assert "not recorded by Codex" in first["messages_note"] and first["input_messages_json"] is None
    (agents_md,) = _inputs(codex_session, first["attempt_id"])
    assert (agents_md["loaded"], agents_md["delivered"]) == ("not_reported_by_runtime", "request_not_recorded")
    _preview_is_the_file(codex_session, agents_md)


def test_gemini_offline_session_over_grpc_lands_one_attempt_per_prompt(gemini_session: AgentSession) -> None:
    """Gemini CLI 0.61.0 over OTLP/gRPC lands one attempt per prompt (routing calls auxiliary steps) with GEMINI.md reported loaded and delivered whole."""
    first, _ = _two_turns(gemini_session, "gemini_cli")
    kinds = _kinds(gemini_session, first["attempt_id"])
    assert ("model_call", "utility_router") in kinds and ("tool_call", None) in kinds and ("other", None) in kinds
    (gemini_md,) = _inputs(gemini_session, first["attempt_id"])
    assert (gemini_md["loaded"], gemini_md["delivered"]) == ("reported", "whole")
    _preview_is_the_file(gemini_session, gemini_md)
