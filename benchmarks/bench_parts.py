"""Exchange-part enqueue cost on the agent thread vs encoding + hashing the same part.

    python -m benchmarks.bench_parts [--samples N] [--quick]

The part is a 4 KiB logical request (canonical JSON of a small chat).  Measured on the calling
thread, per call, in the same process and interleaved so machine noise hits both alike:

* baseline: ``json`` canonical encoding + SHA-256 of the same part (what any observer pays anyway);
* enqueue:  ``EvidenceQueue.submit`` of the already encoded part (hash, budget checks, hand-off);
* observe:  ``observe_part`` = admission check + encode + submit (what the recorder will call);
* refused:  ``submit`` when the pending budget is full (the capacity_exceeded path).

Target: enqueue median <= 50 us.  Submits go in batches of at most the pending-part budget with an
untimed ``flush`` between batches, so every timed submit takes the accepted path while the writer
thread (fsync per part) runs concurrently, as it would in an agent.
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import tempfile
import threading
import time
from pathlib import Path

from benchmarks._common import machine_line, peak_rss_mib
from otel_inputs._parts import (
    EvidenceQueue,
    PartLimits,
    PartName,
    PartPersistence,
    encode_logical_request,
    observe_part,
)
from otel_inputs._policy import AdmissionDecision
from otel_inputs.types import CaptureDecision

PART_BYTES = 4096
REQ = PartName.LOGICAL_REQUEST


def make_request_args() -> tuple[str, str, list[dict], list[dict], dict]:
    """Arguments whose canonical encoding is exactly 4 KiB."""
    tools = [{"name": "search", "description": "Search the corpus", "parameters": {"type": "object"}}]
    options = {"temperature": 0.2, "max_tokens": 1024}
    messages = [{"role": "system", "content": "You are a careful research assistant."},
                {"role": "user", "content": ""}]
    base = len(encode_logical_request("chat", "model-x", messages, tools, options))
    messages[1]["content"] = "q" * (PART_BYTES - base)
    assert len(encode_logical_request("chat", "model-x", messages, tools, options)) == PART_BYTES
    return "chat", "model-x", messages, tools, options


def time_refusals(root: str, data: bytes, limits: PartLimits, samples: int) -> list[int]:
    """Per-call time of a refused submit: the pending budget is held full by a writer that is parked."""
    gate = threading.Event()

    def parked_write(store, receipt, payload) -> None:
        gate.wait()

    q = EvidenceQueue(Path(root) / "refusals", limits, put_fn=parked_write)
    for i in range(limits.max_pending_parts):
        q.submit("fill", f"fill-{i}", REQ, data)
    out = []
    try:
        for i in range(samples):
            t0 = time.perf_counter_ns()
            r = q.submit(f"run-{i}", f"c-{i}", REQ, data)
            out.append(time.perf_counter_ns() - t0)
            if r.persistence is not PartPersistence.NOT_QUEUED:
                raise RuntimeError("expected a refusal with the pending budget full")
    finally:
        gate.set()
        q.flush(30)
    return out


def _us(samples_ns: list[int]) -> tuple[float, float]:
    qs = statistics.quantiles(samples_ns, n=10)
    return statistics.median(samples_ns) / 1000.0, qs[8] / 1000.0


def run(samples: int) -> dict:
    args = make_request_args()
    data = encode_logical_request(*args)
    admitted = AdmissionDecision(CaptureDecision.ADMITTED)
    limits = PartLimits()
    batch = limits.max_pending_parts
    base_ns: list[int] = []
    enq_ns: list[int] = []
    obs_ns: list[int] = []
    counter = time.perf_counter_ns
    with tempfile.TemporaryDirectory(prefix="bench-parts-") as root:
        q = EvidenceQueue(root, limits)
        q.submit("warm", "warm", REQ, data)  # starts the writer thread outside the timed loop
        q.flush(30)
        n = 0
        while n < samples:
            run_id = f"run-{n}"
            for i in range(batch // 2):
                t0 = counter()
                hashlib.sha256(encode_logical_request(*args)).hexdigest()
                t1 = counter()
                r = q.submit(run_id, f"a-{n}-{i}", REQ, data, "dispatched")
                t2 = counter()
                o = observe_part(q, admitted, run_id=run_id, attempt_id=f"b-{n}-{i}", part=REQ,
                                 encode=lambda: encode_logical_request(*args), dispatch="dispatched")
                t3 = counter()
                if r.persistence is not PartPersistence.QUEUED or o.persistence is not PartPersistence.QUEUED:
                    raise RuntimeError(f"unexpected refusal: {r.reason} / {o.reason}")
                base_ns.append(t1 - t0)
                enq_ns.append(t2 - t1)
                obs_ns.append(t3 - t2)
            if not q.flush(30):
                raise RuntimeError("writer did not drain within 30 s")
            q.forget_run(run_id)
            n += batch // 2
        stats = q.stats()
        ref_ns = time_refusals(root, data, limits, max(100, samples // 10))
    base_med, base_p90 = _us(base_ns)
    enq_med, enq_p90 = _us(enq_ns)
    obs_med, obs_p90 = _us(obs_ns)
    ref_med = statistics.median(ref_ns) / 1000.0
    return {
        "machine": machine_line(),
        "samples": len(enq_ns),
        "baseline_us": base_med, "baseline_p90_us": base_p90,
        "enqueue_us": enq_med, "enqueue_p90_us": enq_p90,
        "observe_us": obs_med, "observe_p90_us": obs_p90,
        "refused_us": ref_med,
        "ratio_enqueue_vs_baseline": enq_med / base_med,
        "stored": stats["stored"], "failed": stats["failed"],
        "peak_rss_mib": peak_rss_mib(),
    }


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=int, default=4000, help="timed submits per measurement")
    ap.add_argument("--quick", action="store_true", help="400 samples")
    a = ap.parse_args(argv)
    r = run(400 if a.quick else a.samples)
    print(f"## exchange parts ({r['machine']})")
    print(f"part: {PART_BYTES} B logical request, {r['samples']} samples each, medians (p90)")
    print(f"baseline json encode + sha256: {r['baseline_us']:.1f} us ({r['baseline_p90_us']:.1f})")
    print(f"submit (enqueue):              {r['enqueue_us']:.1f} us ({r['enqueue_p90_us']:.1f})  target <= 50 us")
    print(f"observe_part (encode+submit):  {r['observe_us']:.1f} us ({r['observe_p90_us']:.1f})")
    print(f"refused submit (pending full): {r['refused_us']:.1f} us")
    print(f"ratio enqueue/baseline: {r['ratio_enqueue_vs_baseline']:.2f}x")
    print(f"writer: {r['stored']} stored, {r['failed']} failed; peak RSS {r['peak_rss_mib']:.0f} MiB")
    return r


if __name__ == "__main__":
    main()
