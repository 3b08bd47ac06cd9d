"""Real SDK log records → ``otel_logs`` rows, converted as the Collector ClickHouse exporter does.

Until the receiver's in-process ``duckdb`` logs exporter is on main, the projection tests land log
records through this: values are stringified by the exporter's own ``stringify`` (pdata
``AsString``), a missing Timestamp falls back to the ObservedTimestamp, ids are lowercase hex.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from otel_inputs.exporter._db import file_lock
from otel_inputs.exporter._spans import SERVICE_NAME_KEY, stringify

_MAP = pa.map_(pa.string(), pa.string())


def _map(attrs: Mapping[str, Any] | None) -> list[tuple[str, str]]:
    return [(k, stringify(v)) for k, v in (attrs or {}).items()]


def log_rows(logs: Sequence[Any]) -> pa.Table:
    """``otel_logs`` rows for SDK ``ReadableLogRecord`` / ``LogData`` objects."""
    rows: dict[str, list[Any]] = {c: [] for c in (
        "Timestamp", "TimestampTime", "TraceId", "SpanId", "TraceFlags", "SeverityText", "SeverityNumber",
        "ServiceName", "Body", "ResourceSchemaUrl", "ResourceAttributes", "ScopeSchemaUrl", "ScopeName",
        "ScopeVersion", "ScopeAttributes", "LogAttributes", "EventName")}  # fmt: skip
    for item in logs:
        record = item.log_record
        resource = getattr(item, "resource", None) or record.resource
        scope = item.instrumentation_scope
        ts = record.timestamp or record.observed_timestamp
        service = resource.attributes.get(SERVICE_NAME_KEY) if resource is not None else None
        rows["Timestamp"].append(ts)
        rows["TimestampTime"].append(ts // 1000)
        rows["TraceId"].append(format(record.trace_id, "032x") if record.trace_id else "")
        rows["SpanId"].append(format(record.span_id, "016x") if record.span_id else "")
        rows["TraceFlags"].append(int(record.trace_flags or 0))
        rows["SeverityText"].append(record.severity_text or "")
        rows["SeverityNumber"].append(record.severity_number.value if record.severity_number else 0)
        rows["ServiceName"].append(service if isinstance(service, str) else "")
        rows["Body"].append(stringify(record.body) if record.body is not None else "")
        rows["ResourceSchemaUrl"].append(getattr(resource, "schema_url", "") or "")
        rows["ResourceAttributes"].append(_map(resource.attributes if resource is not None else None))
        rows["ScopeSchemaUrl"].append((scope.schema_url or "") if scope is not None else "")
        rows["ScopeName"].append(scope.name if scope is not None else "")
        rows["ScopeVersion"].append((scope.version or "") if scope is not None else "")
        rows["ScopeAttributes"].append(_map(getattr(scope, "attributes", None)))
        rows["LogAttributes"].append(_map(record.attributes))
        rows["EventName"].append(record.event_name or "")
    types = {"Timestamp": pa.timestamp("ns"), "TimestampTime": pa.timestamp("us"), "TraceFlags": pa.uint8(),
             "SeverityNumber": pa.uint8(), "ResourceAttributes": _MAP, "ScopeAttributes": _MAP,
             "LogAttributes": _MAP}  # fmt: skip
    return pa.table({c: pa.array(v, types.get(c, pa.string())) for c, v in rows.items()})


def land_logs(db: Path, logs: Sequence[Any]) -> None:
    """Insert the log records into the (already migrated) database, under the writers' lock."""
    table = log_rows(logs)
    with file_lock(db, exclusive=True, timeout_s=10):
        con = duckdb.connect(str(db))
        try:
            con.register("_logs", table)
            cols = ", ".join(f'"{c}"' for c in table.column_names)
            con.execute(f"INSERT INTO otel_logs ({cols}) SELECT {cols} FROM _logs")
        finally:
            con.close()
