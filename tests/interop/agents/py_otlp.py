"""A Python agent recording one attempt with ``AgentObserver``, exported by the stock OTLP exporters.

The attempt carries its task, a context file captured into the store, the exact system and user
messages on the span, and a chat step under it; the chat step's GenAI content event
(``gen_ai.client.inference.operation.details``, the same messages) travels as an OTLP log record
through the stock log exporter, correlated to the step by trace and span id.
"""

from __future__ import annotations

import json
from pathlib import Path

from _common import config, emit_result, providers
from opentelemetry._logs import LogRecord
from opentelemetry.trace import SpanKind, Status, StatusCode

from otel_inputs import AgentObserver, inline_request


def main() -> None:
    cfg = config()
    p = providers(cfg)
    run_id = cfg["run_id"]
    handoff = Path(cfg["workdir"]) / f"handoff-{run_id}"
    handoff.mkdir(parents=True, exist_ok=True)
    (handoff / "notes.md").write_text(f"handoff notes of {run_id}\n", encoding="utf-8")
    system, user = cfg["system"], cfg["user"]
    observer = AgentObserver(tracer_provider=p.tracer, store=cfg["store"], agent_name="py-builder",
                             provider_name="openai", request_model="gpt-py")  # fmt: skip
    tracer = p.tracer.get_tracer("interop.py_otlp")
    logger = p.logger.get_logger("interop.py_otlp")
    with observer.attempt(run_id=run_id, request=inline_request(cfg["task"]), phase="build",
                          session_id=f"{run_id}-session", context_roots=[handoff],
                          system_message=system, user_message=user) as attempt:  # fmt: skip
        with tracer.start_as_current_span("chat gpt-py", kind=SpanKind.CLIENT, attributes={
            "gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": "gpt-py",
            "gen_ai.response.model": "gpt-py-0001", "gen_ai.usage.input_tokens": 31,
            "gen_ai.usage.output_tokens": 9,
        }) as chat:  # fmt: skip
            chat_ctx = chat.get_span_context()
            logger.emit(LogRecord(
                event_name="gen_ai.client.inference.operation.details",
                attributes={
                    "gen_ai.operation.name": "chat",
                    "gen_ai.system_instructions": json.dumps([{"type": "text", "content": system}]),
                    "gen_ai.input.messages": json.dumps(
                        [{"role": "user", "parts": [{"type": "text", "content": user}]}]),
                },
            ))  # fmt: skip
            chat.set_status(Status(StatusCode.OK))
        attempt_span = attempt.span.get_span_context()
    observer.flush(10)
    p.shutdown()
    emit_result({
        "attempt_id": attempt.attempt_id,
        "trace_id": format(attempt_span.trace_id, "032x"),
        "span_id": format(attempt_span.span_id, "016x"),
        "chat_span_id": format(chat_ctx.span_id, "016x"),
    })  # fmt: skip


if __name__ == "__main__":
    main()
