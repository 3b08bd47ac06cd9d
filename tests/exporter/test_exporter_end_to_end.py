"""The issue's "done when": three kinds of producers, one DuckDB file, a polling reader, exact SQL."""

from __future__ import annotations

import json
import multiprocessing
import threading
from pathlib import Path

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from otel_inputs.exporter import DuckDBSpanExporter, OTLPSink, read_connection
from otel_inputs import AgentObserver, CapturePolicy, ProviderAttachment, SendKind, inline_request
from otel_inputs import names as n


def _agent_process(db: str, store: str) -> None:
    # A Python agent using otel_inputs, exporting in-process through DuckDBSpanExporter.
    provider = TracerProvider(resource=Resource.create({"service.name": "py-agent"}))
    provider.add_span_processor(SimpleSpanProcessor(DuckDBSpanExporter(db, store=store)))
    observer = AgentObserver(tracer_provider=provider, store=store, policy=CapturePolicy(message_content=True),
                             agent_name="developer")  # fmt: skip
    request = inline_request("Refactor the parser.")
    with observer.attempt(run_id="run-e2e", request=request, phase="implement", session_id="sess-1",
                          attempt_id="a-1", attachments=[ProviderAttachment("notes.txt", b"hello")],
                          user_message="Refactor the parser."):  # fmt: skip
        pass
    with observer.attempt(run_id="run-e2e", request=request, phase="implement", session_id="sess-1",
                          attempt_id="a-2", send_kind=SendKind.PARSE_RETRY, retry_of_attempt_id="a-1"):  # fmt: skip
        pass
    provider.shutdown()


@pytest.mark.timeout(120)
def test_agent_sink_and_plain_genai_spans_share_one_file_under_a_reader(tmp_path: Path) -> None:
    """otel_inputs spans (in-process), stock-OTLP GenAI spans (via the sink) and a reader share one file exactly."""
    db, store = tmp_path / "all.duckdb", tmp_path / "store"
    sink = OTLPSink(db, port=0, store=store).start()
    errors: list[str] = []
    stop = threading.Event()

    def reader() -> None:
        while not stop.wait(0.1):
            if db.exists():
                try:
                    with read_connection(db) as con:
                        con.execute("SELECT count(*) FROM otel_traces").fetchone()
                except Exception as exc:  # noqa: BLE001 - asserted empty below
                    if "does not exist" not in str(exc):
                        errors.append(str(exc))

    t = threading.Thread(target=reader)
    t.start()
    try:
        proc = multiprocessing.get_context("spawn").Process(target=_agent_process, args=(str(db), str(store)))
        proc.start()
        # A GenAI-instrumented app that knows nothing of otel_inputs, over the stock OTLP exporter.
        provider = TracerProvider(resource=Resource.create({"service.name": "plain-app"}))
        provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=sink.endpoint, timeout=10)))
        messages = json.dumps([{"role": "user", "parts": [{"type": "text", "content": "What is 2+2?"}]}])
        with provider.get_tracer("plain").start_as_current_span(
            "chat gpt-4o", attributes={n.GEN_AI_OPERATION_NAME: "chat", n.GEN_AI_INPUT_MESSAGES: messages}
        ):
            pass
        provider.shutdown()
        proc.join(60)
        assert proc.exitcode == 0
        assert sink.flush(30)
    finally:
        sink.stop()
        stop.set()
        t.join()
    assert errors == []
    with read_connection(db) as con:
        attempts = con.execute(
            "SELECT attempt_id, service_name, task_prompt, send_kind, retry_of_attempt_id, input_coverage, "
            "user_prompt FROM agent_attempts ORDER BY service_name, attempt_id"
        ).fetchall()
        inputs = con.execute(
            "SELECT attempt_id, label, delivery_mode, capture_status FROM agent_attempt_inputs "
            "WHERE attempt_id = 'a-1' ORDER BY seq"
        ).fetchall()
        artifacts = con.execute("SELECT DISTINCT attempt_id FROM agent_artifacts ORDER BY 1").fetchall()
    plain = [a for a in attempts if a[1] == "plain-app"]
    agent = [a for a in attempts if a[1] == "py-agent"]
    assert len(plain) == 1 and plain[0][5] == "not_recorded" and plain[0][6] == "What is 2+2?"
    assert [(a[0], a[2], a[3], a[4]) for a in agent] == [
        ("a-1", "Refactor the parser.", "initial", None),
        ("a-2", "Refactor the parser.", "parse_retry", "a-1"),
    ]
    assert agent[0][5] in ("complete", "partial")
    assert ("a-1", "notes.txt", "provider_attachment", "captured") in inputs
    assert ("a-1",) in artifacts


def test_internal_attempt_lands_its_provider_from_the_otel_inputs_attribute(tmp_path: Path) -> None:
    """An INTERNAL attempt span carries its provider as otel_inputs.provider.name; agent_attempts still shows it."""
    db, store = tmp_path / "p.duckdb", tmp_path / "store"
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(DuckDBSpanExporter(db, store=store)))
    observer = AgentObserver(tracer_provider=provider, store=store, agent_name="coder", provider_name="openai")
    with observer.attempt(run_id="run-p", request=inline_request("task"), attempt_id="a-p"):
        pass
    provider.shutdown()
    with read_connection(db) as con:
        span_attrs = con.execute("SELECT SpanAttributes FROM otel_traces").fetchone()[0]
        row = con.execute("SELECT provider_name FROM agent_attempts WHERE attempt_id = 'a-p'").fetchone()
    assert n.GEN_AI_PROVIDER_NAME not in dict(span_attrs)
    assert row == ("openai",)
