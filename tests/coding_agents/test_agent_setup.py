"""``otel-inputs setup claude-code | codex | gemini`` and ``--undo``, through the real command."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

BIN = Path(sys.executable).parent


def setup(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {"HOME": str(home), "PATH": str(BIN)}
    return subprocess.run([str(BIN / "otel-inputs"), "setup", *args], capture_output=True, text=True, env=env,
                          timeout=120)  # fmt: skip


def test_claude_setup_keeps_the_users_settings_and_undo_restores_them(tmp_path: Path) -> None:
    """Setup adds telemetry env and the hooks beside the user's own settings and hook; --undo gives back exactly the user's settings."""
    settings = tmp_path / "proj" / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    mine = {"env": {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://mine:4318", "FOO": "1"}, "model": "opus",
            "hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": "my-hook"}]}]}}
    settings.write_text(json.dumps(mine), encoding="utf-8")
    done = setup(tmp_path, "claude-code", "--project", str(tmp_path / "proj"), "--store", str(tmp_path / "store"))
    assert done.returncode == 0, done.stderr
    assert f"wrote    {settings}" in done.stdout and "OTEL_LOG_RAW_API_BODIES=1" in done.stdout
    now = json.loads(settings.read_text(encoding="utf-8"))
    assert now["env"]["OTEL_EXPORTER_OTLP_ENDPOINT"] == "http://127.0.0.1:4318" and now["env"]["FOO"] == "1"
    assert now["env"]["CLAUDE_CODE_ENABLE_TELEMETRY"] == "1" and now["model"] == "opus"
    commands = [h["command"] for g in now["hooks"]["UserPromptSubmit"] for h in g["hooks"]]
    assert commands[0] == "my-hook" and "otel_inputs/hooks/entry.py" in commands[1] and " -I -S " in commands[1]
    assert "InstructionsLoaded" in now["hooks"]
    again = setup(tmp_path, "claude-code", "--project", str(tmp_path / "proj"), "--store", str(tmp_path / "store"))
    assert again.returncode == 0
    twice = json.loads(settings.read_text(encoding="utf-8"))
    assert len([h for g in twice["hooks"]["UserPromptSubmit"] for h in g["hooks"]]) == 2  # one of ours, not two
    undone = setup(tmp_path, "claude-code", "--project", str(tmp_path / "proj"), "--undo")
    assert undone.returncode == 0 and f"removed  {settings}.otel-inputs-setup.json" in undone.stdout
    assert json.loads(settings.read_text(encoding="utf-8")) == mine


def test_claude_setup_with_file_bodies_names_the_body_directory(tmp_path: Path) -> None:
    """--raw-bodies file sets OTEL_LOG_RAW_API_BODIES=file:<dir beside the store>, says what it sends, and hands the directory to the Stop hook."""
    done = setup(tmp_path, "claude-code", "--user", "--store", str(tmp_path / "s" / "store"), "--raw-bodies", "file")
    assert done.returncode == 0, done.stderr
    env = json.loads((tmp_path / ".claude" / "settings.json").read_text(encoding="utf-8"))["env"]
    assert env["OTEL_LOG_RAW_API_BODIES"] == f"file:{tmp_path / 's' / 'claude-code-bodies'}"
    assert "whole, written to that directory" in done.stdout
    hooks = json.loads((tmp_path / ".claude" / "settings.json").read_text(encoding="utf-8"))["hooks"]
    stop = hooks["Stop"][0]["hooks"][0]["command"]  # the turn's end reads its bodies into the store
    assert stop.endswith(f"--bodies-dir {tmp_path / 's' / 'claude-code-bodies'}")


def test_codex_setup_adds_one_managed_block_and_undo_removes_only_it(tmp_path: Path) -> None:
    """Codex gets one [otel] block (valid TOML with the user's config) and a hooks.json; --undo leaves the user's config as it was."""
    config = tmp_path / ".codex" / "config.toml"
    config.parent.mkdir()
    mine = 'model = "o3"\n\n[features]\nplugins = false\n'
    config.write_text(mine, encoding="utf-8")
    done = setup(tmp_path, "codex", "--store", str(tmp_path / "store"), "--protocol", "grpc")
    assert done.returncode == 0, done.stderr
    doc = tomllib.loads(config.read_text(encoding="utf-8"))
    assert doc["model"] == "o3" and doc["otel"]["log_user_prompt"] is True
    assert doc["otel"]["trace_exporter"] == {"otlp-grpc": {"endpoint": "http://127.0.0.1:4317"}}
    hooks = json.loads((tmp_path / ".codex" / "hooks.json").read_text(encoding="utf-8"))
    assert "otel_inputs/hooks/entry.py" in hooks["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
    assert "trust" in done.stdout  # Codex runs a new hook only once trusted: setup says so, never bypasses it
    assert setup(tmp_path, "codex", "--undo").returncode == 0
    assert config.read_text(encoding="utf-8") == mine
    assert not (tmp_path / ".codex" / "hooks.json").exists()


def test_codex_setup_refuses_to_rewrite_an_existing_otel_table(tmp_path: Path) -> None:
    """A config.toml that already has [otel] is left untouched, and the command says what to do by hand."""
    config = tmp_path / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text('[otel]\nenvironment = "prod"\n', encoding="utf-8")
    done = setup(tmp_path, "codex")
    assert done.returncode != 0 and "already has an [otel] table" in done.stderr
    assert config.read_text(encoding="utf-8") == '[otel]\nenvironment = "prod"\n'


def test_gemini_setup_merges_telemetry_and_undo_restores_the_users_telemetry(tmp_path: Path) -> None:
    """Gemini's telemetry keys are set beside the user's own (kept), the BeforeAgent hook added, and --undo restores the original telemetry."""
    settings = tmp_path / ".gemini" / "settings.json"
    settings.parent.mkdir()
    mine = {"telemetry": {"enabled": False, "outfile": "/tmp/x"}, "theme": "dark"}
    settings.write_text(json.dumps(mine), encoding="utf-8")
    assert setup(tmp_path, "gemini", "--user", "--store", str(tmp_path / "store")).returncode == 0
    now = json.loads(settings.read_text(encoding="utf-8"))
    assert now["telemetry"]["enabled"] is True and now["telemetry"]["outfile"] == "/tmp/x"
    assert now["telemetry"]["logPrompts"] is True and now["theme"] == "dark"
    assert "otel_inputs/hooks/entry.py" in now["hooks"]["BeforeAgent"][0]["hooks"][0]["command"]
    assert setup(tmp_path, "gemini", "--undo").returncode == 0
    assert json.loads(settings.read_text(encoding="utf-8")) == mine
