"""The store's change-listener seam: each committed change of an item's state reaches the listeners."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from otel_inputs._capture import capture_attempt_inputs
from otel_inputs.store import (
    ArtifactStore,
    RetentionPolicy,
    StoreChange,
    apply_retention,
    delete_run,
    purge,
    revoke_source,
)
from otel_inputs.types import CaptureDecision, ItemState
from otel_inputs._policy import AdmissionDecision

ADMIT = AdmissionDecision(CaptureDecision.ADMITTED)


def capture(store: ArtifactStore, attempt_id: str, run_id: str, root: Path) -> None:
    capture_attempt_inputs(attempt_id=attempt_id, run_id=run_id, decision=ADMIT, store=store, context_roots=[root])
    store.mark_terminal(attempt_id)


def test_each_state_change_reaches_the_listeners_with_a_rising_change_number(tmp_path: Path) -> None:
    """Capture, revocation, eviction, purge and run deletion each tell the listeners the state now of the
    attempts they changed (the attempt, its items and parts), after the commit, numbered in commit order."""
    tree = tmp_path / "tree"
    (tree / "d").mkdir(parents=True)
    (tree / "a.txt").write_text("alpha")
    (tree / "d" / "b.txt").write_text("beta")
    store = ArtifactStore(tmp_path / "store")
    heard: list[StoreChange] = []
    store.listeners.append(heard.append)
    for n in range(4):
        capture(store, f"at-{n}", f"run-{n % 2}", tree)

    def after(mark: int) -> list:
        return [c for ch in heard[mark:] for c in ch.items]

    captured = after(0)
    assert {(c.item == "", c.state) for c in captured} == {(True, ItemState.CAPTURED), (False, ItemState.CAPTURED)}
    assert len([c for c in captured if c.item]) == 8 and not any(c.revoked_at_ns for c in captured)
    assert heard[0].new_objects and not heard[1].new_objects  # the same bytes again: no new object
    assert {c.run_id for c in captured} == {"run-0", "run-1"}
    mark = len(heard)
    revoke_source(store, tree / "d", "secret")
    revoked = [c for c in after(mark) if c.revoked_at_ns]
    assert {(c.attempt_id, c.state) for c in revoked} == {(f"at-{n}", ItemState.CAPTURED) for n in range(4)}
    mark = len(heard)
    apply_retention(store, RetentionPolicy(budget_bytes=1))
    evicted = [c for c in after(mark) if c.item]
    assert {c.state for c in evicted} == {ItemState.EVICTED} and {c.reason for c in evicted} == {"disk_budget"}
    assert sum(1 for c in evicted if c.revoked_at_ns) == 4  # an evicted item's revocation stays part of its state
    assert any(ch.removal for ch in heard[mark:])
    mark = len(heard)
    purge(store, attempt_ids=["at-0"])
    assert {(c.attempt_id, c.state) for c in after(mark)} == {("at-0", ItemState.PURGED)}
    mark = len(heard)
    delete_run(store, "run-1")
    assert {(c.attempt_id, c.state) for c in after(mark)} == {("at-1", ItemState.DELETED), ("at-3", ItemState.DELETED)}
    seqs = [c.seq for ch in heard for c in ch.items]
    assert seqs == sorted(seqs)


def test_a_failing_listener_never_fails_the_capture(tmp_path: Path) -> None:
    """A listener that raises is logged; the capture commits and the other listeners still hear."""
    (tmp_path / "tree").mkdir()
    (tmp_path / "tree" / "a.txt").write_text("alpha")
    store = ArtifactStore(tmp_path / "store")
    heard: list[StoreChange] = []

    def broken(change: StoreChange) -> None:
        raise RuntimeError("listener bug")

    store.listeners += [broken, heard.append]
    capture(store, "at-1", "run", tmp_path / "tree")
    assert store.attempt("at-1") is not None and heard


def test_the_bucket_is_imported_only_when_a_bucket_is_configured(tmp_path: Path) -> None:
    """Opening a store and capturing without a bucket never imports otel_inputs.store.bucket; with one it does."""
    script = textwrap.dedent("""
        import os, sys
        from pathlib import Path
        from otel_inputs import ArtifactStore
        root = Path(sys.argv[1])
        ArtifactStore(root / "plain").attempts()
        print("bucket" if "otel_inputs.store.bucket" in sys.modules else "core only")
        ArtifactStore(root / "with", objects_url=(root / "bucket").as_uri())
        print("bucket" if "otel_inputs.store.bucket" in sys.modules else "core only")
    """)
    out = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, timeout=60,
                         env={"PATH": "/usr/bin:/bin"})
    assert out.stdout.split("\n")[:2] == ["core only", "bucket"], out.stderr
