"""OTLP log records → ``otel_logs`` rows (the Collector ClickHouse exporter's columns), and the
in-process ``duckdb`` log exporter.

One conversion serves every way in: the sink's ``/v1/logs`` (protobuf or OTLP/JSON) and gRPC
LogsService hand it the request, and :class:`DuckDBLogExporter` encodes the SDK's records with the
stock OTLP encoder first.  As that exporter does: ``Timestamp`` is the record's time, or its
observed time when the record has none; ``Body`` and attribute values are pdata ``AsString``
(structured values as JSON text, bytes as base64); ids as lowercase hex, empty when the record has
no trace context.  A record that cannot be stored faithfully (ids of the wrong length, a timestamp
past int64) is rejected alone and counted for ``partial_success``; the rest of its request lands.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence, Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from google.protobuf.message import DecodeError as _PbDecodeError
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsPartialSuccess,
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord
from opentelemetry.sdk._logs import export as _sdk_logs_export

from otel_inputs.exporter._arrow import LOGS_SCHEMA, BatchTables, _MapBuilder, spec_table
from otel_inputs.exporter._otlp import (
    DecodeError, Position, _attrs, id_problem, json_ids, json_items, parse_json_as, reply_bytes, value_of,
)  # fmt: skip
from otel_inputs.exporter._owned_writer import OwnedWriter
from otel_inputs.exporter._spans import SERVICE_NAME_KEY, stringify
from otel_inputs.exporter._tables import MAP

_log = logging.getLogger(__name__)

_INT64_MAX = 2**63 - 1
_MAX_ERROR_MESSAGES = 5
_LOG_IDS = (("traceId", "trace_id"), ("spanId", "span_id"))


@dataclass
class CheckedLogs:
    """How many records of a request can be stored, and why the others cannot."""

    accepted: int = 0
    rejected: int = 0
    problems: list[str] = field(default_factory=list)
    skip: set[Position] = field(default_factory=set)

    def reject(self, position: Position, problem: str) -> None:
        self.rejected += 1
        self.skip.add(position)
        if len(self.problems) < _MAX_ERROR_MESSAGES and problem not in self.problems:
            self.problems.append(problem)

    @property
    def error_message(self) -> str:
        return f"{self.rejected} log records rejected: " + "; ".join(self.problems)


def record_problem(rec: LogRecord) -> str | None:
    """Why one log record cannot be stored faithfully, or ``None`` when it can (its ids follow the
    one id rule of :func:`otel_inputs.exporter._otlp.id_problem`; both may be absent)."""
    problem = (id_problem(rec.trace_id, 16, "trace_id", required=False)
               or id_problem(rec.span_id, 8, "span_id", required=False))  # fmt: skip
    if problem is None and max(rec.time_unix_nano, rec.observed_time_unix_nano) > _INT64_MAX:
        problem = "timestamp beyond the int64 nanosecond range"
    return problem


def check_logs(req: ExportLogsServiceRequest, known: dict[Position, str] | None = None) -> CheckedLogs:
    """Count the request's storable records and reject the rest; ``known``: the problems
    :func:`parse_logs_json` found by position (ids that were not hex)."""
    out = CheckedLogs()
    for i, rl in enumerate(req.resource_logs):
        for j, sl in enumerate(rl.scope_logs):
            for k, rec in enumerate(sl.log_records):
                problem = (known.get((i, j, k)) if known else None) or record_problem(rec)
                if problem is None:
                    out.accepted += 1
                else:
                    out.reject((i, j, k), problem)
    return out


def _as_string(v: AnyValue) -> str:
    which = v.WhichOneof("value")
    return v.string_value if which == "string_value" else stringify(value_of(v, which))


def logs_table(req: ExportLogsServiceRequest, skip: AbstractSet[Position] = frozenset()) -> pa.Table | None:
    """The request's storable records as ``otel_logs`` rows, or ``None`` when there are none."""
    cols: dict[str, list[Any]] = {f.name: [] for f in LOGS_SCHEMA if f.name not in _MAP_COLUMNS}
    maps = {c: _MapBuilder() for c in _MAP_COLUMNS}
    for i, rl in enumerate(req.resource_logs):
        resource = _attrs(rl.resource.attributes)
        service = resource.get(SERVICE_NAME_KEY)
        service_name = service if isinstance(service, str) else ("" if service is None else stringify(service))
        for j, sl in enumerate(rl.scope_logs):
            scope_attrs = _attrs(sl.scope.attributes)
            for k, rec in enumerate(sl.log_records):
                if skip and (i, j, k) in skip:
                    continue
                ts = rec.time_unix_nano or rec.observed_time_unix_nano
                cols["Timestamp"].append(ts)
                cols["TimestampTime"].append(ts // 1000 // 1_000_000 * 1_000_000)
                cols["TraceId"].append(rec.trace_id.hex())
                cols["SpanId"].append(rec.span_id.hex())
                cols["TraceFlags"].append(rec.flags & 0xFF)
                cols["SeverityText"].append(rec.severity_text)
                cols["SeverityNumber"].append(max(0, min(int(rec.severity_number), 255)))
                cols["ServiceName"].append(service_name)
                cols["Body"].append(_as_string(rec.body) if rec.HasField("body") else "")
                cols["ResourceSchemaUrl"].append(rl.schema_url)
                cols["ScopeSchemaUrl"].append(sl.schema_url)
                cols["ScopeName"].append(sl.scope.name)
                cols["ScopeVersion"].append(sl.scope.version)
                cols["EventName"].append(rec.event_name)
                maps["ResourceAttributes"].add(resource)
                maps["ScopeAttributes"].add(scope_attrs)
                maps["LogAttributes"].add(_attrs(rec.attributes))
    if not cols["Timestamp"]:
        return None
    arrays = {f.name: maps[f.name].build() if f.name in maps else pa.array(cols[f.name], f.type) for f in LOGS_SCHEMA}
    return spec_table(LOGS_SCHEMA, arrays)


_MAP_COLUMNS = tuple(f.name for f in LOGS_SCHEMA if f.type == MAP.arrow)


def logs_batch(req: ExportLogsServiceRequest, skip: AbstractSet[Position] = frozenset()) -> BatchTables:
    return BatchTables(None, None, None, logs=logs_table(req, skip))


# --- decoding -------------------------------------------------------------------------------------


def parse_logs_protobuf(body: bytes | bytearray) -> ExportLogsServiceRequest:
    try:
        return ExportLogsServiceRequest.FromString(body)
    except (_PbDecodeError, RecursionError, ValueError) as exc:
        raise DecodeError(f"body is not a valid protobuf ExportLogsServiceRequest ({type(exc).__name__})") from None


def _fix_log_ids(doc: Any) -> dict[Position, str]:
    # OTLP/JSON carries ids as hex; the protobuf JSON mapping expects base64.
    problems: dict[Position, str] = {}
    for position, rec in json_items(doc, "resourceLogs", "scopeLogs", "logRecords"):
        problem = json_ids(rec, _LOG_IDS)
        if problem is not None:
            problems[position] = problem
    return problems


def parse_logs_json(body: bytes | bytearray) -> tuple[ExportLogsServiceRequest, dict[Position, str]]:
    """An OTLP/JSON logs body and the records whose ids were not hex (for :func:`check_logs`)."""
    return parse_json_as(body, ExportLogsServiceRequest(), _fix_log_ids)


def logs_response(checked: CheckedLogs | None, *, as_json: bool) -> bytes:
    resp = ExportLogsServiceResponse()
    if checked is not None and checked.rejected:
        resp.partial_success.CopyFrom(
            ExportLogsPartialSuccess(rejected_log_records=checked.rejected, error_message=checked.error_message)
        )
    return reply_bytes(resp, as_json=as_json)


# --- the in-process exporter ---------------------------------------------------------------------

_LogExporterBase: Any = getattr(_sdk_logs_export, "LogRecordExporter", None) or _sdk_logs_export.LogExporter
_LogResult: Any = getattr(_sdk_logs_export, "LogRecordExportResult", None) or _sdk_logs_export.LogExportResult


class DuckDBLogExporter(OwnedWriter, _LogExporterBase):
    """Lands the SDK's log records in ``otel_logs`` (``OTEL_LOGS_EXPORTER=duckdb``, ``OTEL_INPUTS_DB``).

    Records are encoded with the stock OTLP encoder and converted exactly as the sink converts a
    request, so both ways in give the same rows.  Never raises into the application."""

    def __init__(self, db_path: str | os.PathLike[str] | None = None, *, source: str | None = None,
                 lock_timeout_s: float = 10.0) -> None:  # fmt: skip
        self._open_writer(db_path, what="log records", source=source, source_prefix="logs-exporter",
                          lock_timeout_s=lock_timeout_s)  # fmt: skip

    def export(self, batch: Sequence[Any]) -> Any:
        if self._shutdown:
            return _LogResult.FAILURE
        try:
            from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs

            req = encode_logs(list(batch))
            checked = check_logs(req)
            if checked.rejected:
                _log.warning("otel-inputs: %s", checked.error_message)
                self.writer.count("logs_rejected", checked.rejected)
            tables = logs_batch(req, checked.skip)
            if tables.logs is None:
                return _LogResult.SUCCESS
            outcome = self.writer.write_tables(tables)
        except Exception:  # noqa: BLE001 - the application must never see an exporter error
            _log.exception("otel-inputs: exporting %d log records failed", len(batch))
            return _LogResult.FAILURE
        return _LogResult.SUCCESS if outcome.error is None else _LogResult.FAILURE


__all__ = ["DuckDBLogExporter", "CheckedLogs", "check_logs", "logs_batch", "logs_response", "logs_table",
           "parse_logs_json", "parse_logs_protobuf"]  # fmt: skip
