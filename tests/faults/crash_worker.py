"""Child process of the crash campaign: does real store / DuckDB work in a loop until it is killed.

    python crash_worker.py SCENARIO WORKDIR SEED

It prints ``ready`` on stdout once set-up is done, then loops forever; the parent kills it with
SIGKILL after a random delay.  After each operation that the product reports as done, one line is
appended (and flushed) to ``WORKDIR/progress.log``, so the parent knows what was promised durable:

* ``capture``  -- ``C <attempt_id>`` after ``capture_attempt_inputs`` committed the attempt to the catalog;
* ``commit``   -- ``C <attempt_id>`` after an ``AgentObserver`` attempt with held bytes ended;
* ``duckdb``   -- ``W <span_id hex>...`` after ``DuckDBSpanExporter.export`` returned SUCCESS,
  ``S <span_id hex>...`` after it reported the batch spilled to the (durable) spool;
* ``evict``    -- ``C <attempt_id>`` for new captures, ``G`` after each ``apply_retention`` pass;
* ``purge``    -- ``P <attempt_id>`` after ``purge``/``delete_run`` of that attempt returned;

Not a test module: the campaign in ``test_crash_campaign.py`` drives it.
"""

from __future__ import annotations

import json
import os
import random
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from otel_inputs import (
    AdmissionDecision,
    ArtifactStore,
    ProviderAttachment,
    RetentionPolicy,
    capture_attempt_inputs,
    inline_request,
)
from otel_inputs.store import apply_retention, delete_run, purge
from otel_inputs.types import CaptureDecision


class Progress:
    def __init__(self, workdir: Path) -> None:
        self._fh = open(workdir / "progress.log", "a", buffering=1, encoding="utf-8")

    def note(self, line: str) -> None:
        self._fh.write(line + "\n")
        self._fh.flush()  # in the kernel's page cache: survives SIGKILL of this process


def make_tree(root: Path, rng: random.Random, files: int = 24) -> None:
    """A real context tree: nested dirs, text files, a few shared and a few unique contents."""
    root.mkdir(parents=True, exist_ok=True)
    for i in range(files):
        sub = root / f"d{i % 4}" / (f"e{i % 3}" if i % 2 else "")
        sub.mkdir(parents=True, exist_ok=True)
        size = rng.choice((64, 512, 4096, 32768))
        body = (f"file {i} seed {rng.random()}\n" * (size // 24 + 1)).encode()[:size]
        (sub / f"f{i:02d}.txt").write_bytes(body)


def mutate_tree(root: Path, rng: random.Random) -> None:
    """Change a few files so every attempt also stores new bytes (not only deduplicated ones)."""
    files = sorted(p for p in root.rglob("*.txt"))
    for p in rng.sample(files, k=min(3, len(files))):
        p.write_bytes(p.read_bytes()[: rng.randint(1, 200)] + os.urandom(16).hex().encode())


ADMIT = AdmissionDecision(CaptureDecision.ADMITTED)


def scenario_capture(workdir: Path, rng: random.Random, progress: Progress) -> None:
    store = ArtifactStore(workdir / "store")
    tree = workdir / "tree"
    make_tree(tree, rng)
    print("ready", flush=True)
    n = 0
    while True:
        n += 1
        attempt_id = f"cap-{os.getpid()}-{n}"
        mutate_tree(tree, rng)
        packet = capture_attempt_inputs(
            attempt_id=attempt_id, run_id="run-capture", decision=ADMIT, store=store,
            request=inline_request(f"task {n}"), previous_envelope={"n": n, "r": rng.random()},
            context_roots=[tree],
            attachments=[ProviderAttachment(f"att-{n}.bin", os.urandom(rng.choice((10, 3000, 70000))))],
        )
        if packet.gap_reason is None:
            progress.note(f"C {attempt_id}")


def scenario_commit(workdir: Path, rng: random.Random, progress: Progress) -> None:
    """Many small attempts through the public observer: commit + background terminal marking."""
    from opentelemetry.sdk.trace import TracerProvider

    from otel_inputs import AgentObserver, CapturePolicy

    store = ArtifactStore(workdir / "store")
    provider = TracerProvider()
    obs = AgentObserver(tracer_provider=provider, store=store, policy=CapturePolicy(message_content=True),
                        agent_name="crash")
    print("ready", flush=True)
    n = 0
    shared = b"shared bytes of every attempt\n" * 40
    while True:
        n += 1
        attempt_id = f"com-{os.getpid()}-{n}"
        atts = [ProviderAttachment("shared.txt", shared),
                ProviderAttachment(f"own-{n}.txt", f"attempt {n} {rng.random()}\n".encode() * rng.randint(1, 50))]
        with obs.attempt(run_id="run-commit", request=inline_request(f"task {n}"), attempt_id=attempt_id,
                         session_id="s1", previous_envelope={"n": n}, attachments=atts,
                         system_message="sys", user_message=f"user {n}") as rec:
            ok = rec.packet is not None and rec.packet.gap_reason is None
        if ok:
            progress.note(f"C {attempt_id}")


def scenario_duckdb(workdir: Path, rng: random.Random, progress: Progress) -> None:
    """Real attempt spans exported in batches; a thread holds the DuckDB sidecar lock now and then
    so that some batches spill to the spool (lock_timeout_s is tiny)."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from otel_inputs.exporter import DuckDBSpanExporter
    from otel_inputs.exporter._db import file_lock
    from otel_inputs import AgentObserver, CapturePolicy

    db = workdir / "spans.duckdb"
    exporter = DuckDBSpanExporter(db, store=workdir / "store", lock_timeout_s=0.05)
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    obs = AgentObserver(tracer_provider=provider, store=ArtifactStore(workdir / "store"),
                        policy=CapturePolicy(message_content=True), agent_name="crash-db")
    tree = workdir / "tree"
    make_tree(tree, rng, files=6)

    def pest() -> None:
        prng = random.Random(rng.random())
        while True:
            time.sleep(prng.uniform(0.05, 0.3))
            try:
                with file_lock(db, exclusive=True, timeout_s=1.0):
                    time.sleep(prng.uniform(0.05, 0.15))
            except Exception:  # noqa: BLE001
                pass

    n = 0
    warm = True  # the first batch creates and migrates the file before the kill window opens
    while True:
        for _ in range(rng.randint(1, 12)):
            n += 1
            with obs.attempt(run_id="run-db", request=inline_request(f"task {n}"), attempt_id=f"db-{os.getpid()}-{n}",
                             session_id=f"s{n // 5}", context_roots=[tree], user_message=f"u{n}"):
                pass
        batch = memory.get_finished_spans()
        memory.clear()
        ids = " ".join(format(s.context.span_id, "016x") for s in batch)
        before_spilled = exporter.writer.counters["spans_spilled"]
        result = exporter.export(batch)
        if result is SpanExportResult.SUCCESS:
            progress.note(f"W {ids}")
        elif exporter.writer.counters["spans_spilled"] >= before_spilled + len(batch):
            progress.note(f"S {ids}")
        if warm:
            warm = False
            threading.Thread(target=pest, daemon=True).start()
            print("ready", flush=True)


def scenario_evict(workdir: Path, rng: random.Random, progress: Progress) -> None:
    """Retention with a tiny budget over a pre-populated store, interleaved with new captures."""
    store = ArtifactStore(workdir / "store")
    tree = workdir / "tree"
    policy = RetentionPolicy(budget_bytes=rng.choice((1, 20_000, 120_000)), run_budget_bytes=rng.choice((None, 50_000)))
    print("ready", flush=True)
    n = 0
    while True:
        n += 1
        attempt_id = f"ev-{os.getpid()}-{n}"
        mutate_tree(tree, rng)
        capture_attempt_inputs(attempt_id=attempt_id, run_id=f"run-{n % 3}", decision=ADMIT, store=store,
                               context_roots=[tree])
        store.mark_terminal(attempt_id)
        progress.note(f"C {attempt_id}")
        # now in the future: objects count as old enough to delete, so bytes really go.
        apply_retention(store, policy, now=time.time() + 60)
        progress.note("G")


def scenario_purge(workdir: Path, rng: random.Random, progress: Progress) -> None:
    """Purge attempts, a run, or a source path of a pre-populated store, one after another."""
    store = ArtifactStore(workdir / "store")
    plan = json.loads((workdir / "plan.json").read_text())
    print("ready", flush=True)
    for step in plan:
        if step["kind"] == "attempt":
            purge(store, attempt_ids=[step["attempt"]])
            progress.note(f"P {step['attempt']}")
        elif step["kind"] == "run":
            delete_run(store, step["run"])
            for a in step["attempts"]:
                progress.note(f"P {a}")
        else:
            purge(store, source_path=step["source"])
            progress.note(f"Q {step['source']}")
    progress.note("DONE")
    while True:
        time.sleep(1)


SCENARIOS = {
    "capture": scenario_capture,
    "commit": scenario_commit,
    "duckdb": scenario_duckdb,
    "evict": scenario_evict,
    "purge": scenario_purge,
}


def main() -> None:
    scenario, workdir, seed = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
    rng = random.Random(seed)
    SCENARIOS[scenario](workdir, rng, Progress(workdir))


if __name__ == "__main__":
    main()
