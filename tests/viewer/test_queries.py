"""The viewer's SQL over short-lived read-only connections to real DuckDB files."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import duckdb
import pytest
from viewer_fixture import WIDE_RUN, ViewerFixture

from otel_inputs.viewer._queries import (
    NULL_VALUE,
    DbUnavailable,
    exporter_health,
    list_attempts,
    list_runs,
    load_attempt,
    read_only,
    run_facets,
)
from otel_inputs.viewer._records import AttemptFilters


def test_missing_database_is_a_clear_message(tmp_path) -> None:
    """A database file that does not exist yet reads as a sentence, not a traceback."""
    with pytest.raises(DbUnavailable, match="No database nope.duckdb yet"):
        with read_only(tmp_path / "nope.duckdb"):
            pass


def test_newer_schema_is_refused_with_its_reason(tmp_path) -> None:
    """A database written by a newer otel-inputs is refused with the schema explanation."""
    db = tmp_path / "new.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE otel_inputs_schema (version INTEGER, name VARCHAR, applied_at TIMESTAMP)")
    con.execute("INSERT INTO otel_inputs_schema VALUES (999, 'future', now())")
    con.close()
    with pytest.raises(DbUnavailable, match="newer than this otel-inputs understands"):
        with read_only(db):
            pass


def test_locked_database_is_reported_as_busy(viewer_fixture: ViewerFixture, tmp_path) -> None:
    """While another process holds the write lock the viewer says so instead of crashing."""
    db = tmp_path / "locked.duckdb"
    db.write_bytes(viewer_fixture.db_path.read_bytes())
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import duckdb, sys, time
            con = duckdb.connect({str(db)!r})
            print("locked", flush=True)
            sys.stdin.read()
        """)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(DbUnavailable, match="locked by a writer"):
            with read_only(db):
                pass
    finally:
        holder.stdin.close()
        holder.wait(timeout=10)


def test_viewer_releases_the_file_so_a_writer_can_open_it(viewer_fixture: ViewerFixture, tmp_path) -> None:
    """After a page's queries the connection is closed: another process can open the file for writing."""
    db = tmp_path / "copy.duckdb"
    db.write_bytes(viewer_fixture.db_path.read_bytes())
    with read_only(db) as con:
        assert load_attempt(con, viewer_fixture.ids["review"]) is not None
    code = f"import duckdb; c = duckdb.connect({str(db)!r}); c.execute('INSERT INTO exporter_health VALUES (1,2,3,now())'); c.close()"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=30)


def test_runs_and_attempt_list_filters_sort_and_total(viewer_fixture: ViewerFixture) -> None:
    """Runs list newest first; the attempt list filters by phase/send kind/coverage and sorts by time."""
    with read_only(viewer_fixture.db_path) as con:
        runs = list_runs(con)
        assert [r.run_id for r in runs] == [WIDE_RUN, viewer_fixture.run_id, viewer_fixture.legacy_run_id]
        page = list_attempts(con, viewer_fixture.run_id)
        assert page.total == 5 and [r.attempt_id for r in page.rows] == ["att-001", "att-002", "att-003", "att-004", "att-005"]
        newest = list_attempts(con, viewer_fixture.run_id, AttemptFilters(newest_first=True), limit=2)
        assert [r.attempt_id for r in newest.rows] == ["att-005", "att-004"] and newest.total == 5
        impl = list_attempts(con, viewer_fixture.run_id, AttemptFilters(phase="implement", send_kind="parse_retry"))
        assert [r.attempt_id for r in impl.rows] == ["att-002"] and impl.total == 1
        part = list_attempts(con, viewer_fixture.run_id, AttemptFilters(coverage="partial"))
        assert [r.attempt_id for r in part.rows] == ["att-005"]
        legacy = list_attempts(con, viewer_fixture.legacy_run_id, AttemptFilters(send_kind=NULL_VALUE))
        assert legacy.total == 3 and all(r.is_legacy for r in legacy.rows)
        facets = run_facets(con, viewer_fixture.legacy_run_id)
        assert facets.send_kinds == (None,) and facets.phases == ("implement", "review")


def test_exporter_health_reports_latest_counters(viewer_fixture: ViewerFixture) -> None:
    """The exporter's drop and spill counters are read for display."""
    with read_only(viewer_fixture.db_path) as con:
        health = {h.metric: h.value for h in exporter_health(con)}
    assert health == {"spans_spilled": 3, "spans_dropped": 0, "batches_failed": 1}
