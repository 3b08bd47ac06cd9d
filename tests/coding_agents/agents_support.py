"""Helpers of the coding-agent suite (its fixtures are in conftest.py): a real ``otel-inputs collect``, the hook run as an agent runs it,
and one two-turn session per CLI (``drive.py`` in a network namespace), shared by the assertions.

The CLI runs need the pinned CLIs (``npm ci --prefix tests/coding_agents``) and ``unshare``/``ip``
as root; without them those tests skip and say why.  Everything else here runs anywhere.
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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
BIN = Path(sys.executable).parent
ENTRY = ROOT / "otel_inputs" / "hooks" / "entry.py"
NODE_BIN = HERE / "node_modules" / ".bin"
CLIS = {"claude-code": "claude", "codex": "codex", "gemini": "gemini"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _port_open(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


@dataclass
class Collector:
    """One ``otel-inputs collect`` on free loopback ports."""

    db: Path
    store: Path
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> Collector:
        self.proc = subprocess.Popen([str(BIN / "otel-inputs"), "collect", "--db", str(self.db), "--store",
                                      str(self.store), "--port", str(self.port), "--no-grpc"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
        deadline = time.monotonic() + 60
        while not _port_open(self.port):
            assert self.proc.poll() is None and time.monotonic() < deadline, "otel-inputs collect did not start"
            time.sleep(0.1)
        return self

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=90)

    def rows(self, sql: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]:
        with duckdb.connect(str(self.db), read_only=True) as con:
            return con.execute(sql, params or []).fetchall()


def run_hook(runtime: str, payload: bytes | str, store: Path, endpoint: str, *, worker: bool = True,
             env: dict[str, str] | None = None, timeout: float = 30.0) -> subprocess.CompletedProcess[bytes]:
    """Run the hook exactly as ``otel-inputs setup`` installs it (isolated, no site, by path)."""
    data = payload.encode() if isinstance(payload, str) else payload
    argv = [sys.executable, "-I", "-S", str(ENTRY), "--runtime", runtime, "--store", str(store), "--endpoint",
            endpoint, "--python", sys.executable, *([] if worker else ["--no-worker", "1"])]  # fmt: skip
    return subprocess.run(argv, input=data, capture_output=True, timeout=timeout, env={**os.environ, **(env or {})})


def wait_queue_empty(store: Path, timeout_s: float = 30.0) -> list[str]:
    deadline = time.monotonic() + timeout_s
    while True:
        left = [p.name for d in ("queue", "work") for p in (store / "hooks" / d).glob("*.json")]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.1)


# --- the real CLIs ----------------------------------------------------------------------------------


def cli_missing_reason(runtime: str) -> str | None:
    """Why the CLI session tests skip here, or None when they can run."""
    if not (NODE_BIN / CLIS[runtime]).exists():
        return (f"the pinned coding-agent CLIs are not installed: run `npm ci --prefix tests/coding_agents` "
                f"(no {CLIS[runtime]} in tests/coding_agents/node_modules/.bin)")
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        return "unshare and ip (util-linux, iproute2) are needed to run the CLIs in a network namespace"
    probe = subprocess.run(["unshare", "--net", "true"], capture_output=True)
    if probe.returncode != 0:
        return "cannot create a network namespace here (unshare --net needs root or user namespaces)"
    return None


@dataclass
class AgentSession:
    """One two-turn session of one CLI, as drive.py recorded it."""

    runtime: str
    out: Path
    report: dict[str, Any]

    @property
    def db(self) -> Path:
        return self.out / "t.duckdb"

    @property
    def store(self) -> Path:
        return self.out / "store"

    @property
    def project(self) -> Path:
        return self.out / "proj"

    def rows(self, sql: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]:
        with duckdb.connect(str(self.db), read_only=True) as con:
            return con.execute(sql, params or []).fetchall()

    def check_ran(self) -> None:
        """Both turns exited 0 and nothing outside loopback was contacted (else: say what happened)."""
        assert self.report["outside_contacts"] == [], self.report["outside_contacts"]
        for turn in self.report["turns"]:
            assert turn["exit"] == 0, json.dumps(turn, indent=1)[-3000:]


def drive(runtime: str, out: Path, *extra: str) -> AgentSession:
    reason = cli_missing_reason(runtime)
    if reason:
        pytest.skip(reason)
    proc = subprocess.run(["unshare", "--net", "--", sys.executable, str(HERE / "drive.py"), "--runtime", runtime,
                           "--out", str(out), *extra], capture_output=True, text=True, timeout=900)  # fmt: skip
    report_path = out / "report.json"
    assert report_path.exists(), f"drive.py failed ({proc.returncode}):\n{proc.stderr[-4000:]}"
    return AgentSession(runtime, out, json.loads(report_path.read_text(encoding="utf-8")))
