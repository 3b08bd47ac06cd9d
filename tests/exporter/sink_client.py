"""Plain HTTP and OTLP request builders for the sink tests (no mocks: real sockets, real protobuf)."""

from __future__ import annotations

import http.client
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import ReadableSpan

from otel_inputs import names as n


def proto_request(spans: Sequence[ReadableSpan]) -> ExportTraceServiceRequest:
    """Exactly what the stock OTLP exporter would send for these spans."""
    return encode_spans(list(spans))


def post(
    endpoint: str,
    body: bytes,
    *,
    content_type: str = "application/x-protobuf",
    content_encoding: str | None = None,
    path: str | None = None,
    timeout: float = 20.0,
) -> tuple[int, dict[str, str], bytes]:
    url = urlsplit(endpoint)
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=timeout)
    headers = {"Content-Type": content_type}
    if content_encoding:
        headers["Content-Encoding"] = content_encoding
    try:
        conn.request("POST", path or url.path, body=body, headers=headers)
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


def _kv(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}  # OTLP/JSON: int64 as a string
    return {"key": key, "value": {"stringValue": value}}


def span_json(trace_id: str, span_id: str, *, seq: Any = "0") -> dict[str, Any]:
    """An OTLP/JSON attempt span as a runtime in another language would emit it."""
    attrs = {n.GEN_AI_OPERATION_NAME: n.OPERATION_INVOKE_AGENT, n.ATTEMPT_ID: "att-json", n.RUN_ID: "run-js",
             n.TURN_INDEX: 2, n.PACKET_VERSION_ATTR: 1, n.PACKET_COVERAGE: "complete", n.PACKET_ITEM_COUNT: 1}  # fmt: skip
    event_attrs = [{"key": n.INPUT_ID, "value": {"stringValue": "in-json-0"}},
                   {"key": n.INPUT_SEQ, "value": {"intValue": seq}}]  # fmt: skip
    return {
        "traceId": trace_id,
        "spanId": span_id,
        "name": "invoke_agent js",
        "kind": 1,
        "startTimeUnixNano": "1764460800000000000",
        "endTimeUnixNano": "1764460801000000000",
        "attributes": [_kv(k, v) for k, v in attrs.items()],
        "events": [{"timeUnixNano": "1764460800500000000", "name": n.INPUT_EVENT, "attributes": event_attrs}],
        "status": {"code": 1},
    }
