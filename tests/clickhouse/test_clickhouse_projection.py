"""The ClickHouse projection (clickhouse/*.sql) on the real engine in-process (chdb): the stock
exporter's tables receive the same spans and log records that landed through the DuckDB path, and
the ClickHouse views give the DuckDB agent_* rows row for row."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "exporter"))
from exporter_helpers import SpanFactory, input_event, packet_attributes  # noqa: E402
from otel_logs_rows import land_logs  # noqa: E402
from opentelemetry.sdk._logs import LoggerProvider  # noqa: E402
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor  # noqa: E402
from opentelemetry.sdk.resources import Resource  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402

from otel_inputs import names as n  # noqa: E402
from otel_inputs.exporter._db import connect_with_retry, file_lock  # noqa: E402
from otel_inputs.exporter._rows import ATTEMPT_COLUMNS, ATTEMPT_STEP_MESSAGE_COLUMNS, INPUT_COLUMNS, PART_COLUMNS, STEP_COLUMNS  # noqa: E402
from otel_inputs.exporter._schema import migrate  # noqa: E402
from otel_inputs.exporter._spans import from_readable  # noqa: E402
from otel_inputs.exporter._writer import DuckDBWriter  # noqa: E402

chdb_session = pytest.importorskip("chdb.session", reason="chdb (in-process ClickHouse) is not installed")

SQL_DIR = Path(__file__).resolve().parents[2] / "clickhouse"
_SQL_FILES = ("otel_tables.sql", "projection_functions.sql", "projection.sql")
_TS = {"started_at", "ended_at", "attempt_started_at", "captured_at", "recorded_at"}
# Not in the stock otel_traces schema: NULL on ClickHouse (docs/clickhouse.md), so not compared.
_NOT_STOCK = {"dropped_events_count", "dropped_attributes_count"}
_TABLES = {
    "agent_attempts": ([c for c in (*ATTEMPT_COLUMNS, *ATTEMPT_STEP_MESSAGE_COLUMNS) if c not in _NOT_STOCK], "attempt_id"),
    "agent_attempt_inputs": (list(INPUT_COLUMNS), "attempt_id, seq"),
    "agent_exchange_parts": (list(PART_COLUMNS), "attempt_id, part_name, recorded_at"),
    "agent_attempt_steps": (list(STEP_COLUMNS), "attempt_id, seq"),
    "agent_attempt_messages": (["attempt_id", "system_prompt", "user_prompt", "input_messages_json", "messages_source",
                                "messages_note"], "attempt_id"),
}


def statements(path: Path) -> Iterator[str]:
    """The statements of one schema file, comments dropped (chdb runs one statement per call)."""
    for chunk in path.read_text().split(";\n"):
        body = "\n".join(line for line in chunk.splitlines() if not line.strip().startswith("--")).strip()
        if body:
            yield body


def _providers() -> tuple[TracerProvider, InMemorySpanExporter, LoggerProvider, InMemoryLogRecordExporter]:
    resource = Resource.create({"service.name": "agent-svc"})
    memory, logs = InMemorySpanExporter(), InMemoryLogRecordExporter()
    tp = TracerProvider(resource=resource)
    tp.add_span_processor(SimpleSpanProcessor(memory))
    lp = LoggerProvider(resource=resource)
    lp.add_log_record_processor(SimpleLogRecordProcessor(logs))
    return tp, memory, lp, logs


def _corpus(spans: SpanFactory) -> tuple[list[Any], list[Any]]:
    """A small corpus over the encodings: packet attempts (one with malformed input events and an
    exchange part), a packet attempt whose chat step sits under an ordinary span, OpenLLMetry and
    OpenInference spans, a chat span with per-message log events, and an ordinary span."""
    records = [from_readable(spans.attempt(0, items=3)), from_readable(spans.attempt(1, items=4))]
    bad = [(n.INPUT_EVENT, input_event(2, 0)), (n.INPUT_EVENT, input_event(2, 0, **{n.INPUT_ID: "in-dup"})),
           (n.INPUT_EVENT, input_event(2, 1, **{n.INPUT_ID: None})), (n.INPUT_EVENT, input_event(2, 5, **{n.INPUT_SEQ: None})),
           (n.EXCHANGE_PART_EVENT, {n.PART_NAME: "request", n.PART_CAPTURE: "captured", n.PART_SIZE_BYTES: 42,
                                    n.PART_SHA256: "cd" * 32, n.PART_DISPATCH: "dispatched"}),
           (n.EXCHANGE_PART_EVENT, {n.PART_CAPTURE: "skipped"})]  # fmt: skip
    records.append(from_readable(spans.span(packet_attributes(2, items=4), bad)))
    records.append(from_readable(spans.span({
        n.OPENINFERENCE_SPAN_KIND: "LLM", n.OPENINFERENCE_LLM_PROVIDER: "azure", n.OPENINFERENCE_MODEL_NAME: "gpt-4o",
        "llm.input_messages.0.message.role": "system", "llm.input_messages.0.message.content": "Be terse.",
        "llm.input_messages.1.message.role": "user", "llm.input_messages.1.message.content": 'Say "hi"\nplease.',
        n.OPENINFERENCE_PROMPT_TOKENS: 7, n.OPENINFERENCE_COMPLETION_TOKENS: 2}, name="llm")))  # fmt: skip
    records.append(from_readable(spans.span({"http.method": "GET"}, name="GET /health")))
    tp, memory, lp, logs = _providers()
    tracer = tp.get_tracer("app")
    with tracer.start_as_current_span("invoke_agent", attributes=packet_attributes(
            3, items=0, **{n.GEN_AI_SYSTEM_INSTRUCTIONS: None, n.GEN_AI_INPUT_MESSAGES: None})):
        with tracer.start_as_current_span("POST /v1/chat"):  # an ordinary span between attempt and step
            with tracer.start_as_current_span("openai.chat", attributes={
                    n.GEN_AI_SYSTEM: "openai", n.OPENLLMETRY_REQUEST_TYPE: "chat", n.GEN_AI_REQUEST_MODEL: "gpt-4o-mini",
                    "gen_ai.prompt.0.role": "user", "gen_ai.prompt.0.content": "Summarise <the> diff.",
                    n.GEN_AI_USAGE_PROMPT_TOKENS: 12, n.GEN_AI_USAGE_COMPLETION_TOKENS: 3}):  # fmt: skip
                pass
        with tracer.start_as_current_span("execute_tool read", attributes={
                n.GEN_AI_OPERATION_NAME: n.OPERATION_EXECUTE_TOOL, n.GEN_AI_TOOL_NAME: "read",
                n.GEN_AI_TOOL_CALL_ARGUMENTS: json.dumps({"path": "a.py"})}):  # fmt: skip
            pass
    with tracer.start_as_current_span("chat", attributes={n.GEN_AI_OPERATION_NAME: "chat", n.GEN_AI_PROVIDER_NAME: "openai"}):
        lp.get_logger("openllmetry").emit(event_name=n.EVENT_SYSTEM_MESSAGE, body={"content": "be exact"})
        lp.get_logger("openllmetry").emit(event_name=n.EVENT_USER_MESSAGE, body={"content": "ask <1>"})
    records.extend(from_readable(s) for s in memory.get_finished_spans())
    return records, list(logs.get_finished_logs())


def _duckdb_rows(db: Path, table: str, columns: list[str], order: str) -> list[tuple[Any, ...]]:
    cols = ", ".join(f"epoch_ns({c})" if c in _TS else c for c in columns)
    con = connect_with_retry(db, read_only=True)
    try:
        return [tuple(r) for r in con.execute(f"SELECT {cols} FROM {table} ORDER BY {order}").fetchall()]
    finally:
        con.close()


def _ch_rows(sess: Any, table: str, columns: list[str], order: str) -> list[tuple[Any, ...]]:
    cols = ", ".join(f"toUnixTimestamp64Nano({c})" if c in _TS else c for c in columns)
    out = sess.query(f"SELECT {cols} FROM {table} ORDER BY {order}", "JSONCompactEachRow").bytes().decode()
    rows = [json.loads(line) for line in out.splitlines() if line.strip()]
    return [tuple(int(v) if isinstance(v, str) and v.isdigit() and i_ts else v
                  for v, i_ts in zip(r, [c in _TS or c.endswith(("_tokens", "_bytes", "_count", "seq", "turn_index",
                                                                   "input_packet_version")) for c in columns]))
            for r in rows]  # fmt: skip


@pytest.fixture(scope="module")
def landed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Any]]:
    """The corpus landed in DuckDB, and the same otel_traces / otel_logs rows in chdb under the projection."""
    tmp = tmp_path_factory.mktemp("ch")
    db = tmp / "t.duckdb"
    records, logs = _corpus(SpanFactory())
    with file_lock(db, exclusive=True, timeout_s=10):
        con = connect_with_retry(db, read_only=False)
        try:
            migrate(con)
        finally:
            con.close()
    land_logs(db, logs)
    for r in records:  # one span per batch, children first, as a batch processor may send them
        DuckDBWriter(db).write_spans([r])
    con = connect_with_retry(db, read_only=True)
    try:
        for table in ("otel_traces", "otel_logs"):
            con.execute(f"COPY {table} TO '{tmp / table}.parquet' (FORMAT parquet)")
    finally:
        con.close()
    sess = chdb_session.Session(str(tmp / "chdb"))
    try:
        sess.query("CREATE DATABASE IF NOT EXISTS otel")
        sess.query("USE otel")
        for name in _SQL_FILES:
            for stmt in statements(SQL_DIR / name):
                sess.query(stmt)
        for table in ("otel_traces", "otel_logs"):
            sess.query(f"INSERT INTO otel.{table} SELECT * FROM file('{tmp / table}.parquet', Parquet)")
        yield db, sess
    finally:
        sess.close()


@pytest.mark.timeout(300)
@pytest.mark.parametrize("table", list(_TABLES))
def test_views_give_the_duckdb_rows(landed: tuple[Path, Any], table: str) -> None:
    """For the same spans and log records, each ClickHouse view gives exactly the DuckDB table's rows."""
    db, sess = landed
    columns, order = _TABLES[table]
    expected = _duckdb_rows(db, table, columns, order)
    got = _ch_rows(sess, table, columns, order)
    assert expected, f"the corpus gives {table} rows"
    for want, have in zip(expected, got):
        assert dict(zip(columns, have)) == dict(zip(columns, want))
    assert len(got) == len(expected)
    if table == "agent_attempt_messages":  # the corpus exercises every source of C2
        assert {r[columns.index("messages_source")] for r in got} == {"attempt_span", "log_event", "model_step"}
    if table == "agent_attempt_inputs":  # and malformed input events
        assert sum(r[columns.index("row_problem")] is not None for r in got) == 3


@pytest.mark.timeout(120)
def test_unmapped_spans_are_counted_and_stock_gaps_marked(landed: tuple[Path, Any]) -> None:
    """Ordinary spans stay in otel_traces and are counted as unmapped; the counts the stock schema
    lacks are NULL with the gap named, never 0."""
    _, sess = landed
    out = sess.query("SELECT span_name, genai_like FROM otel_inputs_unmapped_spans ORDER BY span_name", "TSV").bytes().decode()
    assert out.strip().split("\n") == ["GET /health\t0", "POST /v1/chat\t0"]
    row = sess.query("SELECT countIf(dropped_events_count IS NULL), count(), any(projection_gaps) FROM agent_attempts",
                     "TSV").bytes().decode().strip().split("\t")  # fmt: skip
    assert row[0] == row[1] and "dropped" in row[2]
