"""``make bench``: run every benchmark, each against its same-run baseline, and print a summary.

    python -m benchmarks [--quick] [--only capture,gc,...]

Each benchmark module prints its own figures (absolute numbers, the ratio to its baseline, how the
cost grows with 10x less and 10x more work, peak RSS).  Benchmarks run one after another, never in
parallel, so they do not disturb each other.
"""

from __future__ import annotations

import argparse
import importlib
import subprocess
import sys
import time

from benchmarks._common import machine_line

BENCHMARKS = {
    "capture": "benchmarks.bench_capture",
    "parts": "benchmarks.bench_parts",
    "ingest": "benchmarks.bench_ingest",
    "gc": "benchmarks.bench_gc",
    "viewer": "benchmarks.bench_viewer",
    "browser": "benchmarks.bench_browser",  # needs Debian chromium
    "access": "benchmarks.bench_access",
    "projection": "benchmarks.bench_projection",
    "clickhouse": "benchmarks.bench_clickhouse_views",  # needs chdb (pip install 'otel-inputs[clickhouse]')
    "upload": "benchmarks.bench_upload",  # needs moto[server] and s3fs (the objects extra)
    "clickhouse-viewer": "benchmarks.bench_clickhouse_viewer",  # needs chdb too
    "coding-agents": "benchmarks.bench_coding_agents",
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="smaller sizes and fewer runs (minutes, not an hour)")
    ap.add_argument("--only", default="", help="comma-separated subset of: " + ", ".join(BENCHMARKS))
    args = ap.parse_args()
    chosen = [b for b in (args.only.split(",") if args.only else BENCHMARKS) if b]
    print(f"# otel-inputs benchmarks — {machine_line()}\n")
    failed = []
    for name in chosen:
        module = BENCHMARKS.get(name)
        if module is None or importlib.util.find_spec(module) is None:
            print(f"## {name}: not available\n")
            failed.append(name)
            continue
        started = time.perf_counter()
        # A fresh interpreter per benchmark: peak RSS and caches belong to that benchmark alone.
        cmd = [sys.executable, "-m", module] + (["--quick"] if args.quick else [])
        rc = subprocess.call(cmd)
        print(f"({name}: {time.perf_counter() - started:.0f} s, exit {rc})\n", flush=True)
        if rc:
            failed.append(name)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
