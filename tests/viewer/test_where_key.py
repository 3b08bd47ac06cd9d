"""Where else by SHA-256 through the 8-byte key (migration 13): rows the exporter lands, and rows without a key."""

from __future__ import annotations

import sys
from pathlib import Path

import duckdb
import pytest
from opentelemetry.sdk.trace.export import SpanExportResult

from otel_inputs import names as n
from otel_inputs.exporter import SCHEMA_VERSION, DuckDBSpanExporter, migrate_file
from otel_inputs.viewer._queries import DbUnavailable, read_only, where_else

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "exporter"))
from exporter_helpers import SpanFactory, input_event, packet_attributes  # noqa: E402

SHARED = "ab" * 32
ODD = "not-a-hex-digest"


@pytest.fixture
def spans() -> SpanFactory:
    factory = SpanFactory()
    yield factory
    factory.provider.shutdown()


def _attempt(spans: SpanFactory, i: int, shas: list[str | None]):
    events = [(n.INPUT_EVENT, input_event(i, s, **{n.INPUT_SHA256: sha})) for s, sha in enumerate(shas)]
    return spans.span(packet_attributes(i, items=len(shas)), events)


def test_exporter_rows_carry_the_key_and_every_row_is_found(spans: SpanFactory, tmp_path: Path) -> None:
    """Keyed rows (landed by the exporter) and unkeyed rows (landed before migration 13) are both found, exactly once."""
    db = tmp_path / "k.duckdb"
    exporter = DuckDBSpanExporter(db)
    assert exporter.export([_attempt(spans, 0, [SHARED, ODD, None]), _attempt(spans, 1, [SHARED])]) \
        is SpanExportResult.SUCCESS
    con = duckdb.connect(str(db))  # the exporter migrated it
    try:
        keys = dict(con.execute("SELECT coalesce(sha256, 'NULL'), sha256_key FROM agent_attempt_inputs").fetchall())
        assert keys == {SHARED: 0xABABABABABABABAB, ODD: 0, "NULL": 0}  # every landed row has a key
        con.execute("INSERT INTO agent_attempt_inputs (input_id, attempt_id, seq, sha256) VALUES "
                    "('old-0', 'att-old', 0, ?), ('old-1', 'att-old', 1, ?)", [SHARED, ODD])  # no key: pre-13 rows
    finally:
        con.close()
    with read_only(db) as con:
        shared = where_else(con, sha256=SHARED)
        odd = where_else(con, sha256=ODD, exclude_attempt="att-1")
        none = where_else(con, sha256="cd" * 32)
    assert shared.total == 3 and sorted(r.attempt_id for r in shared.rows) == ["att-0", "att-1", "att-old"]
    assert odd.total == 2 and sorted(r.attempt_id for r in odd.rows) == ["att-0", "att-old"]
    assert none.total == 0 and none.rows == ()


def test_a_file_that_has_a_later_migration_still_gets_13(tmp_path: Path) -> None:
    """A database with migration 14 but not 13 reads as older in the viewer, and migrate_file() then adds 13."""
    db = tmp_path / "gap.duckdb"
    migrate_file(db)
    con = duckdb.connect(str(db))
    try:
        con.execute("ALTER TABLE agent_attempt_inputs DROP COLUMN sha256_key")
        con.execute("DELETE FROM otel_inputs_schema WHERE version = 13")
    finally:
        con.close()
    with pytest.raises(DbUnavailable, match="schema version 12, older than this viewer reads"):
        with read_only(db):
            pass
    assert migrate_file(db) == SCHEMA_VERSION
    con = duckdb.connect(str(db), read_only=True)
    try:
        assert con.execute("SELECT count(*) FROM otel_inputs_schema WHERE version = 13").fetchone()[0] == 1
        con.execute("SELECT sha256_key FROM agent_attempt_inputs")
    finally:
        con.close()
    with read_only(db) as con:
        assert where_else(con, sha256=SHARED).total == 0
