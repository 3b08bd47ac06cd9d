"""A small OpenAI-compatible chat-completions server on 127.0.0.1 (Starlette on uvicorn) for the interop tests.

It answers ``POST /v1/chat/completions`` deterministically, non-streaming and streaming (SSE, with
a usage chunk when ``stream_options.include_usage`` is set), and ``POST /v1/responses`` (the
Responses API, non-streaming and streaming SSE events) the same way.  It asks for one tool call
(the first offered tool, with the arguments ``tool_arguments`` names for it, else
``TOOL_ARGUMENTS``) when the request offers tools and holds no tool result since its last user
message.  Every request body it received is kept, so a test can compare what landed in DuckDB with
what the real client actually sent.
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
    tool_arguments: dict[str, str] = field(default_factory=dict)  # tool name -> the arguments asked for
    base_url: str = ""
    _server: uvicorn.Server | None = None
    _thread: threading.Thread | None = None
    _counter: int = 0

    def _completion_id(self) -> str:
        self._counter += 1
        return f"chatcmpl-interop-{self._counter}"

    @staticmethod
    def _tool_names(tools: Any) -> list[str]:
        names: list[str] = []
        for tool in tools or ():
            if isinstance(tool, dict):
                fn = tool.get("function") if isinstance(tool.get("function"), dict) else tool
                if isinstance(fn.get("name"), str):
                    names.append(fn["name"])
        return names

    def _tool_call(self, tools: Any) -> tuple[str, str]:
        names = self._tool_names(tools)
        name = names[0] if names else TOOL_NAME
        return name, self.tool_arguments.get(name, TOOL_ARGUMENTS)

    def _answer(self, body: dict[str, Any]) -> dict[str, Any]:
        messages = body.get("messages", [])
        last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
        wants_tool = bool(body.get("tools")) and not any(m.get("role") == "tool" for m in messages[last_user + 1:])
        if wants_tool:
            name, arguments = self._tool_call(body.get("tools"))
            message: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [
                {"id": f"call_{self._counter}", "type": "function",
                 "function": {"name": name, "arguments": arguments}}]}  # fmt: skip
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

    async def responses(self, request: Request) -> JSONResponse | StreamingResponse:
        """The Responses API: ``input`` items in, one ``message`` or ``function_call`` output item out."""
        body = await request.json()
        self.received.append(body)
        rid = self._completion_id().replace("chatcmpl", "resp")
        items = body.get("input")
        items = [{"role": "user", "content": items}] if isinstance(items, str) else list(items or [])
        last_user = max((i for i, it in enumerate(items) if it.get("role") == "user"), default=-1)
        wants_tool = bool(body.get("tools")) and not any(
            it.get("type") == "function_call_output" for it in items[last_user + 1:])
        if wants_tool:
            name, arguments = self._tool_call(body.get("tools"))
            output = {"type": "function_call", "id": f"fc_{self._counter}", "call_id": f"call_{self._counter}",
                      "name": name, "arguments": arguments, "status": "completed"}  # fmt: skip
        else:
            last = items[-1] if items else {}
            content = last.get("content", last.get("output"))
            if isinstance(content, list):
                content = " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
            role = "tool" if last.get("type") == "function_call_output" else last.get("role")
            output = {"type": "message", "id": f"msg_{self._counter}", "role": "assistant", "status": "completed",
                      "content": [{"type": "output_text", "text": f"echo[{role}]: {content}", "annotations": []}]}  # fmt: skip
        usage = {"input_tokens": PROMPT_TOKENS, "output_tokens": COMPLETION_TOKENS,
                 "total_tokens": PROMPT_TOKENS + COMPLETION_TOKENS,
                 "input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 0}}  # fmt: skip
        model = str(body.get("model", "gpt-interop")) + MODEL_SUFFIX
        response = {"id": rid, "object": "response", "created_at": int(time.time()), "model": model,
                    "status": "completed", "output": [output], "usage": usage, "parallel_tool_calls": False,
                    "tool_choice": "auto", "tools": [], "error": None, "incomplete_details": None,
                    "instructions": body.get("instructions"), "metadata": {}, "temperature": None, "top_p": None}  # fmt: skip
        if not body.get("stream"):
            return JSONResponse(response)
        return StreamingResponse(self._response_events(response), media_type="text/event-stream")

    async def _response_events(self, response: dict[str, Any]) -> AsyncIterator[bytes]:
        def event(kind: str, **data: Any) -> bytes:
            return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n".encode()

        item = response["output"][0]
        seq = iter(range(1000))
        yield event("response.created", response={**response, "status": "in_progress", "output": []},
                    sequence_number=next(seq))
        yield event("response.output_item.added", output_index=0, item={**item, "status": "in_progress"},
                    sequence_number=next(seq))
        if item["type"] == "message":
            text = item["content"][0]["text"]
            half = len(text) // 2
            for piece in (text[:half], text[half:]):  # two deltas: the reader must join them
                yield event("response.output_text.delta", item_id=item["id"], output_index=0, content_index=0,
                            delta=piece, sequence_number=next(seq), logprobs=[])
                await asyncio.sleep(0)
        else:
            yield event("response.function_call_arguments.delta", item_id=item["id"], output_index=0,
                        delta=item["arguments"], sequence_number=next(seq))
        yield event("response.output_item.done", output_index=0, item=item, sequence_number=next(seq))
        yield event("response.completed", response=response, sequence_number=next(seq))

    def start(self) -> FakeOpenAI:
        app = Starlette(routes=[Route("/v1/chat/completions", self.chat, methods=["POST"]),
                                Route("/v1/responses", self.responses, methods=["POST"])])
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
