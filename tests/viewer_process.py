"""`otel-inputs view` as a real process on a free loopback port, for the browser-driven tests."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest

from otel_inputs.viewer._cli import free_port

ROOT = Path(__file__).resolve().parents[1]


@contextmanager
def serve_viewer(db: Path, store: Path, log: Path, *, start_timeout_s: float = 60,
                 extra_args: Sequence[str] = (), env: dict[str, str] | None = None) -> Iterator[str]:
    """Serve ``db``/``store`` until Streamlit's health check answers; yield the base URL; always stop the group."""
    port = free_port()
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "otel_inputs.exporter.cli", "view", "--db", str(db), "--store", str(store),
                                 "--port", str(port), *extra_args], cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True, env=env)
    try:
        deadline = time.monotonic() + start_timeout_s
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"viewer did not start: {log.read_text(errors='replace')[-2000:]}")
            time.sleep(0.3)
        yield f"http://127.0.0.1:{port}/"
    finally:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=15)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=5)
