"""Attempts and their steps: one attempt per invocation, its nested GenAI spans as ordered steps,
whatever order, batching or repetition the spans land in (docs/encodings.md)."""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from exporter_helpers import query, query_dicts
from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_inputs import AgentObserver
from otel_inputs import names as n
from otel_inputs.exporter import DuckDBSpanExporter
from otel_inputs.exporter._spans import SpanRecord, from_readable
from otel_inputs.exporter._writer import DuckDBWriter

pydantic_ai = pytest.importorskip("pydantic_ai")
from pydantic_ai import Agent  # noqa: E402
from pydantic_ai.capabilities.instrumentation import Instrumentation  # noqa: E402
from pydantic_ai.models.instrumented import InstrumentationSettings  # noqa: E402
from pydantic_ai.models.test import TestModel  # noqa: E402


def _provider(*processors: Any) -> TracerProvider:
    tp = TracerProvider(resource=Resource.create({"service.name": "agent-svc"}))
    for p in processors:
        tp.add_span_processor(p)
    return tp


def _pydantic_run(tp: TracerProvider, observer: AgentObserver | None, *, with_tool: bool = True,
                  prompt: str = "What is 1+2?") -> None:  # fmt: skip
    """One real pydantic-ai agent run (offline TestModel, instrumentation on, content on spans)."""
    agent = Agent(TestModel(), system_prompt="Be brief.",
                  capabilities=[Instrumentation(InstrumentationSettings(tracer_provider=tp, include_content=True))])
    if with_tool:
        @agent.tool_plain
        def add(a: int, b: int) -> int:
            return a + b
    if observer is None:
        agent.run_sync(prompt)
        return
    with observer.attempt(run_id="run-p", request=None):
        agent.run_sync(prompt)


def _recorded_run(**kwargs: Any) -> list[SpanRecord]:
    memory = InMemorySpanExporter()
    tp = _provider(SimpleSpanProcessor(memory))
    _pydantic_run(tp, AgentObserver(tracer_provider=tp), **kwargs)
    tp.shutdown()
    return [from_readable(s) for s in memory.get_finished_spans()]


def _state(db: Path) -> tuple[list[Any], list[Any], list[Any]]:
    attempts = query(db, "SELECT attempt_id, source_format, step_messages_span_id FROM agent_attempts ORDER BY 1")
    steps = query(db, "SELECT attempt_id, span_id, seq, step_kind, epoch_ns(attempt_started_at) "
                      "FROM agent_attempt_steps ORDER BY attempt_id, seq")  # fmt: skip
    messages = query(db, "SELECT * FROM agent_attempt_messages ORDER BY attempt_id")
    return attempts, steps, messages


def _land(db: Path, batches: Sequence[Sequence[SpanRecord]]) -> None:
    writer = DuckDBWriter(db)
    for batch in batches:
        assert writer.write_spans(list(batch)).written == len(batch)


def test_pydantic_ai_in_observer_attempt_is_one_attempt_with_its_steps_and_messages(tmp_path: Path) -> None:
    """observer.attempt around a real pydantic-ai run lands one attempt, its four steps in order and
    the messages its first model request really sent, labelled model_step."""
    db = tmp_path / "p.duckdb"
    tp = _provider(SimpleSpanProcessor(DuckDBSpanExporter(db)))
    _pydantic_run(tp, AgentObserver(tracer_provider=tp))
    tp.shutdown()
    attempts = query_dicts(db, "SELECT * FROM agent_attempts")
    assert len(attempts) == 1
    a = attempts[0]
    assert (a["run_id"], a["source_format"], a["system_prompt"], a["user_prompt"]) == ("run-p", "otel_inputs", None, None)
    steps = query_dicts(db, "SELECT * FROM agent_attempt_steps ORDER BY seq")
    assert [(s["seq"], s["step_kind"], s["operation_name"]) for s in steps] == [
        (0, "agent", "invoke_agent"), (1, "model_call", "chat"), (2, "tool_call", "execute_tool"),
        (3, "model_call", "chat")]  # fmt: skip
    assert {s["attempt_id"] for s in steps} == {a["attempt_id"]}
    assert steps[0]["parent_span_id"] == a["span_id"] and steps[1]["parent_span_id"] == steps[0]["span_id"]
    chat = steps[1]
    assert (chat["provider_name"], chat["request_model"], chat["response_model"]) == ("test", "test", "test")
    assert chat["input_tokens"] > 0 and chat["output_tokens"] > 0 and chat["status"] == "unset"
    assert steps[0]["input_tokens"] is None  # the agent-run span records no usage of its own
    tool = steps[2]
    assert tool["tool_name"] == "add" and json.loads(tool["tool_arguments"]) == {"a": 0, "b": 0}
    assert chat["tool_arguments"] is None and chat["tool_name"] is None
    assert all(s["attempt_started_at"] == a["started_at"] for s in steps)
    (m,) = query_dicts(db, "SELECT * FROM agent_attempt_messages")
    assert (m["attempt_id"], m["system_prompt"], m["user_prompt"], m["messages_source"]) == (
        a["attempt_id"], "Be brief.", "What is 1+2?", "model_step")
    assert [x["role"] for x in json.loads(m["input_messages_json"])] == ["system", "user"]
    assert chat["span_id"] in m["messages_note"]


def test_pydantic_ai_alone_is_one_legacy_attempt_with_its_messages(tmp_path: Path) -> None:
    """Without otel-inputs the framework's own agent-run span is the attempt; its chat and tool
    spans are its steps and its messages come from pydantic_ai.all_messages, said so in the note."""
    db = tmp_path / "p.duckdb"
    tp = _provider(SimpleSpanProcessor(DuckDBSpanExporter(db)))
    _pydantic_run(tp, None, with_tool=False)
    tp.shutdown()
    (a,) = query_dicts(db, "SELECT * FROM agent_attempts")
    assert (a["span_name"], a["source_format"], a["input_coverage"]) == ("invoke_agent agent", "gen_ai", "not_recorded")
    assert [r[0] for r in query(db, "SELECT step_kind FROM agent_attempt_steps ORDER BY seq")] == ["model_call"]
    (m,) = query_dicts(db, "SELECT * FROM agent_attempt_messages")
    assert (m["user_prompt"], m["system_prompt"], m["messages_source"]) == ("What is 1+2?", "Be brief.", "attempt_span")
    assert n.PYDANTIC_AI_ALL_MESSAGES in m["messages_note"]


def _canonical(tmp_path: Path, records: list[SpanRecord]) -> tuple[list[Any], list[Any], list[Any]]:
    db = tmp_path / "all-at-once.duckdb"
    _land(db, [records])
    return _state(db)


@pytest.mark.parametrize("order", ["export", "reversed", "one_by_one", "parents_first", "shuffled", "split"])
def test_every_arrival_order_lands_the_same_attempt_and_steps(tmp_path: Path, order: str) -> None:
    """Children before parents, parents first, one span per batch, shuffled or split batches: the
    attempt, its steps, their order and the messages are those of landing everything at once."""
    records = _recorded_run()
    expected = _canonical(tmp_path, records)
    assert len(expected[0]) == 1 and len(expected[1]) == 4 and expected[2][0][4] == "model_step"
    by_start = sorted(records, key=lambda r: r.start_ns)
    rng = random.Random(7)
    batches: list[list[SpanRecord]] = {
        "export": [records],
        "reversed": [[r] for r in reversed(records)],
        "one_by_one": [[r] for r in records],
        "parents_first": [[r] for r in by_start],
        "shuffled": [[r] for r in rng.sample(records, len(records))],
        "split": [records[:2], records[2:3], records[3:]],
    }[order]
    db = tmp_path / "t.duckdb"
    _land(db, batches)
    assert _state(db) == expected


def test_random_orders_and_relanding_converge(tmp_path: Path) -> None:
    """Ten random orders with random batch splits, then every span landed again: always the one
    canonical result, and re-landing changes nothing (idempotent)."""
    records = _recorded_run()
    expected = _canonical(tmp_path, records)
    rng = random.Random(11)
    for trial in range(10):
        shuffled = rng.sample(records, len(records))
        cuts = sorted(rng.sample(range(1, len(shuffled)), rng.randint(0, len(shuffled) - 1)))
        batches = [shuffled[i:j] for i, j in zip([0, *cuts], [*cuts, len(shuffled)])]
        db = tmp_path / f"r{trial}.duckdb"
        _land(db, batches)
        assert _state(db) == expected, (trial, [[r.name for r in b] for b in batches])
        _land(db, [rng.sample(records, len(records))])
        assert _state(db) == expected


def test_steps_across_ordinary_spans_and_a_late_link(tmp_path: Path) -> None:
    """A chat span two ordinary spans below the attempt is its step, also when the ordinary span
    linking them arrives last (until then the chat span is a legacy attempt of its own)."""
    memory = InMemorySpanExporter()
    tp = _provider(SimpleSpanProcessor(memory))
    tracer = tp.get_tracer("app")
    observer = AgentObserver(tracer_provider=tp)
    with observer.attempt(run_id="run-x", request=None):
        with tracer.start_as_current_span("plan"):
            with tracer.start_as_current_span("http call"):
                with tracer.start_as_current_span("chat gpt-x", kind=trace.SpanKind.CLIENT,
                                                  attributes={n.GEN_AI_OPERATION_NAME: "chat"}):  # fmt: skip
                    pass
    tp.shutdown()
    records = {r.name: from_readable(r) for r in memory.get_finished_spans()}
    chat, http, plan, attempt = (records[k] for k in ("chat gpt-x", "http call", "plan", "invoke_agent"))
    db = tmp_path / "t.duckdb"
    _land(db, [[chat], [attempt], [plan]])
    assert sorted(r[0] for r in query(db, "SELECT source_format FROM agent_attempts")) == ["gen_ai", "otel_inputs"]
    _land(db, [[http]])
    assert [r[0] for r in query(db, "SELECT source_format FROM agent_attempts")] == ["otel_inputs"]
    assert query(db, "SELECT span_id, seq, step_kind FROM agent_attempt_steps") == [(chat.span_id, 0, "model_call")]


def test_a_lost_ancestor_leaves_its_descendants_a_legacy_attempt(tmp_path: Path) -> None:
    """When the agent-run span never arrives, its chat span stays a legacy attempt: nothing invented."""
    records = [r for r in _recorded_run(with_tool=False) if not r.name.startswith("invoke_agent")]
    db = tmp_path / "t.duckdb"
    _land(db, [records])
    assert query(db, "SELECT span_name, input_coverage FROM agent_attempts") == [("chat test", "not_recorded")]
    assert query(db, "SELECT count(*) FROM agent_attempt_steps") == [(0,)]


def test_packet_attempt_inside_a_framework_agent_stays_an_attempt(tmp_path: Path) -> None:
    """An observer.attempt nested inside a framework's agent span is an attempt of its own (a packet
    is never hidden as a step), and the GenAI spans below it are its steps, not the outer one's."""
    memory = InMemorySpanExporter()
    tp = _provider(SimpleSpanProcessor(memory))
    tracer = tp.get_tracer("framework")
    observer = AgentObserver(tracer_provider=tp)
    with tracer.start_as_current_span("invoke_agent outer", attributes={n.GEN_AI_OPERATION_NAME: "invoke_agent"}):
        with tracer.start_as_current_span("chat first", attributes={n.GEN_AI_OPERATION_NAME: "chat"}):
            pass
        with observer.attempt(run_id="run-n", request=None, attempt_id="inner"):
            with tracer.start_as_current_span("chat inner", attributes={n.GEN_AI_OPERATION_NAME: "chat"}):
                pass
    tp.shutdown()
    records = [from_readable(s) for s in memory.get_finished_spans()]
    db = tmp_path / "t.duckdb"
    _land(db, [[r] for r in reversed(records)])
    outer = next(r for r in records if r.name == "invoke_agent outer")
    assert sorted(r[0] for r in query(db, "SELECT attempt_id FROM agent_attempts")) == sorted(["inner", outer.span_id])
    got = query(db, "SELECT attempt_id, span_name FROM agent_attempt_steps ORDER BY attempt_id")
    assert got == sorted([("inner", "chat inner"), (outer.span_id, "chat first")])


def test_delete_run_removes_the_runs_steps(tmp_path: Path) -> None:
    """`otel-inputs store delete-run --db` removes the run's step rows with its attempts."""
    from click.testing import CliRunner

    from otel_inputs.exporter.cli import main

    from otel_inputs import ArtifactStore

    ArtifactStore(tmp_path / "s")  # an empty store: the run has no snapshots, only rows
    db = tmp_path / "t.duckdb"
    _land(db, [_recorded_run()])
    assert query(db, "SELECT count(*) FROM agent_attempt_steps") == [(4,)]
    result = CliRunner().invoke(main, ["store", "delete-run", "run-p", "--db", str(db), "--store", str(tmp_path / "s")])
    assert result.exit_code == 0, result.output
    assert query(db, "SELECT count(*) FROM agent_attempt_steps") == [(0,)]
    assert query(db, "SELECT count(*) FROM agent_attempts") == [(0,)]


def _random_trace(rng: random.Random, tracer: Any, depth: int = 0, counter: list[int] | None = None) -> None:
    """A random span tree: packet attempts, GenAI spans of each kind and ordinary spans, nested."""
    counter = counter if counter is not None else [0]
    for _ in range(rng.randint(1, 3) if depth < 4 else 0):
        counter[0] += 1
        kind = rng.choice(["packet", "invoke_agent", "chat", "execute_tool", "plain", "plain"])
        attrs: dict[str, Any] = {"test.kind": kind}
        if kind == "packet":
            attrs.update({n.GEN_AI_OPERATION_NAME: n.OPERATION_INVOKE_AGENT, n.PACKET_VERSION_ATTR: 1,
                          n.PACKET_COVERAGE: "complete", n.ATTEMPT_ID: f"att-{counter[0]}", n.RUN_ID: "run-r"})  # fmt: skip
        elif kind != "plain":
            attrs[n.GEN_AI_OPERATION_NAME] = kind
        with tracer.start_as_current_span(f"{kind} {counter[0]}", attributes=attrs):
            _random_trace(rng, tracer, depth + 1, counter)


def _oracle(records: list[SpanRecord]) -> tuple[list[str], list[tuple[str, str, int]]]:
    """The attempt/step rule applied directly to a complete set of spans (docs/encodings.md)."""
    by_id = {r.span_id: r for r in records}
    genai = {r.span_id for r in records if r.attributes.get("test.kind") != "plain"}

    def packet(s: str) -> bool:
        return by_id[s].attributes["test.kind"] == "packet"

    def attempt_id(s: str) -> str:
        return str(by_id[s].attributes.get(n.ATTEMPT_ID, s))

    def genai_ancestors(s: str) -> list[str]:
        out, p = [], by_id[s].parent_span_id
        while p in by_id:
            if p in genai:
                out.append(p)
            p = by_id[p].parent_span_id
        return out

    attempts, owned = [], {}
    for s in genai:
        ancestors = genai_ancestors(s)
        if packet(s) or not ancestors:
            attempts.append(attempt_id(s))
            continue
        owner = next((a for a in ancestors if packet(a)), ancestors[-1])
        owned.setdefault(attempt_id(owner), []).append(s)
    steps = [(a, s, seq) for a, members in owned.items()
             for seq, s in enumerate(sorted(members, key=lambda x: (by_id[x].start_ns, x)))]  # fmt: skip
    return sorted(attempts), sorted(steps)


@pytest.mark.parametrize("seed", range(6))
def test_random_span_trees_in_random_order_follow_the_rule(tmp_path: Path, seed: int) -> None:
    """Random trees of packets, GenAI and ordinary spans, some ordinary spans lost, landed in random
    order and batches, then partly re-landed: the attempts and ordered steps are always those the
    rule gives for the landed spans."""
    rng = random.Random(seed)
    memory = InMemorySpanExporter()
    tp = _provider(SimpleSpanProcessor(memory))
    tracer = tp.get_tracer("random")
    counter = [0]  # one numbering across the traces: attempt ids are unique
    for _ in range(3):  # three traces
        with tracer.start_as_current_span("root", attributes={"test.kind": "plain"}):
            _random_trace(rng, tracer, counter=counter)
    tp.shutdown()
    records = [from_readable(s) for s in memory.get_finished_spans()]
    lost = {r.span_id for r in records if r.attributes.get("test.kind") == "plain" and rng.random() < 0.15}
    landed = [r for r in records if r.span_id not in lost]
    expected = _oracle(landed)
    shuffled = rng.sample(landed, len(landed))
    cuts = sorted(rng.sample(range(1, len(shuffled)), min(len(shuffled) - 1, rng.randint(0, 8))))
    db = tmp_path / "t.duckdb"
    _land(db, [shuffled[i:j] for i, j in zip([0, *cuts], [*cuts, len(shuffled)])])
    for round_ in range(2):  # then a Collector retry re-lands a random part: nothing changes
        got_attempts = sorted(r[0] for r in query(db, "SELECT attempt_id FROM agent_attempts"))
        got_steps = sorted(query(db, "SELECT attempt_id, span_id, seq FROM agent_attempt_steps"))
        assert (got_attempts, got_steps) == expected, round_
        _land(db, [rng.sample(landed, len(landed) // 2)])
