"""Coding agents: the hook's wall time against a bare interpreter start, and the receiver on a
Codex-shaped stream against the raw DuckDB insert of the same rows (docs/performance.md).

Run: ``python -m benchmarks.bench_coding_agents [--quick] [--runs R] [--turns N]``.

* **hook**: the hook exactly as ``otel-inputs setup`` installs it (``python -I -S entry.py
  --runtime claude-code ...``) fed a ``UserPromptSubmit`` payload in a project holding a 51-byte
  CLAUDE.md, a 39-byte AGENTS.md and, in a second project, a 70 KB CLAUDE.md: stdin read, files
  listed and hashed, the job written and the worker spawned (``--python /bin/true``, so the spawn
  is real and no worker work competes with the next run).  Baselines, interleaved with it in the
  same run: ``python -c pass`` (a bare interpreter with site) and ``python -I -S -c pass``.
  Target: at most 1.5x the bare interpreter start.
* **codex stream**: the captured Codex session (tests/coding_agents/fixtures/codex: ~990 spans,
  hundreds of small internal spans per turn) copied N times under new trace, span, turn and
  conversation ids.  ``sink``: the pre-encoded OTLP/HTTP bodies posted to ``otel-inputs collect``
  (its own process) back to back, timed until every span is queryable (coding-agent turns settled
  in the same transactions).  ``raw``: the same spans through the reference conversion into one
  pyarrow table per request, INSERTed into otel_traces on one connection (no projection, no lock).
  Target: sink at least 0.5x raw.

Figures are medians; no assertions here (tests never time anything).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import http.client
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import duckdb

from benchmarks._common import machine_line
from otel_inputs.exporter import migrate_file
from otel_inputs.exporter._arrow import traces_table
from otel_inputs.exporter._db import read_connection
from otel_inputs.exporter._otlp import parse_protobuf, records_from_request

ROOT = Path(__file__).resolve().parents[1]
ENTRY = ROOT / "otel_inputs" / "hooks" / "entry.py"
FIXTURE = ROOT / "tests" / "coding_agents" / "fixtures" / "codex"


def _run(argv: list[str], stdin: bytes = b"") -> float:
    t0 = time.perf_counter()
    subprocess.run(argv, input=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - t0


def bench_hook(runs: int) -> dict[str, float]:
    tmp = Path(tempfile.mkdtemp(prefix="oi-hook-bench-"))
    try:
        small, large = tmp / "small", tmp / "large"
        for proj in (small, large):
            proj.mkdir()
            (proj / "AGENTS.md").write_text("# AGENTS.md beside CLAUDE.md\nUse tabs.\n", encoding="utf-8")
        (small / "CLAUDE.md").write_text("# Project rules (CLAUDE.md)\nAlways answer briefly.\n", encoding="utf-8")
        (large / "CLAUDE.md").write_text("- keep answers short\n" * 3500, encoding="utf-8")

        def hook(proj: Path) -> list[str]:
            return [sys.executable, "-I", "-S", str(ENTRY), "--runtime", "claude-code", "--store", str(tmp / "store"),
                    "--endpoint", "http://127.0.0.1:9", "--python", "/bin/true"]  # fmt: skip

        def payload(proj: Path) -> bytes:
            return json.dumps({"session_id": "s", "prompt_id": "p", "cwd": str(proj), "hook_event_name": "UserPromptSubmit",
                               "prompt": "Please read the file notes.txt"}).encode()  # fmt: skip

        cases = {
            "bare": ([sys.executable, "-c", "pass"], b""),
            "bare_isolated": ([sys.executable, "-I", "-S", "-c", "pass"], b""),
            "hook": (hook(small), payload(small)),
            "hook_70kb": (hook(large), payload(large)),
        }
        samples: dict[str, list[float]] = {k: [] for k in cases}
        for _ in range(2):  # warm the page cache
            for argv, data in cases.values():
                _run(argv, data)
        for _ in range(runs):  # interleaved: a load change hits every case alike
            for name, (argv, data) in cases.items():
                samples[name].append(_run(argv, data))
        return {k: statistics.median(v) * 1000 for k, v in samples.items()}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _copies(turns: int) -> list[bytes]:
    """The Codex fixture's trace requests, ``turns`` times over, each copy under new ids."""
    originals = []
    for line in (FIXTURE / "index.jsonl").read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        if entry["path"] == "/v1/traces":
            originals.append(gzip.decompress((FIXTURE / entry["file"]).read_bytes()))
    bodies = []
    for k in range(turns):
        salt = hashlib.sha256(str(k).encode()).digest()
        for body in originals:
            req = parse_protobuf(body)
            for rs in req.resource_spans:
                for ss in rs.scope_spans:
                    for sp in ss.spans:
                        sp.trace_id = bytes(a ^ b for a, b in zip(sp.trace_id, salt[:16]))
                        sp.span_id = bytes(a ^ b for a, b in zip(sp.span_id, salt[16:24]))
                        if sp.parent_span_id:
                            sp.parent_span_id = bytes(a ^ b for a, b in zip(sp.parent_span_id, salt[16:24]))
                        for kv in sp.attributes:
                            if kv.key in ("turn.id", "turn_id", "conversation.id", "thread.id"):
                                kv.value.string_value = f"{kv.value.string_value}-{k}"
            bodies.append(req.SerializeToString())
    return bodies


def _count(db: Path) -> int:
    with read_connection(db, timeout_s=60) as con:
        return int(con.execute("SELECT count(*) FROM otel_traces").fetchone()[0])


def bench_sink(bodies: list[bytes], spans: int, db: Path) -> dict[str, float]:
    cli = Path(sys.executable).with_name("otel-inputs")
    proc = subprocess.Popen([str(cli), "collect", "--db", str(db), "--port", "0", "--no-grpc"], stderr=subprocess.PIPE,
                            text=True)  # fmt: skip
    line = proc.stderr.readline() if proc.stderr else ""
    endpoint = line.split("listening on ")[1].split(" ")[0]
    try:
        url = urlsplit(endpoint)
        conn = http.client.HTTPConnection(url.hostname, url.port, timeout=120)
        t0 = time.perf_counter()
        for body in bodies:
            while True:
                conn.request("POST", url.path, body=body, headers={"Content-Type": "application/x-protobuf"})
                resp = conn.getresponse()
                resp.read()
                if resp.status != 503:
                    break
                time.sleep(float(resp.getheader("Retry-After") or 1))
        conn.close()
        while _count(db) < spans:
            time.sleep(0.05)
        elapsed = time.perf_counter() - t0
    finally:
        proc.terminate()
        proc.wait(60)
    with read_connection(db, timeout_s=60) as con:
        turns = int(con.execute("SELECT count(*) FROM agent_coding_turns").fetchone()[0])
    return {"spans_per_s": spans / elapsed, "turns": turns}


def bench_raw(bodies: list[bytes], spans: int, db: Path) -> dict[str, float]:
    migrate_file(db)
    con = duckdb.connect(str(db))
    t0 = time.perf_counter()
    for body in bodies:
        table = traces_table(list(records_from_request(parse_protobuf(body)).spans))
        con.execute("BEGIN TRANSACTION")
        con.register("b", table)
        con.execute("INSERT INTO otel_traces SELECT * FROM b")
        con.unregister("b")
        con.execute("COMMIT")
    elapsed = time.perf_counter() - t0
    con.close()
    return {"spans_per_s": spans / elapsed}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--runs", type=int, default=None)
    ap.add_argument("--turns", type=int, default=None, help="copies of the two-turn Codex session")
    args = ap.parse_args(argv)
    runs = args.runs or (15 if args.quick else 40)
    copies = args.turns or (10 if args.quick else 40)
    print(f"## coding agents — {machine_line()}, load average {os.getloadavg()[0]:.2f}")
    hook = bench_hook(runs)
    print(f"hook (median of {runs}, interleaved): bare python -c pass {hook['bare']:.1f} ms; "
          f"python -I -S -c pass {hook['bare_isolated']:.1f} ms")
    print(f"  hook, 2 small files   {hook['hook']:.1f} ms = {hook['hook'] / hook['bare']:.2f}x bare "
          f"({hook['hook'] / hook['bare_isolated']:.2f}x the isolated start)")
    print(f"  hook, 70 KB CLAUDE.md {hook['hook_70kb']:.1f} ms = {hook['hook_70kb'] / hook['bare']:.2f}x bare  (target <= 1.5x)")
    bodies = _copies(copies)
    spans = sum(len(list(records_from_request(parse_protobuf(b)).spans)) for b in bodies)
    tmp = Path(tempfile.mkdtemp(prefix="oi-codex-bench-"))
    try:
        raw = [bench_raw(bodies, spans, tmp / f"raw{i}.duckdb") for i in range(3)]
        sink = [bench_sink(bodies, spans, tmp / f"sink{i}.duckdb") for i in range(3)]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    raw_rate = statistics.median(r["spans_per_s"] for r in raw)
    sink_rate = statistics.median(r["spans_per_s"] for r in sink)
    print(f"codex-shaped stream: {copies} copies of a two-turn Codex session, {spans} spans in {len(bodies)} requests "
          f"(load average {os.getloadavg()[0]:.2f})")
    print(f"  raw DuckDB insert {raw_rate:9.0f} spans/s")
    print(f"  otel-inputs collect {sink_rate:7.0f} spans/s = {sink_rate / raw_rate:.2f}x raw  (target >= 0.5x), "
          f"{int(sink[0]['turns'])} turns settled")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
