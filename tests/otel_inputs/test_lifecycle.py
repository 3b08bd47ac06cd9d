from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from otel_inputs import ArtifactStore, RetentionPolicy, names, resolve_request
from otel_inputs.store import (
    AccessPolicy,
    EvidenceReader,
    ReadbackError,
    apply_retention,
    delete_run,
    purge,
    reconcile_store,
    revoke_source,
    store_usage,
)
from otel_inputs.testing import RecordingHarness


def record(h: RecordingHarness, ctx: Path, run_id: str, n: int, *, retention: RetentionPolicy | None = None,
           size: int = 1000) -> list[str]:
    """Record n attempts, each with one fresh file of `size` bytes in ctx; return their attempt ids."""
    obs = h.observer(retention=retention or RetentionPolicy())
    ids = []
    for i in range(n):
        (ctx / "data.bin").write_bytes(os.urandom(size))
        with obs.attempt(run_id=run_id, request=resolve_request("t"), context_roots=[ctx]) as rec:
            ids.append(rec.attempt_id)
        h.store.mark_terminal(rec.attempt_id)
        time.sleep(0.002)
    return ids


def object_age(store: ArtifactStore, seconds: float) -> None:
    """Make every object look older, as a long-running store's would be (a gc may be moving some)."""
    past = time.time() - seconds
    for o in store.objects_dir.iterdir():
        try:
            os.utime(o, (past, past), follow_symlinks=False)
        except FileNotFoundError:
            pass


@pytest.fixture
def ctx(tmp_path: Path) -> Path:
    d = tmp_path / "ctx"
    d.mkdir()
    return d


def test_retention_sizes_parse() -> None:
    """Retention sizes accept plain bytes and K/M/G suffixes, unset is no limit, and garbage is a clear error."""
    policy = RetentionPolicy.from_env({names.ENV_STORE_BUDGET: "512", names.ENV_STORE_MIN_FREE: "2K",
                                       names.ENV_RUN_BUDGET: "1.5MiB"})
    assert (policy.budget_bytes, policy.min_free_bytes, policy.run_budget_bytes) == (512, 2048, 1572864)
    assert RetentionPolicy.from_env({}).budget_bytes is None
    with pytest.raises(ValueError):
        RetentionPolicy.from_env({names.ENV_STORE_BUDGET: "lots"})


def test_gc_evicts_oldest_terminal_until_under_budget(harness: RecordingHarness, ctx: Path) -> None:
    """Over budget, the oldest terminal attempts are evicted (reason disk_budget) and the store ends under budget."""
    ids = record(harness, ctx, "r", 6, size=4096)
    object_age(harness.store, 60)
    report = apply_retention(harness.store, RetentionPolicy(budget_bytes=3 * 4096))
    assert report.total_bytes_after <= 3 * 4096 and not report.over_budget_after
    statuses = [harness.store.attempt(a).items[0].artifact_status for a in ids]
    assert statuses[:3] == ["evicted"] * 3 and statuses[3:] == ["available"] * 3
    item = harness.store.attempt(ids[0]).items[0]
    assert item.status_reason == "disk_budget" and item.sha256 and item.size_bytes == 4096
    with pytest.raises(ReadbackError) as err:
        harness.store.read_input(ids[0], item.input_id)
    assert err.value.outcome == "retention_expired"
    assert harness.store.read_input(ids[5], harness.store.attempt(ids[5]).items[0].input_id).data


def test_running_attempts_are_protected(harness: RecordingHarness, ctx: Path) -> None:
    """A running attempt (live owner) keeps its snapshot even over budget."""
    obs = harness.observer()
    (ctx / "data.bin").write_bytes(os.urandom(4096))
    with obs.attempt(run_id="r", request=resolve_request("t"), context_roots=[ctx]) as rec:
        object_age(harness.store, 60)
        report = apply_retention(harness.store, RetentionPolicy(budget_bytes=10))
        assert harness.store.attempt(rec.attempt_id).items[0].artifact_status == "available"
        assert report.over_budget_after and report.protected_bytes >= 4096


def test_dead_owner_is_not_protected(harness: RecordingHarness, ctx: Path) -> None:
    """An attempt left 'running' by a process that no longer exists is evictable."""
    ids = record(harness, ctx, "r", 1)
    with harness.store.catalog.write() as con:
        con.execute("UPDATE attempts SET state = 'running', owner_pid = ?, owner_host = ? WHERE attempt_id = ?",
                    [2**22 + 7, os.uname().nodename, ids[0]])
    object_age(harness.store, 60)
    apply_retention(harness.store, RetentionPolicy(budget_bytes=0))
    assert harness.store.attempt(ids[0]).items[0].artifact_status == "evicted"


def test_shared_bytes_go_only_with_last_reference(harness: RecordingHarness, ctx: Path) -> None:
    """Content-addressed bytes shared by two attempts survive eviction of the older one."""
    (ctx / "same.txt").write_text("shared")
    obs = harness.observer()
    ids = []
    for _ in range(2):
        with obs.attempt(run_id="r", request=resolve_request("t"), context_roots=[ctx]) as rec:
            ids.append(rec.attempt_id)
        harness.store.mark_terminal(rec.attempt_id)
    object_age(harness.store, 60)
    one = store_usage(harness.store).object_bytes
    apply_retention(harness.store, RetentionPolicy(budget_bytes=one))  # already within: nothing to do
    assert harness.store.attempt(ids[0]).items[0].artifact_status == "available"
    with harness.store.catalog.write() as con:
        con.execute("UPDATE items SET artifact_status = 'evicted' WHERE attempt_id = ?", [ids[0]])
    reconcile_store(harness.store, min_age_s=0)  # removes only what no available item references
    snap = harness.store.read_input(ids[1], harness.store.attempt(ids[1]).items[0].input_id)
    assert snap.data == b"shared"


def test_per_run_cap(harness: RecordingHarness, ctx: Path) -> None:
    """A run over its own cap loses its oldest snapshots; another run is untouched."""
    a = record(harness, ctx, "run-a", 4, size=4096)
    b = record(harness, ctx, "run-b", 1, size=4096)
    object_age(harness.store, 60)
    apply_retention(harness.store, RetentionPolicy(run_budget_bytes=2 * 4096))
    st = lambda i: harness.store.attempt(i).items[0].artifact_status  # noqa: E731
    assert [st(i) for i in a] == ["evicted", "evicted", "available", "available"]
    assert st(b[0]) == "available"


def test_capture_over_protected_budget_is_limit_exceeded(tmp_path: Path, ctx: Path) -> None:
    """When the budget is already used, a new capture records limit_exceeded, partial coverage, and the call proceeds."""
    with RecordingHarness(tmp_path / "s") as h:
        policy = RetentionPolicy(budget_bytes=1000)
        (ctx / "big.bin").write_bytes(os.urandom(4000))
        obs = h.observer(retention=policy)
        with obs.attempt(run_id="r", request=resolve_request("t"), context_roots=[ctx]) as rec:
            proceeded = True
        assert proceeded
        span = h.span_for(rec.attempt_id)
        [event] = h.inputs(span)
        assert event[names.INPUT_CAPTURE_STATUS] == "limit_exceeded" and "budget" in event[names.INPUT_DETAIL]
        assert span.attributes[names.PACKET_COVERAGE] == "partial"
        assert span.attributes[names.CAPTURE_GAP_REASON] == "capacity_exceeded"


def test_long_session_stays_under_tiny_budget(tmp_path: Path, ctx: Path) -> None:
    """With a tiny budget, background retention keeps a long session's store under budget."""
    with RecordingHarness(tmp_path / "s") as h:
        policy = RetentionPolicy(budget_bytes=16 * 1024)
        obs = h.observer(retention=policy)
        for i in range(30):
            (ctx / "data.bin").write_bytes(os.urandom(2048))
            with obs.attempt(run_id="r", request=resolve_request("t"), context_roots=[ctx]) as rec:
                pass
            h.store.mark_terminal(rec.attempt_id)
            object_age(h.store, 60)
        gate = obs.retention_gate
        gate.wait(30)  # a pass started during the session may have scanned before the last objects aged
        gate.collect_in_background()
        gate.wait(30)
        assert store_usage(h.store).total_bytes <= 16 * 1024
        evicted = [m for m in h.store.attempts() if m.items[0].artifact_status == "evicted"]
        assert evicted and all(m.items[0].status_reason == "disk_budget" for m in evicted)


def test_purge_attempt_never_reads_back(harness: RecordingHarness, ctx: Path) -> None:
    """A purged attempt's bytes cannot be read by any id; other attempts' bytes stay."""
    ids = record(harness, ctx, "r", 2)
    first = harness.store.attempt(ids[0]).items[0]
    report = purge(harness.store, attempt_ids=[ids[0]])
    assert report.purge_id is not None and report.deleted_objects == 1
    with pytest.raises(ReadbackError):
        harness.store.read_input(ids[0], first.input_id)
    assert not harness.store.object_path(first.sha256).exists()
    second = harness.store.attempt(ids[1]).items[0]
    assert harness.store.read_input(ids[1], second.input_id).data


def test_purge_survives_a_later_commit_of_the_same_attempt(harness: RecordingHarness, ctx: Path) -> None:
    """A purged attempt committed again (a stale writer) still reads as purged: the purge record wins."""
    ids = record(harness, ctx, "r", 1)
    stale = harness.store.attempt(ids[0])
    purge(harness.store, attempt_ids=ids)
    (ctx / "data.bin").write_bytes(b"again")
    harness.store.catalog.commit_attempt(stale, [], harness.store.has_object)
    item = harness.store.attempt(ids[0]).items[0]
    assert item.status_reason == "purged"
    with pytest.raises(ReadbackError) as err:
        harness.store.read_input(ids[0], item.input_id)
    assert err.value.outcome == "retention_expired"


def test_bytes_left_by_a_crash_after_the_purge_commit_are_removed_on_restart(harness: RecordingHarness,
                                                                              ctx: Path) -> None:
    """If a purge committed but died before deleting bytes, reconciliation deletes them."""
    ids = record(harness, ctx, "r", 1)
    item = harness.store.attempt(ids[0]).items[0]
    with harness.store.catalog.write() as con:  # what the purge transaction leaves before any unlink
        con.execute("INSERT INTO purged VALUES (?, '', 0)", [ids[0]])
        con.execute("UPDATE items SET artifact_status = 'evicted', status_reason = 'purged' WHERE attempt_id = ?",
                    ids)
    assert harness.store.object_path(item.sha256).exists()
    reconcile_store(harness.store)
    assert not harness.store.object_path(item.sha256).exists()
    assert harness.store.attempt(ids[0]).items[0].artifact_status == "evicted"


def test_purge_by_source_keeps_other_items(harness: RecordingHarness, tmp_path: Path) -> None:
    """Purging a source path removes only items from that source."""
    c = tmp_path / "c"
    (c / "private").mkdir(parents=True)
    (c / "private" / "secret.txt").write_text("secret")
    (c / "public.txt").write_text("public")
    with harness.observer().attempt(run_id="r", request=resolve_request("t"), context_roots=[c]) as rec:
        pass
    report = purge(harness.store, source_path=str(c / "private"))
    items = {i.label: i for i in harness.store.attempt(rec.attempt_id).items}
    assert report.items == 1 and items["private/secret.txt"].status_reason == "purged"
    assert harness.store.read_input(rec.attempt_id, items["public.txt"].input_id).data == b"public"


def test_delete_run_removes_bytes_and_metadata(harness: RecordingHarness, ctx: Path) -> None:
    """Deleting a run removes its attempt records and bytes and leaves other runs alone."""
    a = record(harness, ctx, "gone", 2)
    b = record(harness, ctx, "kept", 1)
    object_age(harness.store, 60)
    report = delete_run(harness.store, "gone")
    assert report.deleted_attempts == 2
    assert all(harness.store.attempt(i) is None for i in a)
    assert harness.store.attempt(b[0]) is not None
    assert len(list(harness.store.objects_dir.iterdir())) == 1


def test_reader_checks_permission_retention_digest_and_revocation(harness: RecordingHarness, ctx: Path,
                                                                  tmp_path: Path) -> None:
    """Each read re-checks permission, retention, digest and revocation, with a distinct outcome each."""
    (ctx / "doc.txt").write_text("customer doc")
    with harness.observer().attempt(run_id="run-1", request=resolve_request("t"), context_roots=[ctx]) as rec:
        pass
    item = harness.store.attempt(rec.attempt_id).items[0]
    policy_file = tmp_path / "policy.json"
    policy_file.write_text(json.dumps({"default": "deny", "viewers": {"alice": {"runs": ["run-*"]}}}))
    reader = EvidenceReader(harness.store, policy=AccessPolicy.load(policy_file))
    assert reader.read("mallory", rec.attempt_id, item.input_id).outcome == "permission_denied"
    assert reader.read("alice", rec.attempt_id, "in-nope").outcome == "not_found"
    ok = reader.read("alice", rec.attempt_id, item.input_id)
    assert ok.ok and ok.snapshot.data == b"customer doc"
    listing = reader.list_items("alice", rec.attempt_id)
    assert listing[0].source_path is None and listing[0].sha256 is None
    revoke_source(harness.store, str(ctx), "consent withdrawn")
    revoked = reader.read("alice", rec.attempt_id, item.input_id)
    assert revoked.outcome == "source_unavailable"
    assert harness.store.read_input(rec.attempt_id, item.input_id).data == b"customer doc"  # hash still matches


def test_reader_integrity_and_retention_outcomes(harness: RecordingHarness, ctx: Path) -> None:
    """Tampered bytes read as integrity_mismatch and purged ones as retention_expired."""
    ids = record(harness, ctx, "r", 2)
    reader = EvidenceReader(harness.store, policy=AccessPolicy())
    i0 = harness.store.attempt(ids[0]).items[0]
    path = harness.store.object_path(i0.sha256)
    os.chmod(path, 0o644)
    path.write_bytes(b"tampered")
    assert reader.read("me", ids[0], i0.input_id).outcome == "integrity_mismatch"
    i1 = harness.store.attempt(ids[1]).items[0]
    purge(harness.store, attempt_ids=[ids[1]])
    assert reader.read("me", ids[1], i1.input_id).outcome == "retention_expired"


def test_malformed_policy_refuses(tmp_path: Path) -> None:
    """A malformed access policy is a clear error, not a silent allow."""
    from otel_inputs.store import PolicyError

    bad = tmp_path / "p.json"
    bad.write_text("{\"default\": \"maybe\"}")
    with pytest.raises(PolicyError):
        AccessPolicy.load(bad)
