"""exporter: land spans, input events and artifact metadata in DuckDB, in-process or over OTLP.

``DuckDBSpanExporter`` is the SDK exporter behind the ``duckdb`` entry point
(``OTEL_TRACES_EXPORTER=duckdb``); ``OTLPSink`` is the OTLP/HTTP receiver behind
``otel-inputs collect``.  Both write through ``DuckDBWriter``.
"""

from __future__ import annotations

from exporter._db import read_connection
from exporter._exporter import DuckDBSpanExporter
from exporter._sink import OTLPSink, SinkConfig
from exporter._schema import SCHEMA_VERSION, SchemaError, migrate
from exporter._writer import DuckDBWriter, WriteOutcome

__all__ = [
    "SCHEMA_VERSION",
    "DuckDBSpanExporter",
    "DuckDBWriter",
    "OTLPSink",
    "SchemaError",
    "SinkConfig",
    "WriteOutcome",
    "migrate",
    "read_connection",
]
