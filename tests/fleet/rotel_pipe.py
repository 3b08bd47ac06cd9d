"""A real third-party OTLP→ClickHouse writer for tests and benchmarks: ``rotel-agent`` (installed from
PyPI with the ``rotel`` package) receiving OTLP/HTTP on loopback and exporting with its ClickHouse
exporter, over HTTP, into chdb through ``tests/clickhouse/chdb_http.py``.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "clickhouse"))
from chdb_http import chdb_http  # noqa: E402


def rotel_agent() -> Path | None:
    """The ``rotel-agent`` binary the ``rotel`` package ships, or ``None`` when it is not installed."""
    try:
        import rotel
    except ImportError:
        return None
    path = Path(rotel.__file__).with_name("rotel-agent")
    return path if path.is_file() else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def rotel_into_chdb(chdb_path: Path, database: str, log: Path, batch_timeout: str = "200ms") -> Iterator[str]:
    """rotel-agent writing into ``database`` of ``chdb_path``; yields its OTLP/HTTP logs endpoint."""
    agent = rotel_agent()
    assert agent is not None, "rotel is not installed"
    port = _free_port()
    with chdb_http(chdb_path) as server, open(log, "w") as out:
        proc = subprocess.Popen([str(agent), "start", "--otlp-http-endpoint", f"127.0.0.1:{port}",
                                 "--otlp-grpc-endpoint", f"127.0.0.1:{_free_port()}", "--exporter", "clickhouse",
                                 "--clickhouse-exporter-endpoint", f"http://127.0.0.1:{server.server_address[1]}",
                                 "--clickhouse-exporter-database", database,
                                 "--clickhouse-exporter-compression", "none", "--batch-timeout", batch_timeout],
                                stdout=out, stderr=subprocess.STDOUT)
        try:
            for _ in range(200):  # until it listens
                with socket.socket() as s:
                    if s.connect_ex(("127.0.0.1", port)) == 0:
                        break
                time.sleep(0.05)
            yield f"http://127.0.0.1:{port}/v1/logs"
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
