"""A database file first created while the disk is full: once space returns, every batch lands.

Real full disks: a small tmpfs (root only, as the sink's full-disk tests), filled with a real file.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from exporter_helpers import SpanFactory, query
from tmpfs import mount_tmpfs, unmount
from opentelemetry.sdk.trace.export import SpanExportResult

from otel_inputs.exporter import DuckDBSpanExporter, migrate_file

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A real 8 MiB tmpfs (needs root to mount)."""
    directory = tmp_path / "disk"
    mount_tmpfs(directory, "8m")
    try:
        yield directory
    finally:
        unmount(directory)


def fill(directory: Path, leave: int) -> Path:
    """Fill the disk with a real file, leaving ``leave`` bytes free."""
    st = os.statvfs(directory)
    filler = directory / "filler"
    with open(filler, "wb") as fh:
        fh.write(b"\0" * max(st.f_bavail * st.f_frsize - leave, 0))
    return filler


@pytest.mark.parametrize("leave", [0, 8192], ids=["no-room", "part-of-a-header"])
def test_database_created_on_a_full_disk_recovers_once_space_returns(small_disk: Path, leave: int) -> None:
    """An agent loop whose first export meets a full disk: no unusable file is left, and every later batch lands (none stays spooled)."""
    db = small_disk / "agents.duckdb"
    spans = SpanFactory()
    exporter = DuckDBSpanExporter(db, lock_timeout_s=2)
    filler = fill(small_disk, leave)
    first = exporter.export([spans.attempt(0, items=1)])
    assert first is SpanExportResult.FAILURE  # nothing could be written: it says so
    filler.unlink()  # space returns
    results = [exporter.export([spans.attempt(i, items=1)]) for i in range(1, 40)]
    exporter.shutdown()
    spans.provider.shutdown()
    assert results == [SpanExportResult.SUCCESS] * 39
    landed = {r[0] for r in query(db, "SELECT attempt_id FROM agent_attempts")}
    assert landed >= {f"att-{i}" for i in range(1, 40)}
    assert exporter.writer.spooled_batches() == []
    dropped = dict(query(db, "SELECT metric, value FROM exporter_health")).get("spans_dropped", 0)
    assert "att-0" in landed or dropped == 1  # the first batch: spooled and landed, or counted lost
    assert not list(small_disk.glob(".agents.duckdb.creating-*"))


@pytest.mark.parametrize("content", [b"", b"\0" * 8192], ids=["empty", "zeros"])
def test_unfinished_creation_left_by_an_older_writer_is_replaced(tmp_path: Path, content: bytes) -> None:
    """An empty or all-zero file shorter than DuckDB's headers (an older version's cut-short creation) is replaced by a real database."""
    db = tmp_path / "left.duckdb"
    db.write_bytes(content)
    assert migrate_file(db) > 0
    spans = SpanFactory()
    exporter = DuckDBSpanExporter(db)
    assert exporter.export([spans.attempt(1, items=1)]) is SpanExportResult.SUCCESS
    exporter.shutdown()
    spans.provider.shutdown()
    assert query(db, "SELECT attempt_id FROM agent_attempts") == [("att-1",)]


def test_a_foreign_small_file_is_never_replaced(tmp_path: Path) -> None:
    """A small file that is not a cut-short DuckDB creation (someone else's data) is left alone and refused."""
    db = tmp_path / "notes.duckdb"
    db.write_bytes(b"my notes, not a database\n")
    spans = SpanFactory()
    exporter = DuckDBSpanExporter(db, lock_timeout_s=1)
    assert exporter.export([spans.attempt(1, items=1)]) is SpanExportResult.FAILURE
    exporter.shutdown()
    spans.provider.shutdown()
    assert db.read_bytes() == b"my notes, not a database\n"
    assert exporter.writer.spooled_batches()  # kept, not lost
