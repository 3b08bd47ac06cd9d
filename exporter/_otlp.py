"""OTLP trace requests (protobuf or OTLP/JSON) → neutral :class:`SpanRecord` s, with per-span checks.

A body that cannot be decoded at all raises :class:`DecodeError` (the sink answers 400 and stores
nothing).  A decodable body may still hold individual spans that cannot be stored faithfully
(an invalid id, a timestamp past int64): those are rejected one by one and counted for
``partial_success`` while every valid span in the same request still lands.

One rule for every id field (span, parent, link and log record ids; docs/ingest.md, "Status
codes"), whichever the encoding: an id is absent, or exactly its length (trace 16 bytes, span 8)
and not all zeros; in OTLP/JSON it is an even-length string of hex digits and nothing else.
A required id (a span's own, a link's) may not be absent.  Anything else rejects its span or log
record, with the reason in ``partial_success`` -- never a silent empty id, which would make a span
a root.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any, TypeVar

from google.protobuf import json_format
from google.protobuf.message import DecodeError as _PbDecodeError, Message
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTracePartialSuccess,
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from otel_inputs.exporter._spans import SPAN_KINDS, STATUS_CODES, EventRecord, LinkRecord, SpanRecord

_INT64_MAX = 2**63 - 1
_M = TypeVar("_M", bound=Message)
_MAX_ERROR_MESSAGES = 5

# (resource attributes, scope name, scope version, span): one storable span of a request.
ValidSpan = tuple[dict[str, Any], str, str, Span]
# Where one span (or log record) is in its request: (resource, scope, item).
Position = tuple[int, int, int]


class DecodeError(ValueError):
    """The request body is not a decodable ExportTraceServiceRequest; the message is client-safe."""


@dataclass
class DecodedRequest:
    spans: list[SpanRecord] = field(default_factory=list)
    rejected: int = 0
    problems: list[str] = field(default_factory=list)
    accepted: int = 0
    # Positions (resource, scope, span) of the rejected spans, so a later pass can skip them.
    skip: set[tuple[int, int, int]] = field(default_factory=set)

    def reject(self, problem: str) -> None:
        self.rejected += 1
        if len(self.problems) < _MAX_ERROR_MESSAGES and problem not in self.problems:
            self.problems.append(problem)

    @property
    def error_message(self) -> str:
        return f"{self.rejected} spans rejected: " + "; ".join(self.problems)


# --- AnyValue --------------------------------------------------------------------------------------


def _value(v: AnyValue) -> Any:
    return value_of(v, v.WhichOneof("value"))


def value_of(v: AnyValue, which: str | None) -> Any:
    if which == "string_value":
        return v.string_value
    if which == "int_value":
        return v.int_value
    if which == "bool_value":
        return v.bool_value
    if which == "double_value":
        return v.double_value
    if which == "array_value":
        return [_value(x) for x in v.array_value.values]
    if which == "kvlist_value":
        return {kv.key: _value(kv.value) for kv in v.kvlist_value.values}
    if which == "bytes_value":
        return bytes(v.bytes_value)
    return None  # an empty AnyValue: OTLP's "no value"


def _attrs(kvs: Iterable[KeyValue]) -> dict[str, Any]:
    # The hot loop of decoding (~330 values per packet span): strings, the common case, are read
    # inline instead of through a call per value (measured ~25% of record building).
    out: dict[str, Any] = {}
    for kv in kvs:
        v = kv.value
        which = v.WhichOneof("value")
        out[kv.key] = v.string_value if which == "string_value" else value_of(v, which)
    return out


# --- request → records -------------------------------------------------------------------------------


def id_problem(raw: bytes, size: int, what: str, *, required: bool) -> str | None:
    """Why the id bytes ``raw`` are not a valid id of ``size`` bytes (absent is valid unless
    ``required``), or ``None``: the one id rule of every field."""
    if not raw:
        return f"{what} is missing" if required else None
    if len(raw) != size:
        return f"{what} must be {size} bytes, got {len(raw)}"
    if not any(raw):
        return f"{what} is all zeros"
    return None


def span_problem(sp: Span) -> str | None:
    """Why one span cannot be stored faithfully (ids, int64 times), or ``None`` when it can."""
    problem = (
        id_problem(sp.trace_id, 16, "trace_id", required=True)
        or id_problem(sp.span_id, 8, "span_id", required=True)
        or id_problem(sp.parent_span_id, 8, "parent_span_id", required=False)
    )
    for link in sp.links:
        problem = problem or id_problem(link.trace_id, 16, "link trace_id", required=True) or id_problem(
            link.span_id, 8, "link span_id", required=True
        )
    if problem is None:
        latest = max(sp.start_time_unix_nano, sp.end_time_unix_nano)
        for e in sp.events:
            if e.time_unix_nano > latest:
                latest = e.time_unix_nano
        if latest > _INT64_MAX:
            problem = "timestamp beyond the int64 nanosecond range"
    return problem


def check_request(req: ExportTraceServiceRequest, known: Mapping[Position, str] | None = None) -> DecodedRequest:
    """Count the request's storable spans and reject the rest (for ``partial_success``), cheaply:
    no span is converted here, so the sink can answer before the conversion runs.  ``known``: the
    problems :func:`parse_json` found by position (ids that were not hex)."""
    out = DecodedRequest()
    for i, rs in enumerate(req.resource_spans):
        for j, ss in enumerate(rs.scope_spans):
            for k, sp in enumerate(ss.spans):
                problem = (known.get((i, j, k)) if known else None) or span_problem(sp)
                if problem is None:
                    out.accepted += 1
                else:
                    out.reject(problem)
                    out.skip.add((i, j, k))
    return out


def iter_valid(req: ExportTraceServiceRequest, skip: AbstractSet[tuple[int, int, int]]) -> Iterator[ValidSpan]:
    """The request's spans not in ``skip`` (positions from :func:`check_request`), in request order,
    each with its resource attributes (decoded once per resource) and scope."""
    for i, rs in enumerate(req.resource_spans):
        resource = _attrs(rs.resource.attributes)
        for j, ss in enumerate(rs.scope_spans):
            scope_name, scope_version = ss.scope.name, ss.scope.version
            for k, sp in enumerate(ss.spans):
                if skip and (i, j, k) in skip:
                    continue
                yield resource, scope_name, scope_version, sp


def record_of(resource: dict[str, Any], scope_name: str, scope_version: str, sp: Span) -> SpanRecord:
    """One valid protobuf span as a neutral :class:`SpanRecord` (the reference conversion)."""
    return SpanRecord(
        trace_id=sp.trace_id.hex(),
        span_id=sp.span_id.hex(),
        parent_span_id=sp.parent_span_id.hex(),
        trace_state=sp.trace_state,
        name=sp.name,
        kind=SPAN_KINDS[sp.kind] if 0 <= sp.kind < len(SPAN_KINDS) else SPAN_KINDS[0],
        start_ns=sp.start_time_unix_nano,
        end_ns=sp.end_time_unix_nano,
        status_code=STATUS_CODES[sp.status.code] if 0 <= sp.status.code < 3 else STATUS_CODES[0],
        status_message=sp.status.message,
        attributes=_attrs(sp.attributes),
        resource_attributes=resource,
        scope_name=scope_name,
        scope_version=scope_version,
        events=tuple(EventRecord(e.name, e.time_unix_nano, _attrs(e.attributes)) for e in sp.events),
        links=tuple(
            LinkRecord(lk.trace_id.hex(), lk.span_id.hex(), lk.trace_state, _attrs(lk.attributes))
            for lk in sp.links
        ),
        dropped_attributes=sp.dropped_attributes_count,
        dropped_events=sp.dropped_events_count,
        dropped_links=sp.dropped_links_count,
    )


def records_from_request(req: ExportTraceServiceRequest, known: Mapping[Position, str] | None = None) -> DecodedRequest:
    """The request's valid spans as records, the rest counted as rejected."""
    out = check_request(req, known)
    out.spans = [record_of(*v) for v in iter_valid(req, out.skip)]
    return out


def parse_protobuf(body: bytes | bytearray) -> ExportTraceServiceRequest:
    """The parsed request (no Python span objects yet); raises DecodeError."""
    try:
        return ExportTraceServiceRequest.FromString(body)
    except (_PbDecodeError, RecursionError, ValueError) as exc:
        raise DecodeError(f"body is not a valid protobuf ExportTraceServiceRequest ({type(exc).__name__})") from None


def decode_protobuf(body: bytes | bytearray) -> DecodedRequest:
    return records_from_request(parse_protobuf(body))


# --- OTLP/JSON ----------------------------------------------------------------------------------------

_HEX = re.compile(r"(?:[0-9a-fA-F]{2})*")
_SPAN_IDS = (("traceId", "trace_id"), ("spanId", "span_id"), ("parentSpanId", "parent_span_id"))
_LINK_IDS = (("traceId", "link trace_id"), ("spanId", "link span_id"))


def json_ids(item: dict[str, Any], keys: Iterable[tuple[str, str]]) -> str | None:
    """Turn ``item``'s OTLP/JSON hex ids (``keys``: JSON key, name) into the base64 the protobuf
    JSON mapping expects, in place.  An id that is not an even-length hex string (base64, spaces,
    any other character, not a string) is removed and its problem returned, so that item alone is
    rejected; the length and all-zeros checks are :func:`id_problem`'s, after parsing."""
    problem = None
    for key, what in keys:
        if key not in item:
            continue
        value = item[key]
        if isinstance(value, str) and _HEX.fullmatch(value):
            item[key] = base64.b64encode(bytes.fromhex(value)).decode("ascii")
        else:
            del item[key]
            problem = problem or f"{what} is not a hex string"
    return problem


def json_items(doc: Any, *path: str) -> Iterator[tuple[Position, dict[str, Any]]]:
    """The objects at ``doc[path[0]][i][path[1]][j][path[2]][k]`` with their positions (what is not
    an object is skipped: the protobuf parse then refuses the whole body)."""

    def objects(parent: Any, key: str) -> Iterator[tuple[int, dict[str, Any]]]:
        value = parent.get(key) if isinstance(parent, dict) else None
        return ((i, x) for i, x in enumerate(value) if isinstance(x, dict)) if isinstance(value, list) else iter(())

    for i, outer in objects(doc, path[0]):
        for j, middle in objects(outer, path[1]):
            for k, item in objects(middle, path[2]):
                yield (i, j, k), item


def _fix_ids(doc: Any) -> dict[Position, str]:
    problems: dict[Position, str] = {}
    for position, sp in json_items(doc, "resourceSpans", "scopeSpans", "spans"):
        problem = json_ids(sp, _SPAN_IDS)
        links = sp.get("links")
        for link in links if isinstance(links, list) else ():
            if isinstance(link, dict):
                problem = json_ids(link, _LINK_IDS) or problem
        if problem is not None:
            problems[position] = problem
    return problems


def parse_json_as(body: bytes | bytearray, message: _M,
                  fix_ids: Callable[[dict[str, Any]], dict[Position, str]]) -> tuple[_M, dict[Position, str]]:  # fmt: skip
    """An OTLP/JSON body parsed into ``message`` (``fix_ids`` turns its hex ids into base64 first
    and returns, by position, the items whose ids were not hex); raises DecodeError naming the
    message type."""
    kind = message.DESCRIPTOR.name
    try:
        doc = json.loads(body)
        if not isinstance(doc, dict):
            raise TypeError("top level must be a JSON object")
        problems = fix_ids(doc)
        return json_format.ParseDict(doc, message, ignore_unknown_fields=True), problems
    except (ValueError, TypeError, RecursionError, json_format.ParseError, UnicodeError) as exc:
        reason = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        raise DecodeError(f"body is not a valid OTLP/JSON {kind}: {reason}") from None
    except Exception as exc:  # noqa: BLE001 - protobuf raises assorted types for bad field values
        raise DecodeError(f"body is not a valid OTLP/JSON {kind} ({type(exc).__name__})") from None


def parse_json(body: bytes | bytearray) -> tuple[ExportTraceServiceRequest, dict[Position, str]]:
    """An OTLP/JSON body as a parsed request and the spans whose ids were not hex (for
    :func:`check_request`); raises DecodeError."""
    return parse_json_as(body, ExportTraceServiceRequest(), _fix_ids)


def decode_json(body: bytes | bytearray) -> DecodedRequest:
    return records_from_request(*parse_json(body))


# --- responses ----------------------------------------------------------------------------------------


def response_body(decoded: DecodedRequest | None, *, as_json: bool) -> bytes:
    resp = ExportTraceServiceResponse()
    if decoded is not None and decoded.rejected:
        resp.partial_success.CopyFrom(
            ExportTracePartialSuccess(rejected_spans=decoded.rejected, error_message=decoded.error_message)
        )
    return reply_bytes(resp, as_json=as_json)


def reply_bytes(resp: Message, *, as_json: bool) -> bytes:
    """A response in the request's encoding: compact OTLP/JSON or protobuf."""
    if as_json:
        return json_format.MessageToJson(resp, indent=None).encode("utf-8")
    return resp.SerializeToString()


def status_body(code: int, message: str, *, as_json: bool) -> bytes:
    """A ``google.rpc.Status`` error body (code, message), hand-encoded to avoid another dependency."""
    if as_json:
        return json.dumps({"code": code, "message": message}).encode("utf-8")
    msg = message.encode("utf-8")
    return b"\x08" + _varint(code) + b"\x12" + _varint(len(msg)) + msg


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)
