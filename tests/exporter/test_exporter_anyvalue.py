"""Every attribute the projection reads, with every OTLP AnyValue type: the raw span always lands.

A legal OTLP value of an unexpected type (an array where a string is usual, a map, bytes, no value
at all) may leave an attempt's projected columns empty, but it must never cost the span its
``otel_traces`` row after the sender was told 200 (docs/ingest.md, "What a 200 means").
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from exporter_helpers import query
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hs
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span
from sink_client import post

from otel_inputs import names as n
from otel_inputs.exporter import OTLPSink
from otel_inputs.exporter._otlp import record_of
from otel_inputs.exporter._writer import DuckDBWriter

pytestmark = pytest.mark.timeout(300)


def _flattened() -> set[str]:
    return {f"{n.OPENLLMETRY_PROMPT_PREFIX}.0.role", f"{n.OPENLLMETRY_PROMPT_PREFIX}.0.content",
            f"{n.OPENLLMETRY_COMPLETION_PREFIX}.0.role", f"{n.OPENLLMETRY_COMPLETION_PREFIX}.0.content",
            f"{n.OPENINFERENCE_INPUT_MESSAGES}.0.{n.OPENINFERENCE_MESSAGE_ROLE}",
            f"{n.OPENINFERENCE_INPUT_MESSAGES}.0.{n.OPENINFERENCE_MESSAGE_CONTENT}"}  # fmt: skip


# Every name the registry holds (a superset of what the projection reads), the flattened message
# keys, and the resource and log keys it looks at.
READ_KEYS = sorted({v for k, v in vars(n).items() if isinstance(v, str) and not k.startswith("ENV_")}
                   | _flattened() | {"service.name", "event.name"})  # fmt: skip


def _any(kind: str) -> AnyValue:
    v = AnyValue()
    if kind == "string":
        v.string_value = "chat"
    elif kind == "empty_string":
        v.string_value = ""
    elif kind == "bool":
        v.bool_value = True
    elif kind == "int":
        v.int_value = -(2**63)
    elif kind == "double":
        v.double_value = float("nan")
    elif kind == "array":
        v.array_value.values.add().string_value = "chat"
        v.array_value.values.add().int_value = 1
    elif kind == "kvlist":
        kv = v.kvlist_value.values.add()
        kv.key, kv.value.string_value = "role", "user"
    elif kind == "bytes":
        v.bytes_value = b"\x00\xffchat"
    elif kind == "nested":
        inner = v.array_value.values.add()
        kv = inner.kvlist_value.values.add()
        kv.key = "parts"
        kv.value.array_value.values.add().bytes_value = b"\x01"
    # "none": an AnyValue with no value set (OTLP's "no value")
    return v


VALUE_KINDS = ("string", "empty_string", "bool", "int", "double", "array", "kvlist", "bytes", "nested", "none")

# The attributes that make a span an attempt (or a step) in each source format the projection knows.
BASES: dict[str, dict[str, Any]] = {
    "otel_inputs": {n.PACKET_VERSION_ATTR: 1, n.GEN_AI_OPERATION_NAME: n.OPERATION_INVOKE_AGENT,
                    n.ATTEMPT_ID: "att", n.PACKET_ITEM_COUNT: 1, n.PACKET_COVERAGE: "complete"},
    "gen_ai": {n.GEN_AI_OPERATION_NAME: "chat"},
    "openinference": {n.OPENINFERENCE_SPAN_KIND: "LLM"},
    "openllmetry": {n.OPENLLMETRY_REQUEST_TYPE: "chat", n.GEN_AI_SYSTEM: "openai"},
}


def _kv(key: str, value: Any) -> KeyValue:
    kv = KeyValue(key=key)
    if isinstance(value, AnyValue):
        kv.value.CopyFrom(value)
    elif isinstance(value, bool):
        kv.value.bool_value = value
    elif isinstance(value, int):
        kv.value.int_value = value
    else:
        kv.value.string_value = value
    return kv


def _attrs(base: dict[str, Any], key: str, value: AnyValue) -> list[KeyValue]:
    return [_kv(k, v) for k, v in base.items() if k != key] + [_kv(key, value)]


class _Ids:
    def __init__(self) -> None:
        self._next = itertools.count(1)

    def __call__(self, size: int) -> bytes:
        return next(self._next).to_bytes(size, "big")


def _span(ids: Callable[[int], bytes], trace_id: bytes, base: dict[str, Any], key: str, value: AnyValue) -> Span:
    """One span of source format ``base`` whose attribute ``key`` (and that of each event the projection
    reads) holds ``value``."""
    sp = Span(trace_id=trace_id, span_id=ids(8), name=f"{key} {value.WhichOneof('value')}",
              start_time_unix_nano=1_764_460_800_000_000_000, end_time_unix_nano=1_764_460_801_000_000_000)
    sp.attributes.extend(_attrs(base, key, value))
    input_base = {n.INPUT_ID: "in-0", n.INPUT_SEQ: 0, n.INPUT_LABEL: "a.py", n.INPUT_SIZE_BYTES: 3}
    for name, event_base in ((n.INPUT_EVENT, input_base), (n.EXCHANGE_PART_EVENT, {n.PART_NAME: "logical_request"}),
                             (n.EVENT_INFERENCE_DETAILS, {}), (n.EVENT_CONTENT_PROMPT, {})):  # fmt: skip
        ev = sp.events.add(name=name, time_unix_nano=sp.start_time_unix_nano + 1)
        ev.attributes.extend(_attrs(event_base, key, value))
    return sp


def _product_request() -> tuple[ExportTraceServiceRequest, set[tuple[str, str]]]:
    """One request: per (key, value type) a resource carrying it too, with one span per source format."""
    req = ExportTraceServiceRequest()
    ids = _Ids()
    keys: set[tuple[str, str]] = set()
    for key, kind in itertools.product(READ_KEYS, VALUE_KINDS):
        value = _any(kind)
        rs = req.resource_spans.add()
        rs.resource.attributes.append(_kv(key, value))
        ss = rs.scope_spans.add()
        trace_id = ids(16)
        parent = None
        for base in BASES.values():
            sp = _span(ids, trace_id, base, key, value)
            if parent is not None:
                sp.parent_span_id = parent  # nested: the gen_ai span is a step of the packet attempt, and so on
            parent = sp.span_id
            ss.spans.append(sp)
            keys.add((trace_id.hex(), sp.span_id.hex()))
    return req, keys


def _health(db: Path) -> dict[str, int]:
    return {m: int(v) for m, v in query(db, "SELECT metric, sum(value) FROM exporter_health GROUP BY metric")}


def _land(db: Path, req: ExportTraceServiceRequest, timeout: float = 30.0) -> bytes:
    """Send ``req`` to a receiver on ``db`` over OTLP/HTTP and wait until it landed; the response body."""
    sink = OTLPSink(db, port=0).start()
    try:
        status, _, body = post(sink.endpoint, req.SerializeToString(), timeout=timeout)
        assert status == 200, body
        assert sink.flush(2 * timeout)
    finally:
        sink.stop()
    return body


def test_every_read_attribute_with_every_anyvalue_type_lands_raw_over_otlp(db_path: Path) -> None:
    """Each key the projection reads, as each AnyValue type, on each attempt format: 200 and every span in otel_traces."""
    req, keys = _product_request()
    body = _land(db_path, req, timeout=120)
    assert not ExportTraceServiceResponse.FromString(body).HasField("partial_success")
    stored = set(query(db_path, 'SELECT "TraceId", "SpanId" FROM otel_traces'))
    assert not keys - stored, f"{len(keys - stored)} of {len(keys)} acknowledged spans are not in otel_traces"
    health = _health(db_path)
    assert health.get("spans_dropped", 0) == 0 and health.get("spans_unconvertible", 0) == 0
    assert health.get("spans_unmapped", 0) == 0, "the projection failed on a legal value (see the log)"


def test_array_operation_name_keeps_the_span_and_its_attempt(db_path: Path) -> None:
    """The reported case: gen_ai.operation.name as an array is stored raw and still an attempt, its operation unknown."""
    req = ExportTraceServiceRequest()
    sp = req.resource_spans.add().scope_spans.add().spans.add(
        trace_id=b"\x01" * 16, span_id=b"\x02" * 8, name="chat", start_time_unix_nano=1, end_time_unix_nano=2)
    sp.attributes.append(_kv(n.GEN_AI_OPERATION_NAME, _any("array")))
    _land(db_path, req)
    assert query(db_path, 'SELECT "SpanAttributes"[?] FROM otel_traces', [n.GEN_AI_OPERATION_NAME]) == [('["chat",1]',)]
    assert query(db_path, "SELECT attempt_id, operation_name, step_kind FROM agent_attempts") == [
        ("0202020202020202", None, "other")]


def test_in_process_exporter_keeps_sequence_valued_attributes(db_path: Path) -> None:
    """SDK spans whose read attributes are sequences (the only non-scalar the SDK allows) all land in otel_traces."""
    from exporter_helpers import SpanFactory
    from opentelemetry.sdk.trace.export import SpanExportResult

    from otel_inputs.exporter import DuckDBSpanExporter

    factory = SpanFactory()
    finished = []
    for key in READ_KEYS:
        for base in BASES.values():
            attrs = {k: v for k, v in base.items() if k != key}
            attrs[key] = ["chat", "x"]
            finished.append(factory.span(attrs, [(n.INPUT_EVENT, {n.INPUT_ID: "in", key: ("a", "b")})], name=key))
    factory.provider.shutdown()
    exporter = DuckDBSpanExporter(db_path)
    assert exporter.export(finished) is SpanExportResult.SUCCESS
    exporter.shutdown()
    assert query(db_path, "SELECT count(*) FROM otel_traces") == [(len(finished),)]
    assert _health(db_path).get("spans_dropped", 0) == 0


# --- any value, nested anyhow --------------------------------------------------------------------------

_scalars = hs.one_of(
    hs.text(max_size=8).map(lambda s: ("string_value", s)),
    hs.booleans().map(lambda b: ("bool_value", b)),
    hs.integers(-(2**63), 2**63 - 1).map(lambda i: ("int_value", i)),
    hs.floats(allow_nan=True, allow_infinity=True).map(lambda f: ("double_value", f)),
    hs.binary(max_size=8).map(lambda b: ("bytes_value", b)),
    hs.just(("none", None)),
)
_values = hs.recursive(
    _scalars,
    lambda inner: hs.one_of(hs.lists(inner, max_size=3).map(lambda xs: ("array_value", xs)),
                            hs.dictionaries(hs.sampled_from(["role", "content", "parts", "type", "text"]), inner,
                                            max_size=3).map(lambda d: ("kvlist_value", d))),  # fmt: skip
    max_leaves=8,
)


def _build(spec: tuple[str, Any]) -> AnyValue:
    which, raw = spec
    v = AnyValue()
    if which == "array_value":
        for x in raw:
            v.array_value.values.append(_build(x))
    elif which == "kvlist_value":
        for k, x in raw.items():
            v.kvlist_value.values.add(key=k).value.CopyFrom(_build(x))
    elif which != "none":
        setattr(v, which, raw)
    return v


def _gen_spans(data: hs.DataObject) -> Iterator[Span]:
    ids = _Ids()
    base = BASES[data.draw(hs.sampled_from(sorted(BASES)))]
    keys = data.draw(hs.lists(hs.sampled_from(READ_KEYS), min_size=1, max_size=6, unique=True))
    for key in keys:
        yield _span(ids, b"\x07" * 16, base, key, _build(data.draw(_values)))


@given(hs.data())
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_any_nested_value_on_read_keys_never_costs_the_raw_row(tmp_path: Path, data: hs.DataObject) -> None:
    """Random nested AnyValues on random read keys: the writer's conversion keeps every span's otel_traces row."""
    spans = list(_gen_spans(data))
    writer = DuckDBWriter(tmp_path / "never-opened.duckdb")
    tables = writer.build([record_of({}, "scope", "", sp) for sp in spans])
    assert tables.traces is not None and tables.traces.num_rows == len(spans)
    assert tables.unmapped == 0, "the projection failed on a legal value (see the log)"


def test_a_failing_projection_still_lands_the_raw_span_counted_as_unmapped(
        db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """A projection defect (injected: derivation raises for one span) costs that span its attempt row only: it is in otel_traces, counted spans_unmapped."""
    import otel_inputs.exporter._arrow as arrow_module
    import otel_inputs.exporter._convert as convert_module

    real_derive = arrow_module.derive

    def broken(span: Any) -> Any:
        if span.name == "defect":
            raise RuntimeError("projection defect")
        return real_derive(span)

    monkeypatch.setattr(arrow_module, "derive", broken)
    monkeypatch.setattr(convert_module, "build_chunk", lambda chunk: (_ for _ in ()).throw(RuntimeError("fast path off")))
    req = ExportTraceServiceRequest()
    ss = req.resource_spans.add().scope_spans.add()
    for i, name in enumerate(("ok", "defect", "ok2")):
        sp = ss.spans.add(trace_id=b"\x03" * 16, span_id=bytes([0] * 7 + [i + 1]), name=name,
                          start_time_unix_nano=1, end_time_unix_nano=2)
        sp.attributes.append(_kv(n.GEN_AI_OPERATION_NAME, "chat"))
    _land(db_path, req)
    assert query(db_path, 'SELECT "SpanName" FROM otel_traces ORDER BY 1') == [("defect",), ("ok",), ("ok2",)]
    assert query(db_path, "SELECT span_name FROM agent_attempts ORDER BY 1") == [("ok",), ("ok2",)]
    health = _health(db_path)
    assert health["spans_unmapped"] == 1 and health.get("spans_dropped", 0) == 0


def test_unmapped_spans_are_named_in_the_viewer_health_summary() -> None:
    """The viewer's exporter-health summary says how many spans were stored raw without their projection."""
    from otel_inputs.viewer._health import HealthState, health_model
    from otel_inputs.viewer._records import HealthRow

    model = health_model([HealthRow("collect", "spans_written", 10, None), HealthRow("collect", "spans_unmapped", 2, None)])
    assert model.state is HealthState.OK
    assert "2 span(s) stored raw without their attempt projection" in model.summary
    assert any(d["counter"] == "spans stored raw, without their attempt projection" for d in model.details)
