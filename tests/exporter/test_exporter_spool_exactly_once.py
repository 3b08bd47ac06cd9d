"""Spooled batches land exactly once: a checkpoint failing after a durable COMMIT while the spool
drains must not land an entry's log records (which have no key) a second time."""

from __future__ import annotations

from pathlib import Path

import pytest
from exporter_helpers import query
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor

from otel_inputs.exporter._db import SINK_WRITER_SETTINGS, file_lock
from otel_inputs.exporter._logs import logs_batch
from otel_inputs.exporter._writer import DuckDBWriter

pytestmark = pytest.mark.timeout(300)


def test_spool_drain_whose_checkpoint_fails_lands_no_log_record_twice(db_path: Path,
                                                                       caplog: pytest.LogCaptureFixture) -> None:  # fmt: skip
    """40 spooled batches of 1 MiB log records drained under a 24 MB pool (the sink's before it kept its connection): checkpoints fail after durable COMMITs, yet each record lands once."""
    memory = InMemoryLogRecordExporter()
    provider = LoggerProvider()
    provider.add_log_record_processor(SimpleLogRecordProcessor(memory))
    logger = provider.get_logger("t")
    writer = DuckDBWriter(db_path, settings={**SINK_WRITER_SETTINGS, "memory_limit": "24MB"}, lock_timeout_s=0.1)
    assert writer.drain_spool()  # creates nothing; the file is made by the first write below
    assert writer.write_tables(logs_batch(encode_logs([]))).error is None
    with file_lock(db_path, exclusive=True, timeout_s=5):  # another writer holds the file: every batch spools
        for i in range(40):
            memory.clear()
            logger.emit(body=f"{i:04d}" + "x" * (1 << 20))
            outcome = writer.write_tables(logs_batch(encode_logs(memory.get_finished_logs())))
            assert outcome.error is not None and outcome.spilled == 0 and not outcome.dropped
    provider.shutdown()
    assert len(writer.spooled_batches()) == 40
    for _ in range(20):  # each drain round lands up to drain_limit entries; a failed checkpoint ends a round
        if writer.drain_spool():
            break
    assert writer.spooled_batches() == []
    assert "not landed" in caplog.text or "reopening the database" in caplog.text  # a checkpoint did fail
    assert query(db_path, 'SELECT count(*), count(DISTINCT left("Body", 4)) FROM otel_logs') == [(40, 40)]
