"""The OpenAI Agents SDK with openinference-instrumentation-openai-agents, against the fake
OpenAI-compatible server (Responses API, or Chat Completions), on its own telemetry (tests/frameworks)."""

from __future__ import annotations

import asyncio

from _common import SYSTEM, config, finish, providers, run_two_turns

cfg = config()
LOOP = asyncio.new_event_loop()  # one loop for both turns: the clients keep connections bound to it
tp = providers(cfg)

import agents  # noqa: E402
from openai import AsyncOpenAI  # noqa: E402
from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor  # noqa: E402

agents.set_trace_processors([])  # no export to OpenAI's tracing endpoint; OpenInference adds its own processor
OpenAIAgentsInstrumentor().instrument(tracer_provider=tp)

client = AsyncOpenAI(api_key="sk-fake", base_url=cfg["base_url"])
if cfg.get("api") == "chat":
    model: agents.Model = agents.OpenAIChatCompletionsModel(model="gpt-fake", openai_client=client)
else:
    model = agents.OpenAIResponsesModel(model="gpt-fake", openai_client=client)


@agents.function_tool
def read_file(path: str) -> str:
    """Read a text file of the working directory."""
    from _common import read_file as read

    return read(path)


agent = agents.Agent(name="coder", instructions=SYSTEM, model=model, tools=[read_file])
session = agents.SQLiteSession(cfg["session"])


async def _turn(task: str) -> str:
    if cfg.get("stream"):
        result = agents.Runner.run_streamed(agent, task, session=session)
        async for _ in result.stream_events():
            pass
        return str(result.final_output)
    done = await agents.Runner.run(agent, task, session=session)
    return str(done.final_output)


def turn(task: str, index: int) -> str:
    return LOOP.run_until_complete(_turn(task))


finish(tp, run_two_turns(cfg, turn))
