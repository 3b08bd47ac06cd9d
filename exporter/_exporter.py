"""``DuckDBSpanExporter``: the in-process SpanExporter behind the ``duckdb`` entry point.

``OTEL_TRACES_EXPORTER=duckdb`` makes the SDK construct it with no arguments, so every setting
also comes from the environment (``OTEL_INPUTS_DB``, ``OTEL_INPUTS_STORE``).  It never raises into
the application: failures are logged and reported as ``FAILURE``; a batch that cannot be written
is spilled and counted, never silently lost.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from otel_inputs import names

from otel_inputs.exporter._manifests import manifests_for
from otel_inputs.exporter._rows import attempt_kind
from otel_inputs.exporter._spans import SpanRecord, from_readable
from otel_inputs.exporter._writer import DuckDBWriter, WriteOutcome

_log = logging.getLogger(__name__)

DEFAULT_DB = "otel-inputs.duckdb"


class DuckDBSpanExporter(SpanExporter):
    """Lands finished spans in ``otel_traces`` plus the typed attempt/input/artifact tables."""

    def __init__(
        self,
        db_path: str | os.PathLike[str] | None = None,
        *,
        store: str | os.PathLike[str] | None = None,
        source: str | None = None,
        lock_timeout_s: float = 10.0,
    ) -> None:
        env_db = os.environ.get(names.ENV_DB)
        path = db_path if db_path is not None else (env_db or DEFAULT_DB)
        if db_path is None and not env_db:
            _log.warning("otel-inputs: %s not set; writing spans to %s", names.ENV_DB, os.path.abspath(path))
        env_store = os.environ.get(names.ENV_STORE)
        self.store: Path | None = Path(store) if store is not None else (Path(env_store) if env_store else None)
        self.writer = DuckDBWriter(path, source=source, source_prefix="exporter", lock_timeout_s=lock_timeout_s)
        self._shutdown = False

    @property
    def db_path(self) -> Path:
        return self.writer.db_path

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if self._shutdown:
            return SpanExportResult.FAILURE
        try:
            outcome = self._export(spans)
        except Exception:  # noqa: BLE001 - the application must never see an exporter error
            _log.exception("otel-inputs: exporting %d spans failed", len(spans))
            return SpanExportResult.FAILURE
        # A spilled batch is durable and will be drained, but it is not in the database yet.
        return SpanExportResult.SUCCESS if outcome.written or not (outcome.spilled or outcome.dropped) else SpanExportResult.FAILURE

    def _export(self, spans: Sequence[ReadableSpan]) -> WriteOutcome:
        records: list[SpanRecord] = []
        for span in spans:
            try:
                records.append(from_readable(span))
            except Exception:  # noqa: BLE001 - one unconvertible span must not sink its batch
                _log.exception("otel-inputs: could not convert span %r; dropped", getattr(span, "name", "?"))
                self.writer.count("spans_dropped", 1)
        manifests: list[dict[str, Any]] = []
        if self.store is not None:
            ids = [a for r in records if attempt_kind(r.attributes) and isinstance(a := r.attributes.get(names.ATTEMPT_ID), str)]
            manifests = manifests_for(self.store, ids) if ids else []
        if not records and not manifests:
            return WriteOutcome()
        return self.writer.write_spans(records, manifests=manifests)

    def shutdown(self) -> None:
        # Idempotent; the writer holds no open connection between batches.  A batch spilled while
        # the file was busy is landed now if possible, else it waits in the spool for the next writer.
        if self._shutdown:
            return
        self._shutdown = True
        try:
            self.writer.drain_spool()
        except Exception:  # noqa: BLE001 - shutdown never raises into the application
            _log.exception("otel-inputs: draining the spool at shutdown failed")

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        # export() is synchronous; what flushing can still do is land spilled batches.
        try:
            return self.writer.drain_spool()
        except Exception:  # noqa: BLE001
            return False


__all__ = ["DuckDBSpanExporter"]
