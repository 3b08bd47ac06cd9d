"""kill -9 campaign against `otel-inputs collect`: no acknowledged span may be missing after a restart.

Each trial starts the real sink process on a database that persists across the campaign's trials,
posts requests from two sender threads (each request 1-64 spans with fresh ids, some gzip), and
SIGKILLs the sink at a random moment under load, or right after one of its 200s.  A restart then
replays its write-ahead log and a SIGTERM flushes; every span ever acknowledged with 200 must be in
``otel_traces`` exactly once.  The disk-full variant puts the write-ahead log on a 1 MiB tmpfs
(root only): the sink must answer 503 instead of 200 for what it cannot keep.

Reproducible from the seed printed in each assertion: ``OTEL_INPUTS_SINK_CRASH_SEED=<seed>``.
The short campaign runs in the normal suite; ``OTEL_INPUTS_SINK_CRASH_TRIALS`` (default 30) trials
of each kind run under ``-m slow``.
"""

from __future__ import annotations

import gzip
import http.client
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import duckdb
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

BASE_SEED = int(os.environ.get("OTEL_INPUTS_SINK_CRASH_SEED") or random.SystemRandom().randrange(1 << 30))
LONG_TRIALS = int(os.environ.get("OTEL_INPUTS_SINK_CRASH_TRIALS") or 30)


@dataclass
class Campaign:
    db: Path
    seed: int
    acknowledged: set[tuple[str, str]] = field(default_factory=set)
    refused: int = 0
    trials: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


def _request(rng: random.Random, n: int) -> tuple[bytes, list[tuple[str, str]]]:
    req = ExportTraceServiceRequest()
    rs = req.resource_spans.add()
    kv = rs.resource.attributes.add()
    kv.key, kv.value.string_value = "service.name", "campaign"
    ss = rs.scope_spans.add()
    ss.scope.name = "campaign"
    ids = []
    trace_id = rng.randbytes(16)
    for _ in range(n):
        sp = ss.spans.add()
        sp.trace_id, sp.span_id = trace_id, rng.randbytes(8)
        sp.name = "work"
        sp.start_time_unix_nano = 1764460800000000000
        sp.end_time_unix_nano = sp.start_time_unix_nano + 1000
        for a in range(10):
            attr = sp.attributes.add()
            attr.key, attr.value.string_value = f"a{a}", "v" * rng.randrange(8, 200)
        ids.append((trace_id.hex(), sp.span_id.hex()))
    return req.SerializeToString(), ids


def _start(db: Path) -> tuple[subprocess.Popen[str], str]:
    exe = Path(sys.executable).with_name("otel-inputs")
    proc = subprocess.Popen([str(exe), "collect", "--db", str(db), "--port", "0", "--no-grpc"],
                            stderr=subprocess.PIPE, text=True)  # fmt: skip
    line = ""
    deadline = time.monotonic() + 60
    while "listening on " not in line and time.monotonic() < deadline and proc.poll() is None:
        line = proc.stderr.readline() if proc.stderr else ""
    assert "listening on " in line, line
    threading.Thread(target=_drain_stderr, args=(proc,), daemon=True).start()
    return proc, line.split("listening on ")[1].split(" ")[0]


def _drain_stderr(proc: subprocess.Popen[str]) -> None:
    if proc.stderr:
        for _ in proc.stderr:
            pass


def _sender(c: Campaign, endpoint: str, rng: random.Random, stop: threading.Event, first_ack: threading.Event) -> None:
    url = urlsplit(endpoint)
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
    try:
        for _ in range(10_000):
            if stop.is_set():
                return
            body, ids = _request(rng, rng.randrange(1, 65))
            headers = {"Content-Type": "application/x-protobuf"}
            if rng.random() < 0.3:
                body = gzip.compress(body, compresslevel=1)
                headers["Content-Encoding"] = "gzip"
            try:
                conn.request("POST", url.path, body=body, headers=headers)
                resp = conn.getresponse()
                resp.read()
            except (OSError, http.client.HTTPException):
                return  # the sink was killed
            with c.lock:
                if resp.status == 200:
                    c.acknowledged.update(ids)
                    first_ack.set()
                else:
                    c.refused += 1
            if resp.status == 503:
                time.sleep(0.05)
    finally:
        conn.close()


def _trial(c: Campaign, rng: random.Random, *, right_after_ack: bool) -> None:
    proc, endpoint = _start(c.db)
    stop = threading.Event()
    first_ack = threading.Event()
    senders = [threading.Thread(target=_sender, args=(c, endpoint, random.Random(rng.random()), stop, first_ack))
               for _ in range(2)]  # fmt: skip
    try:
        for t in senders:
            t.start()
        if right_after_ack:
            assert first_ack.wait(30), f"no 200 at all (seed {c.seed})"
        else:
            time.sleep(rng.uniform(0.1, 1.5))
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    finally:
        stop.set()
        for t in senders:
            t.join(30)
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)
    c.trials += 1


def _verify(c: Campaign) -> None:
    proc, _ = _start(c.db)  # replays the log
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(120) == 0, f"sink did not stop cleanly (seed {c.seed})"
    con = duckdb.connect(str(c.db), read_only=True)
    try:
        rows = con.execute('SELECT "TraceId", "SpanId" FROM otel_traces').fetchall()
    finally:
        con.close()
    stored = set(rows)
    missing = c.acknowledged - stored
    assert not missing, (f"{len(missing)} of {len(c.acknowledged)} acknowledged spans missing after {c.trials} "
                         f"kill -9 trials (seed {c.seed})")  # fmt: skip
    assert len(rows) == len(stored), f"duplicate spans after replay (seed {c.seed})"


def _campaign(tmp_path: Path, trials: int, *, after_ack: int, seed: int) -> Campaign:
    rng = random.Random(seed)
    c = Campaign(tmp_path / "sink.duckdb", seed)
    for i in range(trials + after_ack):
        _trial(c, rng, right_after_ack=i >= trials)
    _verify(c)
    assert c.acknowledged, f"the campaign acknowledged nothing (seed {seed})"
    return c


@pytest.mark.timeout(300)
def test_short_kill9_campaign_loses_no_acknowledged_span(tmp_path: Path) -> None:
    """4 kills under load and 2 right after a 200: every acknowledged span is stored once after restart."""
    _campaign(tmp_path, 4, after_ack=2, seed=BASE_SEED)


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_long_kill9_campaign_loses_no_acknowledged_span(tmp_path: Path) -> None:
    """OTEL_INPUTS_SINK_CRASH_TRIALS kills under load plus a third as many right after a 200: zero acknowledged spans lost."""
    c = _campaign(tmp_path, LONG_TRIALS, after_ack=max(1, LONG_TRIALS // 3), seed=BASE_SEED)
    print(f"\nsink kill -9 campaign: {c.trials} trials, {len(c.acknowledged)} spans acknowledged, "
          f"{c.refused} requests refused (503), 0 missing (seed {c.seed})")


def _mount_tiny(directory: Path) -> None:
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root")
    directory.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(directory)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {done.stderr.decode().strip()}")


def _disk_full_campaign(tmp_path: Path, trials: int, seed: int) -> Campaign:
    rng = random.Random(seed)
    c = Campaign(tmp_path / "sink.duckdb", seed)
    wal = Path(f"{c.db}.ingest")
    _mount_tiny(wal)
    try:
        # A writer lock held by another process for part of each trial makes the log fill the disk.
        for i in range(trials):
            holder = subprocess.Popen([sys.executable, "-c", (
                "import sys, time; from otel_inputs.exporter._db import file_lock\n"
                f"with file_lock({str(c.db)!r}, exclusive=True, timeout_s=30):\n"
                f"    print('held', flush=True); time.sleep({rng.uniform(0.5, 2.0):.2f})")],
                stdout=subprocess.PIPE, text=True)  # fmt: skip
            assert holder.stdout and holder.stdout.readline().strip() == "held"
            _trial(c, rng, right_after_ack=i % 2 == 1)
            holder.wait(30)
        _verify(c)
    finally:
        subprocess.run(["umount", "-l", str(wal)], check=False)
    assert c.acknowledged and c.refused, f"the disk never filled or nothing was acknowledged (seed {seed})"
    return c


@pytest.mark.timeout(300)
def test_short_disk_full_campaign_answers_503_and_loses_nothing(tmp_path: Path) -> None:
    """With the log on a 1 MiB disk and the database held busy, the sink refuses (503) instead of acknowledging; kills lose nothing."""
    _disk_full_campaign(tmp_path, 3, BASE_SEED + 1)


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_long_disk_full_campaign(tmp_path: Path) -> None:
    """OTEL_INPUTS_SINK_CRASH_TRIALS kill -9 trials with the log's disk full: zero acknowledged spans lost."""
    c = _disk_full_campaign(tmp_path, LONG_TRIALS, BASE_SEED + 1)
    print(f"\nsink disk-full campaign: {c.trials} trials, {len(c.acknowledged)} spans acknowledged, "
          f"{c.refused} refused (503), 0 missing (seed {c.seed})")
