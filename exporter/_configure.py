"""``configure()``: one call that makes attempts land in DuckDB, for programs run without the distro.

SDK auto-configuration (``OTEL_TRACES_EXPORTER=duckdb``) runs only under ``opentelemetry-instrument``;
a plain ``python my_agent.py`` with those variables set records into the API's no-op provider and
lands nothing.  ``configure()`` builds the SDK providers the auto-configuration would have built,
with the DuckDB exporters, and (unless told not to) installs them globally.
"""

from __future__ import annotations

import logging
import os
from importlib.metadata import entry_points
from typing import Any

from opentelemetry import _logs, trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

from otel_inputs import names
from otel_inputs.exporter._exporter import DuckDBSpanExporter

_log = logging.getLogger(__name__)

LOGS_EXPORTER_GROUP = "opentelemetry_logs_exporter"
LOGS_EXPORTER_NAME = "duckdb"


def configure(
    db: str | os.PathLike[str] | None = None,
    store: str | os.PathLike[str] | None = None,
    *,
    service_name: str | None = None,
    set_global: bool = True,
    logs: bool = True,
    batch: bool = True,
    resource: Resource | None = None,
) -> TracerProvider:
    """Build a TracerProvider exporting to the DuckDB file ``db`` and return it.

    * ``db`` / ``store``: the DuckDB file and the artifact store (default: ``OTEL_INPUTS_DB`` /
      ``OTEL_INPUTS_STORE``).  With ``set_global``, ``store`` is also put in ``OTEL_INPUTS_STORE``
      when that is unset, so every ``AgentObserver()`` created afterwards snapshots into it.
    * ``logs``: also install a global LoggerProvider with the ``duckdb`` logs exporter, so GenAI log
      events (``EVENT_ONLY`` / ``SPAN_AND_EVENT``) land in ``otel_logs`` (only with ``set_global``;
      otherwise pass your own ``logger_provider=`` to ``AgentObserver``).
    * ``batch``: export from a background thread (the default); ``False`` exports each span as it
      ends, which is simplest for short scripts and tests.
    * ``set_global``: install the providers as the process's global ones.  If a global tracer
      provider is already set, it is left in place and a warning says so; the returned provider
      still works when passed explicitly (``AgentObserver(tracer_provider=...)``).

    The provider flushes at interpreter exit; call ``provider.shutdown()`` to flush earlier.
    """
    attrs: dict[str, Any] = {}
    if service_name is not None:
        attrs["service.name"] = service_name
    res = resource if resource is not None else Resource.create(attrs)
    exporter = DuckDBSpanExporter(db, store=store)
    provider = TracerProvider(resource=res)
    provider.add_span_processor(BatchSpanProcessor(exporter) if batch else SimpleSpanProcessor(exporter))
    # Without set_global nothing could reach a logger provider built here, so none is built.
    logger_provider = _logger_provider(exporter.db_path, res, batch) if logs and set_global else None
    if set_global:
        if store is not None and not os.environ.get(names.ENV_STORE):
            os.environ[names.ENV_STORE] = os.fspath(store)
        if not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
            _log.warning("otel-inputs: configure(): a global tracer provider is already set; it stays, and "
                         "attempts recorded through it do not reach %s unless it exports there", exporter.db_path)
        else:
            trace.set_tracer_provider(provider)
        if logger_provider is not None:
            _logs.set_logger_provider(logger_provider)  # the API keeps an earlier one, and says so
    return provider


def _logger_provider(db_path: Any, res: Resource, batch: bool) -> Any:
    """A LoggerProvider with the ``duckdb`` logs exporter, or None (with a warning) when not installed."""
    found = [ep for ep in entry_points(group=LOGS_EXPORTER_GROUP) if ep.name == LOGS_EXPORTER_NAME]
    if not found:
        _log.warning("otel-inputs: configure(): no %r logs exporter is installed; GenAI log events will not "
                     "land in DuckDB", LOGS_EXPORTER_NAME)
        return None
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import BatchLogRecordProcessor, SimpleLogRecordProcessor

    exporter = found[0].load()(db_path)
    provider = LoggerProvider(resource=res)
    provider.add_log_record_processor(BatchLogRecordProcessor(exporter) if batch else SimpleLogRecordProcessor(exporter))
    return provider


__all__ = ["configure"]
