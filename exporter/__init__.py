"""exporter: land spans, input events and artifact metadata in DuckDB, in-process or over OTLP.

``DuckDBSpanExporter`` and ``DuckDBLogExporter`` are the SDK exporters behind the ``duckdb`` entry
points (``OTEL_TRACES_EXPORTER=duckdb``, ``OTEL_LOGS_EXPORTER=duckdb``); ``OTLPSink`` is the OTLP
receiver (HTTP and gRPC, traces and logs) behind ``otel-inputs collect``.  Both write through ``DuckDBWriter``.
"""

from __future__ import annotations

from otel_inputs.exporter._configure import configure
from otel_inputs.exporter._db import read_connection
from otel_inputs.exporter._exporter import DuckDBSpanExporter
from otel_inputs.exporter._logs import DuckDBLogExporter
from otel_inputs.exporter._sink import OTLPSink, SinkConfig
from otel_inputs.exporter._schema import SCHEMA_VERSION, SchemaError, migrate
from otel_inputs.exporter._writer import DuckDBWriter, WriteOutcome

__all__ = [
    "SCHEMA_VERSION",
    "DuckDBLogExporter",
    "DuckDBSpanExporter",
    "DuckDBWriter",
    "OTLPSink",
    "SchemaError",
    "SinkConfig",
    "WriteOutcome",
    "configure",
    "migrate",
    "read_connection",
]
