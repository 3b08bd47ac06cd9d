"""Bad input against a live sink: random bytes, mutated protobuf, ill-typed JSON, huge and odd spans."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path

import pytest
from exporter_helpers import SpanFactory, input_event, packet_attributes, query
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from sink_client import post, proto_request, span_json

from otel_inputs.exporter import OTLPSink, SinkConfig
from otel_inputs.exporter._otlp import DecodeError, decode_json, decode_protobuf
from otel_inputs import names as n

pytestmark = pytest.mark.timeout(120)

_FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[OTLPSink, Path]]:
    db = tmp_path_factory.mktemp("fuzz") / "fuzz.duckdb"
    sink = OTLPSink(db, port=0, config=SinkConfig(max_body_bytes=32 * 1024 * 1024)).start()
    yield sink, db
    sink.stop()


def _valid_body(i: int) -> bytes:
    factory = SpanFactory()
    body = proto_request([factory.attempt(10_000 + i, items=1)]).SerializeToString()
    factory.provider.shutdown()
    return body


def _still_serving(sink: OTLPSink, db: Path, i: int) -> None:
    status, _, body = post(sink.endpoint, _valid_body(i))
    assert status == 200 and not ExportTraceServiceResponse.FromString(body).HasField("partial_success")
    sink_flush(sink)
    assert query(db, "SELECT count(*) FROM agent_attempts WHERE attempt_id = ?", [f"att-{10_000 + i}"]) == [(1,)]


def sink_flush(sink: OTLPSink) -> None:
    assert sink.flush(60), "sink did not write its accepted spans in time"


@given(st.binary(max_size=2048))
@_FUZZ
def test_random_bytes_as_protobuf_never_crash_the_sink(live: tuple[OTLPSink, Path], data: bytes) -> None:
    """Arbitrary bytes posted as protobuf get 200 (decodable, maybe empty) or a clear 400, never a 5xx."""
    sink, _ = live
    status, _, body = post(sink.endpoint, data)
    assert status in (200, 400), status
    if status == 400:
        assert b"protobuf" in body


@given(st.data())
@_FUZZ
def test_truncated_and_bitflipped_protobuf_is_all_or_per_span(data: st.DataObject) -> None:
    """A mutated valid request either decodes (spans validated one by one) or raises DecodeError, nothing else."""
    body = bytearray(_BODY)
    cut = data.draw(st.integers(0, len(body)))
    flips = data.draw(st.lists(st.integers(0, max(len(body) - 1, 0)), max_size=4))
    mutated = body[:cut]
    for pos in flips:
        if pos < len(mutated):
            mutated[pos] ^= 0xFF
    try:
        decoded = decode_protobuf(bytes(mutated))
    except DecodeError:
        return
    for span in decoded.spans:
        assert len(span.trace_id) == 32 and len(span.span_id) == 16


_BODY = _valid_body(0)

_json_leaf = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=20))
_json = st.recursive(_json_leaf, lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=12), c, max_size=4),
                     max_leaves=20)  # fmt: skip


@given(st.sampled_from(["resourceSpans", "scopeSpans", "spans", "attributes", "traceId", "events"]), _json)
@_FUZZ
def test_json_with_wrong_types_gets_400_or_is_ignored(live: tuple[OTLPSink, Path], key: str, junk: object) -> None:
    """OTLP/JSON whose fields hold the wrong JSON types gets 200 or a clear 400, never a 5xx."""
    sink, _ = live
    span = span_json("0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203399")
    doc = {"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}
    target: dict = {"resourceSpans": doc, "scopeSpans": doc["resourceSpans"][0],
                    "spans": doc["resourceSpans"][0]["scopeSpans"][0]}.get(key, span)  # fmt: skip
    target[key] = junk
    status, _, body = post(sink.endpoint, json.dumps(doc).encode(), content_type="application/json")
    assert status in (200, 400), status
    if status == 400:
        assert b"OTLP/JSON" in body


def test_random_garbage_then_valid_spans_still_land(live: tuple[OTLPSink, Path]) -> None:
    """After a burst of random bodies in every content type, valid spans still land."""
    sink, db = live
    rng = random.Random(7)
    for _ in range(40):
        body = rng.randbytes(rng.randint(0, 4096))
        ctype = rng.choice(["application/x-protobuf", "application/json", "text/html"])
        enc = rng.choice([None, "gzip"])
        assert post(sink.endpoint, body, content_type=ctype, content_encoding=enc)[0] < 500
    _still_serving(sink, db, 1)


def test_lone_surrogates_in_json_do_not_poison_the_writer(live: tuple[OTLPSink, Path]) -> None:
    """Strings that are not valid Unicode are refused (or stored safely) and later batches still land."""
    sink, db = live
    raw = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [
        span_json("0af7651916cd43dd8448eb211c80319d", "b7ad6b7169203398")]}]}]})  # fmt: skip
    raw = raw.replace('"invoke_agent js"', '"bad \\ud800 name"')
    assert post(sink.endpoint, raw.encode(), content_type="application/json")[0] in (200, 400)
    _still_serving(sink, db, 2)


def test_huge_attribute_and_ten_thousand_events_land(live: tuple[OTLPSink, Path]) -> None:
    """A 1 MB attribute value and a span with 10,000 input events are stored whole."""
    sink, db = live
    factory = SpanFactory(max_events=20_000)
    big = factory.span(packet_attributes(500, items=1, **{n.TASK_PROMPT: "x" * 1_000_000}),
                       [(n.INPUT_EVENT, input_event(500, 0))])  # fmt: skip
    many = factory.span(packet_attributes(501, items=10_000),
                        [(n.INPUT_EVENT, input_event(501, s)) for s in range(10_000)])  # fmt: skip
    factory.provider.shutdown()
    for span in (big, many):
        status, _, body = post(sink.endpoint, proto_request([span]).SerializeToString())
        assert status == 200, body
    sink_flush(sink)
    assert query(db, "SELECT length(task_prompt) FROM agent_attempts WHERE attempt_id = 'att-500'") == [(1_000_000,)]
    assert query(db, "SELECT count(*), count(DISTINCT seq) FROM agent_attempt_inputs WHERE attempt_id = 'att-501'") == [
        (10_000, 10_000)
    ]
    assert query(db, "SELECT input_coverage FROM agent_attempts WHERE attempt_id = 'att-501'") == [("complete",)]


def test_out_of_range_timestamps_are_rejected_per_span(live: tuple[OTLPSink, Path]) -> None:
    """A span whose timestamp exceeds int64 nanoseconds is rejected alone; its neighbour lands."""
    sink, db = live
    factory = SpanFactory()
    req = proto_request([factory.attempt(600, items=0), factory.attempt(601, items=0)])
    factory.provider.shutdown()
    req.resource_spans[0].scope_spans[0].spans[1].end_time_unix_nano = 2**64 - 1
    status, _, body = post(sink.endpoint, req.SerializeToString())
    assert status == 200 and ExportTraceServiceResponse.FromString(body).partial_success.rejected_spans == 1
    sink_flush(sink)
    got = query(db, "SELECT attempt_id FROM agent_attempts WHERE attempt_id IN ('att-600', 'att-601')")
    assert got == [("att-600",)]


def test_decode_json_rejects_non_objects_cleanly() -> None:
    """decode_json turns every malformed document into DecodeError with a readable reason."""
    for body in (b"[]", b"5", b'"x"', b'{"resourceSpans": [{"scopeSpans": "no"}]}', b"\xff\xfe"):
        with pytest.raises(DecodeError, match="OTLP/JSON"):
            decode_json(body)
