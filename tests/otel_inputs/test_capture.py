from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import pytest

from oi_fixtures import PNG_BYTES, TINY, FakeClock, make_context_dir
from otel_inputs import (
    AdmissionDecision,
    ArtifactStore,
    CaptureLimits,
    DeliveryMode,
    ProviderAttachment,
    SessionTracker,
    capture_attempt_inputs,
    resolve_request,
)
from otel_inputs.types import (
    ArtifactStatus,
    CaptureDecision,
    CaptureStatus,
    Coverage,
    GapReason,
    PreviewKind,
    SourceKind,
)

ADMITTED = AdmissionDecision(CaptureDecision.ADMITTED)


def capture(store, roots=(), **kw):
    kw.setdefault("decision", ADMITTED)
    return capture_attempt_inputs(attempt_id=kw.pop("attempt_id", "att-1"), run_id="run-1", store=store,
                                  context_roots=roots, **kw)


def by_label(packet):
    return {i.label: i for i in packet.items}


def test_context_dir_statuses(store: ArtifactStore, context_dir: Path) -> None:
    """Text and PNG are captured by path reference; the symlink and FIFO are unavailable rows, never followed or opened."""
    p = capture(store, [context_dir])
    items = by_label(p)
    assert [i.label for i in p.items] == ["img/diagram.png", "link-to-outside", "notes.md", "pipe"]
    assert all(i.delivery_mode is DeliveryMode.PATH_REFERENCE for i in p.items)
    assert all(i.source_kind is SourceKind.CONTEXT_HANDOFF for i in p.items)
    png = items["img/diagram.png"]
    assert png.capture_status is CaptureStatus.CAPTURED and png.media_type == "image/png"
    assert png.preview_kind is PreviewKind.IMAGE and png.sha256 == hashlib.sha256(PNG_BYTES).hexdigest()
    assert items["notes.md"].media_type.startswith("text/plain") and items["notes.md"].preview_kind is PreviewKind.TEXT
    link = items["link-to-outside"]
    assert link.capture_status is CaptureStatus.UNREADABLE and "not followed" in link.detail
    assert link.artifact_status is ArtifactStatus.NEVER_CAPTURED and link.sha256 is None
    assert items["pipe"].capture_status is CaptureStatus.UNREADABLE and "FIFO" in items["pipe"].detail
    assert (p.coverage, p.declared_count, p.captured_count, p.omitted_count) == (Coverage.COMPLETE, 4, 2, 2)
    assert [i.seq for i in p.items] == [0, 1, 2, 3]
    # The outside file's bytes never reached the store.
    secret = hashlib.sha256((context_dir.parent / "outside-secret.txt").read_bytes()).hexdigest()
    assert not store.object_path(secret).exists()


def test_socket_and_device_are_not_opened(store: ArtifactStore, tmp_path: Path) -> None:
    """A socket and a character device in the tree are recorded unreadable without being opened."""
    root = make_context_dir(tmp_path / "c", fifo=False, sock=True)
    os.symlink("/dev/zero", root / "zero-link")
    p = capture(store, [root])
    items = by_label(p)
    assert items["sock"].capture_status is CaptureStatus.UNREADABLE and "socket" in items["sock"].detail
    assert items["zero-link"].capture_status is CaptureStatus.UNREADABLE


def test_snapshots_read_back_verified(store: ArtifactStore, context_dir: Path) -> None:
    """Captured bytes read back only by (attempt id, input id) and match the source."""
    p = capture(store, [context_dir])
    png = by_label(p)["img/diagram.png"]
    snap = store.read_input("att-1", png.input_id)
    assert snap.data == PNG_BYTES
    assert store.attempt("att-1").items[png.seq].sha256 == png.sha256


def test_order_is_deterministic_and_componentwise(store: ArtifactStore, tmp_path: Path) -> None:
    """Entries are ordered by path components (bytes), independent of creation order."""
    root = tmp_path / "o"
    for rel in ["b.txt", "a-c.txt", "a/z.txt", "a/b/c.txt", "A.txt"]:
        f = root / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(rel)
    labels = [i.label for i in capture(store, [root]).items]
    assert labels == ["A.txt", "a/b/c.txt", "a/z.txt", "a-c.txt", "b.txt"]
    assert labels == [i.label for i in capture(store, [root], attempt_id="att-2").items]


def test_file_count_bound(store: ArtifactStore, tmp_path: Path) -> None:
    """More files than the bound stops with one enumeration_incomplete sentinel and unknown totals."""
    root = tmp_path / "many"
    root.mkdir()
    for i in range(10_000):
        (root / f"f{i:05d}").write_bytes(b"x")
    p = capture(store, [root], limits=CaptureLimits(max_files=100))
    assert len(p.items) == 101
    sentinel = p.items[-1]
    assert sentinel.capture_status is CaptureStatus.ENUMERATION_INCOMPLETE and "file_count" in sentinel.detail
    assert sum(i.is_sentinel for i in p.items) == 1
    assert (p.coverage, p.declared_count, p.omitted_count, p.captured_count) == (Coverage.PARTIAL, None, None, 100)
    assert p.gap_reason == GapReason.LIMIT_EXCEEDED.value


def test_depth_bound(store: ArtifactStore, tmp_path: Path) -> None:
    """A tree deeper than the bound (depth 20) stops with a depth sentinel."""
    root = tmp_path / "deep"
    d = root
    for i in range(20):
        d = d / f"d{i}"
    d.mkdir(parents=True)
    (d / "leaf.txt").write_text("deep")
    (root / "top.txt").write_text("top")
    p = capture(store, [root])
    assert p.items[-1].capture_status is CaptureStatus.ENUMERATION_INCOMPLETE
    assert "depth" in p.items[-1].detail and p.coverage is Coverage.PARTIAL


def test_file_within_depth_bound_is_captured(store: ArtifactStore, tmp_path: Path) -> None:
    """A file exactly at the depth bound is captured and coverage stays complete."""
    root = tmp_path / "eight"
    d = root
    for i in range(7):
        d = d / f"d{i}"
    d.mkdir(parents=True)
    (d / "leaf.txt").write_text("ok")
    p = capture(store, [root])
    assert p.coverage is Coverage.COMPLETE and p.items[0].capture_status is CaptureStatus.CAPTURED


def test_per_file_bound_on_sparse_200mib_file(store: ArtifactStore, tmp_path: Path) -> None:
    """A 200 MiB (sparse) file is limit_exceeded without being read; the walk goes on."""
    root = tmp_path / "big"
    root.mkdir()
    with open(root / "huge.bin", "wb") as fh:
        fh.truncate(200 * 1024 * 1024)
    (root / "small.txt").write_text("small")
    p = capture(store, [root])
    items = by_label(p)
    assert items["huge.bin"].capture_status is CaptureStatus.LIMIT_EXCEEDED
    assert "file_bytes" in items["huge.bin"].detail
    assert items["small.txt"].capture_status is CaptureStatus.CAPTURED
    assert p.coverage is Coverage.COMPLETE and p.declared_count == 2 and p.captured_count == 1


def test_total_bytes_bound(store: ArtifactStore, tmp_path: Path) -> None:
    """Crossing the per-attempt byte budget stops enumeration with a total_bytes sentinel."""
    root = tmp_path / "total"
    root.mkdir()
    for i in range(8):
        (root / f"f{i}").write_bytes(bytes([i]) * 1000)
    p = capture(store, [root], limits=TINY)
    assert sum(1 for i in p.items if i.capture_status is CaptureStatus.CAPTURED) == 4
    assert p.items[-1].capture_status is CaptureStatus.ENUMERATION_INCOMPLETE and "total_bytes" in p.items[-1].detail
    assert p.declared_count is None


def test_wall_time_bound(store: ArtifactStore, tmp_path: Path, fake_clock: FakeClock) -> None:
    """The injected monotonic clock passing the bound stops capture with a wall_time sentinel."""
    root = tmp_path / "slow"
    root.mkdir()
    for i in range(10):
        (root / f"f{i}").write_text(str(i))
    fake_clock.step = 1.0
    p = capture(store, [root], clock=fake_clock, limits=CaptureLimits(max_seconds=3.5))
    assert p.items[-1].capture_status is CaptureStatus.ENUMERATION_INCOMPLETE and "wall_time" in p.items[-1].detail
    assert 1 <= sum(1 for i in p.items if i.capture_status is CaptureStatus.CAPTURED) < 10


def test_symlink_loop_and_dangling_link(store: ArtifactStore, tmp_path: Path) -> None:
    """A symlink loop and a dangling link are unavailable rows and the walk terminates."""
    root = tmp_path / "loop"
    root.mkdir()
    os.symlink(root, root / "self")
    os.symlink(root / "nowhere", root / "dangling")
    p = capture(store, [root])
    assert [(i.label, i.capture_status) for i in p.items] == [
        ("dangling", CaptureStatus.UNREADABLE), ("self", CaptureStatus.UNREADABLE)]


def test_directory_swapped_for_symlink_mid_walk(store: ArtifactStore, tmp_path: Path, fake_clock: FakeClock) -> None:
    """A directory replaced by a symlink after listing is refused, not followed."""
    root = tmp_path / "swap"
    (root / "a").mkdir(parents=True)
    (root / "a" / "inner.txt").write_text("inner")
    (root / "b").mkdir()
    (root / "b" / "file.txt").write_text("b")
    target = tmp_path / "elsewhere"
    target.mkdir()
    (target / "secret.txt").write_text("do not capture")

    def swap(calls: int) -> None:
        if (root / "b").is_dir() and not (root / "b").is_symlink() and calls > 2:
            shutil.rmtree(root / "b")
            os.symlink(target, root / "b")

    fake_clock.on_tick = swap
    p = capture(store, [root], clock=fake_clock)
    labels = {i.label: i for i in p.items}
    assert "b/secret.txt" not in labels and "secret.txt" not in labels
    assert labels["b"].capture_status is CaptureStatus.UNREADABLE and "symbolic link" in labels["b"].detail
    assert labels["a/inner.txt"].capture_status is CaptureStatus.CAPTURED


def test_file_deleted_between_listing_and_copy(store: ArtifactStore, tmp_path: Path, fake_clock: FakeClock) -> None:
    """A file removed after listing is recorded missing."""
    root = tmp_path / "del"
    root.mkdir()
    (root / "a.txt").write_text("a")
    (root / "z.txt").write_text("z")
    fake_clock.on_tick = lambda calls: (root / "z.txt").unlink(missing_ok=True) if calls == 3 else None
    p = capture(store, [root], clock=fake_clock)
    assert by_label(p)["z.txt"].capture_status is CaptureStatus.MISSING


@pytest.mark.parametrize("change", ["grow", "shrink", "delete", "replace"])
def test_file_changed_during_copy_is_discarded(store: ArtifactStore, tmp_path: Path, change: str) -> None:
    """A file that grows, shrinks, is deleted or replaced mid-copy is changed_during_capture and its bytes are not kept."""
    root = tmp_path / "race"
    root.mkdir()
    f = root / "data.bin"
    f.write_bytes(b"a" * (3 << 20))
    done = []

    def mutate(rel: tuple[str, ...]) -> None:
        if done:
            return
        done.append(1)
        if change == "grow":
            with open(f, "ab") as fh:
                fh.write(b"more")
        elif change == "shrink":
            os.truncate(f, 10)
        elif change == "delete":
            f.unlink()
        else:
            f.unlink()
            f.write_bytes(b"b" * (3 << 20))

    p = capture(store, [root], on_chunk=mutate)
    item = p.items[0]
    assert item.capture_status is CaptureStatus.CHANGED_DURING_CAPTURE, item
    assert item.artifact_status is ArtifactStatus.NEVER_CAPTURED and item.sha256 is None
    assert not any(store.objects_dir.rglob("*" * 1)) or all(
        hashlib.sha256(o.read_bytes()).hexdigest() == o.name for o in store.objects_dir.rglob("*") if o.is_file())
    assert list(store.staging_dir.iterdir()) == []


def test_unreadable_file_as_unprivileged_process(tmp_path: Path) -> None:
    """A file the capturing process may not read is recorded unreadable (run as an unprivileged user)."""
    if os.geteuid() != 0:
        pytest.skip("needs root to start the capture as another user")
    base = Path("/tmp") / f"otel-inputs-perm-{os.getpid()}"
    shutil.rmtree(base, ignore_errors=True)
    (base / "ctx").mkdir(parents=True)
    try:
        os.chmod(base, 0o777)
        os.chmod(base / "ctx", 0o777)
        (base / "ctx" / "open.txt").write_text("ok")
        (base / "ctx" / "secret.txt").write_text("no")
        os.chmod(base / "ctx" / "open.txt", 0o644)
        os.chmod(base / "ctx" / "secret.txt", 0o600)
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:  # child: drop to an unprivileged user, then capture with the already-loaded code
            try:
                os.close(read_fd)
                os.setgid(65534)
                os.setuid(65534)
                store = ArtifactStore(base / "store")
                p = capture(store, [base / "ctx"])
                os.write(write_fd, ";".join(f"{i.label}={i.capture_status.value}" for i in p.items).encode())
            finally:
                os._exit(0)
        os.close(write_fd)
        with os.fdopen(read_fd, "rb") as fh:
            result = fh.read().decode()
        os.waitpid(pid, 0)
        assert result == "open.txt=captured;secret.txt=unreadable"
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_hostile_names_are_safe_labels(store: ArtifactStore, tmp_path: Path) -> None:
    """Non-UTF-8, newline, markdown and HTML names become one-line valid-UTF-8 labels and are still captured."""
    root = tmp_path / "names"
    root.mkdir()
    bad = os.fsencode(root) + b"/caf\xe9.txt"
    with open(bad, "wb") as fh:
        fh.write(b"latin")
    (root / "two\nlines.md").write_text("x")
    (root / "**x** <img src=x onerror=alert(1)>.md").write_text("y")
    p = capture(store, [root])
    labels = [i.label for i in p.items]
    assert all("\n" not in lab for lab in labels)
    assert "caf\\xe9.txt" in labels and "two\\x0alines.md" in labels
    assert "**x** <img src=x onerror=alert(1)>.md" in labels
    for lab in labels:
        lab.encode("utf-8")
    assert all(i.capture_status is CaptureStatus.CAPTURED for i in p.items)


def test_empty_and_missing_roots(store: ArtifactStore, tmp_path: Path) -> None:
    """An empty directory gives a complete empty packet; a missing root is one 'missing' row."""
    (tmp_path / "empty").mkdir()
    empty = capture(store, [tmp_path / "empty"])
    assert empty.items == () and empty.coverage is Coverage.COMPLETE and empty.declared_count == 0
    missing = capture(store, [tmp_path / "nope"], attempt_id="att-2")
    assert [(i.capture_status, i.label) for i in missing.items] == [(CaptureStatus.MISSING, str(tmp_path / "nope"))]


def test_root_that_is_a_symlink_is_not_followed(store: ArtifactStore, tmp_path: Path, context_dir: Path) -> None:
    """A declared root that is itself a symlink is refused rather than followed."""
    os.symlink(context_dir, tmp_path / "rootlink")
    p = capture(store, [tmp_path / "rootlink"])
    assert len(p.items) == 1 and p.items[0].capture_status is CaptureStatus.UNREADABLE


def test_prompt_file_snapshot_uses_held_bytes(store: ArtifactStore, prompt_file: Path) -> None:
    """The prompt file is snapshotted from the bytes held at resolution, even after the file changes."""
    req = resolve_request(str(prompt_file))
    prompt_file.write_text("CHANGED")
    tracker = SessionTracker()
    first = tracker.next_attempt("a1", session_id="s")
    p = capture(store, request=req, lineage=first, attempt_id="a1")
    item = p.items[0]
    assert (item.source_kind, item.delivery_mode) == (SourceKind.PROMPT_FILE, DeliveryMode.INLINE)
    assert store.read_input("a1", item.input_id).data == req.raw_bytes
    later = capture(store, request=req, lineage=tracker.next_attempt("a2", session_id="s"), attempt_id="a2")
    assert later.items[0].delivery_mode is DeliveryMode.SESSION_HISTORY


def test_previous_envelope_is_canonical_json(store: ArtifactStore) -> None:
    """The envelope is stored as canonical UTF-8 JSON, inline on its send and session_history later."""
    env = {"z": 1, "a": {"é": [1, 2]}}
    p = capture(store, previous_envelope=env)
    item = p.items[0]
    assert item.source_kind is SourceKind.PREVIOUS_ENVELOPE and item.delivery_mode is DeliveryMode.INLINE
    assert store.read_input("att-1", item.input_id).data == '{"a":{"é":[1,2]},"z":1}'.encode()
    later = capture(store, previous_envelope=env, envelope_in_message=False, attempt_id="att-2")
    assert later.items[0].delivery_mode is DeliveryMode.SESSION_HISTORY


def test_provider_attachment_descriptor_is_recorded_from_same_bytes(store: ArtifactStore, tmp_path: Path) -> None:
    """One attachment descriptor list drives the request and the record: the stored bytes are the descriptor's bytes."""
    (tmp_path / "chart.png").write_bytes(PNG_BYTES)
    atts = [ProviderAttachment.from_path(tmp_path / "chart.png")]
    provider_request = {"attachments": [a.data for a in atts]}
    p = capture(store, attachments=atts)
    item = p.items[0]
    assert (item.source_kind, item.delivery_mode) == (SourceKind.EXPLICIT_ATTACHMENT, DeliveryMode.PROVIDER_ATTACHMENT)
    assert store.read_input("att-1", item.input_id).data == provider_request["attachments"][0]


def test_metadata_only_reads_no_bytes(store: ArtifactStore, context_dir: Path) -> None:
    """metadata_only lists items but stores no bytes and no hashes."""
    p = capture(store, [context_dir], decision=AdmissionDecision(CaptureDecision.METADATA_ONLY, GapReason.POLICY_OPT_OUT))
    assert len(p.items) == 4 and all(i.sha256 is None and i.snapshot_ref is None for i in p.items)
    assert p.captured_count == 0 and p.coverage is Coverage.PARTIAL
    assert not any(store.objects_dir.iterdir()) and store.attempt("att-1") is None


def test_suppressed_lists_nothing(store: ArtifactStore, context_dir: Path) -> None:
    """A suppressed decision traverses nothing: no items, unknown totals, a gap reason."""
    p = capture(store, [context_dir], decision=AdmissionDecision(CaptureDecision.SUPPRESSED, GapReason.TEMPORARY_RUN))
    assert p.items == () and p.declared_count is None and p.gap_reason == "temporary_run"
    assert p.coverage is Coverage.PARTIAL


def test_store_failure_becomes_gap(tmp_path: Path, context_dir: Path) -> None:
    """When the store cannot stage, items are still listed with the store gap and nothing is claimed available."""
    store = ArtifactStore(tmp_path / "s")
    shutil.rmtree(store.staging_dir)
    store.staging_dir.write_text("not a directory")
    p = capture(store, [context_dir])
    assert p.gap_reason == GapReason.STORE_UNAVAILABLE.value and p.coverage is Coverage.PARTIAL
    assert all(i.artifact_status is ArtifactStatus.NEVER_CAPTURED for i in p.items)
    assert len(p.items) == 4


def test_unchanged_file_is_stored_once(store: ArtifactStore, context_dir: Path) -> None:
    """Content addressing: capturing the same tree for many turns stores each distinct file once."""
    for n in range(5):
        capture(store, [context_dir], attempt_id=f"att-{n}")
    objects = [o for o in store.objects_dir.rglob("*") if o.is_file()]
    assert len(objects) == 2


def test_capture_wall_time_bound_comes_from_the_environment(caplog: pytest.LogCaptureFixture) -> None:
    """OTEL_INPUTS_CAPTURE_MAX_SECONDS sets the wall-time bound; unset, blank or invalid keeps 5 s (invalid warns)."""
    from otel_inputs import names

    assert CaptureLimits.from_env({names.ENV_CAPTURE_MAX_SECONDS: "42.5"}).max_seconds == 42.5
    assert CaptureLimits.from_env({}).max_seconds == 5.0
    assert CaptureLimits.from_env({names.ENV_CAPTURE_MAX_SECONDS: " "}).max_seconds == 5.0
    for bad in ("0", "-1", "nan", "inf", "soon"):
        caplog.clear()
        assert CaptureLimits.from_env({names.ENV_CAPTURE_MAX_SECONDS: bad}).max_seconds == 5.0
        assert names.ENV_CAPTURE_MAX_SECONDS in caplog.text
    assert CaptureLimits.from_env({names.ENV_CAPTURE_MAX_SECONDS: "7"}).max_files == CaptureLimits().max_files
