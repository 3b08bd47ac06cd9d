"""The real ``openai`` client, instrumented by openai-v2 or OpenInference, against the fake server.

Four bare invocations (no attempt around them: each model call is its own legacy attempt):
a non-streaming chat, a streaming chat, and a two-call tool loop.  Then one agent step wrapped in
``observer.attempt(...)`` *without* messages from the caller: a two-call tool loop whose exact
messages only the instrumentation's own chat spans (or their content events) hold.

The capture switch (``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``) comes from the
environment the test sets, as a user would set it.
"""

from __future__ import annotations

import json
from typing import Any

from _common import config, emit_result, providers
from openai import OpenAI

from otel_inputs import AgentObserver, inline_request

TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Current weather of a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]  # fmt: skip


def instrument(kind: str, p: Any) -> None:
    if kind == "openai_v2":
        from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

        OpenAIInstrumentor().instrument(tracer_provider=p.tracer, logger_provider=p.logger)
    elif kind == "openinference":
        from openinference.instrumentation.openai import OpenAIInstrumentor as OIInstrumentor

        OIInstrumentor().instrument(tracer_provider=p.tracer)
    else:
        raise SystemExit(f"unknown instrumentation {kind!r}")


def tool_loop(client: OpenAI, model: str, system: str, user: str) -> str:
    """Ask with a tool offered; answer the tool call; return the final text (two model calls)."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": system}, {"role": "user", "content": user}]
    first = client.chat.completions.create(model=model, messages=messages, tools=TOOLS)
    call = first.choices[0].message.tool_calls[0]
    messages.append({"role": "assistant", "content": None, "tool_calls": [
        {"id": call.id, "type": "function", "function": {"name": call.function.name, "arguments": call.function.arguments}}]})  # fmt: skip
    messages.append({"role": "tool", "tool_call_id": call.id,
                     "content": json.dumps({"city": json.loads(call.function.arguments)["city"], "sky": "clear"})})  # fmt: skip
    second = client.chat.completions.create(model=model, messages=messages, tools=TOOLS)
    return second.choices[0].message.content or ""


def main() -> None:
    cfg = config()
    p = providers(cfg)
    instrument(cfg["instrumentation"], p)
    client = OpenAI(base_url=cfg["openai_base_url"], api_key="sk-interop-not-a-secret", max_retries=0)
    model, system, users = cfg["model"], cfg["system"], cfg["users"]

    client.chat.completions.create(model=model, messages=[
        {"role": "system", "content": system}, {"role": "user", "content": users[0]}])  # fmt: skip
    stream = client.chat.completions.create(model=model, stream=True, stream_options={"include_usage": True},
                                            messages=[{"role": "system", "content": system},
                                                      {"role": "user", "content": users[1]}])  # fmt: skip
    streamed = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    tool_loop(client, model, system, users[2])

    observer = AgentObserver(tracer_provider=p.tracer, store=cfg["store"], agent_name="weather-agent",
                             provider_name="openai", request_model=model)  # fmt: skip
    with observer.attempt(run_id=cfg["run_id"], request=inline_request(cfg["task"]), phase="answer",
                          session_id=f"{cfg['run_id']}-session") as attempt:  # fmt: skip
        wrapped_answer = tool_loop(client, model, system, users[3])
    ctx = attempt.span.get_span_context()
    observer.flush(10)
    p.shutdown()
    emit_result({"streamed": streamed, "wrapped_answer": wrapped_answer, "attempt_id": attempt.attempt_id,
                 "trace_id": format(ctx.trace_id, "032x"), "span_id": format(ctx.span_id, "016x")})  # fmt: skip


if __name__ == "__main__":
    main()
