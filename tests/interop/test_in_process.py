"""The in-process paths with real clients: the ``duckdb`` exporters in the agent's own process.

- openai-v2 with content on spans (SPAN_ONLY) exported by ``DuckDBSpanExporter`` (entry point
  ``duckdb``), the real ``openai`` client against the fake server;
- ``opentelemetry-instrument`` (opentelemetry-distro) with ``OTEL_TRACES_EXPORTER=duckdb`` and
  ``OTEL_LOGS_EXPORTER=duckdb`` running an agent script that configures no OpenTelemetry itself,
  openai-v2 with content on events (EVENT_ONLY).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from conftest import AGENTS, BIN, run_agent, run_process
from fake_openai import COMPLETION_TOKENS, PROMPT_TOKENS, FakeOpenAI
from landed import Landed, assert_page_truthful, open_page

from otel_inputs import names

pytestmark = pytest.mark.interop

MODEL = "gpt-inproc"
SYSTEM = "You answer weather questions in one line."


def _users(run_id: str) -> list[str]:
    return [f"[{run_id}] What is 3 + 4?", f"[{run_id}] Stream me a colour.",
            f"[{run_id}] Weather in Oslo?", f"[{run_id}] Do I need a coat in Oslo?"]  # fmt: skip


def _sent(fake: FakeOpenAI, run_id: str) -> list[dict[str, object]]:
    return [b for b in fake.received if any(run_id in str(m.get("content")) for m in b["messages"])]


def _role(body: dict[str, object], role: str) -> str:
    return next(m["content"] for m in body["messages"] if m["role"] == role)  # type: ignore[index,union-attr]


def test_openai_v2_span_only_through_the_in_process_exporter(tmp_path: Path, fake_openai: FakeOpenAI,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """openai-v2 with content on spans, exported in-process: one attempt per call, the sent messages, two steps when wrapped."""
    db, store, run_id = tmp_path / "inproc.duckdb", tmp_path / "store", "run-inproc-span"
    cfg = {"transport": "duckdb", "logs": False, "service": "interop-inproc-span", "run_id": run_id,
           "instrumentation": "openai_v2", "openai_base_url": fake_openai.base_url, "model": MODEL, "system": SYSTEM,
           "store": str(store), "task": f"Advise on the weather ({run_id}).", "users": _users(run_id)}  # fmt: skip
    res = run_agent("openai_agent.py", cfg, {names.ENV_DB: str(db), names.ENV_STORE: str(store),
                                             "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_ONLY"}).check()  # fmt: skip
    sent = _sent(fake_openai, run_id)
    assert len(sent) == 6
    landed = Landed(db)
    try:
        chat_spans = landed.rows('SELECT "SpanAttributes" FROM otel_traces WHERE '
                                 "\"SpanAttributes\"['gen_ai.operation.name'] = 'chat'")  # fmt: skip
        assert len(chat_spans) == 6 and all("gen_ai.input.messages" in dict(s["SpanAttributes"]) for s in chat_spans)
        bare = landed.attempts("attempt_id <> ?", [res["attempt_id"]])
        assert len(bare) == 4, [b["attempt_id"] for b in bare]
        for row, body in zip(bare, sent[:4], strict=True):
            m = landed.messages(row["attempt_id"])
            assert (m.system, m.user, m.source) == (_role(body, "system"), _role(body, "user"), "attempt_span")
        assert [r["attempt_id"] for r in landed.attempts_in_trace(res["trace_id"])] == [res["attempt_id"]]
        steps = landed.steps(res["attempt_id"])
        assert [(s["step_kind"], s["request_model"], s["input_tokens"], s["output_tokens"]) for s in steps] == [
            ("model_call", MODEL, PROMPT_TOKENS, COMPLETION_TOKENS)] * 2
        m = landed.messages(res["attempt_id"])
        assert (m.system, m.user, m.source) == (_role(sent[4], "system"), _role(sent[4], "user"), "model_step")
    finally:
        landed.close()
    at = open_page(monkeypatch, db, store, res["attempt_id"])
    assert_page_truthful(at, attempt_id=res["attempt_id"], task=cfg["task"], system=SYSTEM, user=_role(sent[4], "user"))


def test_opentelemetry_instrument_with_duckdb_exporters_lands_the_attempt(tmp_path: Path, fake_openai: FakeOpenAI,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """Under opentelemetry-instrument with the duckdb traces and logs exporters, the attempt, its steps and event-borne messages land."""
    db, store, run_id = tmp_path / "auto.duckdb", tmp_path / "store", "run-auto"
    cfg = {"openai_base_url": fake_openai.base_url, "model": MODEL, "system": SYSTEM, "run_id": run_id,
           "task": f"Advise on the weather ({run_id}).", "users": [f"[{run_id}] Umbrella in Bergen?"]}  # fmt: skip
    env = {
        "OTEL_TRACES_EXPORTER": "duckdb", "OTEL_LOGS_EXPORTER": "duckdb", "OTEL_METRICS_EXPORTER": "none",
        "OTEL_SERVICE_NAME": "interop-auto", names.ENV_DB: str(db), names.ENV_STORE: str(store),
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "EVENT_ONLY",
        "OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental",
        # Both openai-v2 and OpenInference register an "openai" instrumentor; the script picks openai-v2 itself.
        "OTEL_PYTHON_DISABLED_INSTRUMENTATIONS": "openai", "PYTHONPATH": str(AGENTS),
    }  # fmt: skip
    run = run_process("opentelemetry-instrument", [str(BIN / "opentelemetry-instrument"), sys.executable,
                                                   str(AGENTS / "instrumented_agent.py"), json.dumps(cfg)], env=env)  # fmt: skip
    res = run.check()
    assert "Traceback" not in run.stderr, run.stderr[-3000:]
    sent = _sent(fake_openai, run_id)
    assert len(sent) == 2
    landed = Landed(db)
    try:
        rows = landed.attempts("true", [])
        assert [r["attempt_id"] for r in rows] == [res["attempt_id"]]
        assert (rows[0]["task_prompt"], rows[0]["service_name"]) == (cfg["task"], "interop-auto")
        steps = landed.steps(res["attempt_id"])
        assert [(s["step_kind"], s["request_model"]) for s in steps] == [("model_call", MODEL)] * 2
        landed.require("otel_logs", "migration 10")
        logs = landed.logs('"EventName" = ?', ["gen_ai.client.inference.operation.details"])
        assert sorted(lg["SpanId"] for lg in logs) == sorted(s["span_id"] for s in steps)
        m = landed.messages(res["attempt_id"])
        assert (m.system, m.user, m.source) == (SYSTEM, cfg["users"][0], "model_step")
    finally:
        landed.close()
    at = open_page(monkeypatch, db, store, res["attempt_id"])
    assert_page_truthful(at, attempt_id=res["attempt_id"], task=cfg["task"], system=SYSTEM, user=cfg["users"][0])
