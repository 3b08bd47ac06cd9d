"""Capture holes found under attack, each closed (each hole's test failed before its fix)."""

from __future__ import annotations

import hashlib
import json
import os
import resource
import shutil
import signal
from pathlib import Path

import pytest

from oi_fixtures import TINY, FakeClock, run_unprivileged, shared_tmp
from otel_inputs import AdmissionDecision, ArtifactStore, CaptureLimits, capture_attempt_inputs
from otel_inputs.store import AccessPolicy, EvidenceReader, PolicyError, purge, revoke_source
from otel_inputs.types import ArtifactStatus, CaptureDecision, CaptureStatus, ReadbackOutcome

ADMITTED = AdmissionDecision(CaptureDecision.ADMITTED)


def capture(store, roots=(), **kw):
    kw.setdefault("decision", ADMITTED)
    return capture_attempt_inputs(attempt_id=kw.pop("attempt_id", "att-1"), run_id="run-1", store=store,
                                  context_roots=roots, **kw)


def rows(packet) -> list[tuple[str, str]]:
    return [(i.label, i.capture_status.value) for i in packet.items]


def test_directory_listable_but_not_enterable_is_one_unreadable_row() -> None:
    """A directory that can be listed but not entered gives its entries unreadable rows; the walk goes on."""
    base = shared_tmp("perm")
    try:
        ctx = base / "ctx"
        (ctx / "locked").mkdir(parents=True)
        (ctx / "locked" / "inner.txt").write_text("hidden")
        (ctx / "open.txt").write_text("ok")
        os.chmod(ctx, 0o755)
        os.chmod(ctx / "open.txt", 0o644)
        os.chmod(ctx / "locked", 0o444)  # r without x: listable, not enterable
        (base / "store").mkdir()
        os.chmod(base / "store", 0o777)

        def child() -> str:
            p = capture(ArtifactStore(base / "store"), [ctx])
            return json.dumps(rows(p) + [("gap", str(p.gap_reason))])

        result = json.loads(run_unprivileged(child))
        assert result == [["locked/inner.txt", "unreadable"], ["open.txt", "captured"], ["gap", "None"]]
    finally:
        os.chmod(base / "ctx" / "locked", 0o755)
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.parametrize("spelling", ["{}/", "{}/.", "{}//", "{}/./", "{}/../rootlink"])
def test_symlinked_root_is_refused_however_spelled(store: ArtifactStore, tmp_path: Path, context_dir: Path,
                                                   spelling: str) -> None:
    """A context root that is a symlink is refused whether written plain, with a trailing slash or with '/.'."""
    os.symlink(context_dir, tmp_path / "rootlink")
    p = capture(store, [spelling.format(tmp_path / "rootlink")])
    assert len(p.items) == 1 and p.items[0].capture_status is CaptureStatus.UNREADABLE
    assert "symlinks are not followed" in p.items[0].detail


def test_late_store_failure_keeps_the_attempts_one_time_window(store: ArtifactStore, tmp_path: Path) -> None:
    """A store failure late in capture falls back to metadata within the same time window, not a fresh one."""
    root = tmp_path / "ctx"
    root.mkdir()
    for i in range(10):
        (root / f"f{i}.txt").write_text(f"file {i}")
    clock = FakeClock()
    clock.step = 1.0
    copied: list[tuple[str, ...]] = []

    def break_store(rel: tuple[str, ...]) -> None:
        copied.append(rel)
        if len(copied) == 6:  # the store's staging vanishes while the seventh file is being staged
            shutil.rmtree(store.staging_dir)
    limits = CaptureLimits(max_seconds=14.0)
    p = capture(store, [root], clock=clock, limits=limits, on_chunk=break_store)
    assert p.gap_reason == "store_unavailable"
    # Each listed name costs one tick; the first pass used ~7 of the 14 s, so the metadata listing
    # of all 10 files (~11 ticks) cannot fit in what is left: it stops at the wall-time bound.
    assert p.items[-1].capture_status is CaptureStatus.ENUMERATION_INCOMPLETE
    assert "wall_time" in p.items[-1].detail


def test_declared_roots_are_bounded_like_files(store: ArtifactStore, tmp_path: Path) -> None:
    """Declaring more roots than the file bound stops at the bound and names it; later roots are not opened."""
    roots = [tmp_path / f"missing-{i}" for i in range(2000)]
    p = capture(store, roots, limits=TINY)
    assert [i.capture_status for i in p.items[:-1]] == [CaptureStatus.MISSING] * TINY.max_files
    assert p.items[-1].capture_status is CaptureStatus.ENUMERATION_INCOMPLETE
    assert "file_count" in p.items[-1].detail and p.declared_count is None


def test_short_write_never_installs_a_truncated_object(tmp_path: Path) -> None:
    """A write cut short (file-size limit) is a store gap: no object under the full SHA-256, no later reuse."""
    root = tmp_path / "ctx"
    root.mkdir()
    data = os.urandom(1 << 20)
    (root / "big.bin").write_bytes(data)
    store = ArtifactStore(tmp_path / "store")
    capture(store, [], attempt_id="warm")  # the catalog exists before the limit applies
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read_fd)
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit is short, then EFBIG
            resource.setrlimit(resource.RLIMIT_FSIZE, (256 * 1024, 256 * 1024))
            p = capture(ArtifactStore(tmp_path / "store"), [root], attempt_id="limited")
            os.write(write_fd, f"{p.items[0].artifact_status.value}".encode())
        finally:
            os._exit(0)
    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as fh:
        status = fh.read().decode()
    os.waitpid(pid, 0)
    assert status == ArtifactStatus.NEVER_CAPTURED.value
    for obj in store.objects_dir.iterdir():
        if not obj.name.startswith("."):
            assert hashlib.sha256(obj.read_bytes()).hexdigest() == obj.name
    again = capture(store, [root], attempt_id="unlimited")
    assert again.items[0].artifact_status is ArtifactStatus.AVAILABLE
    assert store.read_input("unlimited", again.items[0].input_id).data == data


def test_non_utf8_paths_are_found_by_revocation_and_purge(store: ArtifactStore, tmp_path: Path) -> None:
    """A root whose name is not UTF-8 is found by source revocation and by purge --source."""
    root = os.fsencode(tmp_path) + b"/d\xff"
    os.mkdir(root)
    with open(root + b"/a.txt", "wb") as fh:
        fh.write(b"alpha")
    p = capture(store, [root])
    item = p.items[0]
    assert item.capture_status is CaptureStatus.CAPTURED
    reader = EvidenceReader(store, policy=AccessPolicy())
    assert reader.read("me", "att-1", item.input_id).outcome == ReadbackOutcome.OK
    revoke_source(store, os.fsdecode(root))
    assert reader.read("me", "att-1", item.input_id).outcome == ReadbackOutcome.SOURCE_UNAVAILABLE
    report = purge(store, source_path=os.fsdecode(root + b"/a.txt"))
    assert report.items == 1


@pytest.mark.parametrize("viewers", [{"bob": {"runs": "run-a*"}}, {"bob": ["run-a*"]}, ["bob"],
                                     {"bob": {"runs": ["run-a*", 3]}}])
def test_access_policy_of_the_wrong_shape_is_refused(tmp_path: Path, viewers) -> None:
    """A policy whose viewers or runs have the wrong JSON shape is refused with a clear error, never widened."""
    path = tmp_path / "policy.json"
    path.write_text(json.dumps({"default": "deny", "viewers": viewers}))
    with pytest.raises(PolicyError, match="must be"):
        AccessPolicy.load(path)
