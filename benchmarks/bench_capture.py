"""Capture cost: ``capture_attempt_inputs`` vs the copy-and-hash floor and vs ``cp -r`` + ``sha256sum``.

    python -m benchmarks.bench_capture [--runs N] [--quick]

The tree is 100 files / 50 MiB (every file within the 10 MiB per-file bound), made from a seeded
PRNG.  Baselines run over the same tree in the same process: (a) the floor, a plain loop that reads
each file once, hashes it and writes it; (b) ``cp -r`` followed by ``sha256sum``.  Target:
capture <= 1.5x the floor.  Also: time on the agent's thread for a small packet (task + 3 files of
4 KiB) vs a bare span, target <= 1.0 ms median, and its p99 while another process runs evicting
retention passes over the same store (20,000 snapshots), target <= 5 ms; and how capture cost
scales with tree size.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks._common import machine_line, median_ms, peak_rss_mib, spread_ms, timed_runs
from otel_inputs import (
    AdmissionDecision,
    AgentObserver,
    ArtifactStore,
    CaptureLimits,
    CapturePolicy,
    capture_attempt_inputs,
    resolve_request,
)
from otel_inputs.types import CaptureDecision

MiB = 1024 * 1024
CHUNK = MiB


def make_tree(root: Path, scale: float = 1.0, seed: int = 20261130) -> tuple[int, int]:
    """100*scale files, 50*scale MiB, nested up to 3 levels; returns (files, bytes)."""
    rng = random.Random(seed)
    sizes = [8 * MiB] * 4 + [4 * MiB] * 2 + [512 * 1024] * 14
    small_total = 50 * MiB - sum(sizes)
    small = [rng.randint(1024, 60 * 1024) for _ in range(79)]
    small.append(small_total - sum(small))
    sizes += small
    if scale != 1.0:
        # The same mix of sizes, scaled: 10x less or more files AND bytes.
        n = max(1, round(len(sizes) * scale))
        sizes = [sizes[(i * len(sizes)) // n if scale < 1 else i % len(sizes)] for i in range(n)]
    total = 0
    block = rng.randbytes(MiB)
    for i, size in enumerate(sizes):
        depth = i % 4
        parts = [f"d{(i // 7) % 5}"] * 0 + [f"lvl{d}_{i % (d + 2)}" for d in range(depth)]
        path = root.joinpath(*parts, f"f{i:04d}.bin")
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "wb") as fh:
            left = size
            salt = i.to_bytes(4, "little")
            while left:
                n = min(left, MiB)
                fh.write(salt + block[4:n] if n > 4 else block[:n])
                left -= n
        total += size
    return len(sizes), total


def floor_copy_hash(src: Path, dst: Path) -> None:
    buf = bytearray(CHUNK)
    view = memoryview(buf)
    for dirpath, _dirs, files in os.walk(src):
        rel = os.path.relpath(dirpath, src)
        os.makedirs(dst / rel, exist_ok=True)
        for name in files:
            h = hashlib.sha256()
            with open(os.path.join(dirpath, name), "rb") as fin, open(dst / rel / name, "wb") as fout:
                while n := fin.readinto(buf):
                    h.update(view[:n])
                    fout.write(view[:n])
            h.hexdigest()


def cp_and_sha256sum(src: Path, dst: Path) -> None:
    subprocess.run(["cp", "-r", str(src), str(dst)], check=True)
    subprocess.run(f"find '{dst}' -type f -print0 | xargs -0 sha256sum >/dev/null", shell=True, check=True)


def run_capture(src: Path, store_root: Path, limits: CaptureLimits) -> None:
    store = ArtifactStore(store_root)
    p = capture_attempt_inputs(attempt_id="bench", run_id="bench", decision=AdmissionDecision(CaptureDecision.ADMITTED),
                               store=store, context_roots=[src], limits=limits)
    assert p.coverage.value == "complete", p.coverage


def capture_vs_floor(work: Path, runs: int, scale: float = 1.0) -> dict:
    src = work / f"src-{scale}"
    files, total = make_tree(src, scale)
    subprocess.run(f"cat $(find '{src}' -type f) > /dev/null", shell=True, check=True)
    limits = CaptureLimits(max_files=files + 1, max_total_bytes=total + 1, max_seconds=600)
    dst = work / "dst"

    def clean() -> None:
        shutil.rmtree(dst, ignore_errors=True)
        os.sync()

    floor = timed_runs(lambda: floor_copy_hash(src, dst), runs, setup=clean)
    cp = timed_runs(lambda: cp_and_sha256sum(src, dst), runs, setup=clean) if scale == 1.0 else []
    cap = timed_runs(lambda: run_capture(src, dst, limits), runs, setup=clean)
    clean()
    shutil.rmtree(src)
    return {"files": files, "bytes": total, "floor_ms": median_ms(floor), "floor_range": spread_ms(floor),
            "cp_sha256sum_ms": median_ms(cp) if cp else None, "capture_ms": median_ms(cap),
            "capture_range": spread_ms(cap), "ratio_vs_floor": median_ms(cap) / median_ms(floor),
            "ratio_vs_cp": (median_ms(cap) / median_ms(cp)) if cp else None}


_GC_LOOP = """
import sys, time
from otel_inputs.store import ArtifactStore, RetentionPolicy, apply_retention, store_usage
store = ArtifactStore(sys.argv[1]); total = store_usage(store).total_bytes
print("ready", flush=True)
k, passes, end = 1, 0, time.monotonic() + float(sys.argv[2])
while time.monotonic() < end:
    apply_retention(store, RetentionPolicy(budget_bytes=int(total * 0.98 ** k))); k += 1; passes += 1
print(passes, flush=True)
"""


def agent_thread_overhead(work: Path, iterations: int, *, during_gc: bool = False) -> dict:
    """Median time on the agent's thread of an observed attempt minus a bare span, attempts back to back.

    Back to back is the worst case: the store's background chores for one attempt (checkpoints,
    ended marks) compete with the next instead of overlapping a model call.  ``during_gc``: the
    store holds 20,000 ended snapshots and another process evicts 2 % of it per pass meanwhile.
    """
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

    work.mkdir(parents=True, exist_ok=True)

    class Noop(SpanExporter):
        def export(self, spans):
            return SpanExportResult.SUCCESS

    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(Noop(), max_export_batch_size=512))
    tracer = provider.get_tracer("bench")
    ctx = work / "small-ctx"
    ctx.mkdir()
    for i in range(3):
        (ctx / f"file{i}.md").write_bytes(random.Random(i).randbytes(4096))
    prompt = work / "task.md"
    prompt.write_text("Implement the thing.\n" * 20)
    request = resolve_request(str(prompt))
    root = work / ("gc-store" if during_gc else "small-store")
    if during_gc:
        from benchmarks.bench_gc import build_store

        build_store(root, 20_000)
    observer = AgentObserver(tracer_provider=provider, store=ArtifactStore(root),
                             policy=CapturePolicy(message_content=True), agent_name="bench")

    def bare() -> None:
        with tracer.start_as_current_span("invoke_agent bench"):
            pass

    def packet() -> None:
        with observer.attempt(run_id="bench", request=request, session_id=None, context_roots=[ctx],
                              system_message="sys", user_message=request.text):
            pass

    bare_s, packet_s = [], []
    for _ in range(20):
        bare(), packet()
    gc = None
    if during_gc:
        gc = subprocess.Popen([sys.executable, "-c", _GC_LOOP, str(root), "600"], stdout=subprocess.PIPE, text=True)
        assert gc.stdout.readline().strip() == "ready"
        time.sleep(0.5)
    for _ in range(iterations):
        t0 = time.perf_counter(); bare(); bare_s.append(time.perf_counter() - t0)
        t0 = time.perf_counter(); packet(); packet_s.append(time.perf_counter() - t0)
    if gc is not None:
        alive = gc.poll() is None  # the gc loop was still evicting when the last attempt ended
        gc.kill()
        gc.wait(10)
        assert alive, "the gc loop ended before the measurement did"
    provider.shutdown()
    observer.flush(30)  # background ended marks finish before the tree goes
    added = statistics.median(packet_s) - statistics.median(bare_s)
    ordered = sorted(packet_s)
    return {"bare_span_us": statistics.median(bare_s) * 1e6, "packet_attempt_us": statistics.median(packet_s) * 1e6,
            "added_ms": added * 1000, "p90_packet_ms": ordered[int(len(ordered) * 0.9)] * 1000,
            "p99_packet_ms": ordered[int(len(ordered) * 0.99)] * 1000, "max_packet_ms": ordered[-1] * 1000}


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--quick", action="store_true", help="fewer runs, no 10x-larger tree")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    runs = 3 if args.quick else args.runs
    with tempfile.TemporaryDirectory(prefix="bench-capture-", dir=os.environ.get("BENCH_TMP"),
                                     ignore_cleanup_errors=True) as tmp:
        work = Path(tmp)
        main_row = capture_vs_floor(work, runs)
        scaling = [capture_vs_floor(work, runs, 0.1)]
        if not args.quick:
            scaling.append(capture_vs_floor(work, max(3, runs // 2), 10.0))
        overhead = agent_thread_overhead(work, 300 if args.quick else 1000)
        busy = agent_thread_overhead(work / "gc", 300 if args.quick else 1000, during_gc=True)
    result = {"machine": machine_line(), "capture": main_row, "scaling": scaling, "agent_thread": overhead,
              "agent_thread_during_gc": busy, "peak_rss_mib": peak_rss_mib()}
    print(f"## capture ({result['machine']})")
    print(f"tree: {main_row['files']} files, {main_row['bytes'] / MiB:.0f} MiB")
    print(f"floor (read+hash+write loop): {main_row['floor_ms']:.1f} ms ({main_row['floor_range']})")
    print(f"cp -r + sha256sum:           {main_row['cp_sha256sum_ms']:.1f} ms")
    print(f"capture_attempt_inputs:      {main_row['capture_ms']:.1f} ms ({main_row['capture_range']})")
    print(f"ratio capture/floor: {main_row['ratio_vs_floor']:.2f}x (target <= 1.5x); "
          f"capture/(cp+sha256sum): {main_row['ratio_vs_cp']:.2f}x")
    for row in scaling:
        print(f"scaling: {row['files']} files / {row['bytes'] / MiB:.0f} MiB: capture {row['capture_ms']:.1f} ms, "
              f"floor {row['floor_ms']:.1f} ms, ratio {row['ratio_vs_floor']:.2f}x")
    print(f"agent thread: bare span {overhead['bare_span_us']:.0f} us, attempt with task + 3x4 KiB packet "
          f"{overhead['packet_attempt_us']:.0f} us; added {overhead['added_ms']:.2f} ms median (target <= 1.0 ms), "
          f"p90 {overhead['p90_packet_ms']:.2f} ms, p99 {overhead['p99_packet_ms']:.2f} ms")
    print(f"agent thread while another process evicts from the same store: added {busy['added_ms']:.2f} ms median, "
          f"p99 {busy['p99_packet_ms']:.2f} ms (target <= 5 ms), max {busy['max_packet_ms']:.1f} ms")
    print(f"peak RSS: {result['peak_rss_mib']:.0f} MiB")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
