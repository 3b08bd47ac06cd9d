"""Strands Agents against the fake OpenAI-compatible server, on its own telemetry (tests/frameworks)."""

from __future__ import annotations

from _common import SYSTEM, config, finish, providers, run_two_turns

cfg = config()
tp = providers(cfg)  # sets the config's env (e.g. OTEL_SEMCONV_STABILITY_OPT_IN) before Strands reads it

from strands import Agent, tool  # noqa: E402
from strands.models.openai import OpenAIModel  # noqa: E402


@tool
def read_file(path: str) -> str:
    """Read a text file of the working directory.

    Args:
        path: the file's path
    """
    from _common import read_file as read

    return read(path)


model = OpenAIModel(client_args={"api_key": "sk-fake", "base_url": cfg["base_url"]}, model_id="gpt-fake",
                    params={"stream_options": {"include_usage": True}} if cfg.get("stream", True) else {})
agent = Agent(model=model, system_prompt=SYSTEM, tools=[read_file], trace_attributes={"session.id": cfg["session"]},
              callback_handler=None)


def turn(task: str, index: int) -> str:
    return str(agent(task))


finish(tp, run_two_turns(cfg, turn))
