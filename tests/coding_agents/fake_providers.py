"""Fake model providers on 127.0.0.1 for the three coding-agent CLIs, one small HTTP server.

It speaks just enough of each wire protocol for a scripted two-turn session:

- Anthropic Messages (``POST /v1/messages``, SSE when ``stream`` is true, JSON otherwise) for
  Claude Code;
- Gemini ``POST /v1beta/models/<model>:streamGenerateContent?alt=sse`` and ``:generateContent``
  (and ``:countTokens``) for Gemini CLI;
- OpenAI Responses (``POST /v1/responses``, SSE) for Codex CLI.

The script is the same for all three: when the conversation's latest user turn names a file in
``READ_MARKER`` and no tool result has come back yet, the model asks to read that file with the
CLI's own read tool; otherwise it answers with text.  Every request body is kept (with its path),
so a test can check what the CLI really sent against what landed in DuckDB.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

READ_MARKER = re.compile(r"read the file ([\w./-]+)", re.IGNORECASE)
INPUT_TOKENS = 21
OUTPUT_TOKENS = 7


@dataclass
class Received:
    """One request as the fake provider received it."""

    path: str
    body: dict[str, Any]


@dataclass
class Script:
    """What the fake model does: which tool each CLI reads a file with, and its answers."""

    claude_read_tool: str = "Read"
    gemini_read_tool: str = "read_file"
    codex_shell_tool: str = "exec_command"
    project_dir: str = ""

    def answer_text(self, last_user: str) -> str:
        return f"done: {last_user[:60]}"


@dataclass
class FakeProviders:
    """The server; ``base_url`` is ``http://127.0.0.1:PORT`` once started."""

    script: Script = field(default_factory=Script)
    received: list[Received] = field(default_factory=list)
    base_url: str = ""
    _server: ThreadingHTTPServer | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _counter: int = 0

    def start(self) -> FakeProviders:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's name
                return

            def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
                owner._record(self.path, {})
                self._json(404, {"error": {"message": f"not served: {self.path}"}})

            def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {"_unparsed": raw[:2000].decode("utf-8", "replace")}
                owner._record(self.path, body)
                owner._dispatch(self, body)

            def _json(self, status: int, doc: Any) -> None:
                data = json.dumps(doc).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def _record(self, path: str, body: dict[str, Any]) -> None:
        with self._lock:
            self.received.append(Received(path, body))

    def _next_id(self) -> int:
        with self._lock:
            self._counter += 1
            return self._counter

    # -- routing -----------------------------------------------------------------------------------
    def _dispatch(self, h: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        path = h.path.split("?", 1)[0]
        if path.endswith("/v1/messages/count_tokens"):
            _send_json(h, {"input_tokens": INPUT_TOKENS})
        elif path.endswith("/v1/messages"):
            self._anthropic(h, body)
        elif ":streamGenerateContent" in path:
            self._gemini(h, body, stream=True)
        elif ":generateContent" in path:
            self._gemini(h, body, stream=False)
        elif ":countTokens" in path:
            _send_json(h, {"totalTokens": INPUT_TOKENS})
        elif path.endswith("/responses"):
            self._responses(h, body)
        else:
            _send_json(h, {"error": {"message": f"not served: {path}"}}, status=404)

    # -- Anthropic Messages --------------------------------------------------------------------------
    def _anthropic(self, h: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        n = self._next_id()
        text, has_result = _anthropic_last_user(body.get("messages") or [])
        tool_names = {t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)}
        wanted = READ_MARKER.search(text)
        model = str(body.get("model") or "claude-fake")
        usage = {"input_tokens": INPUT_TOKENS, "output_tokens": OUTPUT_TOKENS, "cache_creation_input_tokens": 0,
                 "cache_read_input_tokens": 0}  # fmt: skip
        if wanted and not has_result and self.script.claude_read_tool in tool_names:
            path = _abs(self.script.project_dir, wanted.group(1))
            block: dict[str, Any] = {"type": "tool_use", "id": f"toolu_fake{n:04d}", "name": self.script.claude_read_tool,
                                     "input": {"file_path": path}}  # fmt: skip
            stop = "tool_use"
        else:
            block = {"type": "text", "text": self.script.answer_text(text)}
            stop = "end_turn"
        message = {"id": f"msg_fake{n:04d}", "type": "message", "role": "assistant", "model": model,
                   "content": [block], "stop_reason": stop, "stop_sequence": None, "usage": usage}  # fmt: skip
        if not body.get("stream"):
            _send_json(h, message)
            return
        start = dict(message, content=[], stop_reason=None)
        events: list[tuple[str, dict[str, Any]]] = [("message_start", {"type": "message_start", "message": start})]
        if block["type"] == "text":
            events += [
                ("content_block_start", {"type": "content_block_start", "index": 0,
                                         "content_block": {"type": "text", "text": ""}}),
                ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                         "delta": {"type": "text_delta", "text": block["text"]}}),
            ]  # fmt: skip
        else:
            events += [
                ("content_block_start", {"type": "content_block_start", "index": 0,
                                         "content_block": dict(block, input={})}),
                ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                         "delta": {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}}),
            ]  # fmt: skip
        events += [
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            ("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                               "usage": {"output_tokens": OUTPUT_TOKENS}}),
            ("message_stop", {"type": "message_stop"}),
        ]  # fmt: skip
        _send_sse(h, [f"event: {name}\ndata: {json.dumps(doc)}\n\n" for name, doc in events])

    # -- Gemini ----------------------------------------------------------------------------------------
    def _gemini(self, h: BaseHTTPRequestHandler, body: dict[str, Any], *, stream: bool) -> None:
        contents = body.get("contents") or []
        last = contents[-1] if contents else {}
        parts = last.get("parts") or []
        has_result = any(isinstance(p, dict) and "functionResponse" in p for p in parts)
        text = " ".join(str(p.get("text", "")) for p in parts if isinstance(p, dict) and "text" in p)
        tools = [d.get("name") for t in body.get("tools") or [] if isinstance(t, dict)
                 for d in t.get("functionDeclarations") or [] if isinstance(d, dict)]  # fmt: skip
        config = body.get("generationConfig") or body.get("config") or {}
        wanted = READ_MARKER.search(text)
        if config.get("responseMimeType") == "application/json" or config.get("responseJsonSchema") or config.get("responseSchema"):
            # A structured side call (the model router's classifier, the next-speaker check).
            reply_parts: list[dict[str, Any]] = [{"text": json.dumps(_gemini_json_answer(config))}]
        elif wanted and not has_result and self.script.gemini_read_tool in tools:
            path = _abs(self.script.project_dir, wanted.group(1))
            reply_parts = [{"functionCall": {"name": self.script.gemini_read_tool, "args": {"file_path": path}}}]
        else:
            reply_parts = [{"text": self.script.answer_text(text)}]
        doc = {"candidates": [{"content": {"role": "model", "parts": reply_parts}, "finishReason": "STOP", "index": 0}],
               "usageMetadata": {"promptTokenCount": INPUT_TOKENS, "candidatesTokenCount": OUTPUT_TOKENS,
                                 "totalTokenCount": INPUT_TOKENS + OUTPUT_TOKENS},
               "modelVersion": "gemini-fake-001", "responseId": f"resp-{self._next_id()}"}  # fmt: skip
        if stream:
            _send_sse(h, [f"data: {json.dumps(doc)}\r\n\r\n"])
        else:
            _send_json(h, doc)

    # -- OpenAI Responses ------------------------------------------------------------------------------
    def _responses(self, h: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        n = self._next_id()
        items = body.get("input") or []
        last_user = ""
        has_result = False
        for item in items:
            if not isinstance(item, dict):
                continue
            if item.get("type") == "function_call_output" or item.get("type") == "custom_tool_call_output":
                has_result = True
            if item.get("role") == "user":
                has_result = False
                texts = [c.get("text", "") for c in item.get("content") or [] if isinstance(c, dict)]
                last_user = " ".join(t for t in texts if isinstance(t, str))
        tools = {t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)}
        wanted = READ_MARKER.search(last_user)
        rid = f"resp_fake{n:04d}"
        model = str(body.get("model") or "gpt-fake")
        if wanted and not has_result and self.script.codex_shell_tool in tools:
            args = json.dumps({"cmd": f"cat {wanted.group(1)}"})
            item: dict[str, Any] = {"type": "function_call", "id": f"fc_fake{n:04d}", "call_id": f"call_fake{n:04d}",
                                    "name": self.script.codex_shell_tool, "arguments": args, "status": "completed"}  # fmt: skip
            deltas: list[dict[str, Any]] = []
        else:
            answer = self.script.answer_text(last_user)
            item = {"type": "message", "id": f"msg_fake{n:04d}", "role": "assistant", "status": "completed",
                    "content": [{"type": "output_text", "text": answer, "annotations": []}]}  # fmt: skip
            deltas = [{"type": "response.output_text.delta", "item_id": item["id"], "output_index": 0,
                       "content_index": 0, "delta": answer}]  # fmt: skip
        usage = {"input_tokens": INPUT_TOKENS, "input_tokens_details": {"cached_tokens": 0},
                 "output_tokens": OUTPUT_TOKENS, "output_tokens_details": {"reasoning_tokens": 0},
                 "total_tokens": INPUT_TOKENS + OUTPUT_TOKENS}  # fmt: skip
        base = {"id": rid, "object": "response", "model": model, "status": "in_progress", "output": []}
        events = [
            {"type": "response.created", "response": base},
            {"type": "response.output_item.added", "output_index": 0, "item": dict(item, status="in_progress")},
            *deltas,
            {"type": "response.output_item.done", "output_index": 0, "item": item},
            {"type": "response.completed", "response": dict(base, status="completed", output=[item], usage=usage)},
        ]
        _send_sse(h, [f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events])


def _anthropic_last_user(messages: list[Any]) -> tuple[str, bool]:
    """(the user's latest own text, whether a tool result came after it); harness reminders skipped."""
    text, has_result = "", False
    for message in messages:
        if not isinstance(message, dict) or message.get("role") != "user":
            continue
        content = message.get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content or ""}]
        if any(isinstance(b, dict) and b.get("type") == "tool_result" for b in blocks):
            has_result = True
            continue
        own = [str(b.get("text", "")) for b in blocks if isinstance(b, dict) and b.get("type") == "text"
               and not str(b.get("text", "")).startswith("<system-reminder>")]  # fmt: skip
        if own:
            text, has_result = own[-1], False
    return text, has_result


def _gemini_json_answer(config: dict[str, Any]) -> dict[str, Any]:
    schema = config.get("responseJsonSchema") or config.get("responseSchema") or {}
    props = schema.get("properties") or {}
    out: dict[str, Any] = {}
    for key, spec in props.items():
        kind = (spec or {}).get("type") if isinstance(spec, dict) else None
        enum = (spec or {}).get("enum") if isinstance(spec, dict) else None
        if enum:
            out[key] = enum[0]
        elif kind in ("number", "integer", "NUMBER", "INTEGER"):
            out[key] = 1
        elif kind in ("boolean", "BOOLEAN"):
            out[key] = False
        else:
            out[key] = "user" if key == "next_speaker" else "fake"
    return out


def _abs(project_dir: str, name: str) -> str:
    return name if name.startswith("/") or not project_dir else f"{project_dir.rstrip('/')}/{name}"


def _send_json(h: BaseHTTPRequestHandler, doc: Any, status: int = 200) -> None:
    data = json.dumps(doc).encode()
    h.send_response(status)
    h.send_header("Content-Type", "application/json")
    h.send_header("Content-Length", str(len(data)))
    h.end_headers()
    h.wfile.write(data)


def _send_sse(h: BaseHTTPRequestHandler, chunks: list[str]) -> None:
    data = "".join(chunks).encode()
    h.send_response(200)
    h.send_header("Content-Type", "text/event-stream")
    h.send_header("Cache-Control", "no-cache")
    h.send_header("Content-Length", str(len(data)))
    h.end_headers()
    h.wfile.write(data)


__all__ = ["FakeProviders", "Received", "Script", "READ_MARKER"]
