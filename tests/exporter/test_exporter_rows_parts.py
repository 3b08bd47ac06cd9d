"""Exchange-part rows and the inputs' attempt start time: derivation, schema and landing."""

from __future__ import annotations

from pathlib import Path

import duckdb
from exporter_helpers import SpanFactory, input_event, packet_attributes, query, query_dicts

from otel_inputs.exporter import _writer
from otel_inputs.exporter._arrow import PARTS, build_batch
from otel_inputs.exporter._rows import derive
from otel_inputs.exporter._schema import migrate
from otel_inputs.exporter._spans import from_readable
from otel_inputs.exporter._writer import DuckDBWriter
from otel_inputs import names as n


def _part_event(part: str, **overrides: object) -> dict[str, object]:
    attrs: dict[str, object] = {n.PART_NAME: part, n.PART_CAPTURE: "captured", n.PART_DISPATCH: "dispatched",
                                n.PART_PERSISTENCE: "queued", n.PART_REF: f"part:k/{part}", n.PART_SHA256: "ab" * 32,
                                n.PART_SIZE_BYTES: 120}
    attrs.update(overrides)
    return {k: v for k, v in attrs.items() if v is not None}


def _span_with_parts(spans: SpanFactory, i: int = 0, items: int = 2):
    events = [(n.INPUT_EVENT, input_event(i, s)) for s in range(items)]
    events.append((n.EXCHANGE_PART_EVENT, _part_event("logical_request")))
    events.append((n.EXCHANGE_PART_EVENT, _part_event(
        "observable_output", **{n.PART_CAPTURE: "not_captured", n.PART_REASON: "capacity_exceeded",
                                n.PART_DISPATCH: None, n.PART_PERSISTENCE: "not_queued", n.PART_REF: None,
                                n.PART_SHA256: None, n.PART_SIZE_BYTES: None})))
    return spans.span(packet_attributes(i, items=items), events)


def test_every_input_row_carries_the_attempt_start_time(spans: SpanFactory) -> None:
    """Each input row of a span gets the span's start time as attempt_started_at, never NULL."""
    record = from_readable(spans.attempt(3, items=4))
    rows = derive(record)
    assert rows.attempt is not None and rows.attempt["started_at"] == record.start_ns
    assert [r["attempt_started_at"] for r in rows.inputs] == [record.start_ns] * 4


def test_exchange_part_events_become_rows_with_unknown_dispatch_kept_unknown(spans: SpanFactory) -> None:
    """Both part events become rows; an absent dispatch stays NULL and never becomes not_dispatched."""
    record = from_readable(_span_with_parts(spans))
    parts = derive(record).parts
    assert [p["part_name"] for p in parts] == ["logical_request", "observable_output"]
    req, out = parts
    assert (req["capture"], req["dispatch"], req["persistence"], req["size_bytes"]) == ("captured", "dispatched", "queued", 120)
    assert (out["capture"], out["reason"], out["dispatch"], out["ref"]) == ("not_captured", "capacity_exceeded", None, None)
    assert all(p["attempt_id"] == "att-0" and p["attempt_started_at"] == record.start_ns for p in parts)
    assert all(p["recorded_at"] and p["row_problem"] is None for p in parts)


def test_malformed_part_event_stays_visible_with_its_problem(spans: SpanFactory) -> None:
    """A part event with a non-integer size and no name is kept as a row that names its problems."""
    span = spans.span(packet_attributes(0, items=0),
                      [(n.EXCHANGE_PART_EVENT, {n.PART_CAPTURE: "captured", n.PART_SIZE_BYTES: "big"})])
    (row,) = derive(from_readable(span)).parts
    assert row["size_bytes"] is None and row["part_name"] is None
    assert row["row_problem"] == ("malformed exchange part event: size_bytes is not a non-negative integer; "
                                  "part name missing")


def test_migrations_add_the_start_column_and_the_parts_table(db_path: Path) -> None:
    """A migrated database has agent_attempt_inputs.attempt_started_at and agent_exchange_parts."""
    con = duckdb.connect(str(db_path))
    try:
        migrate(con)
        cols = dict(con.execute("SELECT column_name, data_type FROM information_schema.columns "
                                "WHERE table_name = 'agent_attempt_inputs'").fetchall())
        parts = [c for (c,) in con.execute("SELECT column_name FROM information_schema.columns "
                                            "WHERE table_name = 'agent_exchange_parts' ORDER BY ordinal_position").fetchall()]
    finally:
        con.close()
    assert cols["attempt_started_at"] == "TIMESTAMP_NS"
    assert parts[:12] == ["attempt_id", "part_name", "capture", "reason", "dispatch", "ref", "sha256", "size_bytes",
                          "persistence", "detail", "recorded_at", "attempt_started_at"]


def test_landed_input_rows_have_the_start_time_in_duckdb(spans: SpanFactory, db_path: Path) -> None:
    """Through the real writer, every landed input row's attempt_started_at equals the attempt's started_at."""
    writer = DuckDBWriter(db_path)
    assert writer.write_spans([from_readable(spans.attempt(i, items=3)) for i in range(4)]).written == 4
    rows = query(db_path, "SELECT count(*), count(i.attempt_started_at), "
                          "count(*) FILTER (WHERE i.attempt_started_at = a.started_at) "
                          "FROM agent_attempt_inputs i JOIN agent_attempts a USING (attempt_id)")
    assert rows == [(12, 12, 12)]


def test_parts_reach_the_writer_which_can_spool_and_replace_them(spans: SpanFactory) -> None:
    """BatchTables hands agent_exchange_parts to the writer, which registers that table for spool and replace."""
    batch = build_batch([from_readable(_span_with_parts(spans))])
    assert batch.parts is not None and batch.parts.num_rows == 2
    names_out = [name for name, _ in batch.items()]
    assert PARTS in names_out and PARTS in _writer._TABLE_FILES


def test_re_exporting_an_attempt_does_not_duplicate_its_parts(spans: SpanFactory, db_path: Path) -> None:
    """Landing the same span twice leaves exactly one row per part of the attempt."""
    record = from_readable(_span_with_parts(spans))
    writer = DuckDBWriter(db_path)
    writer.write_spans([record])
    writer.write_spans([record])
    rows = query_dicts(db_path, "SELECT part_name, capture FROM agent_exchange_parts ORDER BY part_name")
    assert rows == [{"part_name": "logical_request", "capture": "captured"},
                    {"part_name": "observable_output", "capture": "not_captured"}]
