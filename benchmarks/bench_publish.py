"""Publishing the catalog for fleet viewers: snapshot size and publish time, vs a plain s3fs put of a
file of the same size; and what a fleet viewer pays to fetch and open that snapshot.

    nice -n 10 python -m benchmarks.bench_publish [--attempts N] [--runs R]

Needs moto[server] and s3fs.  Builds a catalog of N attempts (three items each, with labels, source
paths and digests as capture writes them; every object recorded uploaded), then, median of R runs:

* publish: ``publish_catalog`` (``sqlite3`` backup into a temp file, the publish stamp, one PUT, the
  size check), against ``s3fs.put_file`` of an unrelated file of the snapshot's size (the floor);
* fetch: ``FleetCatalogs.open`` of a changed snapshot (info, download, quick_check, open read-only),
  against ``s3fs.get_file`` of the same object.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

from benchmarks._common import machine_line, peak_rss_mib
from benchmarks.bench_upload import options, start_server, stop_server
from otel_inputs.store import ArtifactStore
from otel_inputs.store._catalog import Role
from otel_inputs.store.bucket import CATALOG_KEY, FleetCatalogs, RemoteObjects
from otel_inputs.store.bucket._publish import publish_catalog

MiB = 1024 * 1024


def build_catalog(root: Path, n: int) -> ArtifactStore:
    store = ArtifactStore(root)
    t0 = time.time_ns() - n * 1000
    with store.catalog.write(Role.MAINT) as con:
        for k in range(0, n, 5000):
            attempts, items, remote = [], [], []
            for i in range(k, min(n, k + 5000)):
                aid = f"{hashlib.sha256(str(i).encode()).hexdigest()[:32]}"
                attempts.append((aid, f"run-{i // 50}", f"session-{i // 10}", "ended", 4242, "host-a", "complete",
                                 "admitted", 3, 3, 0, t0 + i * 1000, t0 + i * 1000 + 500, i))
                for j in range(3):
                    digest = hashlib.sha256(f"{i}/{j}".encode()).hexdigest()
                    path = f"/home/agent/work/repo-{i % 97}/docs/handoff/notes-{j}.md"
                    items.append((aid, f"in-{j}", j, f"handoff/notes-{j}.md", "context_handoff", "path_reference",
                                  path, f"sha256:{digest}", "text/markdown", "text", 4000 + j, digest, "captured",
                                  "available", t0 + i * 1000))
                    remote.append((digest, "uploaded", t0))
            con.executemany("INSERT INTO attempts (attempt_id, run_id, session_id, state, owner_pid, owner_host, "
                            "coverage, decision, declared_count, captured_count, omitted_count, committed_at_ns, "
                            "ended_at_ns, changed_seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", attempts)
            con.executemany("INSERT INTO items (attempt_id, input_id, seq, label, source_kind, delivery_mode, "
                            "source_path, snapshot_ref, media_type, preview_kind, size_bytes, sha256, capture_status, "
                            "artifact_status, captured_at_ns) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                            items)
            con.executemany("INSERT OR IGNORE INTO objects VALUES (?, 4096)", [(d,) for d, _, _ in remote])
            con.executemany("INSERT INTO remote_objects (sha256, state, updated_at_ns) VALUES (?, ?, ?)", remote)
    return store


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser()
    ap.add_argument("--attempts", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args(argv)
    import s3fs

    proc, endpoint = start_server()
    try:
        with tempfile.TemporaryDirectory(prefix="bench-publish-") as tmp:
            work = Path(tmp)
            fs = s3fs.S3FileSystem(**options(endpoint))
            fs.mkdir("bench")
            store = build_catalog(work / "store", args.attempts)
            url = "s3://bench/otel-inputs/host-a"
            remote = RemoteObjects(url, options(endpoint))
            catalogs = FleetCatalogs(["s3://bench/otel-inputs"], work / "cache", options(endpoint))
            publish, plain, fetch, plain_get = [], [], [], []
            for _ in range(args.runs):
                started = time.perf_counter()
                publish_catalog(store, remote)
                publish.append(time.perf_counter() - started)
                size = fs.info(f"bench/otel-inputs/host-a/{CATALOG_KEY}")["size"]
                other = work / "same-size.bin"
                other.write_bytes(os.urandom(size))
                started = time.perf_counter()
                fs.put_file(str(other), "bench/plain/same-size.bin")
                plain.append(time.perf_counter() - started)
                started = time.perf_counter()
                catalogs.open(url)  # the snapshot changed (a new stamp): downloaded, checked, opened
                fetch.append(time.perf_counter() - started)
                started = time.perf_counter()
                fs.get_file(f"bench/otel-inputs/host-a/{CATALOG_KEY}", str(work / "plain-get.bin"))
                plain_get.append(time.perf_counter() - started)
            catalog_bytes = os.path.getsize(store.catalog.path) + (
                os.path.getsize(store.catalog.path + "-wal") if os.path.exists(store.catalog.path + "-wal") else 0)
    finally:
        stop_server(proc)
    out = {
        "attempts": args.attempts, "items": args.attempts * 3, "snapshot_bytes": size,
        "catalog_bytes_on_host": catalog_bytes,
        "publish_s": statistics.median(publish), "plain_put_s": statistics.median(plain),
        "fetch_open_s": statistics.median(fetch), "plain_get_s": statistics.median(plain_get),
        "fetches": catalogs.fetches, "peak_rss_mib": peak_rss_mib(),
    }
    out["publish_vs_plain"] = out["publish_s"] / out["plain_put_s"]
    out["fetch_vs_plain"] = out["fetch_open_s"] / out["plain_get_s"]
    print(machine_line())
    print(f"catalog of {args.attempts:,} attempts ({out['items']:,} items): snapshot {size / MiB:.1f} MiB; "
          f"median of {args.runs}: publish {out['publish_s'] * 1000:.0f} ms vs plain s3fs put of the same size "
          f"{out['plain_put_s'] * 1000:.0f} ms ({out['publish_vs_plain']:.2f}x); fleet viewer fetch + check + open "
          f"{out['fetch_open_s'] * 1000:.0f} ms vs plain get {out['plain_get_s'] * 1000:.0f} ms "
          f"({out['fetch_vs_plain']:.2f}x)")
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
