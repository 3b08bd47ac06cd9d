"""Fused OTLP → Arrow conversion for the sink: one pass over parsed protobuf spans into column lists.

The reference path (:func:`otel_inputs.exporter._otlp.record_of` → :class:`SpanRecord` → :func:`build_batch`)
builds a Python object per span and per event and then walks them once per table; that was most
of the sink's CPU.  Here every attribute is read once: its key and stringified value go straight
into the flat map columns, and the typed value is kept in a small dict only for the row
derivation.  Packet input rows are built column-wise when every input event of a span is well
formed (the overwhelmingly common case); the attempt row, coverage, exchange parts and any span
with a malformed input event go through the very functions :func:`otel_inputs.exporter._rows.derive` uses, so
both paths land identical rows (tests/exporter/test_exporter_columns.py compares them).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, cast

import pyarrow as pa

from otel_inputs import names as n

from otel_inputs.exporter._arrow import (
    ATTEMPT_SCHEMA, INPUT_SCHEMA, PART_SCHEMA, TRACES_SCHEMA, BatchTables, TS_TYPE, list_array, map_array, rows_table,
    spec_table,
)  # fmt: skip
from otel_inputs.exporter._otlp import ValidSpan, value_of
from otel_inputs.exporter._rows import (
    CONTENT_EVENTS, INPUT_COLUMNS, INPUT_STR_FIELDS, SOURCE_OTEL_INPUTS, attempt_kind, attempt_row,
    finish_coverage, input_rows, part_rows,
)  # fmt: skip
from otel_inputs.exporter._spans import SERVICE_NAME_KEY, SPAN_KINDS, STATUS_CODES, EventRecord, SpanRecord, stringify

_INT32_MAX = 2**31 - 1
_INT64_MAX = 2**63 - 1
_STR_OR_NONE = frozenset({str, type(None)})

# Wire keys in INPUT_COLUMNS order, leaving out the columns that do not come from the event
# (attempt_id at 1; captured_at, row_problem, attempt_started_at at the end).  A row is then
# (fetched[0], attempt_id, *fetched[1:], time, None, start) with no per-column Python code.
_EVENT_COLUMNS = {"input_id": n.INPUT_ID, "seq": n.INPUT_SEQ, "size_bytes": n.INPUT_SIZE_BYTES,
                  **{column: key for key, column in INPUT_STR_FIELDS}}  # fmt: skip
if (INPUT_COLUMNS[1] != "attempt_id" or INPUT_COLUMNS[-3:] != ("captured_at", "row_problem", "attempt_started_at")
        or set(INPUT_COLUMNS[:1] + INPUT_COLUMNS[2:-3]) != set(_EVENT_COLUMNS)):  # fmt: skip
    raise ImportError("otel_inputs.exporter._columns: the columns of agent_attempt_inputs (exporter/_tables.py) "
                      "changed; update the column-wise input rows here")
_FETCH_KEYS = tuple(_EVENT_COLUMNS[c] for c in INPUT_COLUMNS[:1] + INPUT_COLUMNS[2:-3])
_SEQ_AT = 1
_SIZE_AT = INPUT_COLUMNS[2:-3].index("size_bytes") + 1
_STR_AT = tuple(i for i in range(len(_FETCH_KEYS)) if i not in (0, _SEQ_AT, _SIZE_AT))
_ALL_PRESENT = tuple(int if i in (_SEQ_AT, _SIZE_AT) else str for i in range(len(_FETCH_KEYS)))


class Fallback(Exception):
    """The chunk holds something only the reference conversion orders exactly (a repeated key)."""


def _attrs_into(kvs: Iterable[Any], keys: list[str], values: list[str]) -> dict[str, Any]:
    """Decode KeyValues into a typed dict and append its map entries (key, stringified value).

    The dict gives the same entries as the reference ``_attrs`` + ``_MapBuilder.add``: a repeated
    key keeps its first position and its last value.  A non-empty ``string_value`` can only be the
    set member of the oneof, so the common case skips ``WhichOneof``."""
    out: dict[str, Any] = {}
    plain = True
    for kv in kvs:
        v = kv.value
        s = v.string_value
        if s:
            out[kv.key] = s
        else:
            which = v.WhichOneof("value")
            if which == "int_value":  # the next most common type (seq, sizes, counts)
                out[kv.key] = v.int_value
                plain = False
            elif which == "string_value":
                out[kv.key] = s
            else:
                out[kv.key] = value_of(v, which)
                plain = False
    keys += out
    if plain:
        values += out.values()
    else:
        # str(int) is what stringify gives a (non-bool) int, without the call.
        values += [x if type(x) is str else str(x) if type(x) is int else stringify(x) for x in out.values()]
    return out


def _fast_inputs(events: list[tuple[int, dict[str, Any]]], attempt_id: str, start: int | None) -> list[tuple[Any, ...]] | None:
    """Input rows as tuples in INPUT_COLUMNS order, or ``None`` if any event needs the reference
    rules (a missing/mistyped field, a repeated seq); those rules then run for the whole span."""
    rows: list[tuple[Any, ...]] = []
    seen: set[int] = set()
    for time_ns, attrs in events:
        f = list(map(attrs.get, _FETCH_KEYS))
        input_id, seq, size = f[0], f[_SEQ_AT], f[_SIZE_AT]
        # Every field present with its usual type is one tuple comparison; else check field by field.
        if tuple(map(type, f)) != _ALL_PRESENT and not (
            type(input_id) is str and type(seq) is int and (size is None or type(size) is int)
            and _STR_OR_NONE.issuperset([type(f[i]) for i in _STR_AT])
        ):  # fmt: skip
            return None
        seq_int = cast(int, seq)  # an int: the type checks above passed, which mypy cannot follow
        if not input_id or not 0 <= seq_int <= _INT32_MAX or seq_int in seen or (
                size is not None and not 0 <= size <= _INT64_MAX):  # fmt: skip
            return None
        seen.add(seq_int)
        rows.append((input_id, attempt_id, *f[1:], time_ns or None, None, start))
    return rows


def build_chunk(spans: Sequence[ValidSpan]) -> BatchTables:
    """Every table for these valid spans; raises :class:`Fallback` when the reference path must run."""
    start_ts: list[int] = []
    trace_ids: list[str] = []
    span_ids: list[str] = []
    parent_ids: list[str] = []
    trace_states: list[str] = []
    names: list[str] = []
    kinds: list[str] = []
    services: list[str] = []
    scope_names: list[str] = []
    scope_versions: list[str] = []
    durations: list[int] = []
    status_codes: list[str] = []
    status_messages: list[str] = []
    res_keys: list[str] = []
    res_vals: list[str] = []
    res_off = [0]
    sp_keys: list[str] = []
    sp_vals: list[str] = []
    sp_off = [0]
    ev_ts: list[int] = []
    ev_names: list[str] = []
    ev_off = [0]
    ev_keys: list[str] = []
    ev_vals: list[str] = []
    ev_map_off = [0]
    l_tid: list[str] = []
    l_sid: list[str] = []
    l_ts: list[str] = []
    l_off = [0]
    l_keys: list[str] = []
    l_vals: list[str] = []
    l_map_off = [0]
    attempts: list[dict[str, Any]] = []
    inputs: list[tuple[Any, ...]] = []
    parts: list[dict[str, Any]] = []
    resources: dict[int, tuple[dict[str, Any], list[str], list[str], str]] = {}
    input_event, part_event, content_events = n.INPUT_EVENT, n.EXCHANGE_PART_EVENT, CONTENT_EVENTS

    for resource, scope_name, scope_version, sp in spans:
        cached = resources.get(id(resource))
        if cached is None or cached[0] is not resource:
            service = resource.get(SERVICE_NAME_KEY)
            cached = (resource, list(resource), [v if type(v) is str else stringify(v) for v in resource.values()],
                      service if isinstance(service, str) else "")  # fmt: skip
            resources[id(resource)] = cached
        res_keys.extend(cached[1])
        res_vals.extend(cached[2])
        res_off.append(len(res_keys))
        start, end = sp.start_time_unix_nano, sp.end_time_unix_nano
        trace_id, span_id = sp.trace_id.hex(), sp.span_id.hex()
        start_ts.append(start)
        trace_ids.append(trace_id)
        span_ids.append(span_id)
        parent_ids.append(sp.parent_span_id.hex())
        trace_states.append(sp.trace_state)
        names.append(sp.name)
        kind = sp.kind
        kinds.append(SPAN_KINDS[kind] if 0 <= kind < len(SPAN_KINDS) else SPAN_KINDS[0])
        services.append(cached[3])
        scope_names.append(scope_name)
        scope_versions.append(scope_version)
        durations.append(end - start if end > start else 0)
        status = sp.status
        code = status.code
        status_code = STATUS_CODES[code] if 0 <= code < 3 else STATUS_CODES[0]
        status_codes.append(status_code)
        status_messages.append(status.message)
        attrs = _attrs_into(sp.attributes, sp_keys, sp_vals)
        sp_off.append(len(sp_keys))

        input_events: list[tuple[int, dict[str, Any]]] = []
        part_events: list[EventRecord] = []  # and GenAI content events: what the row derivation reads
        for e in sp.events:
            name = e.name
            time_ns = e.time_unix_nano
            ev_ts.append(time_ns)
            ev_names.append(name)
            ev_attrs = _attrs_into(e.attributes, ev_keys, ev_vals)
            ev_map_off.append(len(ev_keys))
            if name == input_event:
                input_events.append((time_ns, ev_attrs))
            elif name == part_event or name in content_events:
                part_events.append(EventRecord(name, time_ns, ev_attrs))
        ev_off.append(len(ev_names))
        for lk in sp.links:
            l_tid.append(lk.trace_id.hex())
            l_sid.append(lk.span_id.hex())
            l_ts.append(lk.trace_state)
            _attrs_into(lk.attributes, l_keys, l_vals)
            l_map_off.append(len(l_keys))
        l_off.append(len(l_tid))

        source = attempt_kind(attrs, sp.name)
        if source is None:
            continue
        # Only what the row derivation reads; events other than input/part events are not needed.
        record = SpanRecord(
            trace_id=trace_id, span_id=span_id, parent_span_id=parent_ids[-1], trace_state="", name=sp.name, kind="",
            start_ns=start, end_ns=end, status_code=status_code, status_message=status.message,
            attributes=attrs, resource_attributes=resource, events=part_events,
            dropped_attributes=sp.dropped_attributes_count, dropped_events=sp.dropped_events_count,
        )  # fmt: skip
        row = attempt_row(record, source)
        attempt_id = row["attempt_id"]
        attempts.append(row)
        if source == SOURCE_OTEL_INPUTS:
            fast = _fast_inputs(input_events, attempt_id, start or None)
            if fast is not None:
                inputs.extend(fast)
                finish_coverage(row, record, len(fast), 0)
            else:
                events = [EventRecord(input_event, t, a) for t, a in input_events]
                slow, malformed = input_rows(_with_events(record, events), attempt_id)
                inputs.extend(tuple(r[c] for c in INPUT_COLUMNS) for r in slow)
                finish_coverage(row, record, len(slow), malformed)
        if part_events:
            parts.extend(part_rows(record, attempt_id))

    if len(set(zip(trace_ids, span_ids))) != len(trace_ids):
        raise Fallback("a span repeats within the chunk")
    if len({a["attempt_id"] for a in attempts}) != len(attempts):
        raise Fallback("an attempt repeats within the chunk")
    if not trace_ids:
        return BatchTables(None, None, None)
    string = pa.string()
    traces = spec_table(TRACES_SCHEMA, {
        "Timestamp": pa.array(start_ts, TS_TYPE),
        "TraceId": pa.array(trace_ids, string),
        "SpanId": pa.array(span_ids, string),
        "ParentSpanId": pa.array(parent_ids, string),
        "TraceState": pa.array(trace_states, string),
        "SpanName": pa.array(names, string),
        "SpanKind": pa.array(kinds, string),
        "ServiceName": pa.array(services, string),
        "ResourceAttributes": map_array(res_off, res_keys, res_vals),
        "ScopeName": pa.array(scope_names, string),
        "ScopeVersion": pa.array(scope_versions, string),
        "SpanAttributes": map_array(sp_off, sp_keys, sp_vals),
        "Duration": pa.array(durations, pa.uint64()),
        "StatusCode": pa.array(status_codes, string),
        "StatusMessage": pa.array(status_messages, string),
        "Events.Timestamp": list_array(ev_off, pa.array(ev_ts, TS_TYPE)),
        "Events.Name": list_array(ev_off, pa.array(ev_names, string)),
        "Events.Attributes": list_array(ev_off, map_array(ev_map_off, ev_keys, ev_vals)),
        "Links.TraceId": list_array(l_off, pa.array(l_tid, string)),
        "Links.SpanId": list_array(l_off, pa.array(l_sid, string)),
        "Links.TraceState": list_array(l_off, pa.array(l_ts, string)),
        "Links.Attributes": list_array(l_off, map_array(l_map_off, l_keys, l_vals)),
    })  # fmt: skip
    return BatchTables(
        traces=traces,
        attempts=rows_table(attempts, ATTEMPT_SCHEMA) if attempts else None,
        inputs=_tuples_table(inputs, INPUT_SCHEMA) if inputs else None,
        parts=rows_table(parts, PART_SCHEMA) if parts else None,
    )


def _with_events(record: SpanRecord, events: Sequence[EventRecord]) -> SpanRecord:
    return SpanRecord(
        trace_id=record.trace_id, span_id=record.span_id, parent_span_id=record.parent_span_id, trace_state="",
        name=record.name, kind="",
        start_ns=record.start_ns, end_ns=record.end_ns, status_code=record.status_code,
        status_message=record.status_message, attributes=record.attributes,
        resource_attributes=record.resource_attributes, events=tuple(events),
        dropped_attributes=record.dropped_attributes, dropped_events=record.dropped_events,
    )  # fmt: skip


def _tuples_table(rows: list[tuple[Any, ...]], schema: pa.Schema) -> pa.Table:
    # zip(*rows) transposes in C; one pa.array per column, no per-row dict.
    columns = list(zip(*rows))
    return pa.table({f.name: pa.array(columns[i], f.type) for i, f in enumerate(schema)}, schema=schema)
