"""Fixtures of the interop suite: the real ``otel-inputs collect`` CLI, the fake OpenAI server, agent runs.

Nothing here builds an OTLP request by hand: every span and log record is produced by a real
third-party SDK, exporter or instrumentation running in its own process (an agent script under
``agents/`` or the Node.js script under ``js/``), and sent over loopback to a collector process.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from fake_openai import FakeOpenAI

HERE = Path(__file__).resolve().parent
AGENTS = HERE / "agents"
JS_DIR = HERE / "js"
BIN = Path(sys.executable).parent
START_TIMEOUT_S = 60.0
RUN_TIMEOUT_S = 120.0


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _port_open(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def collect_supports(option: str) -> bool:
    out = subprocess.run([str(BIN / "otel-inputs"), "collect", "--help"], capture_output=True, text=True, timeout=60)
    return option in out.stdout


@dataclass
class Collector:
    """One ``otel-inputs collect`` process on free loopback ports, landing into ``db``."""

    db: Path
    store: Path
    http_port: int
    grpc_port: int | None
    proc: subprocess.Popen[str] | None = None
    stderr: str = ""
    exit_code: int | None = None

    @property
    def http_endpoint(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    @property
    def grpc_endpoint(self) -> str | None:
        return None if self.grpc_port is None else f"127.0.0.1:{self.grpc_port}"

    def start(self) -> Collector:
        cmd = [str(BIN / "otel-inputs"), "collect", "--db", str(self.db), "--store", str(self.store),
               "--port", str(self.http_port)]  # fmt: skip
        # Without a gRPC port of its own the collector would bind the default 4317, which a parallel
        # test's collector may hold (the second one then exits).
        cmd += ["--no-grpc"] if self.grpc_port is None else ["--grpc-port", str(self.grpc_port)]
        self._log = open(self.db.with_suffix(".collector.log"), "w+", encoding="utf-8")  # noqa: SIM115
        self.proc = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT, text=True)
        deadline = time.monotonic() + START_TIMEOUT_S
        ports = [p for p in (self.http_port, self.grpc_port) if p is not None]
        while not all(_port_open(p) for p in ports):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"otel-inputs collect did not start: {self.stderr}")
            time.sleep(0.1)
        return self

    def stop(self) -> int:
        """SIGTERM (the collector flushes what it accepted), wait, keep its output and exit code."""
        if self.proc is not None and self.exit_code is None:
            if self.proc.poll() is None:
                self.proc.send_signal(signal.SIGTERM)
            try:
                self.exit_code = self.proc.wait(timeout=90)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.exit_code = self.proc.wait(timeout=30)
            self._log.seek(0)
            self.stderr = self._log.read()
            self._log.close()
        return -1 if self.exit_code is None else self.exit_code


@dataclass
class AgentRun:
    """One agent script's (or the Node.js script's) process outcome and its JSON result line."""

    name: str
    returncode: int
    stdout: str
    stderr: str
    result: dict[str, Any] = field(default_factory=dict)

    def check(self) -> dict[str, Any]:
        assert self.returncode == 0, f"{self.name} exited {self.returncode}:\n{self.stderr[-4000:]}"
        return self.result


def run_process(name: str, cmd: list[str], env: dict[str, str] | None = None, cwd: Path | None = None) -> AgentRun:
    full_env = {**os.environ, **(env or {})}
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, env=full_env, cwd=cwd)
    except subprocess.TimeoutExpired as exc:
        return AgentRun(name, -9, str(exc.stdout or ""), f"timed out after {RUN_TIMEOUT_S}s: {exc.stderr or ''}")
    result: dict[str, Any] = {}
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
    if out.returncode == 0 and lines:
        result = json.loads(lines[-1])
    return AgentRun(name, out.returncode, out.stdout, out.stderr, result)


def run_agent(script: str, cfg: dict[str, Any], env: dict[str, str] | None = None) -> AgentRun:
    """Run ``agents/<script>`` in its own Python process with its JSON config."""
    base = {"OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental", "PYTHONPATH": str(AGENTS)}
    return run_process(cfg.get("service", script), [sys.executable, str(AGENTS / script), json.dumps(cfg)],
                       env={**base, **(env or {})})  # fmt: skip


def node_missing_reason() -> str | None:
    """Why the JS SDK tests skip (node or npm absent), or None."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        return "node/npm are not installed (Node.js >= 20.6 and npm are needed for the JS SDK tests)"
    return None


def js_sdk_missing() -> str | None:
    """With node present, an uninstalled SDK is a failure to report, not a reason to skip."""
    if not (JS_DIR / "node_modules" / "@opentelemetry" / "sdk-trace-base").is_dir():
        return "the JS SDK is not installed: run `npm ci --prefix tests/interop/js` (as .ci/run does)"
    return None


def run_js(kind: str, endpoint: str, run_id: str) -> AgentRun:
    return run_process(f"js-{kind}", ["node", str(JS_DIR / "emit.mjs"), kind, endpoint, run_id], cwd=JS_DIR)


@pytest.fixture(scope="session")
def fake_openai() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture()
def collector(tmp_path: Path) -> Iterator[Collector]:
    grpc = free_port() if collect_supports("--grpc-port") else None
    c = Collector(tmp_path / "interop.duckdb", tmp_path / "store", free_port(), grpc).start()
    try:
        yield c
    finally:
        c.stop()
