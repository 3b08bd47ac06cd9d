"""What every framework script shares (tests/frameworks): its config, a loopback-only network guard,
stock OpenTelemetry providers exporting to a DuckDB file, and a fixture file the tool reads.

Each script runs one framework in its own process (instrumentations patch modules globally), two
runs of one session against the fake OpenAI-compatible server on 127.0.0.1, and prints one JSON
result line.  The guard is installed before any framework is imported: a connection to anything
but loopback is refused and reported, so a test fails if a framework phones home.
"""

from __future__ import annotations

import ipaddress
import json
import os
import socket
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

NON_LOOPBACK: list[str] = []
_connect = socket.socket.connect
_connect_ex = socket.socket.connect_ex
_getaddrinfo = socket.getaddrinfo


def _loopback(host: Any) -> bool:
    if isinstance(host, bytes):
        host = host.decode()
    if not isinstance(host, str):
        return False
    if host in ("localhost", "127.0.0.1", "::1"):
        return True
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False


def _check(address: Any) -> None:
    if isinstance(address, tuple) and not _loopback(address[0]):
        NON_LOOPBACK.append(str(address[0]))
        raise OSError(f"tests/frameworks: only loopback may be contacted, not {address[0]!r}")


def _guarded_connect(self: socket.socket, address: Any) -> Any:
    _check(address)
    return _connect(self, address)


def _guarded_connect_ex(self: socket.socket, address: Any) -> Any:
    _check(address)
    return _connect_ex(self, address)


def _guarded_getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
    if host is not None and not _loopback(host):
        NON_LOOPBACK.append(str(host))
        raise socket.gaierror(f"tests/frameworks: only loopback may be resolved, not {host!r}")
    return _getaddrinfo(host, *args, **kwargs)


def guard_network() -> None:
    socket.socket.connect = _guarded_connect  # type: ignore[method-assign]
    socket.socket.connect_ex = _guarded_connect_ex  # type: ignore[method-assign]
    socket.getaddrinfo = _guarded_getaddrinfo  # type: ignore[assignment]


guard_network()
# Frameworks that would otherwise reach out at import or run time, told not to (the guard stays on).
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from opentelemetry import trace  # noqa: E402
from opentelemetry.sdk.resources import Resource  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402

SYSTEM = "You are a careful assistant. Read files with the read_file tool before answering."
TASK_1 = "Summarise notes/handoff.md in one line."
TASK_2 = "Now list the open questions from that file."
HANDOFF = "# Handoff\n\nThe parser fails on empty input. Open question: who owns the fixtures?\n"


def config() -> dict[str, Any]:
    return json.loads(sys.argv[1])


def read_file(path: str) -> str:
    """Read a text file of the working directory (the agent's one tool)."""
    return (Path.cwd() / path).read_text(encoding="utf-8")


def providers(cfg: dict[str, Any]) -> TracerProvider:
    """Tracer and logger providers exporting every span and log record to the DuckDB file through the
    in-process exporters (the ``duckdb`` entry points), set as the global ones."""
    from opentelemetry._logs import set_logger_provider
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor

    from otel_inputs.exporter import DuckDBLogExporter, DuckDBSpanExporter

    for key, value in (cfg.get("env") or {}).items():
        os.environ[key] = value
    resource = Resource.create({"service.name": cfg["service"]})
    tp = TracerProvider(resource=resource)
    tp.add_span_processor(SimpleSpanProcessor(DuckDBSpanExporter(cfg["db"])))
    trace.set_tracer_provider(tp)
    global _LOGS
    _LOGS = LoggerProvider(resource=resource)
    _LOGS.add_log_record_processor(SimpleLogRecordProcessor(DuckDBLogExporter(cfg["db"])))
    set_logger_provider(_LOGS)
    return tp


_LOGS: Any = None


def run_two_turns(cfg: dict[str, Any], turn: Callable[[str, int], str]) -> dict[str, Any]:
    """Run the session's two turns, each bare or inside ``observer.attempt`` as the config says."""
    Path("notes").mkdir(exist_ok=True)
    Path("notes/handoff.md").write_text(HANDOFF, encoding="utf-8")
    replies = []
    for index, task in enumerate((TASK_1, TASK_2), start=1):
        if cfg.get("observed"):
            from otel_inputs import AgentObserver, resolve_request

            observer = AgentObserver(agent_name=cfg["service"], provider_name="openai", request_model="gpt-fake")
            request = resolve_request(f"inline:{task}")
            with observer.attempt(run_id=cfg["run_id"], request=request, session_id=cfg["session"],
                                  send_kind="initial", context_roots=["./notes"]) as attempt:  # fmt: skip
                reply = turn(task, index)
                attempt.record_output(text=reply, settlement="completed", dispatch="dispatched")
        else:
            reply = turn(task, index)
        replies.append(reply)
    return {"replies": replies}


def finish(tp: TracerProvider, result: dict[str, Any]) -> None:
    tp.force_flush()
    tp.shutdown()
    if _LOGS is not None:
        _LOGS.shutdown()
    result["non_loopback"] = NON_LOOPBACK
    print(json.dumps(result), flush=True)
