"""The catalog behind the store: bounded lock waits, several writer processes, change numbers."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from otel_inputs import AdmissionDecision, capture_attempt_inputs
from otel_inputs.store import ArtifactStore

CATALOG_FILE = "catalog.db"
from otel_inputs.types import ArtifactStatus, CaptureDecision, GapReason

ADMITTED = AdmissionDecision(CaptureDecision.ADMITTED)


def test_a_locked_catalog_is_a_store_busy_gap_not_a_block(tmp_path: Path) -> None:
    """While another connection holds the write lock, a capture records store_busy within the bounded wait."""
    ctx = tmp_path / "ctx"
    ctx.mkdir()
    (ctx / "a.txt").write_text("alpha")
    store = ArtifactStore(tmp_path / "store")
    warm = capture_attempt_inputs(attempt_id="warm", run_id="r", decision=ADMITTED, store=store, context_roots=[ctx])
    holder = sqlite3.connect(tmp_path / "store" / CATALOG_FILE, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        t = time.monotonic()
        p = capture_attempt_inputs(attempt_id="busy", run_id="r", decision=ADMITTED, store=store, context_roots=[ctx])
        waited = time.monotonic() - t
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert p.gap_reason == GapReason.STORE_BUSY.value
    assert p.items[0].artifact_status is ArtifactStatus.NEVER_CAPTURED and "store_busy" in p.items[0].detail
    assert waited < 2.0  # bounded (50 ms lock wait), not a block on the holder
    assert store.attempt("busy") is None and store.read_input("warm", warm.items[0].input_id).data == b"alpha"


_WRITER = """
import sys
from pathlib import Path
from otel_inputs import AdmissionDecision, capture_attempt_inputs
from otel_inputs.store import ArtifactStore
from otel_inputs.types import CaptureDecision
store, ctx, tag = ArtifactStore(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
ok = 0
for n in range(40):
    (ctx / f"{tag}.txt").write_text(f"{tag} {n}")
    p = capture_attempt_inputs(attempt_id=f"{tag}-{n}", run_id=tag, decision=AdmissionDecision(CaptureDecision.ADMITTED),
                               store=store, context_roots=[ctx])
    ok += p.gap_reason is None
print(ok)
"""


def test_several_writer_processes_share_one_store(tmp_path: Path) -> None:
    """Three processes capturing into one store at once leave every successful commit readable."""
    store = ArtifactStore(tmp_path / "store")
    procs = []
    for tag in ("p1", "p2", "p3"):
        ctx = tmp_path / f"ctx-{tag}"
        ctx.mkdir()
        procs.append(subprocess.Popen([sys.executable, "-c", _WRITER, str(tmp_path / "store"), str(ctx), tag],
                                      stdout=subprocess.PIPE, text=True))
    committed = sum(int(p.communicate(timeout=120)[0]) for p in procs)
    records = store.attempts()
    assert committed >= 100 and len(records) == committed  # a busy gap is recorded, never half a commit
    for r in records:
        assert store.read_input(r.attempt_id, r.items[0].input_id).data.startswith(r.run_id.encode())


def test_change_numbers_grow_with_every_write(tmp_path: Path) -> None:
    """Commits, ended marks and evictions each give the touched attempt a larger change number."""
    ctx = tmp_path / "ctx"
    ctx.mkdir()
    (ctx / "a.txt").write_text("a")
    store = ArtifactStore(tmp_path / "store")
    capture_attempt_inputs(attempt_id="a", run_id="r", decision=ADMITTED, store=store, context_roots=[ctx])
    first = store.attempt("a").changed_seq
    capture_attempt_inputs(attempt_id="b", run_id="r", decision=ADMITTED, store=store, context_roots=[ctx])
    store.mark_terminal("a")
    assert store.attempt("a").changed_seq > store.attempt("b").changed_seq > first
    assert store.attempt("a").state == "ended" and store.attempt("b").state == "running"
