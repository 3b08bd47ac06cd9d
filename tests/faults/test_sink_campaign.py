"""kill -9 campaign against `otel-inputs collect`: no acknowledged span or log record may be missing
or landed twice after a restart.

Each trial starts the real sink process (OTLP/HTTP and OTLP/gRPC) on a database that persists
across the campaign's trials, posts requests from four sender threads at once -- traces and logs,
each over HTTP (some gzip) and over gRPC; each request 1-64 spans or log records with fresh ids and
bodies -- and SIGKILLs the sink at a random moment under load, or right after one of its
acknowledgments, while a viewer-like reader opens the file read-only every ~50 ms (so the writer
hands the file over between and inside its transactions when it is killed).  A restart then replays its write-ahead log and a SIGTERM flushes; every span and
log record ever acknowledged (200 / OK) must be in ``otel_traces`` / ``otel_logs`` exactly once:
acknowledged-but-missing and duplicates are both counted and both must be 0.  The disk-full variants
put the write-ahead log on a 1 MiB tmpfs, or the whole database on a small tmpfs that is full when
the database file is first created (root only): the sink must answer 503 instead of acknowledging
what it cannot keep, and the database it creates must be usable once space returns.

Reproducible from the seed printed in each assertion: ``OTEL_INPUTS_SINK_CRASH_SEED=<seed>``.
The short campaign runs in the normal suite; ``OTEL_INPUTS_SINK_CRASH_TRIALS`` (default 30) trials
of each kind run under ``-m slow``.
"""

from __future__ import annotations

import gzip
import http.client
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import duckdb
import grpc
import pytest
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from tmpfs import mount_tmpfs, unmount

BASE_SEED = int(os.environ.get("OTEL_INPUTS_SINK_CRASH_SEED") or random.SystemRandom().randrange(1 << 30))
LONG_TRIALS = int(os.environ.get("OTEL_INPUTS_SINK_CRASH_TRIALS") or 30)
TRACE_SERVICE = "opentelemetry.proto.collector.trace.v1.TraceService"
LOGS_SERVICE = "opentelemetry.proto.collector.logs.v1.LogsService"
SENDERS = (("http", "traces"), ("http", "logs"), ("grpc", "traces"), ("grpc", "logs"))


@dataclass
class Campaign:
    db: Path
    seed: int
    acknowledged: set[tuple[str, str]] = field(default_factory=set)  # spans: (trace id, span id)
    acknowledged_logs: set[str] = field(default_factory=set)  # log records: their unique bodies
    acks: Counter = field(default_factory=Counter)  # acknowledged requests per (transport, signal)
    refused: int = 0
    reads: int = 0  # the viewer-like reader's successful opens during the trials
    trials: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


@dataclass(frozen=True)
class Endpoints:
    http: str  # http://host:port (the paths are added per signal)
    grpc: str  # host:port


def _trace_request(rng: random.Random, n: int) -> tuple[bytes, list[tuple[str, str]]]:
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


def _logs_request(rng: random.Random, n: int) -> tuple[bytes, list[str]]:
    """``n`` log records, each with a body no other record has (log records have no key: the body
    tells a record landed twice from two records)."""
    req = ExportLogsServiceRequest()
    rl = req.resource_logs.add()
    kv = rl.resource.attributes.add()
    kv.key, kv.value.string_value = "service.name", "campaign"
    sl = rl.scope_logs.add()
    bodies = []
    for _ in range(n):
        body = f"log-{rng.randbytes(12).hex()}"
        rec = sl.log_records.add(time_unix_nano=1764460800000000000 + rng.randrange(10**9), severity_text="INFO")
        rec.body.string_value = body
        if rng.random() < 0.5:
            rec.trace_id, rec.span_id = rng.randbytes(16), rng.randbytes(8)
        rec.attributes.add(key="padding").value.string_value = "p" * rng.randrange(8, 400)
        bodies.append(body)
    return req.SerializeToString(), bodies


def _request(rng: random.Random, signal_: str) -> tuple[bytes, list]:
    n = rng.randrange(1, 65)
    return _trace_request(rng, n) if signal_ == "traces" else _logs_request(rng, n)


def _start(db: Path) -> tuple[subprocess.Popen[str], Endpoints]:
    exe = Path(sys.executable).with_name("otel-inputs")
    proc = subprocess.Popen([str(exe), "collect", "--db", str(db), "--port", "0", "--grpc-port", "0"],
                            stderr=subprocess.PIPE, text=True)  # fmt: skip
    line = ""
    deadline = time.monotonic() + 60
    while "listening on " not in line and time.monotonic() < deadline and proc.poll() is None:
        line = proc.stderr.readline() if proc.stderr else ""
    assert "listening on " in line, line
    threading.Thread(target=_drain_stderr, args=(proc,), daemon=True).start()
    url = urlsplit(line.split("listening on ")[1].split(" ")[0])
    return proc, Endpoints(f"http://{url.hostname}:{url.port}", line.split("OTLP/gRPC on ")[1].split()[0])


def _drain_stderr(proc: subprocess.Popen[str]) -> None:
    if proc.stderr:
        for _ in proc.stderr:
            pass


def _acknowledge(c: Campaign, transport: str, signal_: str, keys: list, ok: bool, first_ack: threading.Event) -> None:
    with c.lock:
        if ok:
            (c.acknowledged if signal_ == "traces" else c.acknowledged_logs).update(keys)
            c.acks[(transport, signal_)] += 1
            first_ack.set()
        else:
            c.refused += 1


def _http_sender(c: Campaign, ep: Endpoints, signal_: str, rng: random.Random, stop: threading.Event,
                 first_ack: threading.Event) -> None:  # fmt: skip
    url = urlsplit(ep.http)
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
    try:
        for _ in range(10_000):
            if stop.is_set():
                return
            body, keys = _request(rng, signal_)
            headers = {"Content-Type": "application/x-protobuf"}
            if rng.random() < 0.3:
                body = gzip.compress(body, compresslevel=1)
                headers["Content-Encoding"] = "gzip"
            try:
                conn.request("POST", f"/v1/{signal_}", body=body, headers=headers)
                resp = conn.getresponse()
                resp.read()
            except (OSError, http.client.HTTPException):
                return  # the sink was killed
            _acknowledge(c, "http", signal_, keys, resp.status == 200, first_ack)
            if resp.status == 503:
                time.sleep(0.05)
    finally:
        conn.close()


def _grpc_sender(c: Campaign, ep: Endpoints, signal_: str, rng: random.Random, stop: threading.Event,
                 first_ack: threading.Event) -> None:  # fmt: skip
    service = TRACE_SERVICE if signal_ == "traces" else LOGS_SERVICE
    with grpc.insecure_channel(ep.grpc) as channel:
        export = channel.unary_unary(f"/{service}/Export", request_serializer=None, response_deserializer=None)
        for _ in range(10_000):
            if stop.is_set():
                return
            body, keys = _request(rng, signal_)
            compression = grpc.Compression.Gzip if rng.random() < 0.3 else None
            try:
                export(body, timeout=10, compression=compression)
            except grpc.RpcError as exc:
                if exc.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.RESOURCE_EXHAUSTED) and any(
                        k == "grpc-status-details-bin" for k, _ in exc.trailing_metadata() or ()):
                    _acknowledge(c, "grpc", signal_, keys, False, first_ack)  # refused with RetryInfo: busy or not durable
                    time.sleep(0.05)
                    continue
                return  # the sink was killed (or the connection is gone)
            _acknowledge(c, "grpc", signal_, keys, True, first_ack)


def _reader(c: Campaign, stop: threading.Event) -> None:
    """Open the file the viewer's way (shared sidecar lock, read-only, one query) until ``stop``."""
    from otel_inputs.exporter._db import read_connection

    while not stop.wait(0.05):
        try:
            with read_connection(c.db, timeout_s=5) as con:
                con.execute("SELECT count(*) FROM otel_traces").fetchone()
            c.reads += 1
        except Exception:  # noqa: BLE001 - not created or migrated yet, or busy: the next poll tries again
            continue


def _trial(c: Campaign, rng: random.Random, *, right_after_ack: bool, after: threading.Event | None = None) -> None:
    """One sink process under the four senders, SIGKILLed right after an acknowledgment, or at a
    random moment (after ``after`` is set, when given)."""
    proc, ep = _start(c.db)
    stop = threading.Event()
    first_ack = threading.Event()
    senders = [threading.Thread(target=_http_sender if transport == "http" else _grpc_sender,
                                args=(c, ep, signal_, random.Random(rng.random()), stop, first_ack))
               for transport, signal_ in SENDERS]  # fmt: skip
    senders.append(threading.Thread(target=_reader, args=(c, stop)))
    try:
        for t in senders:
            t.start()
        if after is not None:
            assert after.wait(120), f"the awaited moment never came (seed {c.seed})"
        if right_after_ack:
            assert first_ack.wait(60), f"no acknowledgment at all (seed {c.seed})"
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


@dataclass(frozen=True)
class Verdict:
    missing_spans: int
    duplicate_spans: int
    missing_logs: int
    duplicate_logs: int


def _verify(c: Campaign) -> Verdict:
    proc, _ = _start(c.db)  # replays the log
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(120) == 0, f"sink did not stop cleanly (seed {c.seed})"
    con = duckdb.connect(str(c.db), read_only=True)
    try:
        spans = con.execute('SELECT "TraceId", "SpanId", count(*) FROM otel_traces GROUP BY 1, 2').fetchall()
        logs = con.execute("""SELECT "Body", count(*) FROM otel_logs WHERE "Body" LIKE 'log-%' GROUP BY 1""").fetchall()
    finally:
        con.close()
    stored_spans = {(t, s) for t, s, _ in spans}
    stored_logs = {b for b, _ in logs}
    verdict = Verdict(len(c.acknowledged - stored_spans), sum(n - 1 for _, _, n in spans if n > 1),
                      len(c.acknowledged_logs - stored_logs), sum(n - 1 for _, n in logs if n > 1))  # fmt: skip
    assert verdict == Verdict(0, 0, 0, 0), (
        f"after {c.trials} kill -9 trials: {verdict.missing_spans} of {len(c.acknowledged)} acknowledged spans "
        f"missing, {verdict.duplicate_spans} duplicated; {verdict.missing_logs} of {len(c.acknowledged_logs)} "
        f"acknowledged log records missing, {verdict.duplicate_logs} duplicated (seed {c.seed})")  # fmt: skip
    return verdict


def _report(name: str, c: Campaign) -> str:
    per = ", ".join(f"{t}/{s} {c.acks[(t, s)]}" for t, s in SENDERS)
    return (f"\n{name}: {c.trials} trials, {len(c.acknowledged)} spans and {len(c.acknowledged_logs)} log records "
            f"acknowledged (requests: {per}), {c.refused} requests refused (503 / RetryInfo), {c.reads} reader "
            f"opens during the kills, 0 missing, "
            f"0 duplicated (seed {c.seed})")


def _campaign(tmp_path: Path, trials: int, *, after_ack: int, seed: int) -> Campaign:
    rng = random.Random(seed)
    c = Campaign(tmp_path / "sink.duckdb", seed)
    for i in range(trials + after_ack):
        _trial(c, rng, right_after_ack=i >= trials)
    _verify(c)
    assert c.acknowledged and c.acknowledged_logs, f"the campaign acknowledged no span or no log record (seed {seed})"
    assert all(c.acks[k] for k in SENDERS), f"a sender was never acknowledged: {dict(c.acks)} (seed {seed})"
    return c


@pytest.mark.timeout(400)
def test_short_kill9_campaign_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    """4 kills under load and 2 right after an acknowledgment, traces and logs over HTTP and gRPC at once: 0 acknowledged missing, 0 duplicated."""
    c = _campaign(tmp_path, 4, after_ack=2, seed=BASE_SEED)
    print(_report("sink kill -9 campaign", c))


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_long_kill9_campaign_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    """OTEL_INPUTS_SINK_CRASH_TRIALS kills under load plus a third as many right after an acknowledgment: 0 missing, 0 duplicated."""
    c = _campaign(tmp_path, LONG_TRIALS, after_ack=max(1, LONG_TRIALS // 3), seed=BASE_SEED)
    print(_report("sink kill -9 campaign", c))


def _disk_full_campaign(tmp_path: Path, trials: int, seed: int) -> Campaign:
    rng = random.Random(seed)
    c = Campaign(tmp_path / "sink.duckdb", seed)
    wal = Path(f"{c.db}.ingest")
    mount_tmpfs(wal, "1m")
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
        unmount(wal)
    assert (c.acknowledged or c.acknowledged_logs) and c.refused, (
        f"the disk never filled or nothing was acknowledged (seed {seed})")
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
    print(_report("sink disk-full campaign", c))


def _fill(directory: Path, leave: int) -> Path:
    """Take all but ``leave`` bytes of ``directory``'s file system with a filler file."""
    st = os.statvfs(directory)
    filler = directory / f"filler-{time.monotonic_ns()}"
    with open(filler, "wb") as fh:
        fh.write(b"\0" * max(st.f_bavail * st.f_frsize - leave, 0))
    return filler


def _free_when_refused(c: Campaign, filler: Path, rng: random.Random, freed: threading.Event,
                       stop: threading.Event) -> None:  # fmt: skip
    """Give the space back once the sink has refused something on the full disk (or after 30 s)."""
    deadline = time.monotonic() + 30
    while not stop.is_set() and time.monotonic() < deadline:
        with c.lock:
            if c.refused:
                break
        stop.wait(0.01)
    stop.wait(rng.uniform(0.05, 0.5))
    filler.unlink(missing_ok=True)
    freed.set()


def _db_created_on_full_disk_campaign(tmp_path: Path, trials: int, seed: int) -> Campaign:
    """The database and its write-ahead log on a small tmpfs that is nearly full when the sink first
    creates the database file (room for a small request, not for a database): the first requests
    are acknowledged while the database cannot be created, then refused; space returns mid-trial
    and the sink is killed at a random moment after; every other trial fills the disk again."""
    rng = random.Random(seed)
    disk = tmp_path / "disk"
    mount_tmpfs(disk, "128m")
    c = Campaign(disk / "sink.duckdb", seed)
    try:
        for i in range(trials):
            if i % 2:
                _trial(c, rng, right_after_ack=i % 4 == 3)
                continue
            (disk / "sink.duckdb.ingest").mkdir(exist_ok=True)
            filler = _fill(disk, leave=8 * 1024)
            freed, stop = threading.Event(), threading.Event()
            freer = threading.Thread(target=_free_when_refused, args=(c, filler, rng, freed, stop))
            freer.start()
            try:
                _trial(c, rng, right_after_ack=False, after=freed)
            finally:
                stop.set()
                freer.join(60)
            filler.unlink(missing_ok=True)
        _verify(c)
    finally:
        unmount(disk)
    assert c.acknowledged and c.acknowledged_logs and c.refused, (
        f"the disk never filled or nothing was acknowledged (seed {seed})")
    return c


@pytest.mark.timeout(400)
def test_short_campaign_database_created_on_a_full_disk(tmp_path: Path) -> None:
    """The database file first created while its disk is full: refusals, never a broken file; after kills 0 acknowledged missing, 0 duplicated."""
    c = _db_created_on_full_disk_campaign(tmp_path, 4, BASE_SEED + 2)
    print(_report("sink database-created-on-a-full-disk campaign", c))


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_long_campaign_database_created_on_a_full_disk(tmp_path: Path) -> None:
    """OTEL_INPUTS_SINK_CRASH_TRIALS trials, the disk full at every other one from the database's creation on: 0 missing, 0 duplicated."""
    c = _db_created_on_full_disk_campaign(tmp_path, LONG_TRIALS, BASE_SEED + 2)
    print(_report("sink database-created-on-a-full-disk campaign", c))
