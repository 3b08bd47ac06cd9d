"""Frameworks on their own telemetry in the viewer (docs/encodings.md): attempts with a session id
but no run id are grouped by their session, turn 2 names turn 1, this dispatch's user message is
what is new, and telemetry that gave no attempt is named, never shown as "no attempts"."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "exporter"))
from apptest_helpers import run_app, texts  # noqa: E402
from exporter_helpers import SpanFactory, memory_providers  # noqa: E402

from otel_inputs import names as n  # noqa: E402
from otel_inputs.exporter import DuckDBLogExporter  # noqa: E402
from otel_inputs.exporter._spans import from_readable  # noqa: E402
from otel_inputs.exporter._writer import DuckDBWriter  # noqa: E402
from otel_inputs.viewer import _queries as q  # noqa: E402
from otel_inputs.viewer._dispatch import this_dispatch  # noqa: E402
from otel_inputs.viewer._panel import build_panel  # noqa: E402

FIRST_TURN_SENTENCE = "No earlier turn of this session was recorded: this is its first recorded turn."


def _genai(*messages: tuple[str, str]) -> str:
    return json.dumps([{"role": r, "parts": [{"type": "text", "content": c}]} for r, c in messages])


def test_dispatch_is_what_is_new_since_the_previous_turn() -> None:
    """Turn 2's request holds turn 1's conversation: this dispatch is only the user message after it,
    matched against the previous turn's messages when they were recorded, else after the last reply."""
    turn1 = _genai(("system", "S"), ("user", "first ask"))
    turn2 = _genai(("system", "S"), ("user", "first ask"), ("assistant", "done"), ("user", "second ask"))
    assert this_dispatch(turn1, "first ask", None, None).user_prompt == "first ask"
    matched = this_dispatch(turn2, "first ask\n\nsecond ask", turn1, "att-1")
    assert matched.user_prompt == "second ask" and "att-1" in (matched.note or "")
    unmatched = this_dispatch(turn2, "first ask\n\nsecond ask", None, None)
    assert unmatched.user_prompt == "second ask" and "inherited" in (unmatched.note or "")
    assert this_dispatch(None, "as recorded", None, None).user_prompt == "as recorded"  # no messages: nothing inferred


def _land_session(db: Path) -> list[str]:
    """Two turns of one session as a framework sends them: each its own trace, a session id, no run id;
    turn 2's model call carries turn 1's conversation."""
    tp, memory, _, _ = memory_providers()
    tracer = tp.get_tracer("framework")
    asks = [("first ask",), ("first ask", "second ask")]
    for users in asks:
        history: list[tuple[str, str]] = [("system", "Be careful.")]
        for i, u in enumerate(users):
            history.append(("user", u))
            if i < len(users) - 1:
                history.append(("assistant", f"answer {i + 1}"))
        with tracer.start_as_current_span("invoke_agent", attributes={n.GEN_AI_OPERATION_NAME: "invoke_agent",
                                                                     n.OPENINFERENCE_SESSION_ID: "sess-a"}):
            with tracer.start_as_current_span("chat", attributes={n.GEN_AI_OPERATION_NAME: "chat",
                                                                  n.GEN_AI_INPUT_MESSAGES: _genai(*history)}):
                time.sleep(0.002)
        time.sleep(0.002)
    spans = [from_readable(s) for s in memory.get_finished_spans()]
    DuckDBWriter(db).write_spans(spans)
    return [s.span_id for s in spans if s.name == "invoke_agent"]


def test_turn_two_of_a_session_without_run_id_names_turn_one(tmp_path: Path) -> None:
    """Attempts with a session id and no run id: turn 2's page lists turn 1 as its previous turn, its
    turn index is inferred from the order (and says so), its dispatch is the new user message, and it
    never claims to be the first recorded turn; the run list shows the session as a run."""
    db = tmp_path / "t.duckdb"
    first, second = _land_session(db)
    with q.open_backend(db) as con:
        bundle = q.load_attempt(con, second)
        assert bundle is not None
        assert [t.attempt_id for t in bundle.session_turns] == [first, second]
        assert bundle.previous_turn_id == first and bundle.inferred_turn_index == 2
        assert bundle.dispatch is not None and bundle.dispatch.user_prompt == "second ask"
        runs = q.list_runs(con)
        assert [(r.run_id, r.session_key, r.attempts) for r in runs] == [(None, "sess-a", 2)]
        page = q.list_attempts(con, runs[0].key)
        assert page.total == 2
        panel = build_panel(bundle)
        first_bundle = q.load_attempt(con, first)
        assert first_bundle is not None and first_bundle.previous_turn_id is None
        first_panel = build_panel(first_bundle)
    assert FIRST_TURN_SENTENCE not in panel.inherited.notes
    assert [t.attempt_id for t in panel.inherited.turns] == [first]
    assert panel.dispatch.current_message == "second ask"
    assert panel.dispatch.turn_index.startswith("2 (from the order")
    assert FIRST_TURN_SENTENCE in first_panel.inherited.notes  # true there: nothing earlier landed


def test_telemetry_without_attempts_is_named_on_the_runs_page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A service whose spans and log records landed but gave no attempt is named on the runs page with
    its record count; the page never says "No attempts recorded yet." then."""
    db = tmp_path / "t.duckdb"
    spans = SpanFactory(service="claude-code")
    DuckDBWriter(db).write_spans([from_readable(spans.span({"claude_code.tool": "Read"}, name="claude_code.tool"))])
    _, _, lp, logs = memory_providers()
    lp.get_logger("claude-code").emit(event_name="claude_code.user_prompt", body="hi")
    exporter = DuckDBLogExporter(db)
    exporter.export(list(logs.get_finished_logs()))
    exporter.shutdown()
    with q.open_backend(db) as con:
        found = q.services_without_attempts(con)
    assert {(s.service_name, s.spans, s.log_records) for s in found} == {("claude-code", 1, 0), ("agent-svc", 0, 1)}
    monkeypatch.setenv(n.ENV_DB, str(db))
    monkeypatch.delenv(n.ENV_CLICKHOUSE, raising=False)
    shown = texts(run_app())
    assert any(t.startswith("claude-code: 1 records") and "no attempts derived" in t for t in shown), shown
    assert "No attempts recorded yet." not in shown


def test_tool_arguments_from_the_model_call_that_asked(tmp_path: Path) -> None:
    """A tool step without arguments (ADK with content on log events) shows those of the tool call with
    its call id in the preceding model step's gen_ai.output.messages log record, naming that step."""
    tp, memory, lp, logs = memory_providers()
    tracer = tp.get_tracer("adk")
    output = [{"role": "assistant", "parts": [{"type": "tool_call", "id": "call_1", "name": "read_file",
                                               "arguments": {"path": "notes/handoff.md"}}]}]  # fmt: skip
    with tracer.start_as_current_span("invoke_agent", attributes={n.GEN_AI_OPERATION_NAME: "invoke_agent"}):
        with tracer.start_as_current_span("generate_content", attributes={n.GEN_AI_OPERATION_NAME: "generate_content"}):
            lp.get_logger("adk").emit(event_name=n.EVENT_INFERENCE_DETAILS, attributes={n.GEN_AI_OUTPUT_MESSAGES: output})
        with tracer.start_as_current_span("execute_tool read_file", attributes={
                n.GEN_AI_OPERATION_NAME: n.OPERATION_EXECUTE_TOOL, n.GEN_AI_TOOL_NAME: "read_file",
                n.GEN_AI_TOOL_CALL_ID: "call_1"}):  # fmt: skip
            pass
    db = tmp_path / "t.duckdb"
    spans = [from_readable(s) for s in memory.get_finished_spans()]
    DuckDBWriter(db).write_spans(spans)
    exporter = DuckDBLogExporter(db)
    exporter.export(list(logs.get_finished_logs()))
    exporter.shutdown()
    root = next(s for s in spans if s.name == "invoke_agent")
    model = next(s for s in spans if s.name == "generate_content")
    with q.open_backend(db) as con:
        steps = q.get_steps(con, root.span_id, None, root.trace_id)
    assert steps is not None
    (tool,) = [s for s in steps if s.step_kind == "tool_call"]
    assert (tool.tool_arguments, tool.arguments_from) == ('{"path":"notes/handoff.md"}', model.span_id)


def test_health_counts_records_without_attempts() -> None:
    """The health indicator is never "ok" while records landed from which no attempt was derived; it counts them."""
    from otel_inputs.viewer._health import HealthState, health_model
    from otel_inputs.viewer._records import HealthRow

    rows = [HealthRow("sink", "spans_written", 30, None)]
    assert health_model(rows).state is HealthState.OK
    m = health_model(rows, unmapped=29)
    assert m.state is HealthState.UNMAPPED and "29 record(s)" in m.summary
