"""Every common encoding is read (docs/encodings.md): OpenLLMetry, OpenInference, GenAI attributes,
span events and log events, structured AnyValues; nothing absent is invented."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from exporter_helpers import SpanFactory, memory_providers, query, query_dicts
from opentelemetry import trace
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk.trace import TracerProvider

from otel_inputs import AgentObserver
from otel_inputs import names as n
from otel_inputs.exporter import DuckDBLogExporter, migrate_file
from otel_inputs.exporter._rows import derive
from otel_inputs.exporter._spans import from_readable
from otel_inputs.exporter._writer import DuckDBWriter

_OPENLLMETRY = {
    n.GEN_AI_SYSTEM: "openai",
    n.OPENLLMETRY_REQUEST_TYPE: "chat",
    n.GEN_AI_REQUEST_MODEL: "gpt-4o-mini",
    n.GEN_AI_RESPONSE_MODEL: "gpt-4o-mini-2024-07-18",
    "gen_ai.prompt.0.role": "system",
    "gen_ai.prompt.0.content": "Answer in one word.",
    "gen_ai.prompt.1.role": "user",
    "gen_ai.prompt.1.content": "Capital of France?",
    "gen_ai.completion.0.role": "assistant",
    "gen_ai.completion.0.content": "Paris",
    n.GEN_AI_USAGE_PROMPT_TOKENS: 12,
    n.GEN_AI_USAGE_COMPLETION_TOKENS: 1,
    n.OPENLLMETRY_USAGE_TOTAL: 13,
}

_OPENINFERENCE = {
    n.OPENINFERENCE_SPAN_KIND: "LLM",
    n.OPENINFERENCE_LLM_PROVIDER: "azure",
    n.OPENINFERENCE_LLM_SYSTEM: "openai",
    n.OPENINFERENCE_MODEL_NAME: "gpt-4o",
    "llm.input_messages.0.message.role": "system",
    "llm.input_messages.0.message.content": "Be terse.",
    "llm.input_messages.1.message.role": "user",
    "llm.input_messages.1.message.content": "Say hi.",
    n.OPENINFERENCE_PROMPT_TOKENS: 7,
    n.OPENINFERENCE_COMPLETION_TOKENS: 2,
}


def _row(spans: SpanFactory, attrs: dict[str, Any], events: list[tuple[str, Any]] = ()) -> dict[str, Any]:  # type: ignore[assignment]
    a = derive(from_readable(spans.span(attrs, events, name="span"))).attempt
    assert a is not None
    return a


def test_openllmetry_span_without_operation_name_is_an_attempt(spans: SpanFactory) -> None:
    """An OpenLLMetry chat span (indexed gen_ai.prompt.N, llm.request.type, gen_ai.system, no
    gen_ai.operation.name) is an attempt with its provider, messages and token counts."""
    a = _row(spans, _OPENLLMETRY)
    assert (a["source_format"], a["provider_name"], a["request_model"]) == ("openllmetry", "openai", "gpt-4o-mini")
    assert (a["system_prompt"], a["user_prompt"]) == ("Answer in one word.", "Capital of France?")
    assert [m["role"] for m in json.loads(a["input_messages_json"])] == ["system", "user"]
    assert (a["input_tokens"], a["output_tokens"], a["response_model"]) == (12, 1, "gpt-4o-mini-2024-07-18")
    assert (a["step_kind"], a["operation_name"]) == ("model_call", None)  # the operation was not sent


def test_openinference_provider_tokens_and_tool(spans: SpanFactory) -> None:
    """OpenInference spans give provider (llm.provider, else llm.system), tokens and messages; a
    TOOL span gives its tool name and, from input.value, its arguments."""
    a = _row(spans, _OPENINFERENCE)
    assert (a["source_format"], a["provider_name"], a["request_model"]) == ("openinference", "azure", "gpt-4o")
    assert (a["system_prompt"], a["user_prompt"], a["input_tokens"], a["output_tokens"]) == ("Be terse.", "Say hi.", 7, 2)
    only_system = dict(_OPENINFERENCE)
    del only_system[n.OPENINFERENCE_LLM_PROVIDER]
    assert _row(spans, only_system)["provider_name"] == "openai"
    tool = _row(spans, {n.OPENINFERENCE_SPAN_KIND: "TOOL", n.OPENINFERENCE_TOOL_NAME: "search",
                        n.OPENINFERENCE_INPUT_VALUE: '{"q": "otel"}'})  # fmt: skip
    assert (tool["step_kind"], tool["tool_name"], tool["tool_arguments"]) == ("tool_call", "search", '{"q": "otel"}')
    assert tool["input_tokens"] is None and tool["output_tokens"] is None


def test_structured_anyvalues_land_as_clickhouse_json(tmp_path: Path, spans: SpanFactory) -> None:
    """Maps and arrays (SDK >= 1.45) land as the JSON text pdata's AsString gives (keys sorted,
    HTML-escaped), the same text in otel_traces and in the derived rows."""
    messages = [{"role": "user", "parts": [{"type": "text", "content": "a <b> & c"}]}]
    args = {"path": "src/x.py", "lines": [1, 2]}
    span = spans.span({n.GEN_AI_OPERATION_NAME: n.OPERATION_EXECUTE_TOOL, n.GEN_AI_TOOL_NAME: "read",
                       n.GEN_AI_TOOL_CALL_ARGUMENTS: args, n.GEN_AI_INPUT_MESSAGES: messages}, name="tool")  # fmt: skip
    record = from_readable(span)
    assert isinstance(record.attributes[n.GEN_AI_INPUT_MESSAGES], list)  # really structured on the span
    db = tmp_path / "t.duckdb"
    DuckDBWriter(db).write_spans([record])
    (row,) = query_dicts(db, "SELECT * FROM agent_attempts")
    (attrs,) = query(db, 'SELECT "SpanAttributes" FROM otel_traces')[0]
    assert row["input_messages_json"] == attrs[n.GEN_AI_INPUT_MESSAGES] == (
        '[{"parts":[{"content":"a \\u003cb\\u003e \\u0026 c","type":"text"}],"role":"user"}]')
    assert row["tool_arguments"] == attrs[n.GEN_AI_TOOL_CALL_ARGUMENTS] == '{"lines":[1,2],"path":"src/x.py"}'
    assert row["user_prompt"] == "a <b> & c"
    assert json.loads(row["tool_arguments"]) == args


def test_span_event_content_is_read(spans: SpanFactory) -> None:
    """Messages recorded as span events (gen_ai.content.prompt, or the inference-details event on
    the span) are the span's own messages."""
    a = _row(spans, {n.GEN_AI_OPERATION_NAME: "chat"}, [(n.EVENT_CONTENT_PROMPT, {n.GEN_AI_PROMPT: "plain ask"})])
    assert (a["user_prompt"], a["input_messages_json"]) == ("plain ask", "plain ask")
    details = {n.GEN_AI_INPUT_MESSAGES: json.dumps([{"role": "user", "parts": [{"type": "text", "content": "q"}]}])}
    assert _row(spans, {n.GEN_AI_OPERATION_NAME: "chat"}, [(n.EVENT_INFERENCE_DETAILS, details)])["user_prompt"] == "q"


def test_absent_content_and_usage_stay_not_recorded(spans: SpanFactory) -> None:
    """A GenAI span without content or usage has NULL messages, tokens and tool fields, never '' or 0."""
    a = _row(spans, {n.GEN_AI_OPERATION_NAME: "chat", n.GEN_AI_PROVIDER_NAME: "openai"})
    for column in ("system_prompt", "user_prompt", "input_messages_json", "messages_note", "input_tokens",
                   "output_tokens", "tool_name", "tool_call_id", "tool_arguments", "response_model"):  # fmt: skip
        assert a[column] is None, column
    zero = _row(spans, {n.GEN_AI_OPERATION_NAME: "chat", n.GEN_AI_USAGE_INPUT_TOKENS: 0})
    assert zero["input_tokens"] == 0 and zero["output_tokens"] is None


def test_openllmetry_span_under_observer_attempt_is_its_step(tmp_path: Path) -> None:
    """An OpenLLMetry chat span inside observer.attempt is that attempt's model step, and the
    attempt's messages are what it sent (source model_step)."""
    tp, memory, _, _ = memory_providers()
    with AgentObserver(tracer_provider=tp).attempt(run_id="run-o", request=None, attempt_id="att-o"):
        with tp.get_tracer("opentelemetry.instrumentation.openai").start_as_current_span(
                "openai.chat", kind=trace.SpanKind.CLIENT, attributes=_OPENLLMETRY):  # fmt: skip
            pass
    db = tmp_path / "t.duckdb"
    DuckDBWriter(db).write_spans([from_readable(s) for s in memory.get_finished_spans()])
    assert query(db, "SELECT attempt_id FROM agent_attempts") == [("att-o",)]
    assert query(db, "SELECT step_kind, provider_name, input_tokens FROM agent_attempt_steps") == [("model_call", "openai", 12)]
    assert query(db, "SELECT user_prompt, messages_source FROM agent_attempt_messages") == [
        ("Capital of France?", "model_step")]


def _genai_inference(tp: TracerProvider, lp: LoggerProvider, user: str) -> None:
    """One inference through the real opentelemetry-util-genai with content on the log event only."""
    from opentelemetry.util.genai.handler import TelemetryHandler
    from opentelemetry.util.genai.types import InputMessage, OutputMessage, Text

    handler = TelemetryHandler(tracer_provider=tp, logger_provider=lp)
    with handler.inference("openai", request_model="gpt-x") as inv:
        inv.input_messages = [InputMessage(role="user", parts=[Text(content=user)])]
        inv.output_messages = [OutputMessage(role="assistant", parts=[Text(content="ok")], finish_reason="stop")]


@pytest.fixture
def event_only(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("opentelemetry.util.genai")
    monkeypatch.setenv(n.ENV_GENAI_CAPTURE_CONTENT, "EVENT_ONLY")


@pytest.mark.parametrize("logs_first", [True, False])
def test_log_event_messages_of_a_legacy_chat_span(tmp_path: Path, event_only: None, logs_first: bool) -> None:
    """util-genai with EVENT_ONLY puts the messages on the operation-details log record only: the
    chat attempt's messages come from it (source log_event), whichever arrived first."""
    tp, memory, lp, logs = memory_providers()
    _genai_inference(tp, lp, "what is otel?")
    (span,) = memory.get_finished_spans()
    assert n.GEN_AI_INPUT_MESSAGES not in span.attributes  # really not on the span
    db = tmp_path / "t.duckdb"
    migrate_file(db)
    writer = DuckDBWriter(db)
    if logs_first:
        land_logs(db, logs.get_finished_logs())
        writer.write_spans([from_readable(span)])
    else:
        writer.write_spans([from_readable(span)])
        land_logs(db, logs.get_finished_logs())
    (m,) = query_dicts(db, "SELECT * FROM agent_attempt_messages")
    assert (m["user_prompt"], m["messages_source"], m["messages_note"]) == ("what is otel?", "log_event", None)
    assert json.loads(m["input_messages_json"])[0]["parts"][0]["content"] == "what is otel?"


def land_logs(db: Path, logs: Any) -> None:
    """Land SDK log records through the in-process duckdb logs exporter (the real path)."""
    exporter = DuckDBLogExporter(db)
    exporter.export(list(logs))
    exporter.shutdown()


@pytest.mark.parametrize("logs_first", [True, False])
def test_log_event_of_the_first_model_step_fills_the_attempt(tmp_path: Path, event_only: None, logs_first: bool) -> None:
    """observer.attempt without messages around a util-genai inference (content on the log event
    only): the attempt's messages are the model step's log event, labelled model_step."""
    tp, memory, lp, logs = memory_providers()
    with AgentObserver(tracer_provider=tp).attempt(run_id="run-l", request=None, attempt_id="att-l"):
        _genai_inference(tp, lp, "summarise the diff")
    db = tmp_path / "t.duckdb"
    migrate_file(db)
    records = [from_readable(s) for s in memory.get_finished_spans()]
    if logs_first:
        land_logs(db, logs.get_finished_logs())
    for r in records:  # the chat span first, then the attempt span, as a batch processor sends them
        DuckDBWriter(db).write_spans([r])
    if not logs_first:
        land_logs(db, logs.get_finished_logs())
    (m,) = query_dicts(db, "SELECT * FROM agent_attempt_messages")
    assert (m["attempt_id"], m["user_prompt"], m["messages_source"]) == ("att-l", "summarise the diff", "model_step")
    assert "log event" in m["messages_note"]


def test_a_disagreeing_log_event_loses_to_the_span(tmp_path: Path) -> None:
    """A GenAI log event whose user message differs from the attempt span's: the span's messages
    are shown and messages_note says a log event disagreed."""
    tp, memory, lp, logs = memory_providers()
    tracer = tp.get_tracer("app")
    with tracer.start_as_current_span("chat", attributes={
            n.GEN_AI_OPERATION_NAME: "chat",
            n.GEN_AI_INPUT_MESSAGES: json.dumps([{"role": "user", "parts": [{"type": "text", "content": "span text"}]}])}):
        lp.get_logger("openllmetry").emit(event_name=n.EVENT_USER_MESSAGE, body={"content": "log text"})
        lp.get_logger("openllmetry").emit(event_name=n.EVENT_SYSTEM_MESSAGE, body={"content": "sys from log"})
    db = tmp_path / "t.duckdb"
    migrate_file(db)
    land_logs(db, logs.get_finished_logs())
    DuckDBWriter(db).write_spans([from_readable(s) for s in memory.get_finished_spans()])
    (m,) = query_dicts(db, "SELECT * FROM agent_attempt_messages")
    assert (m["user_prompt"], m["system_prompt"], m["messages_source"]) == ("span text", None, "attempt_span")
    assert "recorded different messages" in m["messages_note"]


def test_per_message_log_events_are_the_messages(tmp_path: Path) -> None:
    """OpenLLMetry-style gen_ai.system.message / gen_ai.user.message log records of a span without
    content on it become its messages, in emission order (source log_event)."""
    tp, memory, lp, logs = memory_providers()
    with tp.get_tracer("app").start_as_current_span("chat", attributes={n.GEN_AI_OPERATION_NAME: "chat"}):
        lp.get_logger("openllmetry").emit(event_name=n.EVENT_SYSTEM_MESSAGE, body={"content": "be exact"})
        lp.get_logger("openllmetry").emit(event_name=n.EVENT_USER_MESSAGE, body={"content": "ask <1>"})
        lp.get_logger("openllmetry").emit(event_name=n.EVENT_CHOICE, body={"message": {"content": "answer"}})
    db = tmp_path / "t.duckdb"
    DuckDBWriter(db).write_spans([from_readable(s) for s in memory.get_finished_spans()])
    land_logs(db, logs.get_finished_logs())
    (m,) = query_dicts(db, "SELECT * FROM agent_attempt_messages")
    assert (m["system_prompt"], m["user_prompt"], m["messages_source"]) == ("be exact", "ask <1>", "log_event")
    assert [x["role"] for x in json.loads(m["input_messages_json"])] == ["system", "user"]  # the choice is output


def test_log_records_without_trace_context_are_ignored(tmp_path: Path, spans: SpanFactory) -> None:
    """A GenAI log record with no trace context joins no attempt (no message is invented from it)."""
    _, _, lp, logs = memory_providers()
    lp.get_logger("x").emit(event_name=n.EVENT_USER_MESSAGE, body={"content": "orphan"})
    db = tmp_path / "t.duckdb"
    migrate_file(db)
    land_logs(db, logs.get_finished_logs())
    DuckDBWriter(db).write_spans([from_readable(spans.span({n.GEN_AI_OPERATION_NAME: "chat"}, name="chat"))])
    assert query(db, "SELECT count(*) FROM agent_attempt_messages") == [(0,)]
    assert query(db, "SELECT count(*) FROM otel_logs") == [(1,)]


def test_per_message_span_events_are_the_messages(spans: SpanFactory) -> None:
    """Strands' default conventions put each message on its own span event (gen_ai.system.message,
    gen_ai.user.message, …, content a JSON list of {"text": …}): they are the span's messages."""
    events = [(n.EVENT_SYSTEM_MESSAGE, {n.EVENT_CONTENT_KEY: json.dumps([{"text": "Be careful."}])}),
              (n.EVENT_USER_MESSAGE, {n.EVENT_CONTENT_KEY: json.dumps([{"text": "Read notes/a.md"}])}),
              (n.EVENT_TOOL_MESSAGE, {n.EVENT_CONTENT_KEY: json.dumps([{"toolResult": {"status": "success"}}])})]
    a = _row(spans, {n.GEN_AI_OPERATION_NAME: "chat"}, events)
    assert (a["system_prompt"], a["user_prompt"]) == ("Be careful.", "Read notes/a.md")
    assert [m["role"] for m in json.loads(a["input_messages_json"])] == ["system", "user", "tool"]


def test_operation_details_events_are_merged_field_by_field(spans: SpanFactory) -> None:
    """With one field per gen_ai.client.inference.operation.details span event (Strands,
    gen_ai_latest_experimental), the system instructions and the user message both count, not
    only the first event's."""
    events = [(n.EVENT_INFERENCE_DETAILS, {n.GEN_AI_SYSTEM_INSTRUCTIONS: json.dumps([{"type": "text", "content": "sys"}])}),
              (n.EVENT_INFERENCE_DETAILS, {n.GEN_AI_INPUT_MESSAGES: json.dumps(
                  [{"role": "user", "parts": [{"type": "text", "content": "the ask"}]}])}),
              (n.EVENT_INFERENCE_DETAILS, {n.GEN_AI_OUTPUT_MESSAGES: "[]"})]
    a = _row(spans, {n.GEN_AI_OPERATION_NAME: "chat"}, events)
    assert (a["system_prompt"], a["user_prompt"]) == ("sys", "the ask")


def test_a_tool_span_input_is_never_a_user_message(spans: SpanFactory) -> None:
    """An OpenInference TOOL span's input.value is its tool arguments; it is never read as a user message."""
    tool = _row(spans, {n.OPENINFERENCE_SPAN_KIND: "TOOL", n.OPENINFERENCE_TOOL_NAME: "read_file",
                        n.OPENINFERENCE_INPUT_VALUE: "notes/handoff.md"})  # fmt: skip
    assert tool["tool_arguments"] == "notes/handoff.md"
    assert (tool["user_prompt"], tool["input_messages_json"], tool["messages_note"]) == (None, None, None)


def _langgraph_spans() -> list[Any]:
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "clickhouse"))
    from test_clickhouse_projection import langgraph_run

    tp, memory, _, _ = memory_providers()
    langgraph_run(tp.get_tracer("openinference.instrumentation.langchain"))
    return [from_readable(s) for s in memory.get_finished_spans()]


@pytest.mark.parametrize("order", ["children first", "root first", "one batch"])
def test_a_langgraph_run_is_one_attempt(tmp_path: Path, order: str) -> None:
    """A LangGraph run (OpenInference CHAIN root, AGENT node, CHAIN runnables, LLM and TOOL spans) is
    one attempt, the root, in any arrival order; its steps are the agent node, the model call and
    the tool call (with the TOOL span's input as arguments), not the CHAIN runnables."""
    records = [r for r in _langgraph_spans() if r.name != "lone chain"]
    db = tmp_path / "t.duckdb"
    if order == "one batch":
        DuckDBWriter(db).write_spans(records)
    else:
        for r in (records if order == "children first" else list(reversed(records))):
            DuckDBWriter(db).write_spans([r])
    (a,) = query_dicts(db, "SELECT * FROM agent_attempts")
    assert (a["span_name"], a["session_id"], a["step_kind"]) == ("LangGraph", "thread-1", "container")
    steps = query(db, "SELECT step_kind, span_name, tool_arguments FROM agent_attempt_steps ORDER BY seq")
    assert steps == [("agent", "agent", None), ("model_call", "ChatOpenAI", None), ("tool_call", "read_file", "notes/handoff.md")]
    (m,) = query_dicts(db, "SELECT * FROM agent_attempt_messages")  # the root's input is not what a model was sent
    assert (m["system_prompt"], m["user_prompt"], m["messages_source"]) == ("Be careful.", "Summarise notes/handoff.md",
                                                                          "model_step")


def test_a_vercel_ai_sdk_6_call_is_one_attempt(tmp_path: Path) -> None:
    """The Vercel AI SDK's own ai.* spans (ai 6, experimental_telemetry) land: ai.generateText is the
    attempt with its system and user text, session and agent; doGenerate spans are model calls and
    ai.toolCall a tool call with its arguments."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "clickhouse"))
    from test_clickhouse_projection import vercel_run

    tp, memory, _, _ = memory_providers()
    vercel_run(tp.get_tracer("ai"))
    db = tmp_path / "t.duckdb"
    DuckDBWriter(db).write_spans([from_readable(s) for s in memory.get_finished_spans()])
    a = {r["span_name"]: r for r in query_dicts(db, "SELECT * FROM agent_attempts")}
    call = a["ai.generateText"]
    assert (call["source_format"], call["session_id"], call["agent_name"], call["provider_name"]) == (
        "vercel_ai", "sess-v", "coder", "fake.chat")
    assert (call["system_prompt"], call["user_prompt"], call["input_tokens"]) == ("Be careful.", "Summarise notes/handoff.md", 22)
    assert (a["ai.streamText"]["user_prompt"], a["ai.streamText"]["input_tokens"]) == ("just ask", 3)
    steps = query(db, "SELECT step_kind, tool_name, tool_call_id, tool_arguments, input_tokens FROM agent_attempt_steps ORDER BY seq")
    assert steps == [("model_call", None, None, None, 11), ("tool_call", "read_file", "call_1", '{"path":"notes/handoff.md"}', None)]


def test_an_executed_tools_arguments_from_its_events(spans: SpanFactory) -> None:
    """An execute_tool span without gen_ai.tool.call.arguments gives its arguments from its
    gen_ai.tool.message event (Strands' default) or from the tool_call part of its input messages
    (Strands with gen_ai_latest_experimental)."""
    tool = {n.GEN_AI_OPERATION_NAME: n.OPERATION_EXECUTE_TOOL, n.GEN_AI_TOOL_NAME: "read_file"}
    on_event = _row(spans, tool, [(n.EVENT_TOOL_MESSAGE, {n.EVENT_CONTENT_KEY: '{"path": "a.md"}', "role": "tool"})])
    assert on_event["tool_arguments"] == '{"path": "a.md"}'
    part = [{"role": "tool", "parts": [{"type": "tool_call", "name": "read_file", "id": "c1", "arguments": {"path": "b.md"}}]}]
    in_part = _row(spans, tool, [(n.EVENT_INFERENCE_DETAILS, {n.GEN_AI_INPUT_MESSAGES: json.dumps(part)})])
    assert in_part["tool_arguments"] == '{"path":"b.md"}'


# --- bad input: every field an encoding reads, of every wrong type -----------------------------------

_READ_NAMES = sorted({v for k, v in vars(n).items() if k.isupper() and isinstance(v, str) and "." in v
                      and not k.startswith(("ENV_", "SENTENCE_"))})  # fmt: skip
_MARKERS = [{n.PACKET_VERSION_ATTR: 1}, {n.GEN_AI_OPERATION_NAME: "chat"}, {n.GEN_AI_OPERATION_NAME: n.OPERATION_EXECUTE_TOOL},
            {n.OPENLLMETRY_REQUEST_TYPE: "chat"}, {n.OPENINFERENCE_SPAN_KIND: "TOOL"}, {n.OPENINFERENCE_SPAN_KIND: "CHAIN"},
            {n.VERCEL_OPERATION_ID: "ai.generateText"}, {n.VERCEL_OPERATION_ID: "ai.toolCall"},
            {n.GEN_AI_OPERATION_NAME: "chat", n.OPENINFERENCE_SPAN_KIND: "LLM", n.VERCEL_OPERATION_ID: "ai.toolCall"}]


def _wrong_values() -> Any:
    from hypothesis import strategies as st

    scalar = st.one_of(st.booleans(), st.integers(min_value=-(2**63), max_value=2**63 - 1), st.floats(allow_nan=True),
                       st.binary(max_size=16), st.text(max_size=8), st.just("x" * 200_000), st.just("{not json"),
                       st.just('[{"role": 5, "parts": {"type": []}}]'))
    return st.one_of(scalar, st.lists(st.text(max_size=4), max_size=3), st.lists(st.integers(), max_size=3),
                     st.dictionaries(st.text(max_size=4), st.text(max_size=4), max_size=2))


def test_wrong_types_in_every_read_field_never_break_the_row() -> None:
    """Any read attribute (and event attribute) of any type — arrays, maps, bytes, huge strings, broken
    JSON — on a span of any encoding, several encodings at once, or half-present: the row derivation
    never raises, never invents, and every derived text is a string or NULL, every count an int or NULL."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    spans = SpanFactory()

    @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(marker=st.sampled_from(_MARKERS), attrs=st.dictionaries(st.sampled_from(_READ_NAMES), _wrong_values(), max_size=6),
           event_name=st.sampled_from([n.EVENT_INFERENCE_DETAILS, n.EVENT_USER_MESSAGE, n.EVENT_TOOL_MESSAGE,
                                       n.EVENT_CONTENT_PROMPT, n.INPUT_EVENT]),  # fmt: skip
           event_attrs=st.dictionaries(st.sampled_from(_READ_NAMES + [n.EVENT_CONTENT_KEY]), _wrong_values(), max_size=3))
    def check(marker: dict[str, Any], attrs: dict[str, Any], event_name: str, event_attrs: dict[str, Any]) -> None:
        record = from_readable(spans.span({**attrs, **marker}, [(event_name, event_attrs)], name="bad"))
        row = derive(record).attempt
        assert row is not None
        for column in ("session_id", "agent_name", "provider_name", "request_model", "response_model", "tool_name",
                       "tool_call_id", "tool_arguments", "system_prompt", "user_prompt", "input_messages_json"):
            assert row[column] is None or isinstance(row[column], str), (column, row[column])
        for column in ("input_tokens", "output_tokens"):
            assert row[column] is None or (isinstance(row[column], int) and 0 <= row[column] < 2**63), column

    check()


def test_a_span_of_wrong_types_lands_raw_and_split_runs_settle(tmp_path: Path) -> None:
    """A GenAI span whose every read attribute has the wrong type still lands raw in otel_traces with
    its attempt row; a run's spans split over many requests and arriving out of order settle to the
    same attempts and steps as one batch."""
    spans = SpanFactory()
    bad = {name: ["not", "a", "string"] for name in _READ_NAMES if not name.startswith("otel_inputs.")}
    bad[n.GEN_AI_OPERATION_NAME] = "chat"
    db = tmp_path / "bad.duckdb"
    DuckDBWriter(db).write_spans([from_readable(spans.span(bad, name="bad"))])
    assert query(db, "SELECT count(*) FROM otel_traces") == [(1,)]
    assert query(db, "SELECT span_name, user_prompt, input_tokens FROM agent_attempts") == [("bad", None, None)]
    records = _langgraph_spans()
    one = tmp_path / "one.duckdb"
    DuckDBWriter(one).write_spans(records)
    split = tmp_path / "split.duckdb"
    for r in records[1::2] + records[0::2]:  # every other span first: children and parents interleaved
        DuckDBWriter(split).write_spans([r])
    sql = "SELECT attempt_id, seq, span_id, step_kind FROM agent_attempt_steps ORDER BY attempt_id, seq"
    assert query(split, sql) == query(one, sql) and query(split, "SELECT attempt_id FROM agent_attempts ORDER BY 1") == \
        query(one, "SELECT attempt_id FROM agent_attempts ORDER BY 1")
