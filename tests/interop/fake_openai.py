"""A small OpenAI-compatible chat-completions server on 127.0.0.1 (Starlette on uvicorn) for the interop tests.

It answers ``POST /v1/chat/completions`` deterministically, non-streaming and streaming (SSE, with
a usage chunk when ``stream_options.include_usage`` is set), and asks for one tool call when the
request offers tools and holds no tool result yet.  Every request body it received is kept, so a
test can compare what landed in DuckDB with what the real ``openai`` client actually sent.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, StreamingResponse
from starlette.routing import Route

MODEL_SUFFIX = "-2026-01-01"
PROMPT_TOKENS = 11
COMPLETION_TOKENS = 5
TOOL_NAME = "get_weather"
TOOL_ARGUMENTS = '{"city": "Paris"}'


def reply_text(messages: list[dict[str, Any]]) -> str:
    """The assistant's answer: derived from the last user or tool message, so each call's reply is its own."""
    last = messages[-1] if messages else {}
    content = last.get("content")
    if isinstance(content, list):  # content parts
        content = " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return f"echo[{last.get('role')}]: {content}"


@dataclass
class FakeOpenAI:
    """The server, its received requests and its base URL (``http://127.0.0.1:PORT/v1``)."""

    received: list[dict[str, Any]] = field(default_factory=list)
    base_url: str = ""
    _server: uvicorn.Server | None = None
    _thread: threading.Thread | None = None
    _counter: int = 0

    def _completion_id(self) -> str:
        self._counter += 1
        return f"chatcmpl-interop-{self._counter}"

    def _answer(self, body: dict[str, Any]) -> dict[str, Any]:
        messages = body.get("messages", [])
        wants_tool = bool(body.get("tools")) and not any(m.get("role") == "tool" for m in messages)
        if wants_tool:
            message: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [
                {"id": f"call_{self._counter}", "type": "function",
                 "function": {"name": TOOL_NAME, "arguments": TOOL_ARGUMENTS}}]}  # fmt: skip
            finish = "tool_calls"
        else:
            message = {"role": "assistant", "content": reply_text(messages)}
            finish = "stop"
        return {"message": message, "finish_reason": finish}

    async def chat(self, request: Request) -> JSONResponse | StreamingResponse:
        body = await request.json()
        self.received.append(body)
        cid = self._completion_id()
        model = str(body.get("model", "gpt-interop")) + MODEL_SUFFIX
        answer = self._answer(body)
        usage = {"prompt_tokens": PROMPT_TOKENS, "completion_tokens": COMPLETION_TOKENS,
                 "total_tokens": PROMPT_TOKENS + COMPLETION_TOKENS}  # fmt: skip
        created = int(time.time())
        if not body.get("stream"):
            return JSONResponse({
                "id": cid, "object": "chat.completion", "created": created, "model": model,
                "choices": [{"index": 0, "message": answer["message"], "finish_reason": answer["finish_reason"],
                             "logprobs": None}],
                "usage": usage,
            })  # fmt: skip
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        return StreamingResponse(self._stream(cid, created, model, answer, usage if include_usage else None),
                                 media_type="text/event-stream")  # fmt: skip

    async def _stream(self, cid: str, created: int, model: str, answer: dict[str, Any],
                      usage: dict[str, int] | None) -> AsyncIterator[bytes]:  # fmt: skip
        def chunk(delta: dict[str, Any], finish: str | None, **extra: Any) -> bytes:
            obj = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
                   "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}], **extra}  # fmt: skip
            return f"data: {json.dumps(obj)}\n\n".encode()

        msg = answer["message"]
        yield chunk({"role": "assistant", "content": ""}, None)
        if msg.get("tool_calls"):
            call = msg["tool_calls"][0]
            yield chunk({"tool_calls": [{"index": 0, "id": call["id"], "type": "function",
                                         "function": {"name": call["function"]["name"], "arguments": ""}}]}, None)  # fmt: skip
            yield chunk({"tool_calls": [{"index": 0, "function": {"arguments": call["function"]["arguments"]}}]}, None)
        else:
            text = msg["content"]
            half = len(text) // 2
            for piece in (text[:half], text[half:]):  # two content deltas: the reader must join them
                yield chunk({"content": piece}, None)
                await asyncio.sleep(0)
        yield chunk({}, answer["finish_reason"])
        if usage is not None:
            obj = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
                   "choices": [], "usage": usage}  # fmt: skip
            yield f"data: {json.dumps(obj)}\n\n".encode()
        yield b"data: [DONE]\n\n"

    def start(self) -> FakeOpenAI:
        app = Starlette(routes=[Route("/v1/chat/completions", self.chat, methods=["POST"])])
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        self._server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [sock]}, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 20
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the fake OpenAI server did not start")
            time.sleep(0.02)
        self.base_url = f"http://127.0.0.1:{port}/v1"
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
