"""Snapshot upload to S3: the store's background uploader vs a plain s3fs put loop, and the agent's thread.

    python -m benchmarks.bench_upload [--runs N] [--quick]

Needs moto[server] and s3fs (``pip install 'otel-inputs[objects]' 'moto[server]'``).  An S3 server
(moto's server mode) runs on 127.0.0.1 in a process of its own.  (1) Throughput: the same committed objects
(a seeded mix of 4-64 KiB) are uploaded by the store's uploader (queue, local re-hash, PUT, ETag
check, catalog rows) and, in the same run, by a plain loop of ``s3fs.pipe_file`` over the same bytes;
each run uses fresh buckets, the order alternates.  Target: uploader >= 0.8x the plain loop.
(2) Agent thread: an observed attempt with a task file + 3 files of 4 KiB (new bytes every attempt,
so every attempt queues uploads), paced like model calls (20 ms apart), with the bucket off and on;
target: unchanged.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks._common import machine_line, peak_rss_mib

KiB = 1024
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench", "AWS_DEFAULT_REGION": "us-east-1"}


SERVER = """
import logging, sys
from moto.server import ThreadedMotoServer
logging.getLogger("werkzeug").setLevel(logging.ERROR)
server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
server.start()
print("%s:%s" % server.get_host_and_port(), flush=True)
sys.stdin.read()  # until the benchmark closes it
server.stop()
"""


def start_server() -> tuple[subprocess.Popen, str]:
    """moto's S3 server in its own process, as a bucket would be: its CPU is not the agent's."""
    os.environ.update(CREDENTIALS)
    proc = subprocess.Popen([sys.executable, "-c", SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    return proc, "http://" + proc.stdout.readline().strip()


def stop_server(proc: subprocess.Popen) -> None:
    proc.stdin.close()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)


def options(endpoint: str) -> dict:
    return {"endpoint_url": endpoint, "key": "bench", "secret": "bench", "skip_instance_cache": True}


def committed_store(root: Path, count: int, seed: int = 20261201):
    """A store holding ``count`` committed objects (no bucket yet); returns (store, digests, bytes)."""
    from otel_inputs.store import ArtifactStore, AttemptRecord, CatalogItem

    rng = random.Random(seed)
    store = ArtifactStore(root)
    staging = store.begin_attempt("bench")
    items, total = [], 0
    for k in range(count):
        data = rng.randbytes(rng.choice([4, 4, 8, 16, 64]) * KiB)
        blob = staging.put_bytes(data)
        total += len(data)
        items.append(CatalogItem("bench", f"in-{k}", k, snapshot_ref=blob.snapshot_ref, size_bytes=len(data),
                                 sha256=blob.sha256, capture_status="captured", artifact_status="available"))
    staging.commit(AttemptRecord("bench", "bench-run", items=tuple(items)))
    return store, [i.sha256 for i in items], total


def throughput(endpoint: str, count: int, runs: int) -> dict:
    import s3fs

    from otel_inputs.store import ArtifactStore
    from otel_inputs.store.bucket import attach, bucket_counts

    fs = s3fs.S3FileSystem(**options(endpoint))
    work = Path(tempfile.mkdtemp(prefix="bench-upload-"))
    base, digests, total = committed_store(work / "store", count)
    payload = {d: base.objects.path(d).read_bytes() for d in digests}
    plain_s, ours_s = [], []
    for run in range(runs + 1):  # run 0 warms both paths up
        plain_bucket, our_bucket = f"plain-{run}", f"ours-{run}"
        fs.mkdir(plain_bucket)
        fs.mkdir(our_bucket)

        def plain() -> float:
            t0 = time.perf_counter()
            for d in digests:
                fs.pipe_file(f"{plain_bucket}/objects/{d}", payload[d])
            return time.perf_counter() - t0

        def ours() -> float:
            store = ArtifactStore(base.root, objects_url=f"s3://{our_bucket}", objects_options=options(endpoint))
            attach(store)._queue_max = count + 1
            with store.catalog.write() as con:  # each run uploads everything again, to a fresh bucket
                con.execute("DELETE FROM remote_objects")
            attach(store).remote().fs.exists(f"{our_bucket}/objects")  # the client is made once per process,
            # as the plain loop's was (outside its timing)
            t0 = time.perf_counter()
            attach(store).committed(digests)
            assert attach(store).flush(600)
            took = time.perf_counter() - t0
            assert bucket_counts(store).get("uploaded") == count, bucket_counts(store)
            return took

        first, second = (plain, ours) if run % 2 == 0 else (ours, plain)
        a, b = first(), second()
        p, o = (a, b) if first is plain else (b, a)
        if run:
            plain_s.append(p)
            ours_s.append(o)
    plain_med, ours_med = statistics.median(plain_s), statistics.median(ours_s)
    return {"objects": count, "bytes": total, "plain_s": plain_med, "ours_s": ours_med,
            "plain_obj_per_s": count / plain_med, "ours_obj_per_s": count / ours_med,
            "ratio": plain_med / ours_med, "plain_all": plain_s, "ours_all": ours_s}


def agent_thread(endpoint: str | None, iterations: int, work: Path, pace_s: float = 0.02) -> dict:
    """Median agent-thread time of an attempt (task file + 3 x 4 KiB of new bytes), bucket on or off."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

    from otel_inputs import AgentObserver, ArtifactStore, CapturePolicy, resolve_request
    from otel_inputs.store.bucket import attach, bucket_counts

    class Noop(SpanExporter):
        def export(self, spans):
            return SpanExportResult.SUCCESS

    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(Noop(), max_export_batch_size=512))
    work.mkdir(parents=True)
    ctx = work / "ctx"
    ctx.mkdir()
    prompt = work / "task.md"
    prompt.write_text("Implement the thing.\n" * 20)
    request = resolve_request(str(prompt))
    if endpoint is not None:
        import s3fs

        bucket = f"agent-{os.getpid()}-{int(time.time() * 1000) % 100000}"
        s3fs.S3FileSystem(**options(endpoint)).mkdir(bucket)
        store = ArtifactStore(work / "store", objects_url=f"s3://{bucket}", objects_options=options(endpoint))
    else:
        store = ArtifactStore(work / "store")
    observer = AgentObserver(tracer_provider=provider, store=store, policy=CapturePolicy(message_content=True),
                             agent_name="bench")
    rng = random.Random(7)
    samples = []
    for i in range(iterations + 20):
        for k in range(3):  # new bytes every attempt: every attempt has uploads to queue
            (ctx / f"file{k}.md").write_bytes(rng.randbytes(4 * KiB))
        t0 = time.perf_counter()
        with observer.attempt(run_id="bench", request=request, context_roots=[ctx], system_message="sys",
                              user_message=request.text):
            pass
        if i >= 20:
            samples.append(time.perf_counter() - t0)
        time.sleep(pace_s)  # the model call the attempt would wait for
    counts = {}
    if endpoint is not None:
        assert attach(store).flush(600)
        counts = bucket_counts(store)
    provider.shutdown()
    observer.flush(30)
    return {"samples": samples, "bucket": counts}


def summary(samples: list[float]) -> dict:
    ordered = sorted(samples)
    return {"median_ms": statistics.median(samples) * 1000, "p90_ms": ordered[int(len(ordered) * 0.9)] * 1000,
            "p99_ms": ordered[int(len(ordered) * 0.99)] * 1000}


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--objects", type=int, default=400)
    ap.add_argument("--attempts", type=int, default=300)
    ap.add_argument("--pace", type=float, default=0.02, help="seconds between attempts (the model call)")
    ap.add_argument("--quick", action="store_true", help="fewer objects, runs and attempts")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if args.quick:
        args.runs, args.objects, args.attempts = 3, 150, 100
    server, endpoint = start_server()
    try:
        tp = throughput(endpoint, args.objects, args.runs)
        work = Path(tempfile.mkdtemp(prefix="bench-upload-agent-"))
        phases: dict[str, list[float]] = {"off": [], "on": []}
        uploaded: dict = {}
        for k in range(4):  # off, on, off, on: a busy spell of the machine lands on both
            mode = "on" if k % 2 else "off"
            got = agent_thread(endpoint if mode == "on" else None, args.attempts // 2, work / f"{mode}{k}", args.pace)
            phases[mode] += got["samples"]
            for state, n in got["bucket"].items():
                uploaded[state] = uploaded.get(state, 0) + n
        off, on = summary(phases["off"]), summary(phases["on"])
    finally:
        stop_server(server)
    result = {"machine": machine_line(), "throughput": tp, "agent_off": off, "agent_on": on, "bucket": uploaded,
              "peak_rss_mib": peak_rss_mib()}
    print(f"## upload ({result['machine']})")
    print(f"throughput, {tp['objects']} objects / {tp['bytes'] / KiB:.0f} KiB to moto S3 on 127.0.0.1, median of "
          f"{args.runs}: plain s3fs put loop {tp['plain_obj_per_s']:.0f} obj/s, store uploader "
          f"{tp['ours_obj_per_s']:.0f} obj/s; ratio {tp['ratio']:.2f}x (target >= 0.8x)")
    print(f"agent thread (task + 3 x 4 KiB, new bytes each attempt, {args.pace * 1000:.0f} ms apart, "
          f"{args.attempts} per mode): "
          f"uploads off {off['median_ms']:.2f} ms median, on {on['median_ms']:.2f} ms "
          f"(p90 {on['p90_ms']:.2f} vs {off['p90_ms']:.2f}, p99 {on['p99_ms']:.2f} vs {off['p99_ms']:.2f}); "
          f"on/off {on['median_ms'] / off['median_ms']:.2f}x (target unchanged); bucket after: {uploaded}")
    print(f"peak RSS: {result['peak_rss_mib']:.0f} MiB")
    if args.json:
        print(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
