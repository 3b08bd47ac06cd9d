"""Shared helpers for the exporter tests: real SDK spans in the shape docs/wire.md gives, real DuckDB files.

A uniquely named module (not conftest) so `import` cannot pick up another suite's helpers.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanLimits, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_inputs.exporter._db import read_connection
from otel_inputs import names as n


def packet_attributes(i: int = 0, *, items: int = 3, **overrides: Any) -> dict[str, Any]:
    """Span attributes of an otel_inputs attempt, per docs/wire.md."""
    attrs: dict[str, Any] = {
        n.GEN_AI_OPERATION_NAME: n.OPERATION_INVOKE_AGENT,
        n.GEN_AI_PROVIDER_NAME: "anthropic",
        n.GEN_AI_REQUEST_MODEL: "claude-sonnet-4-5",
        n.GEN_AI_AGENT_NAME: "developer",
        n.GEN_AI_CONVERSATION_ID: f"conv-{i // 4}",
        n.GEN_AI_SYSTEM_INSTRUCTIONS: json.dumps([{"type": "text", "content": "You are careful."}]),
        n.GEN_AI_INPUT_MESSAGES: json.dumps(
            [{"role": "user", "parts": [{"type": "text", "content": f"Fix test {i}."}]}]
        ),
        n.RUN_ID: "run-1",
        n.ATTEMPT_ID: f"att-{i}",
        n.PHASE: "implement",
        n.SEND_KIND: "initial",
        n.TURN_INDEX: i + 1,
        n.TASK_PROMPT: f"Fix the failing test {i}.",
        n.TASK_SOURCE_KIND: "inline_text",
        n.TASK_SIZE_BYTES: 21,
        n.TASK_SHA256: "ab" * 32,
        n.PACKET_VERSION_ATTR: n.PACKET_VERSION,
        n.PACKET_COVERAGE: "complete",
        n.PACKET_DECLARED_COUNT: items,
        n.PACKET_CAPTURED_COUNT: items,
        n.PACKET_OMITTED_COUNT: 0,
        n.PACKET_ITEM_COUNT: items,
        n.CAPTURE_DECISION: "admitted",
    }
    if i > 0:
        attrs[n.PREVIOUS_TURN_ATTEMPT_ID] = f"att-{i - 1}"
    attrs.update(overrides)
    return {k: v for k, v in attrs.items() if v is not None}


def input_event(i: int, seq: int, **overrides: Any) -> dict[str, Any]:
    attrs: dict[str, Any] = {
        n.INPUT_ID: f"in-{i}-{seq}",
        n.INPUT_SEQ: seq,
        n.INPUT_LABEL: f"src/file_{seq}.py",
        n.INPUT_SOURCE_KIND: "explicit_attachment",
        n.INPUT_DELIVERY_MODE: "path_reference",
        n.INPUT_SOURCE_PATH: f"/workspace/src/file_{seq}.py",
        n.INPUT_SNAPSHOT_REF: "sha256:" + f"{seq:02d}" * 32,
        n.INPUT_MEDIA_TYPE: "text/x-python",
        n.INPUT_PREVIEW_KIND: "text",
        n.INPUT_SIZE_BYTES: 100 + seq,
        n.INPUT_SHA256: f"{seq:02d}" * 32,
        n.INPUT_CAPTURE_STATUS: "captured",
        n.INPUT_ARTIFACT_STATUS: "available",
    }
    attrs.update(overrides)
    return {k: v for k, v in attrs.items() if v is not None}


class SpanFactory:
    """Records spans with the real SDK and returns the finished ReadableSpans."""

    def __init__(self, *, max_events: int | None = None, service: str = "agent-svc") -> None:
        self.memory = InMemorySpanExporter()
        limits = SpanLimits(max_events=max_events) if max_events is not None else SpanLimits()
        self.provider = TracerProvider(resource=Resource.create({"service.name": service}), span_limits=limits)
        self.provider.add_span_processor(SimpleSpanProcessor(self.memory))
        self.tracer = self.provider.get_tracer("tests.exporter", "1.2.3")

    def span(
        self,
        attributes: Mapping[str, Any],
        events: list[tuple[str, Mapping[str, Any]]] = (),  # type: ignore[assignment]
        *,
        name: str = "invoke_agent developer",
        links: list[Any] = (),  # type: ignore[assignment]
    ) -> ReadableSpan:
        self.memory.clear()
        span = self.tracer.start_span(name, attributes=dict(attributes), links=list(links))
        for ev_name, ev_attrs in events:
            span.add_event(ev_name, dict(ev_attrs))
        span.end()
        (finished,) = self.memory.get_finished_spans()
        return finished

    def attempt(self, i: int = 0, *, items: int = 3, **overrides: Any) -> ReadableSpan:
        return self.span(
            packet_attributes(i, items=items, **overrides),
            [(n.INPUT_EVENT, input_event(i, s)) for s in range(items)],
        )


def memory_providers() -> tuple[TracerProvider, InMemorySpanExporter, LoggerProvider, InMemoryLogRecordExporter]:
    """A tracer and a logger provider of service agent-svc, each recording into memory."""
    resource = Resource.create({"service.name": "agent-svc"})
    memory, logs = InMemorySpanExporter(), InMemoryLogRecordExporter()
    tp = TracerProvider(resource=resource)
    tp.add_span_processor(SimpleSpanProcessor(memory))
    lp = LoggerProvider(resource=resource)
    lp.add_log_record_processor(SimpleLogRecordProcessor(logs))
    return tp, memory, lp, logs


def query(db: Path, sql: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]:
    """Read the way the viewer does: shared sidecar lock, short read-only connection."""
    with read_connection(db) as con:
        return con.execute(sql, params or []).fetchall()


def query_dicts(db: Path, sql: str, params: list[Any] | None = None) -> list[dict[str, Any]]:
    with read_connection(db) as con:
        cur = con.execute(sql, params or [])
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, row)) for row in cur.fetchall()]
