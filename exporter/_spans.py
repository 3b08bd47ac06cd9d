"""A small, neutral span representation that SDK spans and OTLP spans are both converted into.

Everything downstream (row derivation, Arrow building, the spool) reads only :class:`SpanRecord`,
so a span recorded in-process and the same span posted over OTLP land as identical rows.
Attribute values keep their OTLP types (str, bool, int, float, bytes, list, dict) so the row
derivation can tell a malformed ``seq`` from a valid one; stringification for the ClickHouse-shaped
table happens in :func:`stringify`.
"""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

AttrValue = Any  # str | bool | int | float | bytes | list[AttrValue] | dict[str, AttrValue]

# ClickHouse exporter spellings (pdata traceutil.SpanKindStr / StatusCodeStr).
SPAN_KINDS = ("Unspecified", "Internal", "Server", "Client", "Producer", "Consumer")
STATUS_CODES = ("Unset", "Ok", "Error")
SERVICE_NAME_KEY = "service.name"  # resource semantic convention, not an otel_inputs wire name


@dataclass(frozen=True, slots=True)
class EventRecord:
    name: str
    time_ns: int
    attributes: Mapping[str, AttrValue]


@dataclass(frozen=True, slots=True)
class LinkRecord:
    trace_id: str
    span_id: str
    trace_state: str
    attributes: Mapping[str, AttrValue]


@dataclass(frozen=True, slots=True)
class SpanRecord:
    """One finished span; ids are lowercase hex, times are Unix nanoseconds."""

    trace_id: str
    span_id: str
    parent_span_id: str
    trace_state: str
    name: str
    kind: str
    start_ns: int
    end_ns: int
    status_code: str
    status_message: str
    attributes: Mapping[str, AttrValue]
    resource_attributes: Mapping[str, AttrValue] = field(default_factory=dict)
    scope_name: str = ""
    scope_version: str = ""
    events: Sequence[EventRecord] = ()
    links: Sequence[LinkRecord] = ()
    dropped_attributes: int = 0
    dropped_events: int = 0
    dropped_links: int = 0

    @property
    def service_name(self) -> str:
        value = self.resource_attributes.get(SERVICE_NAME_KEY)
        return value if isinstance(value, str) else ""


def _json_default(value: Any) -> Any:
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return str(value)


def _plain(value: Any) -> Any:
    """Nested values as JSON-ready Python (tuples from the SDK become lists), numbers as Go's
    encoding/json writes them: an integral double has no fraction ("1", not "1.0")."""
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return int(value)
    return value


# Go's encoding/json escapes these inside strings (HTML-safe output); Python's json does not.
_GO_ESCAPES = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028",
                             "\u2029": "\\u2029"})  # fmt: skip


def _float_str(value: float) -> str:
    # pdata AsString formats doubles with strconv 'f', -1: no exponent, shortest round-trip digits.
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    text = repr(value)
    if "e" in text or "E" in text:
        text = format(value, "f").rstrip("0").rstrip(".") if value != int(value) else str(int(value))
    elif text.endswith(".0"):
        text = text[:-2]
    return text


def stringify(value: AttrValue) -> str:
    """An attribute value as the ClickHouse exporter stores it (pdata ``Value.AsString``)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _float_str(value)
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if value is None:
        return ""
    # A map or array: the JSON pdata's AsString gives it (Go encoding/json: keys sorted, compact,
    # HTML-escaped), so a structured AnyValue reads the same here as in ClickHouse.
    text = json.dumps(_plain(value), separators=(",", ":"), ensure_ascii=False, sort_keys=True, default=_json_default)
    return text.translate(_GO_ESCAPES)


# --- SDK ReadableSpan → SpanRecord --------------------------------------------------------------


def _hex_id(value: int, width: int) -> str:
    return format(value, f"0{width}x") if value else ""


def _attrs(mapping: Mapping[str, Any] | None) -> dict[str, AttrValue]:
    if not mapping:
        return {}
    return {k: (list(v) if isinstance(v, tuple) else v) for k, v in mapping.items()}


def from_readable(span: Any) -> SpanRecord:
    """Convert an SDK ``ReadableSpan``; raises on a span too broken to convert (caller logs)."""
    ctx = span.context
    parent = span.parent
    kind_name = span.kind.name.capitalize() if span.kind is not None else "Unspecified"
    status = span.status
    status_code = status.status_code.name.capitalize() if status is not None else "Unset"
    resource = span.resource.attributes if span.resource is not None else {}
    scope = span.instrumentation_scope
    events = tuple(
        EventRecord(e.name, int(e.timestamp or 0), _attrs(e.attributes)) for e in (span.events or ())
    )
    links = tuple(
        LinkRecord(
            _hex_id(link.context.trace_id, 32),
            _hex_id(link.context.span_id, 16),
            link.context.trace_state.to_header() if link.context.trace_state else "",
            _attrs(link.attributes),
        )
        for link in (span.links or ())
    )
    start = int(span.start_time or 0)
    end = int(span.end_time or start)
    return SpanRecord(
        trace_id=_hex_id(ctx.trace_id, 32),
        span_id=_hex_id(ctx.span_id, 16),
        parent_span_id=_hex_id(parent.span_id, 16) if parent is not None else "",
        trace_state=ctx.trace_state.to_header() if ctx.trace_state else "",
        name=span.name or "",
        kind=kind_name,
        start_ns=start,
        end_ns=end,
        status_code=status_code,
        status_message=(status.description or "") if status is not None else "",
        attributes=_attrs(span.attributes),
        resource_attributes=_attrs(resource),
        scope_name=(scope.name or "") if scope is not None else "",
        scope_version=(scope.version or "") if scope is not None else "",
        events=events,
        links=links,
        dropped_attributes=int(getattr(span, "dropped_attributes", 0) or 0),
        dropped_events=int(getattr(span, "dropped_events", 0) or 0),
        dropped_links=int(getattr(span, "dropped_links", 0) or 0),
    )
