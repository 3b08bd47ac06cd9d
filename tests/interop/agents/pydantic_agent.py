"""pydantic-ai (offline ``TestModel``, instrumentation on) run once wrapped in ``observer.attempt`` and once bare.

The wrapped run follows the README: the caller passes its task, not the messages; the framework's
own spans hold the real system and user messages.  ``TestModel`` calls every tool once, then
answers, so one run makes two model requests and one tool call.
"""

from __future__ import annotations

from _common import config, emit_result, providers
from pydantic_ai import Agent
from pydantic_ai.models.instrumented import InstrumentationSettings
from pydantic_ai.models.test import TestModel

from otel_inputs import AgentObserver, inline_request


def main() -> None:
    cfg = config()
    p = providers(cfg)
    agent = Agent(TestModel(), name="pyd-agent", system_prompt=cfg["system"])
    agent.instrument = InstrumentationSettings(tracer_provider=p.tracer)

    @agent.tool_plain
    def lookup_ticket(ticket: str) -> str:
        """Look a ticket up in the tracker."""
        return f"ticket {ticket}: open"

    observer = AgentObserver(tracer_provider=p.tracer, store=cfg["store"], agent_name="pyd-agent",
                             provider_name="test", request_model="test")  # fmt: skip
    with observer.attempt(run_id=cfg["run_id"], request=inline_request(cfg["task"]), phase="triage",
                          session_id=f"{cfg['run_id']}-session") as attempt:  # fmt: skip
        wrapped = agent.run_sync(cfg["users"][0])
    ctx = attempt.span.get_span_context()
    bare = agent.run_sync(cfg["users"][1])
    observer.flush(10)
    p.shutdown()
    emit_result({"attempt_id": attempt.attempt_id, "trace_id": format(ctx.trace_id, "032x"),
                 "span_id": format(ctx.span_id, "016x"), "wrapped_output": str(wrapped.output),
                 "bare_output": str(bare.output)})  # fmt: skip


if __name__ == "__main__":
    main()
