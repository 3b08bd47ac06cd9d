"""OpenTelemetry's GenAI capture switch: where the exact messages go, after admission."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor

from otel_inputs import CaptureMode, CapturePolicy, names, resolve_request
from otel_inputs._policy import MessageCapture
from otel_inputs.testing import RecordingHarness


@pytest.mark.parametrize("raw,expected", [
    ("NO_CONTENT", MessageCapture.NO_CONTENT),
    ("span_only", MessageCapture.SPAN_ONLY),
    ("Event_Only", MessageCapture.EVENT_ONLY),
    (" span_and_event ", MessageCapture.SPAN_AND_EVENT),
    ("true", MessageCapture.SPAN_ONLY),
    ("TRUE", MessageCapture.SPAN_ONLY),
    ("false", MessageCapture.NO_CONTENT),
    ("", MessageCapture.NO_CONTENT),
])
def test_switch_values_are_read_case_insensitively(raw: str, expected: MessageCapture) -> None:
    """The four modes parse in any case, and true/false stay accepted as SPAN_ONLY/NO_CONTENT."""
    policy = CapturePolicy.from_env({names.ENV_GENAI_CAPTURE_CONTENT: raw})
    assert policy.message_content is expected


def test_unknown_switch_value_captures_nothing_and_warns(caplog: pytest.LogCaptureFixture) -> None:
    """A misspelt switch becomes NO_CONTENT with a warning naming the accepted values."""
    with caplog.at_level(logging.WARNING, logger="otel_inputs"):
        policy = CapturePolicy.from_env({names.ENV_GENAI_CAPTURE_CONTENT: "event-only"})
    assert policy.message_content is MessageCapture.NO_CONTENT
    assert "SPAN_AND_EVENT" in caplog.text and "event-only" in caplog.text


def test_booleans_given_in_code_are_normalised() -> None:
    """CapturePolicy(message_content=True/False) keeps meaning content on the span / none."""
    assert CapturePolicy(message_content=True).message_content is MessageCapture.SPAN_ONLY
    assert CapturePolicy(message_content=False).message_content is MessageCapture.NO_CONTENT


class Recorded:
    """One attempt recorded with a real SDK tracer and logger provider."""

    def __init__(self, tmp_path: Path, policy: CapturePolicy, **observer_kwargs) -> None:
        self.logs = InMemoryLogRecordExporter()
        logger_provider = LoggerProvider()
        logger_provider.add_log_record_processor(SimpleLogRecordProcessor(self.logs))
        with RecordingHarness(tmp_path / "store") as h:
            obs = h.observer(policy=policy, logger_provider=logger_provider, agent_name="coder", **observer_kwargs)
            with obs.attempt(run_id="r1", request=resolve_request("fix the parser"), session_id="s1",
                             system_message="You are careful.", user_message="Please fix the parser.") as rec:
                pass
            self.span = h.span_for(rec.attempt_id)
            self.attempt_id = rec.attempt_id
        logger_provider.shutdown()
        # the GenAI events (the store's facts, docs/wire.md, go through the same logger provider)
        self.records = [d.log_record for d in self.logs.get_finished_logs()
                        if d.log_record.event_name != names.STORE_FACT_EVENT]


def test_event_only_puts_messages_on_the_log_event_and_never_on_the_span(tmp_path: Path) -> None:
    """EVENT_ONLY: one operation.details log record, correlated to the attempt span, holds the messages; the span holds none."""
    r = Recorded(tmp_path, CapturePolicy(message_content="EVENT_ONLY"))
    attrs = r.span.attributes
    assert names.GEN_AI_INPUT_MESSAGES not in attrs and names.GEN_AI_SYSTEM_INSTRUCTIONS not in attrs
    assert attrs[names.TASK_PROMPT] == "fix the parser"  # the task follows otel-inputs admission, not this switch
    (record,) = r.records
    assert record.event_name == names.EVENT_INFERENCE_DETAILS
    ctx = r.span.get_span_context()
    assert (record.trace_id, record.span_id) == (ctx.trace_id, ctx.span_id)
    ev = dict(record.attributes)
    assert ev[names.GEN_AI_OPERATION_NAME] == names.OPERATION_INVOKE_AGENT
    assert ev[names.ATTEMPT_ID] == r.attempt_id and ev[names.GEN_AI_CONVERSATION_ID] == "s1"
    inputs = [dict(m) for m in ev[names.GEN_AI_INPUT_MESSAGES]]
    assert inputs[0]["role"] == "user"
    assert [dict(p) for p in inputs[0]["parts"]] == [{"type": "text", "content": "Please fix the parser."}]
    assert [dict(p) for p in ev[names.GEN_AI_SYSTEM_INSTRUCTIONS]] == [{"type": "text", "content": "You are careful."}]


def test_span_and_event_puts_messages_on_both(tmp_path: Path) -> None:
    """SPAN_AND_EVENT: the span carries the JSON-string messages and the log event the structured ones."""
    r = Recorded(tmp_path, CapturePolicy(message_content="span_and_event"))
    assert json.loads(r.span.attributes[names.GEN_AI_INPUT_MESSAGES])[0]["parts"][0]["content"] == "Please fix the parser."
    assert len(r.records) == 1 and names.GEN_AI_INPUT_MESSAGES in r.records[0].attributes


def test_span_only_emits_no_event(tmp_path: Path) -> None:
    """SPAN_ONLY: the messages are on the span and no log event is emitted."""
    r = Recorded(tmp_path, CapturePolicy(message_content="SPAN_ONLY"))
    assert names.GEN_AI_SYSTEM_INSTRUCTIONS in r.span.attributes
    assert r.records == []


def test_no_content_sends_messages_nowhere(tmp_path: Path) -> None:
    """NO_CONTENT: neither the span nor any log event carries the messages."""
    r = Recorded(tmp_path, CapturePolicy(message_content="NO_CONTENT"))
    assert names.GEN_AI_INPUT_MESSAGES not in r.span.attributes
    assert r.records == []


def test_admission_applies_before_the_switch(tmp_path: Path) -> None:
    """With otel_inputs capture at metadata_only, SPAN_AND_EVENT still sends no message anywhere."""
    r = Recorded(tmp_path, CapturePolicy(mode=CaptureMode.METADATA_ONLY, message_content="SPAN_AND_EVENT"))
    assert names.GEN_AI_INPUT_MESSAGES not in r.span.attributes and names.TASK_PROMPT not in r.span.attributes
    assert r.records == []


def test_internal_agent_span_does_not_carry_gen_ai_provider_name(tmp_path: Path) -> None:
    """An INTERNAL invoke_agent span records the provider under otel_inputs.provider.name; a CLIENT span as gen_ai.provider.name."""
    internal = Recorded(tmp_path / "a", CapturePolicy(), provider_name="openai")
    assert names.GEN_AI_PROVIDER_NAME not in internal.span.attributes
    assert internal.span.attributes[names.PROVIDER_NAME] == "openai"
    remote = Recorded(tmp_path / "b", CapturePolicy(), provider_name="openai", remote_agent=True)
    assert remote.span.attributes[names.GEN_AI_PROVIDER_NAME] == "openai"
    assert names.PROVIDER_NAME not in remote.span.attributes
