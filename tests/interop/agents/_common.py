"""What every interop agent script shares: its config from argv, and stock OpenTelemetry providers.

Each script runs in its own process (instrumentors patch modules globally, and an SDK provider
is set up once per process), reads one JSON config from ``argv[1]`` and prints one JSON result
line on stdout.  Traces and logs go where the config says:

- ``"grpc"``: the stock ``opentelemetry-exporter-otlp-proto-grpc`` span and log exporters;
- ``"http"``: the stock ``opentelemetry-exporter-otlp-proto-http`` span and log exporters;
- ``"duckdb"``: the in-process ``duckdb`` exporters, found through their entry points exactly as
  ``OTEL_TRACES_EXPORTER=duckdb`` / ``OTEL_LOGS_EXPORTER=duckdb`` would find them.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any

from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor, LogRecordExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter


def config() -> dict[str, Any]:
    return json.loads(sys.argv[1])


def emit_result(result: dict[str, Any]) -> None:
    print(json.dumps(result), flush=True)


def _entry_point(group: str, name: str) -> Any:
    found = [ep for ep in entry_points(group=group) if ep.name == name]
    if not found:
        raise SystemExit(f"no {group} entry point named {name!r} is installed")
    return found[0].load()


def span_exporter(cfg: dict[str, Any]) -> SpanExporter:
    transport = cfg["transport"]
    if transport == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as Grpc

        return Grpc(endpoint=cfg["grpc_endpoint"], insecure=True)
    if transport == "http":
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as Http

        return Http(endpoint=cfg["http_endpoint"] + "/v1/traces")
    if transport == "duckdb":
        return _entry_point("opentelemetry_traces_exporter", "duckdb")()
    raise SystemExit(f"unknown transport {transport!r}")


def log_exporter(cfg: dict[str, Any]) -> LogRecordExporter:
    transport = cfg["transport"]
    if transport == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter as Grpc

        return Grpc(endpoint=cfg["grpc_endpoint"], insecure=True)
    if transport == "http":
        from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter as Http

        return Http(endpoint=cfg["http_endpoint"] + "/v1/logs")
    if transport == "duckdb":
        return _entry_point("opentelemetry_logs_exporter", "duckdb")()
    raise SystemExit(f"unknown transport {transport!r}")


@dataclass
class Providers:
    tracer: TracerProvider
    logger: LoggerProvider

    def shutdown(self) -> None:
        # Spans first: a log event's span must not arrive later than the event only by accident.
        self.tracer.force_flush()
        self.logger.force_flush()
        self.tracer.shutdown()
        self.logger.shutdown()


def providers(cfg: dict[str, Any]) -> Providers:
    resource = Resource.create({"service.name": cfg["service"]})
    tp = TracerProvider(resource=resource)
    tp.add_span_processor(BatchSpanProcessor(span_exporter(cfg), schedule_delay_millis=200))
    lp = LoggerProvider(resource=resource)
    if cfg.get("logs", True):  # a run with content on spans only has no log records to send
        lp.add_log_record_processor(BatchLogRecordProcessor(log_exporter(cfg), schedule_delay_millis=200))
    return Providers(tp, lp)
