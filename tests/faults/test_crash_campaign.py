"""Crash campaign: SIGKILL real child processes at random points of capture, catalog commit,
DuckDB batch writes, eviction and purge, then restart reconciliation and check the invariants.

Every trial is reproducible from its seed (printed in every assertion message):
``OTEL_INPUTS_CRASH_SEED=<seed> pytest tests/faults -k <scenario>``.  The short campaign (20
trials) runs in the normal suite; the full one (``OTEL_INPUTS_CRASH_TRIALS``, default 200) is
``@pytest.mark.slow``.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from otel_inputs import AdmissionDecision, ArtifactStore, capture_attempt_inputs
from otel_inputs.store import EvidenceReader, ReadbackError, reconcile_store
from otel_inputs.types import CaptureDecision

ROOT = Path(__file__).resolve().parents[2]
WORKER = Path(__file__).resolve().parent / "crash_worker.py"
SCENARIOS = ("capture", "commit", "duckdb", "evict", "purge")
# Upper bound of the random delay (after the child said "ready") before SIGKILL, per scenario.
MAX_DELAY_S = {"capture": 0.8, "commit": 0.8, "duckdb": 1.5, "evict": 0.8, "purge": 0.4}
BASE_SEED = int(os.environ.get("OTEL_INPUTS_CRASH_SEED") or random.SystemRandom().randrange(1 << 30))
ADMIT = AdmissionDecision(CaptureDecision.ADMITTED)


@dataclass
class TrialResult:
    scenario: str
    seed: int
    killed_after_s: float
    progress: list[str]
    facts: Counter = field(default_factory=Counter)


# ------------------------------------------------------------------------------------------
# running one trial
# ------------------------------------------------------------------------------------------
def _prepare(scenario: str, workdir: Path, rng: random.Random) -> dict:
    """Parent-side set-up for eviction and purge: a populated store (and a purge plan)."""
    sys.path.insert(0, str(WORKER.parent))
    import crash_worker

    state: dict = {}
    if scenario not in ("evict", "purge"):
        return state
    store = ArtifactStore(workdir / "store")
    tree = workdir / "tree"
    crash_worker.make_tree(tree, rng, files=10)
    attempts: dict[str, dict] = {}
    for n in range(10 if scenario == "purge" else 6):
        attempt_id = f"pre-{n}"
        run = f"run-{n % 3}"
        if n:
            crash_worker.mutate_tree(tree, rng)
        capture_attempt_inputs(attempt_id=attempt_id, run_id=run, decision=ADMIT, store=store,
                               context_roots=[tree])
        store.mark_terminal(attempt_id)
        body = store.attempt(attempt_id)
        attempts[attempt_id] = {"run": run, "items": {i.input_id: i for i in body.items}}
    # Make the pre-populated objects old, as on a real store (retention spares fresh objects).
    old = time.time() - 3600
    for p in store.objects_dir.iterdir():
        os.utime(p, (old, old))
    state["attempts"] = attempts
    if scenario == "purge":
        ids = sorted(attempts)
        rng.shuffle(ids)
        plan: list[dict] = []
        plan.append({"kind": "attempt", "attempt": ids[0]})
        plan.append({"kind": "source", "source": str(tree / "d1")})
        plan.append({"kind": "attempt", "attempt": ids[1]})
        victim_run = attempts[ids[2]]["run"]
        plan.append({"kind": "run", "run": victim_run,
                     "attempts": sorted(a for a, v in attempts.items() if v["run"] == victim_run)})
        plan.append({"kind": "attempt", "attempt": ids[3]})
        rng.shuffle(plan)
        (workdir / "plan.json").write_text(json.dumps(plan))
        state["plan"] = plan
    return state


def _wait_for_progress(proc: subprocess.Popen[bytes], workdir: Path, ctx: str) -> None:
    """Wait until the worker has reported a completed operation (however loaded the machine is)."""
    log = workdir / "progress.log"
    deadline = time.monotonic() + 170  # within the test's timeout; only a worker that never progresses hits it
    while not (log.exists() and log.read_text().strip()):
        assert proc.poll() is None, f"{ctx} worker died before its first operation: " + (
            (workdir / "worker.err").read_text(errors="replace")[-2000:])
        assert time.monotonic() < deadline, f"{ctx} worker completed no operation at all"
        time.sleep(0.01)


def run_trial(scenario: str, seed: int, workdir: Path, *, after_first_operation: bool = False) -> TrialResult:
    """Start the worker, SIGKILL it after a random delay, reconcile, and check every invariant.

    The delay counts from the worker's "ready", so a kill can land inside its first operation (the
    old-layout import, say); with ``after_first_operation`` it counts from the first operation the
    worker reported complete instead, so the trial kills in the middle of real work however slowly
    a loaded machine runs the worker."""
    rng = random.Random(seed)
    workdir.mkdir(parents=True)
    state = _prepare(scenario, workdir, rng)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, str(WORKER), scenario, str(workdir), str(seed)], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=open(workdir / "worker.err", "wb"))
    try:
        line = proc.stdout.readline()  # type: ignore[union-attr]
        assert line.strip() == b"ready", f"[{scenario} seed={seed}] worker failed: " + (
            (workdir / "worker.err").read_text(errors="replace")[-2000:])
        delay = rng.uniform(0.02, MAX_DELAY_S[scenario])
        if after_first_operation:
            _wait_for_progress(proc, workdir, f"[{scenario} seed={seed}]")
        time.sleep(delay)
        assert proc.poll() is None, f"[{scenario} seed={seed}] worker died by itself: " + (
            (workdir / "worker.err").read_text(errors="replace")[-2000:])
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        proc.stdout.close()  # type: ignore[union-attr]
    progress = (workdir / "progress.log").read_text().splitlines() if (workdir / "progress.log").exists() else []
    result = TrialResult(scenario, seed, delay, progress)
    CHECKS[scenario](workdir, result, state)
    return result


# ------------------------------------------------------------------------------------------
# invariants
# ------------------------------------------------------------------------------------------
def _ctx(r: TrialResult) -> str:
    return f"[{r.scenario} seed={r.seed} killed after {r.killed_after_s:.3f}s, {len(r.progress)} progress lines]"


def _reconcile_and_check_store(workdir: Path, r: TrialResult) -> ArtifactStore:
    """Restart reconciliation, then: the catalog is intact, every available item re-hashes to its
    recorded digest, and no staging or unreferenced object remains."""
    store = ArtifactStore(workdir / "store")
    reconcile_store(store, min_age_s=0)
    ctx = _ctx(r)
    leftovers = sorted(os.listdir(store.staging_dir))
    assert leftovers == [], f"{ctx} orphan staging survived reconciliation: {leftovers}"
    referenced: set[str] = set()
    with store.catalog.read() as con:
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok", f"{ctx} catalog damaged"
    for body in store.attempts():
        for item in body.items:
            if item.artifact_status != "available":
                continue
            digest = item.sha256
            referenced.add(digest)
            path = store.object_path(digest)
            assert path.is_file(), f"{ctx} catalog record of {body.attempt_id} claims missing bytes {digest}"
            data = path.read_bytes()
            assert hashlib.sha256(data).hexdigest() == digest, f"{ctx} object {digest} holds wrong bytes"
            assert len(data) == item.size_bytes, f"{ctx} object {digest} has the wrong size"
            snap = store.read_input(body.attempt_id, item.input_id)
            assert snap.sha256 == digest
            r.facts["available_items_verified"] += 1
    objects = {p.name for p in store.objects_dir.iterdir()}
    assert objects <= referenced, f"{ctx} unreferenced objects survived reconcile(min_age_s=0): {sorted(objects - referenced)[:5]}"
    return store


def _committed(r: TrialResult, tag: str = "C") -> list[str]:
    return [line.split(" ", 1)[1] for line in r.progress if line.startswith(tag + " ")]


def check_capture(workdir: Path, r: TrialResult, state: dict) -> None:
    store = _reconcile_and_check_store(workdir, r)
    for attempt_id in _committed(r):
        body = store.attempt(attempt_id)
        assert body is not None, f"{_ctx(r)} attempt {attempt_id} reported committed has no catalog record"
        assert all(i.artifact_status == "available" for i in body.items), (
            f"{_ctx(r)} committed attempt {attempt_id} lost snapshots")
        r.facts["committed_attempts_checked"] += 1


check_commit = check_capture


def check_duckdb(workdir: Path, r: TrialResult, state: dict) -> None:
    from otel_inputs.exporter import DuckDBWriter
    from otel_inputs.exporter._arrow import BatchTables
    from otel_inputs.exporter._db import read_connection

    _reconcile_and_check_store(workdir, r)
    db = workdir / "spans.duckdb"
    writer = DuckDBWriter(db, source="crash-campaign-restart")
    for _ in range(100):  # each restart batch drains up to drain_limit spooled batches
        outcome = writer.write_tables(BatchTables(None, None, None, None))
        assert outcome.error is None, f"{_ctx(r)} DuckDB unusable after the crash: {outcome.error}"
        if not writer.spooled_batches():
            break
    assert writer.spooled_batches() == [], f"{_ctx(r)} spool did not drain"
    with read_connection(db) as con:
        landed = {row[0] for row in con.execute('SELECT "SpanId" FROM otel_traces').fetchall()}
        dupes = con.execute('SELECT count(*) - count(DISTINCT ("TraceId", "SpanId")) FROM otel_traces').fetchone()[0]
    assert dupes == 0, f"{_ctx(r)} {dupes} duplicated span rows after restart"
    for tag in ("W", "S"):
        promised = {sid for line in _committed(r, tag) for sid in line.split()}
        lost = promised - landed
        assert not lost, f"{_ctx(r)} {len(lost)} span(s) reported {'written' if tag == 'W' else 'spilled'} are not in DuckDB: {sorted(lost)[:5]}"
        r.facts[f"spans_{tag}"] += len(promised)


def check_evict(workdir: Path, r: TrialResult, state: dict) -> None:
    store = _reconcile_and_check_store(workdir, r)
    reader = EvidenceReader(store)
    for body in store.attempts():
        for item in body.items:
            if item.artifact_status == "evicted":
                res = reader.read("crash", body.attempt_id, item.input_id)
                assert res.outcome == "retention_expired", f"{_ctx(r)} evicted item read back: {res}"
                r.facts["evicted_items_refused"] += 1
    for attempt_id in _committed(r):
        assert store.attempt(attempt_id) is not None, f"{_ctx(r)} committed attempt {attempt_id} vanished"


def check_purge(workdir: Path, r: TrialResult, state: dict) -> None:
    store = _reconcile_and_check_store(workdir, r)
    ctx = _ctx(r)
    attempts: dict[str, dict] = state["attempts"]
    with store.catalog.read() as con:
        rows = con.execute("SELECT attempt_id, input_id FROM purged").fetchall()
        live_refs = {d for (d,) in con.execute("SELECT sha256 FROM items WHERE artifact_status = 'available'")}
    tomb_attempts = {a for a, i in rows if i == ""}
    tomb_inputs = {(a, i) for a, i in rows if i}
    reported = set(_committed(r, "P"))
    sources = set(_committed(r, "Q"))
    assert reported <= tomb_attempts, f"{ctx} purge returned but no purge record covers {sorted(reported - tomb_attempts)}"
    for src in sources:
        for a, v in attempts.items():
            for i in v["items"].values():
                if (i.source_path or "").startswith(src + "/"):
                    assert (a, i.input_id) in tomb_inputs or a in tomb_attempts, f"{ctx} {src} purge not recorded"

    def is_purged(a: str, i: str) -> bool:
        return a in tomb_attempts or (a, i) in tomb_inputs

    reader = EvidenceReader(store)
    purged_digests: set[str] = set()
    for a, v in attempts.items():
        for input_id, item in v["items"].items():
            if item.artifact_status != "available":
                continue
            if is_purged(a, input_id):
                purged_digests.add(item.sha256)
                res = reader.read("crash", a, input_id)
                assert not res.ok, f"{ctx} purged {a}/{input_id} reads back"
                with pytest.raises(ReadbackError):
                    store.read_input(a, input_id)
                body = store.attempt(a)
                if body is not None:
                    now = next(x for x in body.items if x.input_id == input_id)
                    assert now.artifact_status != "available", f"{ctx} purged {a}/{input_id} still available"
                r.facts["purged_items_refused"] += 1
            else:
                snap = store.read_input(a, input_id)  # no collateral damage to what was not purged
                assert snap.sha256 == item.sha256, f"{ctx} unpurged {a}/{input_id} damaged"
                r.facts["unpurged_items_verified"] += 1
    for digest in purged_digests:
        if store.object_path(digest).exists():
            assert digest in live_refs, f"{ctx} purged bytes {digest} survive with no unpurged reference"
    # The same content captured again later: the bytes return for the NEW attempt only.
    capture_attempt_inputs(attempt_id="after-purge", run_id="run-later", decision=ADMIT, store=store,
                           context_roots=[workdir / "tree"])
    reconcile_store(store, min_age_s=0)
    for a, v in attempts.items():
        for input_id, item in v["items"].items():
            if item.artifact_status == "available" and is_purged(a, input_id):
                assert not reader.read("crash", a, input_id).ok, f"{ctx} purged {a}/{input_id} came back after recapture"


CHECKS = {"capture": check_capture, "commit": check_commit, "duckdb": check_duckdb, "evict": check_evict,
          "purge": check_purge}


# ------------------------------------------------------------------------------------------
# tests
# ------------------------------------------------------------------------------------------
def _campaign(trials: int, tmp_path: Path, scenarios: tuple[str, ...] = SCENARIOS) -> dict[str, Counter]:
    totals: dict[str, Counter] = {s: Counter() for s in scenarios}
    for n in range(trials):
        scenario = scenarios[n % len(scenarios)]
        seed = BASE_SEED + n
        # Every other trial kills only after a completed operation: the campaign always covers kills
        # mid-work, whatever the machine's load, and kills before the first completion too.
        result = run_trial(scenario, seed, tmp_path / f"t{n:04d}-{scenario}", after_first_operation=n % 2 == 1)
        totals[scenario]["trials"] += 1
        totals[scenario]["progress_lines"] += len(result.progress)
        totals[scenario].update(result.facts)
        shutil.rmtree(tmp_path / f"t{n:04d}-{scenario}", ignore_errors=True)
    print(f"\ncrash campaign base seed {BASE_SEED}, {trials} trials")
    for s, c in totals.items():
        print(f"  {s:8s} {dict(c)}")
    return totals


@pytest.mark.timeout(180)
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_crash_campaign_short(scenario: str, tmp_path: Path) -> None:
    """Four SIGKILLs at random points of this operation leave the store, the DuckDB file and the
    purge record consistent after restart reconciliation (20 trials over the five operations)."""
    totals = _campaign(4, tmp_path, (scenario,))[scenario]
    assert totals["trials"] == 4
    # Two of the kills landed in the middle of real work (they waited for a completed operation).
    assert totals["progress_lines"] > 0, f"[{scenario} base seed={BASE_SEED}] no operation completed before any kill"


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_crash_campaign_full(tmp_path: Path) -> None:
    """OTEL_INPUTS_CRASH_TRIALS (default 200) SIGKILLs spread over all five operations never break
    an invariant."""
    trials = int(os.environ.get("OTEL_INPUTS_CRASH_TRIALS", "200"))
    totals = _campaign(trials, tmp_path)
    assert sum(c["trials"] for c in totals.values()) == trials
