"""The eviction journal: one durable record per retention pass, applied by every reader of a manifest."""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

import pytest

import otel_inputs.store._retention as retention
import otel_inputs.store._retention_evict as retention_evict
import otel_inputs.store._store_index as store_index
from otel_inputs.exporter._manifests import ManifestScanner
from otel_inputs import ArtifactStore, RetentionPolicy
from otel_inputs.store import ReadbackError, apply_retention, scan_store
from otel_inputs.store._store_evictions import EVICTION_REASON, JOURNAL_DIR
from otel_inputs.store._store_index import INDEX_DIR, INDEX_FILE, refresh

SIZE = 4096


@pytest.fixture(autouse=True)
def short_racy_window(monkeypatch: pytest.MonkeyPatch) -> None:
    """A short racily-clean window so tests can wait it out (the rule itself is unchanged)."""
    monkeypatch.setattr(store_index, "RACY_NS", 200_000_000)


def settle() -> None:
    time.sleep(0.3)


def put(store: ArtifactStore, attempt_id: str, tag: str, committed: int, *, digest: str | None = None) -> str:
    """Commit a terminal attempt holding one snapshot (``tag``'s bytes, or an existing ``digest``)."""
    if digest is None:
        data = tag.encode().ljust(SIZE, b".")
        digest = hashlib.sha256(data).hexdigest()
        (store.objects_dir / digest).write_bytes(data)
        past = time.time() - 3600
        os.utime(store.objects_dir / digest, (past, past))
    store.update_manifest(attempt_id, {
        "attempt_id": attempt_id, "run_id": "r", "state": "terminal", "committed_at_ns": committed,
        "items": [{"input_id": "in-1", "seq": 0, "sha256": digest, "size_bytes": SIZE,
                   "artifact_status": "available", "capture_status": "captured"}]})
    return digest


@pytest.fixture
def store(tmp_path: Path) -> ArtifactStore:
    """Five terminal attempts, oldest first, each with its own 4 KiB snapshot."""
    s = ArtifactStore(tmp_path / "store", sync_in_background=False)
    for n in range(5):
        put(s, f"a{n}", f"bytes-{n}", committed=1_000 + n)
    settle()
    refresh(s.root)  # a lived-in store: its index is current
    return s


def manifest_idents(store: ArtifactStore) -> dict[str, tuple[int, int]]:
    return {e.name: (e.stat().st_ino, e.stat().st_mtime_ns) for e in os.scandir(store.manifests_dir)}


def evict_two(store: ArtifactStore) -> retention.GcReport:
    return apply_retention(store, RetentionPolicy(budget_bytes=3 * SIZE))


def test_a_pass_records_evictions_in_one_journal_file_and_rewrites_no_manifest(store: ArtifactStore) -> None:
    """Evicting writes one journal file, leaves every manifest file untouched, and still every reader
    (manifest, iter_manifests, readback, the index) says evicted (disk budget) and the bytes are gone."""
    before = manifest_idents(store)
    report = evict_two(store)
    assert (report.evicted_attempts, report.deleted_objects) == (2, 2)
    assert manifest_idents(store) == before
    assert len(os.listdir(store.root / JOURNAL_DIR)) == 1
    for aid in ("a0", "a1"):
        item = store.manifest(aid)["items"][0]
        assert (item["artifact_status"], item["status_reason"]) == ("evicted", EVICTION_REASON)
        assert isinstance(item["evicted_at_ns"], int)
        assert not store.has_object(item["sha256"])
        with pytest.raises(ReadbackError) as err:
            store.read_input(aid, "in-1")
        assert err.value.outcome == "retention_expired"
    assert store.read_input("a2", "in-1").data.startswith(b"bytes-2")
    listed = {m["attempt_id"]: m["items"][0]["artifact_status"] for m in store.iter_manifests()}
    assert listed == {"a0": "evicted", "a1": "evicted", "a2": "available", "a3": "available", "a4": "available"}
    assert scan_store(store).total_bytes() == 3 * SIZE
    assert apply_retention(store, RetentionPolicy(budget_bytes=3 * SIZE)).evicted_attempts == 0


def test_an_index_saved_before_the_journal_file_applies_it(store: ArtifactStore) -> None:
    """An index written before an eviction (another process's, say) learns the eviction from the
    journal although no manifest file changed, so it never counts or protects the gone bytes."""
    old_index = (store.root / INDEX_DIR / INDEX_FILE).read_bytes()
    evict_two(store)
    (store.root / INDEX_DIR / INDEX_FILE).write_bytes(old_index)
    view = refresh(store.root)
    assert view.reread == 0
    gone = {store.manifest(a)["items"][0]["sha256"] for a in ("a0", "a1")}
    assert not gone & view.referenced()
    assert scan_store(store).total_bytes() == 3 * SIZE


def test_a_later_commit_of_the_same_attempt_is_not_covered(store: ArtifactStore) -> None:
    """The journal names a commit, not an attempt: the attempt committed again later keeps its new bytes."""
    evict_two(store)
    digest = put(store, "a0", "recaptured", committed=9_000)
    item = store.manifest("a0")["items"][0]
    assert item["artifact_status"] == "available"
    assert store.read_input("a0", "in-1").data.startswith(b"recaptured")
    assert digest in refresh(store.root).referenced()


def test_a_rewrite_of_an_evicted_manifest_keeps_the_eviction(store: ArtifactStore) -> None:
    """Any manifest rewrite (here: marking it terminal again) writes the journal's marks into the file."""
    evict_two(store)
    store.modify_manifest("a0", lambda body: body.update(note="x") is None)
    raw = json.loads(store.manifest_path("a0").read_bytes())
    assert raw["items"][0]["artifact_status"] == "evicted"


def test_journal_is_folded_into_the_manifests_past_its_bound(store: ArtifactStore,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Once the journal holds more lines than its bound, the pass writes the evictions into the
    manifests and removes the journal files; readers see the same status and time as before."""
    monkeypatch.setattr(retention_evict, "FOLD_AT", 1)
    evict_two(store)
    assert os.listdir(store.root / JOURNAL_DIR) == []
    for aid in ("a0", "a1"):
        raw = json.loads(store.manifest_path(aid).read_bytes())
        assert raw["items"][0]["artifact_status"] == "evicted"
        assert raw["items"][0]["status_reason"] == EVICTION_REASON
    assert refresh(store.root).reread == 0  # the fold's own writes were indexed
    assert scan_store(store).total_bytes() == 3 * SIZE


def test_journal_that_cannot_be_written_deletes_nothing(store: ArtifactStore) -> None:
    """When the journal cannot be written (its directory is a file here), no byte is deleted, nothing
    is marked, and the report says why."""
    (store.root / JOURNAL_DIR).write_bytes(b"not a directory")
    report = evict_two(store)
    assert report.deleted_objects == 0 and report.evicted_attempts == 0
    assert any("eviction journal not written" in r for r in report.reasons)
    for n in range(5):
        assert store.read_input(f"a{n}", "in-1").data.startswith(f"bytes-{n}".encode())


@pytest.mark.parametrize("content", [b"", b"garbage\n\x00\xff", b"otel-inputs-evictions 9 1 1\n\"a0\"\t" + b"0" * 20])
def test_foreign_or_damaged_journal_file_marks_nothing(store: ArtifactStore, content: bytes) -> None:
    """A journal file that is not ours (or of an unknown version) is ignored: items stay available."""
    (store.root / JOURNAL_DIR).mkdir()
    (store.root / JOURNAL_DIR / "00000000000000000001-1-aaaa.log").write_bytes(content)
    assert store.manifest("a0")["items"][0]["artifact_status"] == "available"
    assert store.read_input("a0", "in-1").data.startswith(b"bytes-0")


def test_crash_after_the_journal_before_deletion_leaves_no_claim_on_missing_bytes(store: ArtifactStore) -> None:
    """If the pass dies after its journal is durable and before any unlink, the items read as evicted
    and reconciliation removes the now unreferenced bytes."""
    view = refresh(store.root)
    i = view.aids.index('"a0"')
    store.evictions.write([(view.aids[i], view.committed[i])], time.time_ns())
    digest = store.manifest("a0")["items"][0]["sha256"]
    assert store.has_object(digest)
    with pytest.raises(ReadbackError):
        store.read_input("a0", "in-1")
    store.reconcile(min_age_s=0)
    assert not store.has_object(digest)
    assert store.read_input("a1", "in-1").data.startswith(b"bytes-1")


def test_sink_scanner_relands_attempts_a_new_journal_file_names(store: ArtifactStore) -> None:
    """The sink's manifest scanner, which notices changed manifest files, also re-lands the attempts
    a new journal file evicted (their files did not change) with their evicted status."""
    scanner = ManifestScanner(store.root)
    first, keys = scanner.changed()
    assert len(first) == 5
    scanner.commit(keys)
    assert scanner.changed() == ([], {})
    evict_two(store)
    again, keys = scanner.changed()
    assert {(m["attempt_id"], m["items"][0]["artifact_status"]) for m in again} == {("a0", "evicted"), ("a1", "evicted")}
    scanner.commit(keys)
    assert scanner.changed() == ([], {})


def test_manifest_renamed_in_between_scan_and_deletion_keeps_its_bytes(store: ArtifactStore,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A capture that deduplicates against a victim's bytes after the pass listed the manifests (its
    manifest renamed in before the deletion re-check) keeps those bytes: the directory changed, so the
    re-check reads the manifests again instead of trusting the listing."""
    victim_digest = store.manifest("a0")["items"][0]["sha256"]
    original = retention_evict._still_evictable

    def capture_in_between(s: ArtifactStore, plan: retention_evict._Plan) -> list[tuple[int, str]]:
        chosen = original(s, plan)
        put(s, "late", "", committed=50_000, digest=victim_digest)
        return chosen

    monkeypatch.setattr(retention_evict, "_still_evictable", capture_in_between)
    report = evict_two(store)
    assert report.evicted_attempts == 2 and report.deleted_objects == 1
    assert store.read_input("late", "in-1").data.startswith(b"bytes-0")
    assert store.manifest("a0")["items"][0]["artifact_status"] == "evicted"


def test_unchanged_manifests_directory_spares_the_deletion_recheck(store: ArtifactStore,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """When no manifest was renamed in since the pass listed them, the deletion re-check stats none."""
    calls: list[int] = []
    original = store_index.refresh

    def counting(*args: object, **kwargs: object) -> store_index.ManifestView:
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(store_index, "refresh", counting)
    monkeypatch.setattr(retention, "refresh", counting)
    report = evict_two(store)
    assert report.deleted_objects == 2
    assert len(calls) == 1  # the pass's own scan; the re-check answered from the directory's identity


def test_folding_is_bounded_per_pass_oldest_files_first(store: ArtifactStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the bound, a pass folds only about as many lines as it added (whole files, oldest first),
    so the rewrites the journal saved are paid a bounded amount per pass; the rest stays applied."""
    monkeypatch.setattr(retention_evict, "FOLD_AT", 1)
    monkeypatch.setattr(retention_evict, "FOLD_PER_PASS", 1)
    monkeypatch.setattr(retention_evict, "JOURNAL_CHUNK", 1)
    for n in range(3):  # older journal files, for manifests deleted since
        store.evictions.write([('"gone"', f"{n:020d}")], 10 + n)
    before = store.evictions.names()
    apply_retention(store, RetentionPolicy(budget_bytes=4 * SIZE))  # evicts a0: one line added
    after = store.evictions.names()
    assert len(after) == 3 and before[0] not in after and set(before[1:]) <= set(after)
    assert store.manifest("a0")["items"][0]["artifact_status"] == "evicted"
    assert json.loads(store.manifest_path("a0").read_bytes())["items"][0]["artifact_status"] == "available"
    apply_retention(store, RetentionPolicy(budget_bytes=3 * SIZE))  # evicts a1, folds the next oldest
    assert len(store.evictions.names()) == 3
    assert [store.manifest(f"a{n}")["items"][0]["artifact_status"] for n in range(3)] == ["evicted", "evicted", "available"]
