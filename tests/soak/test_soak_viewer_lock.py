"""The viewer's read path under a writer batch: the deterministic form of what the soak observes.

A writer process holds the sidecar lock and a read-write DuckDB connection for one batch, exactly
as ``DuckDBWriter._commit`` does.  A reader that follows the sidecar-lock discipline
(docs/architecture.md: "writers and the viewer share the file with a sidecar lock and short-lived
connections") waits for the batch and then reads.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from otel_inputs.exporter import migrate_file
from otel_inputs.exporter._db import read_connection

ROOT = Path(__file__).resolve().parents[2]
HOLD_S = 1.5

_HOLDER = textwrap.dedent(
    """
    import sys, time, duckdb
    from otel_inputs.exporter._db import file_lock
    db = sys.argv[1]
    with file_lock(db, exclusive=True, timeout_s=10):
        con = duckdb.connect(db)
        print("held", flush=True)
        time.sleep(float(sys.argv[2]))
        con.close()
    """
)


def _db(tmp_path: Path) -> Path:
    db = tmp_path / "v.duckdb"
    migrate_file(db)
    return db


def _hold_batch(db: Path) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", _HOLDER, str(db), str(HOLD_S)], cwd=ROOT,
                            env=dict(os.environ, PYTHONPATH=str(ROOT)), stdout=subprocess.PIPE)
    assert proc.stdout.readline().strip() == b"held"  # type: ignore[union-attr]
    return proc


@pytest.mark.timeout(60)
def test_soak_sidecar_reader_waits_for_a_writer_batch(tmp_path: Path) -> None:
    """A reader taking the shared sidecar lock waits out a writer's batch and then reads the file."""
    db = _db(tmp_path)
    proc = _hold_batch(db)
    try:
        t0 = time.monotonic()
        with read_connection(db, timeout_s=10) as con:
            assert con.execute("SELECT count(*) FROM otel_traces").fetchone()[0] == 0
        assert time.monotonic() - t0 >= HOLD_S / 3  # it really waited for the writer
    finally:
        proc.wait(timeout=20)


@pytest.mark.timeout(60)
def test_soak_viewer_read_waits_for_a_writer_batch(tmp_path: Path) -> None:
    """The viewer's own per-refresh connection waits out a writer's batch instead of failing."""
    from otel_inputs.viewer._queries import read_only

    db = _db(tmp_path)
    proc = _hold_batch(db)
    try:
        with read_only(db) as con:
            assert con.rows("SELECT count(*) FROM otel_traces")[0][0] == 0
    finally:
        proc.wait(timeout=20)
