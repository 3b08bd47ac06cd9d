"""Captured OTLP of the real CLIs (``fixtures/<name>/``), and replaying it into a collector.

A fixture is what one ``drive.py --capture`` run sent to ``otel-inputs collect``: every OTLP/HTTP
request body (the CLI's own, protobuf; the hooks', JSON), gzipped, in arrival order, listed in
``index.jsonl`` with its path and headers, plus ``facts.json`` (the CLI version, the prompts, the
project directory the run used).  Replaying it lands exactly those bytes again, in any order.

Refresh a fixture (in a network namespace, as the tests run the CLIs)::

    unshare --net -- .venv/bin/python tests/coding_agents/drive.py --runtime claude-code --large \\
        --capture --out /tmp/run
    .venv/bin/python tests/coding_agents/corpus.py /tmp/run tests/coding_agents/fixtures/claude-code-inline
"""

from __future__ import annotations

import gzip
import http.client
import json
import random
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

FIXTURES = Path(__file__).resolve().parent / "fixtures"


@dataclass(frozen=True)
class Request:
    """One OTLP/HTTP request as the CLI or hook sent it."""

    path: str
    content_type: str
    body: bytes  # uncompressed

    @property
    def signal(self) -> str:
        return self.path.rsplit("/", 1)[-1]


def load(name: str) -> tuple[list[Request], dict[str, Any]]:
    """A fixture's requests, in arrival order, and its facts."""
    base = FIXTURES / name
    out = []
    for line in (base / "index.jsonl").read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        body = gzip.decompress((base / entry["file"]).read_bytes())
        out.append(Request(entry["path"], entry["content_type"], body))
    return out, json.loads((base / "facts.json").read_text(encoding="utf-8"))


def post(endpoint: str, request: Request, timeout: float = 30.0) -> int:
    url = urlsplit(endpoint)
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=timeout)
    try:
        conn.request("POST", request.path, body=gzip.compress(request.body),
                     headers={"Content-Type": request.content_type, "Content-Encoding": "gzip"})  # fmt: skip
        resp = conn.getresponse()
        resp.read()
        return resp.status
    finally:
        conn.close()


def replay(endpoint: str, requests: list[Request], *, seed: int | None = None) -> None:
    """POST every trace and log request (shuffled when ``seed`` is given); each must be acknowledged
    (200).  Metrics requests (Gemini CLI sends them; the collector takes traces and logs) are kept in
    the fixture as sent, and not replayed."""
    order = [r for r in requests if r.signal in ("traces", "logs")]
    if seed is not None:
        random.Random(seed).shuffle(order)
    for request in order:
        status = post(endpoint, request)
        assert status == 200, (request.path, status)


def save(run: Path, dest: Path) -> None:
    """Keep a drive.py --capture run as a fixture (bodies gzipped, index and facts)."""
    report = json.loads((run / "report.json").read_text(encoding="utf-8"))
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    lines = []
    for line in (run / "otlp" / "index.jsonl").read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        body = (run / "otlp" / entry["file"]).read_bytes()
        if not body:
            continue
        name = entry["file"] + ".gz"
        (dest / name).write_bytes(gzip.compress(body, mtime=0))
        ctype = next((v for k, v in entry["headers"].items() if k.lower() == "content-type"), "application/x-protobuf")
        lines.append(json.dumps({"file": name, "path": entry["path"], "content_type": ctype}))
    (dest / "index.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    facts = {"runtime": report["runtime"], "project": str(run / "proj"), "turns": [t["argv"] for t in report["turns"]],
             "outside_contacts": len(report["outside_contacts"]),
             "provider_paths": [r["path"] for r in report["provider_requests"]]}  # fmt: skip
    (dest / "facts.json").write_text(json.dumps(facts, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    save(Path(sys.argv[1]), Path(sys.argv[2]))
