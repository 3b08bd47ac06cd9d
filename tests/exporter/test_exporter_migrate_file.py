"""migrate_file: lock, connect, migrate and close one DuckDB file, on real files and a real lock holder."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

from otel_inputs.exporter import MIGRATIONS, SCHEMA_VERSION, LockTimeout, SchemaError, file_lock, migrate_file
from otel_inputs.exporter.cli import main

ROOT = Path(__file__).resolve().parents[2]

# Another process holding the writers' exclusive sidecar lock until its stdin closes.
_HOLDER = textwrap.dedent(
    """
    import sys
    from otel_inputs.exporter import file_lock
    with file_lock(sys.argv[1], exclusive=True, timeout_s=10):
        print("held", flush=True)
        sys.stdin.read()
    """
)


def _applied(db: Path) -> list[tuple[int, str, object]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute("SELECT version, name, applied_at FROM otel_inputs_schema ORDER BY version").fetchall()
    finally:
        con.close()


def _lock_is_free(db: Path) -> bool:
    try:
        with file_lock(db, exclusive=True, timeout_s=0):
            return True
    except LockTimeout:
        return False


def _future(db: Path) -> list[tuple[int, str, object]]:
    migrate_file(db)
    con = duckdb.connect(str(db))
    try:
        con.execute("INSERT INTO otel_inputs_schema VALUES (?, 'from_the_future', now())", [SCHEMA_VERSION + 1])
    finally:
        con.close()
    return _applied(db)


def test_a_fresh_file_is_created_at_the_current_schema(tmp_path: Path) -> None:
    """A path with no file becomes a database holding every migration, and the lock is released after."""
    db = tmp_path / "fresh.duckdb"
    assert migrate_file(db) == SCHEMA_VERSION
    assert [(v, name) for v, name, _ in _applied(db)] == [(m.version, m.name) for m in MIGRATIONS]
    assert _lock_is_free(db)


def test_an_already_migrated_file_is_left_as_it_is(tmp_path: Path) -> None:
    """A second call on a migrated file returns the same version and applies nothing again."""
    db = tmp_path / "twice.duckdb"
    migrate_file(db)
    before = _applied(db)
    assert migrate_file(db) == SCHEMA_VERSION
    assert _applied(db) == before  # same rows, same applied_at: nothing re-ran


def test_a_file_locked_by_another_process_times_out(tmp_path: Path) -> None:
    """While another process holds the exclusive lock, migrate_file raises LockTimeout and leaves no database."""
    db = tmp_path / "held.duckdb"
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, str(db)], cwd=ROOT, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE)  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == b"held"
        with pytest.raises(LockTimeout, match="could not lock"):
            migrate_file(db, timeout_s=0.3)
        assert not db.exists()
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=10)
    assert migrate_file(db) == SCHEMA_VERSION  # the holder gone, the same call succeeds


def test_a_newer_schema_file_is_refused_unchanged(tmp_path: Path) -> None:
    """A file from a newer otel-inputs raises SchemaError, keeps its schema rows, and the lock is released."""
    db = tmp_path / "newer.duckdb"
    before = _future(db)
    with pytest.raises(SchemaError, match="newer than this otel-inputs"):
        migrate_file(db)
    assert _applied(db) == before
    assert _lock_is_free(db)


def test_view_refuses_a_newer_schema_file_before_serving(tmp_path: Path) -> None:
    """`otel-inputs view --db` on a newer-schema file exits with the SchemaError's message and serves nothing."""
    db = tmp_path / "newer.duckdb"
    _future(db)
    result = CliRunner().invoke(main, ["view", "--db", str(db)])
    assert result.exit_code == 1
    assert "newer than this otel-inputs understands" in result.output
    assert "viewer on" not in result.output
