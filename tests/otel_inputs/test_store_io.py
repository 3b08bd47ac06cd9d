"""The store's cheap agent-thread paths: ended-attempt logs and pre-created manifest files."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from otel_inputs import ArtifactStore, resolve_request
from otel_inputs.store import scan_store
from otel_inputs.store._store_io import read_ended
from otel_inputs.testing import RecordingHarness


@pytest.fixture
def ctx(tmp_path: Path) -> Path:
    d = tmp_path / "ctx"
    d.mkdir()
    (d / "notes.md").write_text("some notes\n")
    return d


def run_attempt(h: RecordingHarness, ctx: Path, task: str = "t") -> str:
    with h.observer().attempt(run_id="r", request=resolve_request(task), context_roots=[ctx]) as rec:
        return rec.attempt_id


def spares(store: ArtifactStore) -> dict[int, Path]:
    return {p.stat().st_ino: p for p in store.manifests_dir.glob(".spare-*.tmp")}


def test_ended_attempt_is_unprotected_while_its_manifest_is_not_rewritten(tmp_path: Path, ctx: Path) -> None:
    """An attempt that ended loses retention protection through the ended log alone, its manifest untouched."""
    with RecordingHarness(tmp_path / "store") as h:
        obs = h.observer()
        with obs.attempt(run_id="r", request=resolve_request("t"), context_roots=[ctx]) as rec:
            assert scan_store(h.store).attempts[rec.attempt_id].protected
            before = h.store.manifest_path(rec.attempt_id).stat().st_ino
        h.store.flush()
        assert h.store.manifest(rec.attempt_id)["state"] == "running"
        assert h.store.manifest_path(rec.attempt_id).stat().st_ino == before
        assert rec.attempt_id in h.store.ended_attempts()
        assert not scan_store(h.store).attempts[rec.attempt_id].protected


def test_ended_log_skips_a_torn_last_line_and_garbage(tmp_path: Path) -> None:
    """A write cut short by a crash, or a foreign line, never marks an attempt ended."""
    d = tmp_path / "ended"
    d.mkdir()
    (d / "1-aa.log").write_bytes(b'"att-1"\n"att-2"\nnot json\n"att-3')
    (d / "2-bb.log").write_bytes(b'"att\\n4"\n')
    (d / "ignored.txt").write_bytes(b'"att-5"\n')
    assert read_ended(d) == {"att-1", "att-2", "att\n4"}
    assert read_ended(tmp_path / "missing") == set()


def test_forked_child_appends_to_its_own_log(tmp_path: Path) -> None:
    """After fork the child never writes through the parent's ended-log descriptor."""
    store = ArtifactStore(tmp_path / "store")
    store.mark_terminal_later("parent-1")
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        try:
            store.mark_terminal_later("child-1")
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    store.mark_terminal_later("parent-2")
    logs = {p.name.split("-")[0]: p.read_bytes() for p in store.ended_dir.glob("*.log")}
    assert logs == {str(os.getpid()): b'"parent-1"\n"parent-2"\n', str(pid): b'"child-1"\n'}
    assert store.ended_attempts() == {"parent-1", "parent-2", "child-1"}


def test_unwritable_ended_log_falls_back_to_rewriting_the_manifest(tmp_path: Path, ctx: Path) -> None:
    """When the log cannot be created the attempt is still marked terminal, in its manifest."""
    with RecordingHarness(tmp_path / "store") as h:
        h.store.ended_dir.write_text("a file where the log directory should be")
        attempt_id = run_attempt(h, ctx)
        h.store.flush()
        assert h.store.manifest(attempt_id)["state"] == "terminal"
        assert not scan_store(h.store).attempts[attempt_id].protected


def test_commit_fills_a_pre_created_spare_file(tmp_path: Path, ctx: Path) -> None:
    """Once spares exist, a commit's manifest is one of them (no file is created on the agent's thread)."""
    with RecordingHarness(tmp_path / "store") as h:
        run_attempt(h, ctx, "first")
        h.store.flush()
        ready = spares(h.store)
        assert ready, "spare manifest files are prepared in the background"
        attempt_id = run_attempt(h, ctx, "second")
        assert h.store.manifest_path(attempt_id).stat().st_ino in ready
        body = json.loads(h.store.manifest_path(attempt_id).read_bytes())
        assert body["attempt_id"] == attempt_id and body["items"]


def test_commit_survives_spares_removed_by_another_process(tmp_path: Path, ctx: Path) -> None:
    """A spare unlinked under the writer (another process's reconcile) costs a fallback, never a manifest."""
    with RecordingHarness(tmp_path / "store") as h:
        run_attempt(h, ctx, "first")
        h.store.flush()
        for path in spares(h.store).values():
            path.unlink()
        attempt_id = run_attempt(h, ctx, "second")
        assert h.store.manifest(attempt_id)["items"][0]["artifact_status"] == "available"


def test_reconcile_keeps_live_spares_and_removes_dead_ones(tmp_path: Path, ctx: Path) -> None:
    """Reconciliation removes old spares of dead processes but never the spares a live writer holds."""
    with RecordingHarness(tmp_path / "store") as h:
        run_attempt(h, ctx)
        h.store.flush()
        live = set(spares(h.store).values())
        pid = os.fork()
        if pid == 0:  # pragma: no cover - child
            os._exit(0)
        os.waitpid(pid, 0)  # a pid that is certainly not running any more
        dead = h.store.manifests_dir / f".spare-{pid}-0123456789ab.tmp"
        dead.touch()
        past = time.time() - 7200
        for p in live | {dead}:
            os.utime(p, (past, past))
        h.store.reconcile(min_age_s=3600)
        assert not dead.exists()
        assert all(p.exists() for p in live)
