"""The ClickHouse projection (clickhouse/*.sql) on the real engine in-process (chdb): the stock
exporter's tables receive the same spans and log records that landed through the DuckDB path (the
span writer and the in-process duckdb logs exporter), and
the ClickHouse views give the DuckDB agent_* rows row for row."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "exporter"))
from exporter_helpers import SpanFactory, input_event, memory_providers, packet_attributes  # noqa: E402

from otel_inputs import names as n  # noqa: E402
from otel_inputs.exporter._db import connect_with_retry  # noqa: E402
from otel_inputs.exporter import ATTEMPT_TABLE_COLUMNS, TIMESTAMP_COLUMNS  # noqa: E402
from otel_inputs.exporter._spans import from_readable  # noqa: E402
from otel_inputs.exporter._writer import DuckDBWriter  # noqa: E402
from otel_inputs.viewer._backend import NOT_IN_STOCK_SCHEMA  # noqa: E402

chdb_session = pytest.importorskip("chdb.session", reason="chdb (in-process ClickHouse) is not installed")

SQL_DIR = Path(__file__).resolve().parents[2] / "clickhouse"
_SQL_FILES = ("otel_tables.sql", "projection_functions.sql", "projection.sql", "store_state.sql")
_TS = TIMESTAMP_COLUMNS
# Not in the stock otel_traces schema: NULL on ClickHouse (docs/clickhouse.md), so not compared.
_NOT_STOCK = NOT_IN_STOCK_SCHEMA["agent_attempts"]
# The columns the evidence bundle exports (the table spec's), in the order that makes rows unique.
_TABLES = {
    "agent_attempts": ([c for c in ATTEMPT_TABLE_COLUMNS["agent_attempts"] if c not in _NOT_STOCK], "attempt_id"),
    "agent_attempt_inputs": (list(ATTEMPT_TABLE_COLUMNS["agent_attempt_inputs"]), "attempt_id, seq"),
    "agent_exchange_parts": (list(ATTEMPT_TABLE_COLUMNS["agent_exchange_parts"]), "attempt_id, part_name, recorded_at"),
    "agent_attempt_steps": (list(ATTEMPT_TABLE_COLUMNS["agent_attempt_steps"]), "attempt_id, seq"),
    "agent_attempt_messages": (list(ATTEMPT_TABLE_COLUMNS["agent_attempt_messages"]), "attempt_id"),
}


def statements(path: Path) -> Iterator[str]:
    """The statements of one schema file, comments dropped (chdb runs one statement per call)."""
    for chunk in path.read_text().split(";\n"):
        body = "\n".join(line for line in chunk.splitlines() if not line.strip().startswith("--")).strip()
        if body:
            yield body


def _text(content: str) -> str:
    return json.dumps([{"role": "user", "parts": [{"type": "text", "content": content}]}])


def _single_spans(spans: SpanFactory) -> list[Any]:
    """Spans alone in their trace: packet attempts (complete, malformed inputs, no coverage) and one
    legacy attempt per message encoding (docs/encodings.md), plus spans that map to nothing."""
    bad = [(n.INPUT_EVENT, input_event(2, 0)), (n.INPUT_EVENT, input_event(2, 0, **{n.INPUT_ID: "in-dup"})),
           (n.INPUT_EVENT, input_event(2, 1, **{n.INPUT_ID: None})), (n.INPUT_EVENT, input_event(2, 5, **{n.INPUT_SEQ: None})),
           (n.EXCHANGE_PART_EVENT, {n.PART_NAME: "request", n.PART_CAPTURE: "captured", n.PART_SIZE_BYTES: 42,
                                    n.PART_SHA256: "cd" * 32, n.PART_DISPATCH: "dispatched"}),
           (n.EXCHANGE_PART_EVENT, {n.PART_CAPTURE: "skipped"})]  # fmt: skip
    chat = {n.GEN_AI_OPERATION_NAME: "chat"}
    out = [
        spans.attempt(0, items=3),
        spans.span(packet_attributes(2, items=4), bad),
        spans.span(packet_attributes(4, items=1, **{n.PACKET_COVERAGE: None, n.PACKET_GAP_REASON: "policy: size"}),
                   [(n.INPUT_EVENT, input_event(4, 0))]),
        spans.span({n.OPENINFERENCE_SPAN_KIND: "LLM", n.OPENINFERENCE_LLM_PROVIDER: "azure", n.OPENINFERENCE_MODEL_NAME: "gpt-4o",
                    "llm.input_messages.0.message.role": "system", "llm.input_messages.0.message.content": "Be terse.",
                    "llm.input_messages.1.message.role": "user", "llm.input_messages.1.message.content": 'Say "hi"\nplease.',
                    n.OPENINFERENCE_PROMPT_TOKENS: 7, n.OPENINFERENCE_COMPLETION_TOKENS: 2}, name="llm"),
        spans.span({n.OPENINFERENCE_SPAN_KIND: "TOOL", n.OPENINFERENCE_TOOL_NAME: "search",
                    n.OPENINFERENCE_INPUT_VALUE: '{"q": "otel"}'}, name="tool"),
        spans.span({n.OPENINFERENCE_SPAN_KIND: "AGENT", n.OPENINFERENCE_INPUT_VALUE: "plan the fix"}, name="agent"),
        spans.span({n.GEN_AI_SYSTEM: "openai", "gen_ai.prompt.0.role": "system", "gen_ai.prompt.0.content": "One word.",
                    "gen_ai.prompt.1.role": "user", "gen_ai.prompt.1.content": "Capital of France?",
                    n.GEN_AI_USAGE_PROMPT_TOKENS: 12}, name="openai.chat"),
        spans.span({**chat, n.GEN_AI_PROMPT: "plain ask"}, name="legacy prompt"),
        spans.span(chat, [(n.EVENT_CONTENT_PROMPT, {n.GEN_AI_PROMPT: "asked on an event"})], name="event prompt"),
        spans.span(chat, [(n.EVENT_INFERENCE_DETAILS, {n.GEN_AI_INPUT_MESSAGES: _text("q on details"),
                                                       n.GEN_AI_SYSTEM_INSTRUCTIONS: "sys as text"})], name="details"),
        spans.span({n.GEN_AI_OPERATION_NAME: n.OPERATION_EXECUTE_TOOL, n.GEN_AI_TOOL_NAME: "read",
                    n.GEN_AI_TOOL_CALL_ARGUMENTS: {"path": "src/x.py", "lines": [1, 2]},
                    n.GEN_AI_INPUT_MESSAGES: [{"role": "user", "parts": [{"type": "text", "content": "a <b> & c"}]}]},
                   name="structured"),  # SDK >= 1.45 sends maps and arrays: stored as pdata's JSON
        spans.span({**chat, n.GEN_AI_INPUT_MESSAGES: json.dumps([{"role": "system", "content": "in the list"},
                                                                 {"role": "user", "content": [{"text": "t1"}, "t2"]}])},
                   name="system in messages"),
        spans.span({n.GEN_AI_OPERATION_NAME: "invoke_agent", n.PYDANTIC_AI_ALL_MESSAGES: _text("the whole run")}, name="pyd"),
        spans.span({**chat, n.GEN_AI_USAGE_INPUT_TOKENS: 0, n.GEN_AI_PROVIDER_NAME: "openai"}, name="no content"),
        # Strands' default conventions: one span event per message, content a JSON list of {"text": ...}.
        spans.span({**chat, n.GEN_AI_PROVIDER_NAME: "strands-agents"}, [
            (n.EVENT_SYSTEM_MESSAGE, {n.EVENT_CONTENT_KEY: json.dumps([{"text": "You are careful."}])}),
            (n.EVENT_USER_MESSAGE, {n.EVENT_CONTENT_KEY: json.dumps([{"text": "Read notes/a.md"}])}),
            (n.EVENT_ASSISTANT_MESSAGE, {n.EVENT_CONTENT_KEY: json.dumps([{"toolUse": {"name": "read_file"}}])}),
            (n.EVENT_TOOL_MESSAGE, {n.EVENT_CONTENT_KEY: "not json <b>"})], name="strands chat"),
        # Strands with gen_ai_latest_experimental: one field per operation-details span event.
        spans.span(chat, [(n.EVENT_INFERENCE_DETAILS, {n.GEN_AI_SYSTEM_INSTRUCTIONS: json.dumps([{"type": "text", "content": "sys"}])}),
                          (n.EVENT_INFERENCE_DETAILS, {n.GEN_AI_INPUT_MESSAGES: _text("the ask")}),
                          (n.EVENT_INFERENCE_DETAILS, {n.GEN_AI_OUTPUT_MESSAGES: "[]"})], name="split details"),
        # An executed tool's arguments on its gen_ai.tool.message event (Strands), or in a tool_call part.
        spans.span({n.GEN_AI_OPERATION_NAME: n.OPERATION_EXECUTE_TOOL, n.GEN_AI_TOOL_NAME: "read_file"},
                   [(n.EVENT_TOOL_MESSAGE, {n.EVENT_CONTENT_KEY: '{"path": "notes/a.md"}', "role": "tool"})], name="tool event"),
        spans.span({n.GEN_AI_OPERATION_NAME: n.OPERATION_EXECUTE_TOOL, n.GEN_AI_TOOL_NAME: "read_file"},
                   [(n.EVENT_INFERENCE_DETAILS, {n.GEN_AI_INPUT_MESSAGES: json.dumps([{"role": "tool", "parts": [
                       {"type": "tool_call", "name": "read_file", "id": "c1", "arguments": {"path": "notes/b.md"}}]}])})],
                   name="tool call part"),
        spans.span({"http.method": "GET"}, name="GET /health"),
        spans.span({n.GEN_AI_SYSTEM: "openai"}, name="gen_ai-like"),  # GenAI-looking, yet no known encoding
    ]
    return [from_readable(s) for s in out]


def _traces() -> tuple[list[Any], list[Any]]:
    """Nested traces: steps under packet and legacy attempts (across an ordinary span), a packet
    inside a packet, and GenAI log events (per message, operation details, disagreeing)."""
    tp, memory, lp, logs = memory_providers()
    tracer, log = tp.get_tracer("app"), lp.get_logger("openllmetry")
    no_messages = {n.GEN_AI_SYSTEM_INSTRUCTIONS: None, n.GEN_AI_INPUT_MESSAGES: None}
    with tracer.start_as_current_span("invoke_agent", attributes=packet_attributes(3, items=0, **no_messages)):
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
        with tracer.start_as_current_span("inner", attributes=packet_attributes(5, items=0, **{n.ATTEMPT_ID: "att-inner"})):
            with tracer.start_as_current_span("chat inner", attributes={n.GEN_AI_OPERATION_NAME: "chat"}):
                pass
    with tracer.start_as_current_span("agent run", attributes={n.GEN_AI_OPERATION_NAME: "invoke_agent", n.GEN_AI_AGENT_NAME: "a"}):
        with tracer.start_as_current_span("embed", attributes={n.GEN_AI_OPERATION_NAME: "embeddings",
                                                               n.GEN_AI_INPUT_MESSAGES: _text("not a prompt")}):
            pass
        with tracer.start_as_current_span("chat step", attributes={n.GEN_AI_OPERATION_NAME: "chat"}):
            log.emit(event_name=n.EVENT_INFERENCE_DETAILS, attributes={
                n.GEN_AI_INPUT_MESSAGES: _text("from the step's log"), n.GEN_AI_SYSTEM_INSTRUCTIONS: json.dumps(
                    [{"type": "text", "content": "log sys"}])})
    with tracer.start_as_current_span("chat", attributes={n.GEN_AI_OPERATION_NAME: "chat", n.GEN_AI_PROVIDER_NAME: "openai"}):
        log.emit(event_name=n.EVENT_SYSTEM_MESSAGE, body={"content": "be exact"})
        log.emit(event_name=n.EVENT_USER_MESSAGE, body={"content": "ask <1>"})
        log.emit(event_name=n.EVENT_CHOICE, body={"message": {"content": "answer"}})
    with tracer.start_as_current_span("chat disagree", attributes={n.GEN_AI_OPERATION_NAME: "chat",
                                                                   n.GEN_AI_INPUT_MESSAGES: _text("span text")}):
        log.emit(event_name=n.EVENT_USER_MESSAGE, body={"content": "log text"})
    langgraph_run(tracer)
    vercel_run(tracer)
    # Strands' shape: invoke_agent > event-loop cycle > (chat, execute_tool) siblings, two levels down.
    with tracer.start_as_current_span("invoke_agent s", attributes={n.GEN_AI_OPERATION_NAME: "invoke_agent"}):
        with tracer.start_as_current_span("cycle", attributes={n.GEN_AI_OPERATION_NAME: "execute_event_loop_cycle"}):
            for name, op in (("chat a", "chat"), ("tool a", n.OPERATION_EXECUTE_TOOL), ("chat b", "chat")):
                with tracer.start_as_current_span(name, attributes={n.GEN_AI_OPERATION_NAME: op}):
                    pass
    log.emit(event_name=n.EVENT_USER_MESSAGE, body={"content": "orphan"})  # no trace context: joins nothing
    return [from_readable(s) for s in memory.get_finished_spans()], list(logs.get_finished_logs())


def langgraph_run(tracer: Any) -> None:
    """A LangGraph run as openinference-instrumentation-langchain spells it: a CHAIN root, an AGENT
    node holding a CHAIN runnable around the LLM span, a CHAIN tools node around the TOOL span."""
    oi = n.OPENINFERENCE_SPAN_KIND
    with tracer.start_as_current_span("LangGraph", attributes={oi: "CHAIN", n.OPENINFERENCE_SESSION_ID: "thread-1",
            n.OPENINFERENCE_INPUT_VALUE: '{"messages": [["user", "Summarise notes/handoff.md"]]}',
            "llm.input_messages.0.message.role": "user", "llm.input_messages.0.message.content": "Summarise notes/handoff.md"}):
        with tracer.start_as_current_span("agent", attributes={oi: "AGENT", n.OPENINFERENCE_INPUT_VALUE: '{"messages": []}'}):
            with tracer.start_as_current_span("RunnableSequence", attributes={oi: "CHAIN"}):
                with tracer.start_as_current_span("ChatOpenAI", attributes={
                        oi: "LLM", n.OPENINFERENCE_MODEL_NAME: "gpt-fake", n.OPENINFERENCE_PROMPT_TOKENS: 11,
                        "llm.input_messages.0.message.role": "system", "llm.input_messages.0.message.content": "Be careful.",
                        "llm.input_messages.1.message.role": "user",
                        "llm.input_messages.1.message.content": "Summarise notes/handoff.md"}):  # fmt: skip
                    pass
        with tracer.start_as_current_span("tools", attributes={oi: "CHAIN"}):
            with tracer.start_as_current_span("read_file", attributes={oi: "TOOL", n.OPENINFERENCE_TOOL_NAME: "read_file",
                                                                       n.OPENINFERENCE_INPUT_VALUE: "notes/handoff.md"}):
                pass
    with tracer.start_as_current_span("lone chain", attributes={oi: "CHAIN", n.OPENINFERENCE_INPUT_VALUE: "x"}):
        pass


def vercel_run(tracer: Any, session: str = "sess-v") -> None:
    """A Vercel AI SDK 6 call on its own telemetry: ai.generateText, its doGenerate model calls and its ai.toolCall."""
    meta = {n.VERCEL_FUNCTION_ID: "coder", n.VERCEL_METADATA_SESSION_ID: session}
    prompt = {"system": "Be careful.", "messages": [{"role": "user", "content": "Summarise notes/handoff.md"}]}
    sent = [{"role": "system", "content": "Be careful."},
            {"role": "user", "content": [{"type": "text", "text": "Summarise notes/handoff.md"}]}]
    with tracer.start_as_current_span("ai.generateText", attributes={
            n.VERCEL_OPERATION_ID: "ai.generateText", n.VERCEL_PROMPT: json.dumps(prompt), n.VERCEL_MODEL_ID: "gpt-fake",
            n.VERCEL_MODEL_PROVIDER: "fake.chat", n.VERCEL_USAGE_INPUT_TOKENS: 22, n.VERCEL_USAGE_OUTPUT_TOKENS: 10, **meta}):
        with tracer.start_as_current_span("ai.generateText.doGenerate", attributes={
                n.VERCEL_OPERATION_ID: "ai.generateText.doGenerate", n.VERCEL_PROMPT_MESSAGES: json.dumps(sent),
                n.GEN_AI_SYSTEM: "fake.chat", n.GEN_AI_REQUEST_MODEL: "gpt-fake", n.GEN_AI_USAGE_INPUT_TOKENS: 11,
                n.VERCEL_USAGE_INPUT_TOKENS: 11, **meta}):  # fmt: skip
            pass
        with tracer.start_as_current_span("ai.toolCall", attributes={
                n.VERCEL_OPERATION_ID: "ai.toolCall", n.VERCEL_TOOL_CALL_NAME: "read_file", n.VERCEL_TOOL_CALL_ID: "call_1",
                n.VERCEL_TOOL_CALL_ARGS: '{"path":"notes/handoff.md"}', **meta}):  # fmt: skip
            pass
    with tracer.start_as_current_span("ai.streamText", attributes={  # ai <= 4 spellings, a plain prompt
            n.VERCEL_OPERATION_ID: "ai.streamText", n.VERCEL_PROMPT: json.dumps({"prompt": "just ask"}),
            n.VERCEL_USAGE_PROMPT_TOKENS: 3, n.VERCEL_USAGE_COMPLETION_TOKENS: 1}):
        pass


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
    from ch_corpus import land_duckdb  # here: ch_corpus imports this module's corpus builders

    tmp = tmp_path_factory.mktemp("ch")
    records, logs = _traces()
    db = land_duckdb(tmp, _single_spans(SpanFactory()) + records, logs)
    sess = chdb_session.Session(str(tmp / "chdb"))
    try:
        _apply(sess, "otel")
        for _ in range(2):  # every row twice, as a retried Collector export inserts it again
            for table in ("otel_traces", "otel_logs"):
                sess.query(f"INSERT INTO otel.{table} SELECT * FROM file('{tmp / table}.parquet', Parquet)")
        yield db, sess
    finally:
        sess.close()


@pytest.mark.timeout(300)
@pytest.mark.parametrize("table", list(_TABLES))
def test_views_give_the_duckdb_rows(landed: tuple[Path, Any], table: str) -> None:
    """For the same spans and log records (each inserted twice, as a retried export does), each
    ClickHouse view gives exactly the DuckDB table's rows."""
    db, sess = landed
    columns, order = _TABLES[table]
    expected = _duckdb_rows(db, table, columns, order)
    got = _ch_rows(sess, table, columns, order)
    assert expected, f"the corpus gives {table} rows"
    formats = dict(_duckdb_rows(db, "agent_attempts", ["attempt_id", "source_format"], "attempt_id"))
    for want, have in zip(expected, got):
        differ = {c for c, a, b in zip(columns, have, want) if a != b}
        attempt = dict(zip(columns, want)).get("attempt_id")
        assert not differ, (f"{table}: the {formats.get(attempt, 'unknown')} encoding differs in {sorted(differ)} "
                            f"(attempt {attempt}): {dict(zip(columns, have))} != {dict(zip(columns, want))}")
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
    assert out.strip().split("\n") == ["GET /health\t0", "POST /v1/chat\t0", "gen_ai-like\t1"]
    row = sess.query("SELECT countIf(dropped_events_count IS NULL), count(), any(projection_gaps) FROM agent_attempts",
                     "TSV").bytes().decode().strip().split("\t")  # fmt: skip
    assert row[0] == row[1] and "dropped" in row[2]


def test_every_wire_name_in_the_sql_is_registered() -> None:
    """Every otel_inputs./gen_ai./llm. name the ClickHouse SQL reads is a value in otel_inputs/names.py."""
    registered = {v for k, v in vars(n).items() if k.isupper() and isinstance(v, str)}
    registered |= {v for k, v in vars(n).items() if k.isupper() and isinstance(v, tuple) for v in v if isinstance(v, str)}
    found = set()
    for name in _SQL_FILES[1:]:
        found |= set(re.findall(r"'((?:otel_inputs|gen_ai|llm|openinference|pydantic_ai|tool|input|session|ai)\.[a-z_.]+)'",
                                (SQL_DIR / name).read_text()))  # fmt: skip
    prefixes = {n.OPENLLMETRY_PROMPT_PREFIX, n.OPENLLMETRY_COMPLETION_PREFIX, n.OPENINFERENCE_INPUT_MESSAGES}
    flat = {f"{p}.0.{f}" for p in (n.OPENLLMETRY_PROMPT_PREFIX, n.OPENLLMETRY_COMPLETION_PREFIX) for f in ("role", "content")}
    unknown = sorted(found - registered - prefixes - flat - {"otel_inputs.input", "otel_inputs.exchange_part"} - {"event.name"})
    assert found and unknown == []


def _apply(sess: Any, database: str) -> None:
    """The schema files, applied in ``database`` (which becomes the session's current one)."""
    sess.query(f"CREATE DATABASE IF NOT EXISTS {database}")
    sess.query(f"USE {database}")
    for name in _SQL_FILES:
        for stmt in statements(SQL_DIR / name):
            sess.query(stmt)


def _insert(sess: Any, tmp: Path, records: list[Any], tag: str) -> None:
    """Land the records through the DuckDB path in a scratch file and insert their otel_traces rows."""
    db = tmp / f"{tag}.duckdb"
    DuckDBWriter(db).write_spans(records)
    con = connect_with_retry(db, read_only=True)
    try:
        con.execute(f"COPY otel_traces TO '{tmp / tag}.parquet' (FORMAT parquet)")
    finally:
        con.close()
    sess.query(f"INSERT INTO otel_traces SELECT * FROM file('{tmp / tag}.parquet', Parquet)")


@pytest.mark.timeout(300)
def test_a_late_ancestor_and_dropped_events(landed: tuple[Path, Any], tmp_path: Path) -> None:
    """Steps inserted before their attempt are attempts until it arrives, then its steps; a packet
    whose span events were dropped is never complete, and the dropped count reads NULL, not 0."""
    tp, memory, _, _ = memory_providers()
    tracer = tp.get_tracer("app")
    with tracer.start_as_current_span("invoke_agent", attributes=packet_attributes(7, items=0)):
        with tracer.start_as_current_span("chat", attributes={n.GEN_AI_OPERATION_NAME: "chat"}):
            pass
    chat, attempt = (from_readable(s) for s in memory.get_finished_spans())
    _, sess = landed  # chdb runs one embedded server per process: a database of its own in it
    _apply(sess, "otel_late")
    try:
        _insert(sess, tmp_path, [chat], "child")
        q = "SELECT attempt_id FROM agent_attempts ORDER BY attempt_id"
        assert sess.query(q, "TSV").bytes().decode().split() == [chat.span_id]
        _insert(sess, tmp_path, [attempt], "parent")
        assert sess.query(q, "TSV").bytes().decode().split() == ["att-7"]
        steps = sess.query("SELECT attempt_id, seq, span_id FROM agent_attempt_steps", "TSV").bytes().decode().split()
        assert steps == ["att-7", "0", chat.span_id]
        limited = SpanFactory(max_events=2).attempt(8, items=4)  # the SDK drops 2 of the 4 input events
        _insert(sess, tmp_path, [from_readable(limited)], "limited")
        got = sess.query("SELECT input_coverage, coverage_reason, dropped_events_count IS NULL FROM agent_attempts "
                         "WHERE attempt_id = 'att-8'", "TSV").bytes().decode().strip().split("\t")  # fmt: skip
        assert got[0] == "partial" and got[1].startswith("only 2 of 4 input events arrived") and got[2] == "1"
    finally:
        sess.query("USE otel")
