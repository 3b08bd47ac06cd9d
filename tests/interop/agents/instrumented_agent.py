"""An agent script that sets up no OpenTelemetry itself: run under ``opentelemetry-instrument``.

The distro's auto-configuration provides the global tracer and logger providers (and, with
``OTEL_TRACES_EXPORTER=duckdb`` / ``OTEL_LOGS_EXPORTER=duckdb``, the in-process DuckDB
exporters); the script instruments the openai client with openai-v2 against those globals and
runs one tool loop inside ``observer.attempt`` without passing the messages.
"""

from __future__ import annotations

from _common import config, emit_result
from openai import OpenAI
from openai_agent import tool_loop
from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

from otel_inputs import AgentObserver, inline_request


def main() -> None:
    cfg = config()
    OpenAIInstrumentor().instrument()
    client = OpenAI(base_url=cfg["openai_base_url"], api_key="sk-interop-not-a-secret", max_retries=0)
    observer = AgentObserver(agent_name="auto-agent", provider_name="openai", request_model=cfg["model"])
    with observer.attempt(run_id=cfg["run_id"], request=inline_request(cfg["task"]), phase="answer") as attempt:
        answer = tool_loop(client, cfg["model"], cfg["system"], cfg["users"][0])
    observer.flush(10)
    ctx = attempt.span.get_span_context()
    emit_result({"attempt_id": attempt.attempt_id, "trace_id": format(ctx.trace_id, "032x"), "answer": answer})


if __name__ == "__main__":
    main()
