"""What the in-process span and log exporters share: the writer each owns, its shutdown and flush.

Both are built by the SDK with no arguments (``OTEL_TRACES_EXPORTER=duckdb``,
``OTEL_LOGS_EXPORTER=duckdb``), so the file comes from ``OTEL_INPUTS_DB`` when not given.  Neither
ever raises into the application, at shutdown or flush either.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from otel_inputs import names

from otel_inputs.exporter._writer import DuckDBWriter

_log = logging.getLogger(__name__)

DEFAULT_DB = "otel-inputs.duckdb"


class OwnedWriter:
    """The lifecycle half of an exporter: put it first among the bases so its shutdown and
    force_flush are the ones the SDK calls."""

    writer: DuckDBWriter
    _shutdown: bool

    def _open_writer(self, db_path: str | os.PathLike[str] | None, *, what: str, source: str | None,
                     source_prefix: str, lock_timeout_s: float) -> None:  # fmt: skip
        """Own a writer of ``db_path``, else ``OTEL_INPUTS_DB``, else ./otel-inputs.duckdb (said in a
        warning naming ``what`` is written there)."""
        env_db = os.environ.get(names.ENV_DB)
        path = db_path if db_path is not None else (env_db or DEFAULT_DB)
        if db_path is None and not env_db:
            _log.warning("otel-inputs: %s not set; writing %s to %s", names.ENV_DB, what, os.path.abspath(path))
        self.writer = DuckDBWriter(path, source=source, source_prefix=source_prefix, lock_timeout_s=lock_timeout_s)
        self._shutdown = False

    @property
    def db_path(self) -> Path:
        return self.writer.db_path

    def shutdown(self) -> None:
        # Idempotent; this writer (keep_open off) holds no open connection between batches.  A batch spilled while
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
