"""LangGraph (create_react_agent over langchain-openai) with openinference-instrumentation-langchain,
against the fake OpenAI-compatible server, on its own telemetry (tests/frameworks)."""

from __future__ import annotations

from _common import SYSTEM, config, finish, providers, run_two_turns

cfg = config()
tp = providers(cfg)

from openinference.instrumentation.langchain import LangChainInstrumentor  # noqa: E402

LangChainInstrumentor().instrument(tracer_provider=tp)

from langchain_core.tools import tool  # noqa: E402
from langchain_openai import ChatOpenAI  # noqa: E402
from langgraph.checkpoint.memory import InMemorySaver  # noqa: E402
from langgraph.prebuilt import create_react_agent  # noqa: E402


@tool
def read_file(path: str) -> str:
    """Read a text file of the working directory."""
    from _common import read_file as read

    return read(path)


model = ChatOpenAI(model="gpt-fake", api_key="sk-fake", base_url=cfg["base_url"], streaming=cfg.get("stream", False),
                   stream_usage=True)  # fmt: skip
graph = create_react_agent(model, [read_file], prompt=SYSTEM, checkpointer=InMemorySaver())


def turn(task: str, index: int) -> str:
    out = graph.invoke({"messages": [("user", task)]}, config={"configurable": {"thread_id": cfg["session"]}})
    return str(out["messages"][-1].content)


finish(tp, run_two_turns(cfg, turn))
