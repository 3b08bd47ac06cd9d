"""What access control adds to an attempt page: the policy, tombstones and revocations asked per refresh.

    python -m benchmarks.bench_access [--quick] [--runs N]

One 100-item attempt in a real DuckDB file and store; the store also holds T other attempts that
were each purged on their own (T tombstones: 0, 100 and 1,000, or 0 and 100 with ``--quick``)
and a revocation list of 100 sources, and an access policy file lists 100 viewers.  Measured,
median over ``--runs``:

* baseline — the page's data work without access control: ``load_attempt`` on an open
  read-only connection, ``overlay_store`` (the store's current status) and ``build_panel``;
* access — ``current_access`` (identity, policy file, revocation list) plus ``Access.gate`` (the
  purge state from the tombstones, every item checked against the revocations) on that bundle.

The figure is the access cost and its ratio to the baseline, at each tombstone count.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path

import duckdb

from benchmarks._common import machine_line, median_ms, spread_ms, timed_runs
from otel_inputs import names
from otel_inputs.exporter import migrate_file
from otel_inputs.store import ArtifactStore, AttemptRecord, CatalogItem, purge
from otel_inputs.viewer._access import current_access
from otel_inputs.viewer._evidence import open_evidence, overlay_store
from otel_inputs.viewer._panel import build_panel
from otel_inputs.viewer._queries import load_attempt, read_only

ITEMS = 100
T0 = 1_767_261_600_000_000_000


def _commit(store: ArtifactStore, attempt_id: str, run_id: str, n: int) -> list[dict]:
    staging = store.begin_attempt(attempt_id)
    items = []
    for seq in range(n):
        blob = staging.put_bytes(f"{attempt_id} item {seq}\n".encode())
        items.append({"input_id": f"{attempt_id}-in{seq}", "seq": seq, "label": f"file-{seq}.md",
                      "source_kind": "context_handoff", "delivery_mode": "path_reference",
                      "source_path": f"/work/{attempt_id}/file-{seq}.md", "snapshot_ref": blob.snapshot_ref,
                      "media_type": "text/markdown", "preview_kind": "text", "size_bytes": blob.size_bytes,
                      "sha256": blob.sha256, "capture_status": "captured", "artifact_status": "available",
                      "status_reason": None, "detail": None, "captured_at_ns": T0})
    staging.commit(AttemptRecord(attempt_id, run_id, coverage="complete", decision="admitted", committed_at_ns=T0,
                                 items=tuple(CatalogItem(attempt_id=attempt_id, **it) for it in items)))
    return items


def build(root: Path, tombstones: int) -> tuple[Path, Path]:
    db, store_path = root / "otel.duckdb", root / "store"
    store = ArtifactStore(store_path)
    items = _commit(store, "target", "run-1", ITEMS)
    for i in range(tombstones):
        _commit(store, f"other-{i}", "run-2", 1)
        purge(store, attempt_ids=[f"other-{i}"])
    (store_path / "revocations.json").write_text(json.dumps(
        {"sources": [{"path": f"/revoked/source-{i}", "reason": "bench", "revoked_at_ns": T0} for i in range(100)],
         "sha256": []}))
    migrate_file(db)
    con = duckdb.connect(str(db))
    try:
        con.execute("INSERT INTO agent_attempts (attempt_id, run_id, input_coverage, input_packet_version, "
                    "task_prompt, user_prompt, system_prompt, started_at, item_count) VALUES "
                    "('target', 'run-1', 'complete', 1, 'task', 'user', 'system', make_timestamp_ns(?), ?)",
                    [T0, ITEMS])
        for it in items:
            con.execute("INSERT INTO agent_attempt_inputs (input_id, attempt_id, seq, label, source_kind, "
                        "delivery_mode, source_path, media_type, preview_kind, size_bytes, sha256, capture_status, "
                        "artifact_status, attempt_started_at) VALUES (?, 'target', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
                        "make_timestamp_ns(?))",
                        [it["input_id"], it["seq"], it["label"], it["source_kind"], it["delivery_mode"],
                         it["source_path"], it["media_type"], it["preview_kind"], it["size_bytes"], it["sha256"],
                         "captured", "available", T0])
    finally:
        con.close()
    return db, store_path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--runs", type=int, default=30)
    args = ap.parse_args()
    counts = (0, 100) if args.quick else (0, 100, 1000)
    print(f"## access control on an attempt page ({ITEMS} items) — {machine_line()}")
    print("| tombstones in the store | baseline page data (ms, median) | access: current_access + gate (ms, median) "
          "| ratio | spread (ms) |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="bench-access-") as tmp:
        policy = Path(tmp) / "policy.json"
        policy.write_text(json.dumps({"default": "deny", "viewers": {
            **{f"user-{i}@example.com": {"runs": [f"run-{i}-*"]} for i in range(99)}, "bench": {"runs": ["*"]}}}))
        os.environ[names.ENV_ACCESS_POLICY] = str(policy)
        for tombstones in counts:
            db, store = build(Path(tmp) / f"t{tombstones}", tombstones)
            ev = open_evidence(store, "bench")
            with read_only(db) as con:
                def page() -> object:
                    bundle, _ = overlay_store(load_attempt(con, "target"), ev)  # type: ignore[arg-type]
                    return build_panel(bundle)

                base = timed_runs(page, args.runs)
                bundle, _ = overlay_store(load_attempt(con, "target"), ev)  # type: ignore[arg-type]
            access = timed_runs(lambda: current_access(store, "bench").gate(bundle), args.runs)
            gated = current_access(store, "bench").gate(bundle)
            assert len(gated.inputs) == ITEMS and not gated.withheld.anything  # nothing purged or revoked here
            print(f"| {tombstones} | {median_ms(base):.1f} | {median_ms(access):.2f} | "
                  f"{median_ms(access) / median_ms(base):.2f}x | {spread_ms(access)} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
