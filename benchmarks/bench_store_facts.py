"""Store facts past one machine (docs/fleet.md): what they cost in ClickHouse per input item, against the
whole-catalog copy they replace, and how long a revocation takes to reach a fleet viewer.

    python -m benchmarks.bench_store_facts [--attempts N] [--latency-runs R]

* Volume: a real store records N attempts of 3 input items each (new bytes every time, uploaded to a
  ``file://`` bucket), then retention evicts about half; every fact it emitted goes into the stock
  ``otel_logs`` table in chdb as the Collector's exporter writes it, and ``clickhouse/store_state.sql``
  folds them.  Bytes on disk of the facts' ``otel_logs`` rows and of the fold, per input item, after
  ClickHouse merged the parts (``OPTIMIZE ... FINAL``), against the same run's baseline: the size of
  a consistent copy of that store's catalog (``sqlite3`` backup), which is what each host used to
  publish for fleet viewers, per item.  Target: facts ≤ 1/10 of the copy.
* Revocation to refusal: a host's facts go through the SDK's ``BatchLogRecordProcessor`` (its
  default one-second schedule), OTLP/HTTP, ``rotel-agent``'s ClickHouse exporter (200 ms batches) and
  chdb over HTTP; the time from ``revoke_source`` returning to the fleet viewer's reader refusing the
  item (polled every 20 ms), median of R revocations.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "fleet"))

from benchmarks._common import machine_line  # noqa: E402


def _apply(sess: Any, database: str) -> None:
    sess.query(f"CREATE DATABASE {database}")
    for name in ("otel_tables.sql", "store_state.sql"):
        for chunk in (ROOT / "clickhouse" / name).read_text().split(";\n"):
            body = "\n".join(x for x in chunk.splitlines() if not x.strip().startswith("--")).strip()
            if body:
                sess.query(f"USE {database}")
                sess.query(body)


def _host(root: Path, logger: Any) -> Any:
    from otel_inputs.store import ArtifactStore
    from otel_inputs.store.facts import attach_facts

    store = ArtifactStore(root / "store", objects_url=(root / "bucket").as_uri())
    attach_facts(store, logger, bootstrap=False)
    return store


def _capture(store: Any, tree: Path, attempt_id: str, files: dict[str, bytes]) -> None:
    from otel_inputs._capture import capture_attempt_inputs
    from otel_inputs._policy import AdmissionDecision
    from otel_inputs.types import CaptureDecision

    folder = tree / attempt_id
    folder.mkdir(parents=True)
    for name, data in files.items():
        (folder / name).write_bytes(data)
    capture_attempt_inputs(attempt_id=attempt_id, run_id=f"run-{int(attempt_id.split('-')[1]) // 100}",
                           decision=AdmissionDecision(CaptureDecision.ADMITTED), store=store, context_roots=[folder])
    store.mark_terminal(attempt_id)


def volume(n: int, work: Path) -> dict[str, Any]:
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
    from opentelemetry.sdk.resources import Resource

    from otel_inputs.exporter import DuckDBLogExporter
    from otel_inputs.store import RetentionPolicy, apply_retention, store_usage
    from otel_inputs.store.bucket import attach
    from otel_inputs.viewer._backend import chdb_session, close_chdb_sessions

    sent = InMemoryLogRecordExporter()
    provider = LoggerProvider(resource=Resource.create({"service.name": "agent", "host.name": "host-a"}))
    provider.add_log_record_processor(SimpleLogRecordProcessor(sent))
    store = _host(work, provider.get_logger("otel_inputs.store"))
    for k in range(n):
        _capture(store, work / "tree", f"at-{k}", {f"f{j}.txt": f"{k}-{j} ".encode() * 40 for j in range(3)})
    assert attach(store).flush(600)
    apply_retention(store, RetentionPolicy(budget_bytes=store_usage(store).total_bytes // 2))
    records = list(sent.get_finished_logs())
    items = sum(len(r.items) for r in store.attempts())
    copy = work / "copy.sqlite"
    src, dst = sqlite3.connect(store.catalog.path), sqlite3.connect(copy)
    src.backup(dst)
    dst.execute("PRAGMA journal_mode=DELETE")
    src.close()
    dst.close()
    db = work / "facts.duckdb"
    exporter = DuckDBLogExporter(db)
    assert exporter.export(records).name == "SUCCESS"
    exporter.shutdown()
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    con.execute(f"COPY otel_logs TO '{work}/otel_logs.parquet' (FORMAT parquet)")
    con.close()
    sess = chdb_session(work / "chdb")
    _apply(sess, "facts")
    sess.query(f"INSERT INTO facts.otel_logs SELECT * FROM file('{work}/otel_logs.parquet', Parquet)")
    for table in ("otel_logs", "otel_inputs_store_state", "otel_inputs_store_hosts"):
        sess.query(f"OPTIMIZE TABLE facts.{table} FINAL")
    sizes = dict((t, int(b)) for t, b in (line.split("\t") for line in sess.query(
        "SELECT table, sum(bytes_on_disk) FROM system.parts WHERE database = 'facts' AND active GROUP BY table",
        "TSV").bytes().decode().strip().splitlines()))
    close_chdb_sessions()
    facts = sizes.get("otel_logs", 0) + sizes.get("otel_inputs_store_state", 0) + sizes.get("otel_inputs_store_hosts", 0)
    return {"attempts": n, "items": items, "facts": len(records), "copy_bytes": copy.stat().st_size,
            "logs_bytes": sizes.get("otel_logs", 0), "state_bytes": sizes.get("otel_inputs_store_state", 0),
            "facts_bytes": facts, "copy_per_item": copy.stat().st_size / items, "facts_per_item": facts / items}


def latency(runs: int, work: Path) -> dict[str, Any]:
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
    from opentelemetry.sdk.resources import Resource
    from rotel_pipe import rotel_agent, rotel_into_chdb

    from otel_inputs.store import revoke_source
    from otel_inputs.store.bucket import attach
    from otel_inputs.viewer._backend import ChdbBackend, chdb_session, close_chdb_sessions
    from otel_inputs.viewer._fleet import StoreRef, host_decisions, load_host_facts

    if rotel_agent() is None:
        return {"skipped": "rotel is not installed (pip install rotel)"}
    path = work / "chdb-latency"
    _apply(chdb_session(path), "fleet")
    db = ChdbBackend(str(path), "fleet")
    took: list[float] = []
    with rotel_into_chdb(path, "fleet", work / "rotel.log") as endpoint:
        provider = LoggerProvider(resource=Resource.create({"service.name": "agent", "host.name": "host-a"}))
        provider.add_log_record_processor(BatchLogRecordProcessor(OTLPLogExporter(endpoint=endpoint)))
        store = _host(work / "lat", provider.get_logger("otel_inputs.store"))
        ref = StoreRef("host-a", store.catalog.store_id(), (work / "lat" / "bucket").as_uri())
        for k in range(runs):
            attempt_id = f"at-{k}"
            _capture(store, work / "lat" / "tree", attempt_id, {"secret.txt": f"secret {k}".encode()})
            assert attach(store).flush(60)
            (input_id,) = [i.input_id for i in store.attempt(attempt_id).items]

            def outcome() -> str:
                ev, _ = host_decisions(load_host_facts(db, ref, [attempt_id]), (ref.location,), "viewer")
                return ev.reader.read("viewer", attempt_id, input_id).outcome.value

            while outcome() != "ok":  # the capture and its upload have arrived
                time.sleep(0.05)
            revoke_source(store, work / "lat" / "tree" / attempt_id / "secret.txt")
            t0 = time.perf_counter()
            while outcome() != "source_unavailable":
                time.sleep(0.02)
            took.append(time.perf_counter() - t0)
        provider.shutdown()
    close_chdb_sessions()
    return {"runs": runs, "median_s": statistics.median(took), "max_s": max(took), "min_s": min(took)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--attempts", type=int, default=5_000)
    ap.add_argument("--latency-runs", type=int, default=5)
    args = ap.parse_args()
    print(machine_line())
    with tempfile.TemporaryDirectory(prefix="otel-inputs-bench-facts-") as tmp:
        v = volume(args.attempts, Path(tmp) / "volume")
        print(f"volume: {v['attempts']:,} attempts, {v['items']:,} input items, {v['facts']:,} facts; the catalog copy "
              f"{v['copy_bytes'] / 2**20:.1f} MiB = {v['copy_per_item']:.0f} B/item; facts in ClickHouse "
              f"{v['facts_bytes'] / 2**20:.2f} MiB (otel_logs {v['logs_bytes'] / 2**20:.2f}, fold "
              f"{v['state_bytes'] / 2**20:.2f}) = {v['facts_per_item']:.0f} B/item: "
              f"{v['facts_per_item'] / v['copy_per_item']:.3f} of the copy (target <= 0.1)")
        lat = latency(args.latency_runs, Path(tmp))
        if "skipped" in lat:
            print(f"revocation to refusal: skipped, {lat['skipped']}")
        else:
            print(f"revocation to refusal through SDK batch -> OTLP/HTTP -> rotel -> ClickHouse: median "
                  f"{lat['median_s']:.2f} s (min {lat['min_s']:.2f}, max {lat['max_s']:.2f}) over {lat['runs']} runs")
        print(json.dumps({"volume": v, "latency": lat}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
