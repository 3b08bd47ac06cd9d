"""Issue 11's "Done when": every real client lands in ONE DuckDB file through one `otel-inputs collect`.

One collector process (the real CLI, free loopback ports) receives, in turn: the official JS SDK's
three stock trace exporters (http/protobuf, http/json, gRPC), the stock Python OTLP exporters over
gRPC and HTTP (traces and logs), opentelemetry-instrumentation-openai-v2 with content on events
(EVENT_ONLY, over gRPC), OpenInference (over HTTP), and pydantic-ai wrapped in
``observer.attempt`` (over HTTP).  After SIGTERM (the collector flushes) each client's rows are
checked in that one file: exactly one attempt per invocation, its steps, its real messages (as
the fake OpenAI server received them), and the viewer page.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from conftest import (AgentRun, Collector, collect_supports, free_port, js_sdk_missing, node_missing_reason,
                      run_agent, run_js)
from fake_openai import COMPLETION_TOKENS, PROMPT_TOKENS, FakeOpenAI
from landed import Landed, assert_page_truthful, open_page, shows

pytestmark = pytest.mark.interop

JS_KINDS = ("proto", "json", "grpc")
PY_TRANSPORTS = ("grpc", "http")
OPENAI_MODEL = "gpt-interop"
SYSTEM = "You are a terse assistant. Answer in one line."
CALLS_PER_OPENAI_AGENT = 6  # bare: 1 + 1 (stream) + 2 (tool loop); wrapped: 2 (tool loop)
BARE_INVOCATIONS = 4  # each bare model call is one legacy attempt
EXPECTED_ATTEMPTS = 2 * len(JS_KINDS) + len(PY_TRANSPORTS) + 2 * (BARE_INVOCATIONS + 1) + 2


def openai_users(run_id: str) -> list[str]:
    return [f"[{run_id}] What is 2 + 2?", f"[{run_id}] Name a prime number, streaming.",
            f"[{run_id}] What is the weather in Paris?", f"[{run_id}] Should I take an umbrella in Paris?"]  # fmt: skip


@dataclass
class OneFile:
    collector: Collector
    fake: FakeOpenAI
    runs: dict[str, AgentRun] = field(default_factory=dict)
    cfgs: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def db(self) -> Path:
        return self.collector.db

    @property
    def store(self) -> Path:
        return self.collector.store

    def run(self, name: str) -> dict[str, Any]:
        return self.runs[name].check()

    def received(self, run_id: str) -> list[dict[str, Any]]:
        """The chat-completions bodies the fake server received from one agent, in arrival order."""
        return [b for b in self.fake.received if any(run_id in str(m.get("content")) for m in b["messages"])]


def _not_run(name: str, why: str) -> AgentRun:
    return AgentRun(name, -1, "", f"not run: {why}")


@pytest.fixture(scope="module")
def one_file(tmp_path_factory: pytest.TempPathFactory, fake_openai: FakeOpenAI) -> Iterator[OneFile]:
    tmp = tmp_path_factory.mktemp("one-file")
    grpc = free_port() if collect_supports("--grpc-port") else None
    col = Collector(tmp / "all-clients.duckdb", tmp / "store", free_port(), grpc).start()
    f = OneFile(col, fake_openai)
    no_grpc = "otel-inputs collect has no --grpc-port (product: OTLP/gRPC receiver not landed)"
    try:
        missing_node = node_missing_reason() or js_sdk_missing()
        for kind in JS_KINDS:
            name = f"js-{kind}"
            if missing_node:
                f.runs[name] = _not_run(name, missing_node)
            elif kind == "grpc" and col.grpc_endpoint is None:
                f.runs[name] = _not_run(name, no_grpc)
            else:
                f.runs[name] = run_js(kind, col.grpc_endpoint if kind == "grpc" else col.http_endpoint, f"run-js-{kind}")
        base = {"http_endpoint": col.http_endpoint, "grpc_endpoint": col.grpc_endpoint, "store": str(tmp / "store"),
                "workdir": str(tmp), "system": SYSTEM, "openai_base_url": fake_openai.base_url, "model": OPENAI_MODEL}  # fmt: skip
        scenarios: list[tuple[str, str, dict[str, Any], dict[str, str]]] = []
        for transport in PY_TRANSPORTS:
            run_id = f"run-py-{transport}"
            scenarios.append((f"py-{transport}", "py_otlp.py", {
                "transport": transport, "service": f"interop-py-{transport}", "run_id": run_id,
                "task": f"Refactor the loader ({run_id}).", "user": f"Please refactor the loader ({run_id}).",
            }, {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_ONLY"}))  # fmt: skip
        scenarios.append(("openai-v2-events", "openai_agent.py", {
            "transport": "grpc", "service": "interop-openai-v2-events", "run_id": "run-oai-v2",
            "instrumentation": "openai_v2", "task": "Advise on the weather (run-oai-v2).",
            "users": openai_users("run-oai-v2")}, {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "EVENT_ONLY"}))  # fmt: skip
        scenarios.append(("openinference", "openai_agent.py", {
            "transport": "http", "service": "interop-openinference", "run_id": "run-oi",
            "instrumentation": "openinference", "task": "Advise on the weather (run-oi).",
            "users": openai_users("run-oi")}, {}))  # fmt: skip
        scenarios.append(("pydantic-ai", "pydantic_agent.py", {
            "transport": "http", "service": "interop-pydantic", "run_id": "run-pyd",
            "task": "Triage ticket T-7 (run-pyd).", "system": "You triage tickets. Be brief.",
            "users": ["[run-pyd] Triage ticket T-7 please.", "[run-pyd] And ticket T-8?"]}, {}))  # fmt: skip
        for name, script, cfg, env in scenarios:
            cfg = {**base, **cfg}
            f.cfgs[name] = cfg
            if cfg["transport"] == "grpc" and col.grpc_endpoint is None:
                f.runs[name] = _not_run(name, no_grpc)
            else:
                f.runs[name] = run_agent(script, cfg, env)
    finally:
        rc = col.stop()
    assert rc == 0, f"otel-inputs collect exited {rc}:\n{col.stderr[-4000:]}"
    yield f


@pytest.fixture()
def landed(one_file: OneFile) -> Iterator[Landed]:
    db = Landed(one_file.db)
    try:
        yield db
    finally:
        db.close()


# --- the JS SDK -----------------------------------------------------------------------------

@pytest.mark.parametrize("kind", JS_KINDS)
def test_js_sdk_attempts_land_once_with_lineage_steps_and_partial_coverage(one_file: OneFile, landed: Landed,
                                                                           kind: str) -> None:  # fmt: skip
    """Each stock JS exporter's two WIRE attempts land once each, linked, with their chat step, messages and partial coverage."""
    if node_missing_reason():
        pytest.skip(node_missing_reason())
    res = one_file.run(f"js-{kind}")
    first, second = res["attempts"]
    rows = landed.attempts("run_id = ?", [f"run-js-{kind}"])
    assert [r["attempt_id"] for r in rows] == [first["attempt_id"], second["attempt_id"]]
    for rec in (first, second):
        assert [r["attempt_id"] for r in landed.attempts_in_trace(rec["trace_id"])] == [rec["attempt_id"]]
    a2 = rows[1]
    assert (a2["send_kind"], a2["turn_index"]) == ("gate_retry", 2)
    assert a2["previous_turn_attempt_id"] == a2["retry_of_attempt_id"] == first["attempt_id"]
    assert a2["task_prompt"] == res["task"]
    # Three items declared on the span, two events sent: a truthful reader says partial.
    assert (a2["item_count"], a2["input_coverage"]) == (3, "partial")
    inputs = landed.inputs(second["attempt_id"])
    assert [i["label"] for i in inputs] == [res["hostile_label"], "previous envelope"]
    span = landed.span(second["span_id"])
    link_kinds = sorted(attrs.get("otel_inputs.link.kind") for attrs in (dict(a) for a in span["Links.Attributes"]))
    assert span["Links.SpanId"] == [first["span_id"], first["span_id"]] and link_kinds == ["previous_turn", "retry_of"]
    for turn, rec in enumerate((first, second), 1):
        steps = landed.steps(rec["attempt_id"])
        assert [(s["span_id"], s["step_kind"], s["operation_name"]) for s in steps] == [
            (rec["chat_span_id"], "model_call", "chat")]
        s = steps[0]
        assert (s["request_model"], s["response_model"], s["input_tokens"], s["output_tokens"], s["status"]) == (
            "gpt-js", "gpt-js-0001", 42 + turn, 7, "ok")
        m = landed.messages(rec["attempt_id"])
        assert (m.system, m.user, m.source) == (res["system"], rec["user_message"], "attempt_span")


def test_js_attempt_page_shows_task_messages_and_hostile_label_as_plain_text(
        one_file: OneFile, monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """The viewer page of a JS-SDK gate retry shows its task, exact messages, partial coverage and the hostile label verbatim."""
    if node_missing_reason():
        pytest.skip(node_missing_reason())
    res = one_file.run("js-proto")
    second = res["attempts"][1]
    at = open_page(monkeypatch, one_file.db, one_file.store, second["attempt_id"])
    assert_page_truthful(at, attempt_id=second["attempt_id"], task=res["task"], system=res["system"],
                         user=second["user_message"])  # fmt: skip
    # Labels show in st.text or in st.dataframe cells: neither ever renders markup.
    in_tables = any(res["hostile_label"] in df.value["label"].tolist() for df in at.dataframe if "label" in df.value)
    assert in_tables or any(res["hostile_label"] in t.value for t in at.text), \
        "the hostile label is not shown verbatim as plain text"
    assert shows(at, "partial")


# --- the stock Python OTLP exporters ----------------------------------------------------------

@pytest.mark.parametrize("transport", PY_TRANSPORTS)
def test_python_stock_exporters_land_attempt_step_and_log_event(one_file: OneFile, landed: Landed,
                                                                transport: str) -> None:  # fmt: skip
    """An AgentObserver attempt sent by the stock OTLP span and log exporters lands once, with its step, messages and log event."""
    name = f"py-{transport}"
    res, cfg = one_file.run(name), one_file.cfgs[name]
    rows = landed.attempts_in_trace(res["trace_id"])
    assert [r["attempt_id"] for r in rows] == [res["attempt_id"]]
    a = rows[0]
    assert (a["run_id"], a["task_prompt"], a["input_coverage"]) == (cfg["run_id"], cfg["task"], "complete")
    assert [(i["source_kind"], i["capture_status"]) for i in landed.inputs(res["attempt_id"])] == [
        ("context_handoff", "captured")]
    steps = landed.steps(res["attempt_id"])
    assert [(s["span_id"], s["step_kind"], s["input_tokens"], s["output_tokens"]) for s in steps] == [
        (res["chat_span_id"], "model_call", 31, 9)]
    m = landed.messages(res["attempt_id"])
    assert (m.system, m.user, m.source) == (SYSTEM, cfg["user"], "attempt_span")
    landed.require("otel_logs", "migration 10")
    logs = landed.logs('"TraceId" = ? AND "SpanId" = ?', [res["trace_id"], res["chat_span_id"]])
    assert [lg["EventName"] for lg in logs] == ["gen_ai.client.inference.operation.details"]
    assert cfg["user"] in dict(logs[0]["LogAttributes"])["gen_ai.input.messages"]
    assert logs[0]["ServiceName"] == cfg["service"]


def test_python_attempt_page_shows_task_and_messages(one_file: OneFile, monkeypatch: pytest.MonkeyPatch) -> None:
    """The viewer page of the attempt sent over OTLP/gRPC shows its task and exact messages."""
    res, cfg = one_file.run("py-grpc"), one_file.cfgs["py-grpc"]
    at = open_page(monkeypatch, one_file.db, one_file.store, res["attempt_id"])
    assert_page_truthful(at, attempt_id=res["attempt_id"], task=cfg["task"], system=SYSTEM, user=cfg["user"])


# --- openai-v2 (content on events) and OpenInference, driving the real openai client ---------

OPENAI_AGENTS = ("openai-v2-events", "openinference")


def _sent(body: dict[str, Any], role: str) -> str | None:
    found = [m["content"] for m in body["messages"] if m["role"] == role]
    return found[0] if found else None


@pytest.mark.parametrize("name", OPENAI_AGENTS)
def test_openai_client_calls_land_one_attempt_each_with_the_messages_sent(one_file: OneFile, landed: Landed,
                                                                          name: str) -> None:  # fmt: skip
    """Each bare instrumented openai call (plain, streaming, tool loop) is one attempt with the exact messages the server received."""
    res, cfg = one_file.run(name), one_file.cfgs[name]
    sent = one_file.received(cfg["run_id"])
    assert len(sent) == CALLS_PER_OPENAI_AGENT, "the fake server did not receive every call"
    rows = landed.attempts("service_name = ? AND attempt_id <> ?", [cfg["service"], res["attempt_id"]])
    assert len(rows) == BARE_INVOCATIONS, [r["attempt_id"] for r in rows]
    # One attempt per trace: a bare model call is its own (legacy) attempt, never two.
    assert len({r["trace_id"] for r in rows}) == BARE_INVOCATIONS
    expected_source = "log_event" if name == "openai-v2-events" else "attempt_span"
    for row, body in zip(rows, sent[:BARE_INVOCATIONS], strict=True):
        assert row["input_coverage"] == "not_recorded"
        m = landed.messages(row["attempt_id"])
        assert (m.system, m.user, m.source) == (_sent(body, "system"), _sent(body, "user"), expected_source)
    if name == "openinference":
        assert {r["provider_name"] for r in rows} == {"openai"}  # from llm.provider / llm.system


@pytest.mark.parametrize("name", OPENAI_AGENTS)
def test_openai_tool_loop_in_observer_attempt_is_one_attempt_with_two_model_steps(one_file: OneFile, landed: Landed,
                                                                                  name: str) -> None:  # fmt: skip
    """A two-call tool loop inside observer.attempt (no messages passed) is one attempt: two model steps, messages from the first."""
    res, cfg = one_file.run(name), one_file.cfgs[name]
    sent = one_file.received(cfg["run_id"])[BARE_INVOCATIONS:]
    assert [r["attempt_id"] for r in landed.attempts_in_trace(res["trace_id"])] == [res["attempt_id"]]
    a = landed.attempts("attempt_id = ?", [res["attempt_id"]])[0]
    assert a["task_prompt"] == cfg["task"]
    steps = landed.steps(res["attempt_id"])
    assert [s["step_kind"] for s in steps] == ["model_call", "model_call"]
    assert [s["seq"] for s in steps] == [0, 1]
    if name == "openai-v2-events":
        assert [(s["operation_name"], s["request_model"], s["input_tokens"], s["output_tokens"]) for s in steps] == [
            ("chat", OPENAI_MODEL, PROMPT_TOKENS, COMPLETION_TOKENS)] * 2
    m = landed.messages(res["attempt_id"])
    assert (m.system, m.user, m.source) == (_sent(sent[0], "system"), _sent(sent[0], "user"), "model_step")


def test_openai_v2_event_only_keeps_content_off_spans_and_lands_every_event(one_file: OneFile, landed: Landed) -> None:
    """With EVENT_ONLY no openai-v2 span carries message content, and each call's content event lands joined to its span."""
    cfg = one_file.cfgs["openai-v2-events"]
    one_file.run("openai-v2-events")
    spans = landed.rows('SELECT "SpanId", "SpanAttributes" FROM otel_traces WHERE "ServiceName" = ? '
                        "AND \"SpanAttributes\"['gen_ai.operation.name'] = 'chat'", [cfg["service"]])  # fmt: skip
    assert len(spans) == CALLS_PER_OPENAI_AGENT
    for s in spans:
        assert "gen_ai.input.messages" not in dict(s["SpanAttributes"])
    landed.require("otel_logs", "migration 10")
    logs = landed.logs('"ServiceName" = ? AND "EventName" = ?',
                       [cfg["service"], "gen_ai.client.inference.operation.details"])  # fmt: skip
    assert sorted(lg["SpanId"] for lg in logs) == sorted(s["SpanId"] for s in spans)
    assert all(cfg["run_id"] in str(dict(lg["LogAttributes"]).get("gen_ai.input.messages")) for lg in logs)


@pytest.mark.parametrize("name", OPENAI_AGENTS)
def test_openai_pages_show_the_messages_sent(one_file: OneFile, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """The viewer shows a bare call's exact messages (legacy attempt) and the wrapped attempt's task and first-step messages."""
    res, cfg = one_file.run(name), one_file.cfgs[name]
    sent = one_file.received(cfg["run_id"])
    db = Landed(one_file.db)
    try:
        bare = db.attempts("service_name = ? AND attempt_id <> ?", [cfg["service"], res["attempt_id"]])[0]
    finally:
        db.close()
    at = open_page(monkeypatch, one_file.db, one_file.store, bare["attempt_id"])
    assert_page_truthful(at, attempt_id=bare["attempt_id"], task=None, system=_sent(sent[0], "system"),
                         user=_sent(sent[0], "user"))  # fmt: skip
    at = open_page(monkeypatch, one_file.db, one_file.store, res["attempt_id"])
    assert_page_truthful(at, attempt_id=res["attempt_id"], task=cfg["task"], system=_sent(sent[4], "system"),
                         user=_sent(sent[4], "user"))  # fmt: skip


# --- pydantic-ai wrapped in observer.attempt ---------------------------------------------------

def test_pydantic_ai_in_observer_attempt_is_one_attempt_with_its_steps_and_messages(one_file: OneFile,
                                                                                    landed: Landed) -> None:  # fmt: skip
    """pydantic-ai inside observer.attempt is exactly one attempt: its agent, model and tool steps, and the real messages."""
    res, cfg = one_file.run("pydantic-ai"), one_file.cfgs["pydantic-ai"]
    assert [r["attempt_id"] for r in landed.attempts_in_trace(res["trace_id"])] == [res["attempt_id"]]
    a = landed.attempts("attempt_id = ?", [res["attempt_id"]])[0]
    assert (a["run_id"], a["task_prompt"]) == (cfg["run_id"], cfg["task"])
    steps = landed.steps(res["attempt_id"])
    kinds = [s["step_kind"] for s in steps]
    assert kinds[0] == "agent" and kinds.count("agent") == 1, kinds
    assert sorted(kinds[1:]) == ["model_call", "model_call", "tool_call"], kinds
    tool = next(s for s in steps if s["step_kind"] == "tool_call")
    assert tool["tool_name"] == "lookup_ticket"
    assert "ticket" in json.loads(tool["tool_arguments"])
    assert [s["seq"] for s in steps] == list(range(len(steps)))
    m = landed.messages(res["attempt_id"])
    assert (m.system, m.user, m.source) == (cfg["system"], cfg["users"][0], "model_step")


def test_pydantic_ai_bare_run_is_one_attempt_with_its_messages(one_file: OneFile, landed: Landed) -> None:
    """A bare pydantic-ai run (no observer) is exactly one attempt, its framework span, with the run's messages."""
    res, cfg = one_file.run("pydantic-ai"), one_file.cfgs["pydantic-ai"]
    rows = landed.attempts("service_name = ?", [cfg["service"]])
    assert len(rows) == 2, [r["attempt_id"] for r in rows]
    bare = next(r for r in rows if r["attempt_id"] != res["attempt_id"])
    assert [r["attempt_id"] for r in landed.attempts_in_trace(bare["trace_id"])] == [bare["attempt_id"]]
    assert bare["input_coverage"] == "not_recorded"
    assert sorted(s["step_kind"] for s in landed.steps(bare["attempt_id"])) == ["model_call", "model_call", "tool_call"]
    m = landed.messages(bare["attempt_id"])
    assert (m.system, m.user) == (cfg["system"], cfg["users"][1])


def test_pydantic_ai_page_names_the_task_messages_and_steps(one_file: OneFile, monkeypatch: pytest.MonkeyPatch) -> None:
    """The viewer page of the wrapped pydantic-ai attempt shows its task, the real messages and names its tool step."""
    res, cfg = one_file.run("pydantic-ai"), one_file.cfgs["pydantic-ai"]
    at = open_page(monkeypatch, one_file.db, one_file.store, res["attempt_id"])
    assert_page_truthful(at, attempt_id=res["attempt_id"], task=cfg["task"], system=cfg["system"],
                         user=cfg["users"][0])  # fmt: skip
    assert shows(at, "lookup_ticket"), "the page does not name the attempt's tool step"


# --- the whole file ---------------------------------------------------------------------------

def test_one_file_holds_exactly_one_attempt_per_invocation(one_file: OneFile, landed: Landed) -> None:
    """Across every client the file holds exactly the attempts invoked: none missing, none duplicated, no extras."""
    failed = {n: r.stderr[-600:] for n, r in one_file.runs.items() if r.returncode != 0}
    assert not failed, f"clients that did not run cleanly: {json.dumps(failed, indent=1)}"
    ids = [r["attempt_id"] for r in landed.rows("SELECT attempt_id FROM agent_attempts")]
    assert len(ids) == len(set(ids)), "an attempt id landed twice"
    assert len(ids) == EXPECTED_ATTEMPTS, f"expected {EXPECTED_ATTEMPTS} attempts, got {len(ids)}"
