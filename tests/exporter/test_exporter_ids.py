"""One rule for ids in every field and both encodings: valid, or the span / log record is rejected
with the reason in ``partial_success`` -- never stored with an empty (or reinterpreted) id."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from exporter_helpers import query
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from sink_client import post

from otel_inputs.exporter import OTLPSink

pytestmark = pytest.mark.timeout(120)

GOOD_TRACE = "0af7651916cd43dd8448eb211c80319c"
GOOD_SPAN = "b7ad6b7169203331"
PARENT = "00f067aa0ba902b7"

# Not an OTLP/JSON id: letters past f, base64 (of a valid 8-byte id), spaces between the bytes,
# a wrong length, an odd length, a number, all zeros.
BAD_JSON_SPAN_IDS = {
    "letters": "zzzzzzzzzzzzzzzz",
    "base64": "APBnqguQArc=",
    "spaces": "0a 0a 0a 0a 0a 0a 0a 0a",
    "short": "0a0a",
    "odd": "0a0a0a0a0a0a0a0",
    "number": 12345678,
    "zeros": "0000000000000000",
    "unicode_digits": "\u0660" * 16,
}
SPAN_FIELDS = ("traceId", "spanId", "parentSpanId", "link.traceId", "link.spanId")


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[OTLPSink, Path]]:
    db = tmp_path_factory.mktemp("ids") / "ids.duckdb"
    sink = OTLPSink(db, port=0).start()
    yield sink, db
    sink.stop()


def _json_span(span_id: str, **ids: Any) -> dict[str, Any]:
    span: dict[str, Any] = {"traceId": GOOD_TRACE, "spanId": span_id, "parentSpanId": PARENT, "name": f"s-{span_id}",
                            "startTimeUnixNano": "1764460800000000000", "endTimeUnixNano": "1764460801000000000",
                            "links": [{"traceId": GOOD_TRACE, "spanId": PARENT}]}  # fmt: skip
    for field, value in ids.items():
        if field.startswith("link."):
            span["links"][0][field[5:]] = value
        else:
            span[field] = value
    return span


def _traces_json(*spans: dict[str, Any]) -> bytes:
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": list(spans)}]}]}).encode()


def _stored(sink: OTLPSink, db: Path, span_id: str) -> list[tuple[Any, ...]]:
    assert sink.flush(30)
    return query(db, 'SELECT "TraceId", "ParentSpanId" FROM otel_traces WHERE "SpanId" = ? OR "SpanName" = ?',
                 [span_id, f"s-{span_id}"])  # fmt: skip


@pytest.mark.parametrize("field", SPAN_FIELDS)
@pytest.mark.parametrize("bad", sorted(BAD_JSON_SPAN_IDS))
def test_json_span_with_an_invalid_id_is_rejected_with_the_reason(live: tuple[OTLPSink, Path], field: str,
                                                                   bad: str) -> None:  # fmt: skip
    """An OTLP/JSON span whose id field is not a valid hex id is rejected in partial_success; its neighbour lands."""
    sink, db = live
    tag = f"{SPAN_FIELDS.index(field)}{sorted(BAD_JSON_SPAN_IDS).index(bad):03d}"
    bad_span, good_span = f"badbad{tag}aaaaaa"[:16], f"600d{tag}aaaaaaaaa"[:16]
    body = _traces_json(_json_span(bad_span, **{field: BAD_JSON_SPAN_IDS[bad]}), _json_span(good_span))
    status, _, reply = post(sink.endpoint, body, content_type="application/json")
    assert status == 200, reply
    partial = json.loads(reply)["partialSuccess"]
    what = {"traceId": "trace_id", "spanId": "span_id", "parentSpanId": "parent_span_id",
            "link.traceId": "link trace_id", "link.spanId": "link span_id"}[field]  # fmt: skip
    assert partial["rejectedSpans"] == "1" and what in partial["errorMessage"], partial
    assert _stored(sink, db, bad_span) == []  # never stored with an empty or reinterpreted id
    assert _stored(sink, db, good_span) == [(GOOD_TRACE, PARENT)]


def test_json_uppercase_hex_ids_are_valid_and_stored_lowercase(live: tuple[OTLPSink, Path]) -> None:
    """Hex digits in upper case are still hex: the span lands with its ids in lower case."""
    sink, db = live
    span = _json_span("ABCDEF0123456789", traceId=GOOD_TRACE.upper(), parentSpanId=PARENT.upper())
    status, _, reply = post(sink.endpoint, _traces_json(span), content_type="application/json")
    assert status == 200 and "partialSuccess" not in json.loads(reply)
    assert _stored(sink, db, "abcdef0123456789") == [(GOOD_TRACE, PARENT)]


def test_json_root_span_without_parent_or_with_an_empty_one_lands_as_a_root(live: tuple[OTLPSink, Path]) -> None:
    """An absent or empty parentSpanId is the one way to say "root": both land with an empty parent."""
    sink, db = live
    absent = _json_span("1111111111111111")
    del absent["parentSpanId"]
    empty = _json_span("2222222222222222", parentSpanId="")
    status, _, reply = post(sink.endpoint, _traces_json(absent, empty), content_type="application/json")
    assert status == 200 and "partialSuccess" not in json.loads(reply)
    assert _stored(sink, db, "1111111111111111") == [(GOOD_TRACE, "")]
    assert _stored(sink, db, "2222222222222222") == [(GOOD_TRACE, "")]


# (field, bytes) that break the rule in protobuf: wrong length, all zeros, missing where required.
BAD_PROTO_IDS = [("trace_id", b"\x01" * 15), ("trace_id", b"\x00" * 16), ("trace_id", b""),
                 ("span_id", b"\x01" * 9), ("span_id", b"\x00" * 8), ("span_id", b""),
                 ("parent_span_id", b"\x01" * 7), ("parent_span_id", b"\x00" * 8), ("parent_span_id", b"\x01" * 16),
                 ("link trace_id", b"\x01" * 8), ("link trace_id", b""), ("link span_id", b"\x00" * 8),
                 ("link span_id", b"")]  # fmt: skip


@pytest.mark.parametrize(("field", "raw"), BAD_PROTO_IDS)
def test_protobuf_span_with_an_invalid_id_is_rejected_with_the_reason(live: tuple[OTLPSink, Path], field: str,
                                                                       raw: bytes) -> None:  # fmt: skip
    """A protobuf span breaking the id rule in any id field is rejected in partial_success; its neighbour lands."""
    sink, db = live
    tag = BAD_PROTO_IDS.index((field, raw))
    req = ExportTraceServiceRequest()
    ss = req.resource_spans.add().scope_spans.add()
    for name in (f"bad-proto-{tag}", f"good-proto-{tag}"):
        sp = ss.spans.add(trace_id=bytes.fromhex(GOOD_TRACE), span_id=bytes([0xA0, tag]) + name[:6].encode(),
                          parent_span_id=bytes.fromhex(PARENT), name=name, start_time_unix_nano=1, end_time_unix_nano=2)
        sp.links.add(trace_id=bytes.fromhex(GOOD_TRACE), span_id=bytes.fromhex(PARENT))
    bad = ss.spans[0]
    target, attr = (bad.links[0], field[5:]) if field.startswith("link ") else (bad, field)
    setattr(target, attr, raw)
    status, _, reply = post(sink.endpoint, req.SerializeToString())
    assert status == 200
    partial = ExportTraceServiceResponse.FromString(reply).partial_success
    assert partial.rejected_spans == 1 and field in partial.error_message, partial
    assert sink.flush(30)
    assert query(db, 'SELECT "SpanName" FROM otel_traces WHERE "SpanName" LIKE ?', [f"%-proto-{tag}"]) == [
        (f"good-proto-{tag}",)]


BAD_LOG_IDS = {"traceId": ["zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz", "CvdlGRbNQ92ESOshHIAxnA==", "0a" * 15,
                           "00" * 16, " 0a" * 16, 7],
               "spanId": ["zzzzzzzzzzzzzzzz", "APBnqguQArc=", "0a0a", "00" * 8, "0a 0a 0a 0a 0a 0a 0a 0a", True]}  # fmt: skip


@pytest.mark.parametrize(("field", "value"), [(f, v) for f, vs in BAD_LOG_IDS.items() for v in vs])
def test_json_log_record_with_an_invalid_id_is_rejected_with_the_reason(live: tuple[OTLPSink, Path], field: str,
                                                                         value: Any) -> None:  # fmt: skip
    """An OTLP/JSON log record whose traceId or spanId is not a valid hex id is rejected; its neighbour lands."""
    sink, db = live
    marker = f"log-{field}-{value!r}"
    records = [{"timeUnixNano": "1764460800000000000", "body": {"stringValue": f"bad {marker}"},
                "traceId": GOOD_TRACE, "spanId": GOOD_SPAN},
               {"timeUnixNano": "1764460800000000000", "body": {"stringValue": f"good {marker}"},
                "traceId": GOOD_TRACE, "spanId": GOOD_SPAN}]  # fmt: skip
    records[0][field] = value
    body = json.dumps({"resourceLogs": [{"scopeLogs": [{"logRecords": records}]}]}).encode()
    status, _, reply = post(sink.logs_endpoint, body, content_type="application/json")
    assert status == 200, reply
    partial = json.loads(reply)["partialSuccess"]
    assert partial["rejectedLogRecords"] == "1" and {"traceId": "trace_id", "spanId": "span_id"}[field] in partial["errorMessage"]
    assert sink.flush(30)
    assert query(db, 'SELECT "Body", "TraceId", "SpanId" FROM otel_logs WHERE "Body" LIKE ?', [f"% {marker}"]) == [
        (f"good {marker}", GOOD_TRACE, GOOD_SPAN)]


def test_protobuf_log_record_with_all_zero_ids_is_rejected(live: tuple[OTLPSink, Path]) -> None:
    """A protobuf log record whose trace or span id is all zeros breaks the rule too; one without ids lands."""
    sink, db = live
    req = ExportLogsServiceRequest()
    sl = req.resource_logs.add().scope_logs.add()
    sl.log_records.add(time_unix_nano=1, trace_id=b"\x00" * 16, span_id=bytes.fromhex(GOOD_SPAN)).body.string_value = "z1"
    sl.log_records.add(time_unix_nano=1, trace_id=bytes.fromhex(GOOD_TRACE), span_id=b"\x00" * 8).body.string_value = "z2"
    sl.log_records.add(time_unix_nano=1).body.string_value = "z3"
    status, _, reply = post(sink.logs_endpoint, req.SerializeToString())
    assert status == 200
    assert ExportLogsServiceResponse.FromString(reply).partial_success.rejected_log_records == 2
    assert sink.flush(30)
    assert query(db, """SELECT "Body", "TraceId", "SpanId" FROM otel_logs WHERE "Body" IN ('z1', 'z2', 'z3')""") == [
        ("z3", "", "")]
