"""The sink's fused OTLP → Arrow path lands exactly the rows of the reference conversion."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from exporter_helpers import SpanFactory, input_event, packet_attributes, query
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status
from sink_client import post, proto_request

from otel_inputs.exporter import OTLPSink, SinkConfig
from otel_inputs.exporter._arrow import BatchTables, build_batch
from otel_inputs.exporter._columns import Fallback, build_chunk
from otel_inputs.exporter._otlp import check_request, iter_valid, record_of
from otel_inputs.exporter._spans import SERVICE_NAME_KEY
from otel_inputs.exporter._tables import TABLES
from otel_inputs.exporter._writer import DuckDBWriter
from otel_inputs import names as n

_SPEC = {t.name: t for t in TABLES}
_ODD_EXTRA_KEY = "test.odd"  # a non-wire attribute key used to carry odd value types


def _any(value: Any) -> AnyValue:
    v = AnyValue()
    if value is None:
        return v  # an empty AnyValue: OTLP's "no value"
    if isinstance(value, bool):
        v.bool_value = value
    elif isinstance(value, int):
        v.int_value = value
    elif isinstance(value, float):
        v.double_value = value
    elif isinstance(value, bytes):
        v.bytes_value = value
    elif isinstance(value, str):
        v.string_value = value
    elif isinstance(value, list):
        v.array_value.values.extend(_any(x) for x in value)
    elif isinstance(value, dict):
        v.kvlist_value.values.extend(KeyValue(key=k, value=_any(x)) for k, x in value.items())
    return v


def _kvs(attrs: list[tuple[str, Any]] | dict[str, Any]) -> list[KeyValue]:
    pairs = attrs.items() if isinstance(attrs, dict) else attrs
    return [KeyValue(key=k, value=_any(v)) for k, v in pairs]


def _span(i: int, attrs: Any, events: list[tuple[str, Any]] = (), **fields: Any) -> Span:  # type: ignore[assignment]
    sp = Span(trace_id=bytes([1 + i % 200]) * 16, span_id=(i + 1).to_bytes(8, "big"), name=f"span {i}",
              start_time_unix_nano=1_700_000_000_000_000_000 + i, end_time_unix_nano=1_700_000_000_500_000_000 + i,
              kind=fields.pop("kind", Span.SPAN_KIND_INTERNAL))  # fmt: skip
    for key, value in fields.items():
        if key == "status":
            sp.status.CopyFrom(value)
        else:
            setattr(sp, key, value)
    sp.attributes.extend(_kvs(attrs))
    for k, (name, ev_attrs) in enumerate(events):
        ev = sp.events.add(name=name, time_unix_nano=1_700_000_000_100_000_000 + k)
        ev.attributes.extend(_kvs(ev_attrs))
    return sp


def _packet(i: int, events: list[dict[str, Any]], **overrides: Any) -> tuple[dict[str, Any], list[tuple[str, Any]]]:
    return packet_attributes(i, items=len(events), **overrides), [(n.INPUT_EVENT, e) for e in events]


def _corpus() -> ExportTraceServiceRequest:
    """Spans covering odd attribute types, arrays, missing fields and malformed events."""
    # Events with every field present (the common shape on the wire) and with detail absent.
    good = [input_event(0, 0), input_event(0, 1, **{n.INPUT_DETAIL: ""}), input_event(0, 2, **{n.INPUT_DETAIL: "note"})]
    spans: list[Span] = []
    spans.append(_span(0, *_packet(0, good)))
    spans.append(_span(1, *_packet(1, [input_event(1, 0, **{n.INPUT_ID: None}), input_event(1, 1)])))
    spans.append(_span(2, *_packet(2, [input_event(2, 0, **{n.INPUT_SEQ: "0"}), input_event(2, 1, **{n.INPUT_SEQ: -1})])))
    spans.append(_span(3, *_packet(3, [input_event(3, 0), input_event(3, 0, **{n.INPUT_ID: "dup"})])))  # repeated seq
    spans.append(_span(4, *_packet(4, [input_event(4, 0, **{n.INPUT_SEQ: True, n.INPUT_SIZE_BYTES: "12"})])))
    spans.append(_span(5, *_packet(5, [input_event(5, 0, **{n.INPUT_LABEL: 7, n.INPUT_DETAIL: ["a", 1]})])))
    spans.append(_span(6, *_packet(6, [input_event(6, 0, **{n.INPUT_SIZE_BYTES: -5, n.INPUT_SEQ: None})])))
    spans.append(_span(7, *_packet(7, [input_event(7, 0, **{n.INPUT_SEQ: 2**40})])))
    spans.append(_span(8, *_packet(8, good[:1], **{n.PACKET_ITEM_COUNT: 5})))  # fewer events than items
    spans.append(_span(9, *_packet(9, good, **{n.PACKET_COVERAGE: "bogus"}), dropped_events_count=2))
    spans.append(_span(10, *_packet(10, [], **{n.ATTEMPT_ID: ""})))  # '' id falls back to the span id
    odd = [(_ODD_EXTRA_KEY, v) for v in (1.5, float("nan"), math.inf, -math.inf, 1e20, 2.5e-7, b"\x00\xff", None,
                                         [1, "x", True], {"k": [1.0, {"z": None}]}, "", False, -3)]  # fmt: skip
    spans.append(_span(11, [(n.GEN_AI_OPERATION_NAME, "chat"), *odd[:7], (n.GEN_AI_PROMPT, "hi")]))
    spans.append(_span(12, [*odd, ("dup.key", "first"), ("dup.key", 2), ("dup.key", "last")],
                       [("other", dict(odd[:4])), (n.INPUT_EVENT, {n.INPUT_ID: "stray", n.INPUT_SEQ: 0})]))  # fmt: skip
    oi_message = f"{n.OPENINFERENCE_INPUT_MESSAGES}.0."
    spans.append(_span(13, {n.OPENINFERENCE_SPAN_KIND: sorted(n.OPENINFERENCE_LLM_KINDS)[0],
                            oi_message + n.OPENINFERENCE_MESSAGE_ROLE: "user", oi_message + n.OPENINFERENCE_MESSAGE_CONTENT: "oi"},
                       [(n.EXCHANGE_PART_EVENT, {n.PART_NAME: "request", n.PART_SIZE_BYTES: 3}),
                        (n.EXCHANGE_PART_EVENT, {n.PART_CAPTURE: 5})]))  # fmt: skip
    parts_and_inputs = _packet(14, good)
    spans.append(_span(14, parts_and_inputs[0], [*parts_and_inputs[1], (n.EXCHANGE_PART_EVENT, {n.PART_NAME: "out"}),
                                                 (n.INPUT_EVENT, {**good[0], n.INPUT_SEQ: 9, n.INPUT_LABEL: None})]))
    spans.append(_span(15, {}, [("", {})], kind=99, status=Status(code=2, message="boom"), trace_state="a=b",
                       parent_span_id=b"\x05" * 8, dropped_attributes_count=3))  # fmt: skip
    spans.append(_span(16, {}, [], status=Status(code=7), end_time_unix_nano=1))  # negative duration → 0
    linked = _span(17, *_packet(17, good))
    lk = linked.links.add(trace_id=b"\x09" * 16, span_id=b"\x08" * 8, trace_state="x=y")
    lk.attributes.extend(_kvs({"link.attr": 3, "link.s": "v"}))
    spans.append(linked)
    spans.append(_span(18, {}, [], trace_id=b"\x00" * 16))  # rejected: all-zero trace id

    req = ExportTraceServiceRequest()
    rs = req.resource_spans.add()
    rs.resource.attributes.extend(_kvs({SERVICE_NAME_KEY: "svc-a", "host.cpu": 2, "tags": ["a", "b"]}))
    first = rs.scope_spans.add()
    first.scope.name, first.scope.version = "scope-a", "1.0"
    first.spans.extend(spans[:10])
    second = rs.scope_spans.add()
    second.spans.extend(spans[10:15])
    other = req.resource_spans.add()  # no service.name: ServiceName '' and NULL service_name
    other.resource.attributes.extend(_kvs({SERVICE_NAME_KEY: 5}))
    other.scope_spans.add().spans.extend(spans[15:])
    return req


def _reference(valid: list[Any]) -> BatchTables:
    return build_batch([record_of(*v) for v in valid])


def _assert_same(fast: BatchTables, ref: BatchTables) -> None:
    assert [name for name, _ in fast.items()] == [name for name, _ in ref.items()]
    for (name, got), (_, want) in zip(fast.items(), ref.items()):
        assert got.schema.equals(want.schema) and got.schema.equals(_SPEC[name].arrow_schema()), name
        assert got.to_pylist() == want.to_pylist(), name


def test_fused_conversion_matches_the_reference_for_odd_spans() -> None:
    """Odd value types, duplicate keys, malformed and missing fields, parts, links and kinds give identical tables."""
    req = _corpus()
    checked = check_request(req)
    assert checked.rejected == 1 and checked.accepted == 18
    valid = list(iter_valid(req, checked.skip))
    fast, ref = build_chunk(valid), _reference(valid)
    _assert_same(fast, ref)
    assert ref.inputs is not None and ref.parts is not None and ref.inputs.num_rows > 20
    assert any(p is not None for p in ref.inputs.column("row_problem").to_pylist())


def test_fused_conversion_matches_the_reference_for_sdk_spans(spans: SpanFactory) -> None:
    """Spans exactly as the stock OTLP exporter encodes them convert to identical tables, in any chunking."""
    recorded = [spans.attempt(i, items=i % 5) for i in range(12)]
    recorded.append(spans.span({n.GEN_AI_OPERATION_NAME: "chat"}, name="chat"))
    recorded.append(spans.span({"plain": "span"}, [("log", {"k": 1})], name="plain"))
    recorded.extend(_encodings(spans))
    valid = list(iter_valid(proto_request(recorded), set()))
    _assert_same(build_chunk(valid), _reference(valid))
    for size in (1, 5):
        for start in range(0, len(valid), size):
            _assert_same(build_chunk(valid[start : start + size]), _reference(valid[start : start + size]))


def _encodings(spans: SpanFactory) -> list[Any]:
    """Real SDK spans in every encoding the projection reads, nested so parents and names matter."""
    messages = [{"role": "user", "parts": [{"type": "text", "content": "structured <ask>"}]}]
    spans.memory.clear()
    tracer = spans.tracer
    with tracer.start_as_current_span("invoke_agent outer", attributes={
            n.GEN_AI_OPERATION_NAME: "invoke_agent", n.PYDANTIC_AI_ALL_MESSAGES: json.dumps(messages)}):
        with tracer.start_as_current_span("openai.chat", attributes={
                n.GEN_AI_SYSTEM: "openai", n.OPENLLMETRY_REQUEST_TYPE: "chat", "gen_ai.prompt.0.role": "user",
                "gen_ai.prompt.0.content": "indexed", n.GEN_AI_USAGE_PROMPT_TOKENS: 4}):
            pass
        with tracer.start_as_current_span("llm", attributes={
                n.OPENINFERENCE_SPAN_KIND: "LLM", n.OPENINFERENCE_LLM_PROVIDER: "azure",
                "llm.input_messages.0.message.role": "user", "llm.input_messages.0.message.content": "oi",
                n.OPENINFERENCE_PROMPT_TOKENS: 3}):
            pass
        with tracer.start_as_current_span("execute_tool t", attributes={
                n.GEN_AI_OPERATION_NAME: "execute_tool", n.GEN_AI_TOOL_NAME: "t",
                n.GEN_AI_TOOL_CALL_ARGUMENTS: {"x": [1.0, 2.5], "y": "<&>"}, n.GEN_AI_INPUT_MESSAGES: messages}):
            pass
        with tracer.start_as_current_span("chat ev", attributes={n.GEN_AI_OPERATION_NAME: "chat"}) as ev:
            ev.add_event(n.EVENT_CONTENT_PROMPT, {n.GEN_AI_PROMPT: "from an event"})
    return list(spans.memory.get_finished_spans())


@pytest.mark.parametrize("repeat", ["span", "attempt"])
def test_a_repeat_in_the_chunk_takes_the_reference_path(repeat: str) -> None:
    """A span or attempt id that repeats inside one chunk raises Fallback, since only the reference orders repeats."""
    a = _span(0, *_packet(0, [input_event(0, 0)]))
    b = _span(0 if repeat == "span" else 1, *_packet(0, []))
    with pytest.raises(Fallback):
        build_chunk([({}, "", "", a), ({}, "", "", b)])


def test_sink_lands_the_same_rows_as_the_reference_writer(tmp_path: Any) -> None:
    """The corpus posted to the sink and written by the reference path give the same rows in every table."""
    req = _corpus()
    ref_db, sink_db = tmp_path / "ref.duckdb", tmp_path / "sink.duckdb"
    DuckDBWriter(ref_db).write_tables(_reference(list(iter_valid(req, check_request(req).skip))))
    sink = OTLPSink(sink_db, port=0, config=SinkConfig(decode_chunk_spans=4)).start()
    try:
        assert post(sink.endpoint, req.SerializeToString())[0] == 200
    finally:
        sink.stop()
    for table, key in (("otel_traces", '"SpanId"'), ("agent_attempts", "attempt_id"),
                       ("agent_attempt_inputs", "attempt_id, seq"), ("agent_exchange_parts", "attempt_id, part_name"),
                       ("agent_attempt_steps", "attempt_id, seq"), ("agent_attempt_messages", "attempt_id")):  # fmt: skip
        sql = f"SELECT * FROM {table} ORDER BY {key}"
        assert query(sink_db, sql) == query(ref_db, sql), table


def test_sink_settles_steps_like_the_reference_writer(tmp_path: Any, spans: SpanFactory) -> None:
    """Nested spans of every encoding posted to the sink in small chunks land the same attempts,
    steps and messages as the reference writer given them at once."""
    req = proto_request(_encodings(spans))
    ref_db, sink_db = tmp_path / "ref.duckdb", tmp_path / "sink.duckdb"
    DuckDBWriter(ref_db).write_tables(_reference(list(iter_valid(req, check_request(req).skip))))
    sink = OTLPSink(sink_db, port=0, config=SinkConfig(decode_chunk_spans=2)).start()
    try:
        assert post(sink.endpoint, req.SerializeToString())[0] == 200
    finally:
        sink.stop()
    assert len(query(ref_db, "SELECT * FROM agent_attempt_steps")) == 4
    for table, key in (("agent_attempts", "attempt_id"), ("agent_attempt_steps", "attempt_id, seq"),
                       ("agent_attempt_messages", "attempt_id")):  # fmt: skip
        sql = f"SELECT * FROM {table} ORDER BY {key}"
        assert query(sink_db, sql) == query(ref_db, sql), table
