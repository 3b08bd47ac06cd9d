"""exporter: land spans, input events and artifact metadata in DuckDB, in-process or over OTLP.

``DuckDBSpanExporter`` and ``DuckDBLogExporter`` are the SDK exporters behind the ``duckdb`` entry
points (``OTEL_TRACES_EXPORTER=duckdb``, ``OTEL_LOGS_EXPORTER=duckdb``); ``OTLPSink`` is the OTLP
receiver (HTTP and gRPC, traces and logs) behind ``otel-inputs collect``.  Both write through ``DuckDBWriter``.
"""

from __future__ import annotations

from otel_inputs.exporter._configure import configure
from otel_inputs.exporter._encodings.genai import output_tool_calls
from otel_inputs.exporter._db import LockTimeout, connect_with_retry, file_lock, migrate_file, read_connection
from otel_inputs.exporter._exporter import DuckDBSpanExporter
from otel_inputs.exporter._logs import DuckDBLogExporter
from otel_inputs.exporter._sink import OTLPSink, SinkConfig
from otel_inputs.exporter._schema import MIGRATIONS, SCHEMA_VERSION, SchemaError, check_version, migrate, sha256_key_sql
from otel_inputs.exporter._tables import ATTEMPT_TABLE_COLUMNS, TIMESTAMP_COLUMNS
from otel_inputs.exporter._writer import DuckDBWriter, WriteOutcome

__all__ = [
    "ATTEMPT_TABLE_COLUMNS",
    "DuckDBLogExporter",
    "DuckDBSpanExporter",
    "DuckDBWriter",
    "LockTimeout",
    "MIGRATIONS",
    "OTLPSink",
    "SCHEMA_VERSION",
    "SchemaError",
    "SinkConfig",
    "TIMESTAMP_COLUMNS",
    "WriteOutcome",
    "check_version",
    "configure",
    "connect_with_retry",
    "file_lock",
    "migrate",
    "migrate_file",
    "output_tool_calls",
    "read_connection",
    "sha256_key_sql",
]
