"""Shutdown and flush of both in-process exporters (spans and log records), on real DuckDB files."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from exporter_helpers import SpanFactory, memory_providers, query

from otel_inputs.exporter import DuckDBLogExporter, DuckDBSpanExporter, file_lock


def _log_records(first: int, n: int = 1) -> list[Any]:
    _, _, provider, memory = memory_providers()
    logger = provider.get_logger("tests.lifecycle")
    for i in range(first, first + n):
        logger.emit(timestamp=1764460800000000000 + i, body=f"record {i}", event_name="gen_ai.user.message")
    records = list(memory.get_finished_logs())
    provider.shutdown()
    return records


# Each kind: (make the exporter, one batch numbered i, the table its rows land in).
Kind = tuple[Callable[..., Any], Callable[[SpanFactory, int], list[Any]], str]
KINDS: dict[str, Kind] = {
    "spans": (DuckDBSpanExporter, lambda spans, i: [spans.attempt(i)], "agent_attempts"),
    "logs": (DuckDBLogExporter, lambda spans, i: _log_records(i), "otel_logs"),
}


@pytest.fixture(params=sorted(KINDS))
def kind(request: pytest.FixtureRequest) -> Kind:
    return KINDS[request.param]


def test_shutdown_twice_then_export_fails_without_raising(kind: Kind, spans: SpanFactory, db_path: Path) -> None:
    """shutdown() may be called twice; an export after it returns FAILURE and writes nothing; flush still answers."""
    make, batch, table = kind
    exporter = make(db_path)
    assert exporter.export(batch(spans, 0)).name == "SUCCESS"
    exporter.shutdown()
    exporter.shutdown()
    assert exporter.export(batch(spans, 1)).name == "FAILURE"
    assert exporter.force_flush() is True
    assert query(db_path, f"SELECT count(*) FROM {table}") == [(1,)]


@contextlib.contextmanager
def _held_after_a_spill(kind: Kind, spans: SpanFactory, db_path: Path) -> Iterator[Any]:
    """An exporter that landed one batch and spilled a second because another writer holds the file (still held)."""
    make, batch, _ = kind
    exporter = make(db_path, lock_timeout_s=0.1)
    assert exporter.export(batch(spans, 0)).name == "SUCCESS"
    with file_lock(db_path, exclusive=True, timeout_s=5):
        assert exporter.export(batch(spans, 1)).name == "FAILURE"  # spilled: durable, not yet in the database
        yield exporter


def test_a_batch_spilled_while_locked_lands_at_shutdown(kind: Kind, spans: SpanFactory, db_path: Path) -> None:
    """A batch spilled while another writer held the file is not flushed while it still holds it, and lands at shutdown."""
    with _held_after_a_spill(kind, spans, db_path) as exporter:
        assert exporter.force_flush() is False
    assert len(exporter.writer.spooled_batches()) == 1
    exporter.shutdown()
    assert exporter.writer.spooled_batches() == []
    assert query(db_path, f"SELECT count(*) FROM {kind[2]}") == [(2,)]


def test_shutdown_while_locked_keeps_the_spool_and_does_not_raise(kind: Kind, spans: SpanFactory, db_path: Path) -> None:
    """Shutdown while the file stays held returns normally; the spilled batch waits in the spool for the next writer."""
    with _held_after_a_spill(kind, spans, db_path) as exporter:
        exporter.shutdown()
    assert len(exporter.writer.spooled_batches()) == 1
    make, _, table = kind
    successor = make(db_path)
    assert successor.force_flush() is True  # the next writer of the file lands it
    assert query(db_path, f"SELECT count(*) FROM {table}") == [(2,)]
    successor.shutdown()
