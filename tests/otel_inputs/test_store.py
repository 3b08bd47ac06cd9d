from __future__ import annotations

import hashlib
import os
import shutil
import time
from pathlib import Path

import pytest

from otel_inputs import ArtifactStore
from otel_inputs.store import (
    AccessPolicy,
    AttemptRecord,
    CatalogItem,
    EvidenceReader,
    ReadbackError,
    StoreCleanupError,
    StoreWriteError,
    reconcile_store,
)

CATALOG_FILE = "catalog.db"


def record(attempt_id: str, *items: CatalogItem) -> AttemptRecord:
    return AttemptRecord(attempt_id, "r", committed_at_ns=time.time_ns(), items=items)


def available(attempt_id: str, blob, input_id: str = "in-1") -> CatalogItem:
    return CatalogItem(attempt_id, input_id, 0, sha256=blob.sha256, size_bytes=blob.size_bytes,
                       artifact_status="available", snapshot_ref=blob.snapshot_ref)


def commit_one(store: ArtifactStore, attempt_id: str, data: bytes, input_id: str = "in-1") -> str:
    staging = store.begin_attempt(attempt_id)
    blob = staging.put_bytes(data)
    staging.commit(record(attempt_id, available(attempt_id, blob, input_id)))
    return blob.sha256


def test_commit_then_read_back(store: ArtifactStore) -> None:
    """Committed bytes read back by (attempt id, input id) after hash verification; staging is gone."""
    digest = commit_one(store, "a", b"hello")
    snap = store.read_input("a", "in-1")
    assert snap.data == b"hello" and snap.sha256 == digest == hashlib.sha256(b"hello").hexdigest()
    assert list(store.staging_dir.iterdir()) == []
    assert store.attempt("a").attempt_id == "a"


def test_tampered_bytes_are_refused(store: ArtifactStore) -> None:
    """Bytes changed on disk after commit are refused with integrity_mismatch."""
    digest = commit_one(store, "a", b"original")
    path = store.object_path(digest)
    os.chmod(path, 0o644)
    path.write_bytes(b"tampered")
    with pytest.raises(ReadbackError) as err:
        store.read_input("a", "in-1")
    assert err.value.outcome == "integrity_mismatch"


@pytest.mark.parametrize("attempt_id,input_id", [
    ("nope", "in-1"), ("a", "in-404"), ("../../etc/passwd", "in-1"), ("a", "../objects"), ("a", "/etc/passwd"),
])
def test_unknown_and_path_like_ids_are_not_found(store: ArtifactStore, attempt_id: str, input_id: str) -> None:
    """Unknown or path-like ids never resolve to a file: they are not_found."""
    commit_one(store, "a", b"x")
    with pytest.raises(ReadbackError) as err:
        store.read_input(attempt_id, input_id)
    assert err.value.outcome == "not_found"


def test_missing_object_is_not_found_and_evicted_is_retention(store: ArtifactStore) -> None:
    """Deleted bytes read as not_found; an evicted item reads as retention_expired with its reason."""
    digest = commit_one(store, "a", b"gone")
    os.unlink(store.object_path(digest))
    with pytest.raises(ReadbackError) as err:
        store.read_input("a", "in-1")
    assert err.value.outcome == "not_found"
    with store.catalog.write() as con:
        con.execute("UPDATE items SET artifact_status = 'evicted', status_reason = 'disk_budget'")
    with pytest.raises(ReadbackError) as err:
        store.read_input("a", "in-1")
    assert err.value.outcome == "retention_expired" and "disk_budget" in str(err.value)


def test_oversized_read_is_refused(store: ArtifactStore) -> None:
    """A caller's byte limit refuses larger snapshots before returning bytes."""
    commit_one(store, "a", b"x" * 100)
    with pytest.raises(ReadbackError) as err:
        store.read_input("a", "in-1", max_bytes=10)
    assert err.value.outcome == "too_large"


def test_object_symlink_is_not_followed(store: ArtifactStore, tmp_path: Path) -> None:
    """An object path replaced by a symlink is refused rather than followed."""
    digest = commit_one(store, "a", b"real")
    path = store.object_path(digest)
    path.unlink()
    target = tmp_path / "elsewhere"
    target.write_bytes(b"real")
    os.symlink(target, path)
    with pytest.raises(ReadbackError):
        store.read_input("a", "in-1")


def test_abort_removes_staging(store: ArtifactStore) -> None:
    """Aborting a capture removes its preallocated staging directory."""
    staging = store.begin_attempt("a")
    staging.put_bytes(b"partial")
    staging.abort()
    assert not staging.path.exists() and store.attempt("a") is None


def test_failed_cleanup_names_the_orphan(store: ArtifactStore) -> None:
    """When cleanup itself fails the error names the orphan path."""
    staging = store.begin_attempt("a")
    staging.put_bytes(b"staged")
    shutil.rmtree(staging.path)
    staging.path.write_text("now a file, rmtree cannot remove it as a directory")
    with pytest.raises(StoreCleanupError) as err:
        staging.abort()
    assert err.value.orphan_path == str(staging.path) and str(staging.path) in str(err.value)


def test_reconcile_is_age_gated(store: ArtifactStore) -> None:
    """Reconciliation removes old orphan staging and unowned bytes, but keeps young ones and owned bytes."""
    owned = commit_one(store, "a", b"owned")
    orphan_stage = store.begin_attempt("crashed")
    orphan_stage.put_bytes(b"half")
    stray = store.object_path(hashlib.sha256(b"stray").hexdigest())
    stray.write_bytes(b"stray")
    young = {"staging_removed": 0, "objects_removed": 0, "unreferenced_removed": 0}
    assert reconcile_store(store, min_age_s=3600) == young
    later = time.time() + 7200
    assert reconcile_store(store, min_age_s=3600, now=later) == {**young, "staging_removed": 1, "objects_removed": 1}
    assert store.object_path(owned).exists() and not stray.exists()
    assert store.read_input("a", "in-1").data == b"owned"


@pytest.mark.parametrize("column,value", [("sha256", "not-a-digest"), ("artifact_status", "bogus"),
                                          ("size_bytes", "lots"), ("size_bytes", 3)])
def test_corrupt_catalog_row_is_that_items_integrity_mismatch(store: ArtifactStore, column: str, value) -> None:
    """A catalog row with a malformed digest, status or size reads as integrity_mismatch, never a crash."""
    commit_one(store, "a", b"x")
    commit_one(store, "b", b"y")
    with store.catalog.write() as con:
        con.execute(f"UPDATE items SET {column} = ? WHERE attempt_id = 'a'", [value])
    reader = EvidenceReader(store, policy=AccessPolicy())
    assert reader.read("me", "a", "in-1").outcome == "integrity_mismatch"
    assert len(reader.list_items("me", "a")) == 1  # the listing still works
    assert reader.read("me", "b", "in-1").ok


def test_damaged_catalog_file_is_integrity_mismatch_not_a_crash(tmp_path: Path) -> None:
    """A catalog file overwritten with garbage makes reads integrity_mismatch instead of raising."""
    root = tmp_path / "s"
    root.mkdir()
    (root / CATALOG_FILE).write_bytes(b"this is not a database" * 100)
    reader = EvidenceReader(ArtifactStore(root, create=False), policy=AccessPolicy())
    assert reader.read("me", "a", "in-1").outcome == "integrity_mismatch"


def test_unchanged_bytes_are_not_rewritten(store: ArtifactStore) -> None:
    """Staging bytes the store already holds creates no temp file and keeps the one object."""
    commit_one(store, "a", b"same")
    staging = store.begin_attempt("b")
    staging.put_bytes(b"same")
    assert not staging.path.exists()
    staging.commit(record("b"))
    assert len(list(store.objects_dir.iterdir())) == 1


def test_object_taken_by_gc_before_commit_fails_the_commit(store: ArtifactStore) -> None:
    """If deduplicated bytes vanish before commit, the commit fails instead of claiming them available."""
    digest = commit_one(store, "a", b"shared")
    staging = store.begin_attempt("b")
    staging.put_bytes(b"shared")
    os.unlink(store.object_path(digest))
    with pytest.raises(StoreWriteError):
        staging.commit(record("b"))
    assert store.attempt("b") is None


def test_gc_puts_back_an_object_a_new_commit_references(store: ArtifactStore) -> None:
    """An object chosen for removal is kept when a commit since the choice references it."""
    digest = commit_one(store, "a", b"shared bytes")
    with store.catalog.write() as con:  # gc's choice: nothing available names it
        con.execute("UPDATE items SET artifact_status = 'evicted' WHERE attempt_id = 'a'")
    commit_one(store, "b", b"shared bytes")  # dedupes against the object after the choice
    assert store.remove_objects([digest]) == {}
    assert store.read_input("b", "in-1").data == b"shared bytes"


def test_commit_after_gc_removed_its_object_fails(store: ArtifactStore) -> None:
    """If gc deleted a deduplicated object before the commit, the commit fails instead of claiming it."""
    digest = commit_one(store, "a", b"doomed")
    with store.catalog.write() as con:
        con.execute("UPDATE items SET artifact_status = 'evicted' WHERE attempt_id = 'a'")
    staging = store.begin_attempt("b")
    blob = staging.put_bytes(b"doomed")
    assert len(store.remove_objects([digest])) == 1  # nothing available references it: deleted
    with pytest.raises(StoreWriteError):
        staging.commit(record("b", available("b", blob)))
    assert store.attempt("b") is None  # nothing claims bytes that are gone; capture records the gap


def test_reconcile_finishes_an_interrupted_gc(store: ArtifactStore) -> None:
    """An object left moved-aside by a crashed gc is restored if referenced, else deleted."""
    kept = commit_one(store, "a", b"kept")
    os.rename(store.object_path(kept), store.objects_dir / f".gc-{kept}")
    orphan = hashlib.sha256(b"orphan").hexdigest()
    (store.objects_dir / f".gc-{orphan}").write_bytes(b"orphan")
    reconcile_store(store, min_age_s=0)
    assert store.read_input("a", "in-1").data == b"kept"
    assert not (store.objects_dir / f".gc-{orphan}").exists()


def test_observer_reconciles_old_orphans_at_startup(tmp_path: Path) -> None:
    """Opening a store through an observer removes orphan staging older than the age gate, off the agent thread."""
    from otel_inputs import resolve_request
    from otel_inputs.testing import RecordingHarness

    root = tmp_path / "s"
    store = ArtifactStore(root)
    orphan = store.staging_dir / "crashed.1.abcd"
    orphan.mkdir()
    (orphan / "tmp-x").write_bytes(b"half a capture")
    old = time.time() - 7200
    os.utime(orphan, (old, old))
    young = store.staging_dir / "live.2.abcd"
    young.mkdir()
    with RecordingHarness(root) as h:
        with h.observer().attempt(run_id="r", request=resolve_request("t")):
            pass
        deadline = time.time() + 10
        while orphan.exists() and time.time() < deadline:
            time.sleep(0.05)
    assert not orphan.exists() and young.exists()


def test_failed_cleanup_is_logged_with_the_orphan_path(store: ArtifactStore, tmp_path: Path, caplog) -> None:
    """When staging cleanup fails during a store failure, the error log names the orphan path."""
    from otel_inputs._capture import _abort_quietly

    staging = store.begin_attempt("a")
    staging.put_bytes(b"x")
    shutil.rmtree(staging.path)
    staging.path.write_text("blocks rmtree")
    with caplog.at_level("ERROR", logger="otel_inputs"):
        _abort_quietly(staging)
    assert str(staging.path) in caplog.text
