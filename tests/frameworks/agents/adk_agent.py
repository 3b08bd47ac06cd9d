"""Google ADK through LiteLLM (an OpenAI-compatible provider), against the fake server, on its own
telemetry (tests/frameworks)."""

from __future__ import annotations

import asyncio

from _common import SYSTEM, config, finish, providers, run_two_turns

cfg = config()
LOOP = asyncio.new_event_loop()  # one loop for both turns: the clients keep connections bound to it
tp = providers(cfg)

from google.adk.agents import LlmAgent  # noqa: E402
from google.adk.models.lite_llm import LiteLlm  # noqa: E402
from google.adk.runners import Runner  # noqa: E402
from google.adk.sessions import InMemorySessionService  # noqa: E402
from google.genai import types  # noqa: E402


def read_file(path: str) -> str:
    """Read a text file of the working directory."""
    from _common import read_file as read

    return read(path)


model = LiteLlm(model="openai/gpt-fake", api_base=cfg["base_url"], api_key="sk-fake", stream=cfg.get("stream", False))
agent = LlmAgent(name="coder", model=model, instruction=SYSTEM, tools=[read_file])
sessions = InMemorySessionService()
runner = Runner(app_name="frameworks", agent=agent, session_service=sessions)
LOOP.run_until_complete(sessions.create_session(app_name="frameworks", user_id="u", session_id=cfg["session"]))


async def _turn(task: str) -> str:
    text = ""
    message = types.Content(role="user", parts=[types.Part(text=task)])
    async for event in runner.run_async(user_id="u", session_id=cfg["session"], new_message=message):
        if event.content and event.content.parts:
            text = "".join(p.text or "" for p in event.content.parts) or text
    return text


def turn(task: str, index: int) -> str:
    return LOOP.run_until_complete(_turn(task))


finish(tp, run_two_turns(cfg, turn))
