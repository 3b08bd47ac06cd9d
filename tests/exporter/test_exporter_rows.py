"""Span → row derivation (pure): packet attempts, legacy attempts, coverage honesty, bad events."""

from __future__ import annotations

import json

from exporter_helpers import SpanFactory, input_event, packet_attributes

from otel_inputs.exporter._arrow import build_batch
from otel_inputs.exporter._rows import derive
from otel_inputs.exporter._spans import from_readable, stringify
from otel_inputs import names as n


def test_packet_attempt_maps_every_wire_attribute(spans: SpanFactory) -> None:
    """A packet span yields one attempt row carrying each docs/wire.md attribute in its column."""
    rows = derive(from_readable(spans.attempt(2, items=2)))
    a = rows.attempt
    assert a is not None
    assert a["attempt_id"] == "att-2" and a["run_id"] == "run-1" and a["session_id"] == "conv-0"
    assert a["phase"] == "implement" and a["send_kind"] == "initial" and a["turn_index"] == 3
    assert a["previous_turn_attempt_id"] == "att-1"
    assert a["task_prompt"] == "Fix the failing test 2." and a["task_source_kind"] == "inline_text"
    assert a["system_prompt"] == "You are careful." and a["user_prompt"] == "Fix test 2."
    assert a["input_packet_version"] == 1 and a["input_coverage"] == "complete"
    assert a["coverage_reason"] is None
    assert (a["declared_input_count"], a["captured_input_count"], a["omitted_input_count"]) == (2, 2, 0)
    assert a["source_format"] == "otel_inputs" and a["service_name"] == "agent-svc"
    assert [r["seq"] for r in rows.inputs] == [0, 1]
    assert rows.inputs[1]["input_id"] == "in-2-1" and rows.inputs[1]["row_problem"] is None


def test_absent_attributes_are_null_not_zero_or_empty(spans: SpanFactory) -> None:
    """Attributes the span did not carry read as None, never 0 or ''."""
    attrs = packet_attributes(0, items=0)
    for key in (n.PACKET_DECLARED_COUNT, n.PACKET_OMITTED_COUNT, n.TASK_PROMPT, n.GEN_AI_CONVERSATION_ID,
                n.RETRY_OF_ATTEMPT_ID, n.TURN_INDEX):  # fmt: skip
        attrs.pop(key, None)
    a = derive(from_readable(spans.span(attrs))).attempt
    assert a is not None
    for column in ("declared_input_count", "omitted_input_count", "task_prompt", "session_id",
                   "retry_of_attempt_id", "turn_index", "previous_turn_attempt_id"):  # fmt: skip
        assert a[column] is None, column


def test_unparseable_messages_are_kept_exactly(spans: SpanFactory) -> None:
    """Messages that are not GenAI JSON are kept byte for byte instead of being dropped or altered."""
    raw = '{"role": "user", "parts": [ broken'
    a = derive(from_readable(spans.span(packet_attributes(0, **{n.GEN_AI_INPUT_MESSAGES: raw})))).attempt
    assert a is not None and a["user_prompt"] == raw


def test_legacy_genai_span_is_a_not_recorded_attempt(spans: SpanFactory) -> None:
    """A GenAI span without a packet becomes an attempt keyed by its span id, coverage not_recorded."""
    span = spans.span(
        {
            n.GEN_AI_OPERATION_NAME: "chat",
            n.GEN_AI_SYSTEM: "openai",
            n.GEN_AI_CONVERSATION_ID: "c-9",
            n.GEN_AI_INPUT_MESSAGES: json.dumps(
                [{"role": "system", "content": "Be terse."}, {"role": "user", "content": "Hello?"}]
            ),
        },
        name="chat gpt-4o",
    )
    rec = from_readable(span)
    rows = derive(rec)
    a = rows.attempt
    assert a is not None and rows.inputs == []
    assert a["attempt_id"] == rec.span_id and a["input_coverage"] == "not_recorded"
    assert a["session_id"] == "c-9" and a["provider_name"] == "openai"
    assert a["user_prompt"] == "Hello?" and a["system_prompt"] == "Be terse."
    assert a["input_packet_version"] is None and a["source_format"] == "gen_ai"


def test_deprecated_gen_ai_prompt_is_kept(spans: SpanFactory) -> None:
    """A legacy span carrying only the deprecated gen_ai.prompt keeps that text as its user prompt."""
    a = derive(from_readable(spans.span({n.GEN_AI_OPERATION_NAME: "chat", n.GEN_AI_PROMPT: "plain words"}))).attempt
    assert a is not None and a["user_prompt"] == "plain words"


def test_openinference_llm_span_messages_and_session(spans: SpanFactory) -> None:
    """An OpenInference LLM span is a legacy attempt with its flattened messages and session.id."""
    attrs = {
        n.OPENINFERENCE_SPAN_KIND: "LLM",
        n.OPENINFERENCE_SESSION_ID: "sess-1",
        n.OPENINFERENCE_MODEL_NAME: "gpt-4o",
        "llm.input_messages.0.message.role": "system",
        "llm.input_messages.0.message.content": "Sys text",
        "llm.input_messages.1.message.role": "user",
        "llm.input_messages.1.message.content": "User text",
    }
    a = derive(from_readable(spans.span(attrs, name="ChatCompletion"))).attempt
    assert a is not None
    assert (a["session_id"], a["request_model"], a["source_format"]) == ("sess-1", "gpt-4o", "openinference")
    assert a["system_prompt"] == "Sys text" and a["user_prompt"] == "User text"
    only_value = {n.OPENINFERENCE_SPAN_KIND: "AGENT", n.OPENINFERENCE_INPUT_VALUE: "do the thing"}
    b = derive(from_readable(spans.span(only_value))).attempt
    assert b is not None and b["user_prompt"] == "do the thing"


def test_plain_spans_are_not_attempts_and_chains_are_containers(spans: SpanFactory) -> None:
    """Ordinary spans land in otel_traces only; an OpenInference CHAIN is a container (the attempt at the
    root of a run, never a step below one: docs/encodings.md) and records no messages of its own."""
    assert derive(from_readable(spans.span({"http.method": "GET"}, name="GET /"))).attempt is None
    chain = derive(from_readable(spans.span({n.OPENINFERENCE_SPAN_KIND: "CHAIN", n.OPENINFERENCE_INPUT_VALUE: "x"}))).attempt
    assert chain is not None and (chain["step_kind"], chain["user_prompt"]) == ("container", None)


def test_fewer_events_than_item_count_is_partial(spans: SpanFactory) -> None:
    """A complete packet whose span carries fewer input events than item_count reads partial, with why."""
    span = spans.span(packet_attributes(0, items=3), [(n.INPUT_EVENT, input_event(0, 0))])
    a = derive(from_readable(span)).attempt
    assert a is not None and a["input_coverage"] == "partial"
    assert "only 1 of 3 input events arrived" in a["coverage_reason"]


def test_sdk_event_limit_drop_is_partial_never_complete() -> None:
    """Events dropped by the SDK's span event limit make the attempt partial and say how many."""
    factory = SpanFactory(max_events=4)
    rec = from_readable(factory.attempt(0, items=6))
    a = derive(rec).attempt
    assert rec.dropped_events == 2
    assert a is not None and a["input_coverage"] == "partial"
    assert "2 span events were dropped" in a["coverage_reason"] and a["dropped_events_count"] == 2
    factory.provider.shutdown()


def test_malformed_input_events_stay_visible_with_unique_seq(spans: SpanFactory) -> None:
    """Missing, mistyped and duplicate seqs become unreadable rows with synthetic unique seqs and safe reasons."""
    secret = "TOPSECRET-VALUE"
    events = [
        (n.INPUT_EVENT, input_event(0, 0)),
        (n.INPUT_EVENT, input_event(0, 1, **{n.INPUT_SEQ: secret})),
        (n.INPUT_EVENT, input_event(0, 2, **{n.INPUT_SEQ: None, n.INPUT_ID: None})),
        (n.INPUT_EVENT, input_event(0, 0, **{n.INPUT_ID: "dup"})),
        (n.INPUT_EVENT, input_event(0, 3, **{n.INPUT_LABEL: 42, n.INPUT_SIZE_BYTES: -5})),
    ]
    rows = derive(from_readable(spans.span(packet_attributes(0, items=5), events)))
    assert rows.attempt is not None and rows.attempt["input_coverage"] == "partial"
    seqs = [r["seq"] for r in rows.inputs]
    assert len(seqs) == 5 and len(set(seqs)) == 5
    good, bad_type, no_seq, dup, bad_label = rows.inputs
    assert good["row_problem"] is None and good["capture_status"] == "captured"
    for row in (bad_type, no_seq, dup, bad_label):
        assert row["capture_status"] == "unreadable" and row["artifact_status"] == "never_captured"
        assert row["row_problem"] and secret not in row["row_problem"]
    assert bad_label["seq"] == 3 and bad_label["label"] is None and bad_label["size_bytes"] is None
    assert no_seq["input_id"] is None and "seq missing" in no_seq["row_problem"]
    assert "duplicate seq 0" in dup["row_problem"]
    assert {bad_type["seq"], no_seq["seq"], dup["seq"]} == {4, 5, 6}


def test_stringify_matches_clickhouse_conventions() -> None:
    """Attribute values are stringified as pdata AsString does: ints plain, bools lowercase, arrays JSON."""
    assert stringify(5) == "5" and stringify(True) == "true" and stringify(1.5) == "1.5"
    assert stringify(2.0) == "2" and stringify(["a", 1]) == '["a",1]' and stringify("x") == "x"


def test_replayed_span_in_one_batch_is_deduplicated(spans: SpanFactory) -> None:
    """The same span twice in one batch builds one trace row, one attempt and one set of inputs."""
    rec = from_readable(spans.attempt(0, items=2))
    tables = build_batch([rec, rec])
    assert tables.traces is not None and tables.traces.num_rows == 1
    assert tables.attempts is not None and tables.attempts.num_rows == 1
    assert tables.inputs is not None and tables.inputs.num_rows == 2
