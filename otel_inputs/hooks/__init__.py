"""Agent-side hooks for coding agents (Claude Code, Codex CLI, Gemini CLI), installed by ``otel-inputs setup``.

``entry.py`` is what the agent runs (standard library only, run by path); ``worker.py`` snapshots
the instruction files into the artifact store and sends the records (docs/coding-agents.md).
"""
