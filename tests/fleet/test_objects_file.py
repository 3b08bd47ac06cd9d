"""Snapshot bytes in a bucket through fsspec's generic path (file://), and capture without fsspec."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("fsspec", reason="fsspec is not installed (pip install 'otel-inputs[objects]')")

from click.testing import CliRunner  # noqa: E402

from otel_inputs import names, resolve_request  # noqa: E402
from otel_inputs.exporter.cli import main as cli  # noqa: E402
from otel_inputs.store import ArtifactStore, EvidenceReader, purge  # noqa: E402
from otel_inputs.store.bucket import RemoteState, attach, bucket_counts, item_placements  # noqa: E402
from otel_inputs.testing import RecordingHarness  # noqa: E402


def capture(store: ArtifactStore, root: Path, files: dict[str, bytes]) -> tuple[str, list[dict]]:
    root.mkdir()
    for rel, data in files.items():
        (root / rel).write_bytes(data)
    with RecordingHarness(store.root) as h:
        h.store = store
        with h.observer().attempt(run_id="r", request=resolve_request("t"), context_roots=[root]) as rec:
            pass
        events = [e for e in h.inputs(h.span_for(rec.attempt_id)) if e.get(names.INPUT_SHA256)]
    return rec.attempt_id, events


def test_file_bucket_upload_read_back_and_purge(tmp_path: Path) -> None:
    """On file:// the bytes land as <bucket>/objects/<sha256> (no temp names left), are read back from
    there once the local copy is gone, and a purge removes them."""
    bucket = tmp_path / "bucket"
    store = ArtifactStore(tmp_path / "store", objects_url=bucket.as_uri())
    attempt_id, events = capture(store, tmp_path / "ctx", {"a.txt": b"one", "b.txt": b"two"})
    assert attach(store).flush(30)
    digests = {e[names.INPUT_SHA256] for e in events}
    assert set(os.listdir(bucket / "objects")) == digests
    assert all((bucket / "objects" / d).read_bytes() in (b"one", b"two") for d in digests)
    remote = attach(store).remote()
    assert set(remote.iterate()) == digests and all(remote.has(d) for d in digests)
    for d in digests:
        os.unlink(store.objects.path(d))
    result = EvidenceReader(store).read("tester", attempt_id, events[0][names.INPUT_ID])
    assert result.ok and result.snapshot.data in (b"one", b"two")
    purge(store, attempt_ids=[attempt_id])
    assert os.listdir(bucket / "objects") == []
    assert bucket_counts(store) == {"local_only": 0}


def test_store_upload_command_backfills_objects_committed_before_the_bucket(tmp_path: Path) -> None:
    """Objects committed while no bucket was configured read "local only"; `otel-inputs store upload`
    uploads them and says so, and `store status` counts them in the bucket the catalog recorded."""
    plain = ArtifactStore(tmp_path / "store")
    attempt_id, events = capture(plain, tmp_path / "ctx", {"a.txt": b"before the bucket"})
    assert [p.describe() for p in item_placements(plain, attempt_id).values()] == ["local only"]
    bucket = tmp_path / "bucket"
    out = CliRunner().invoke(cli, ["store", "upload", "--store", str(tmp_path / "store")],
                             env={names.ENV_OBJECTS_URL: bucket.as_uri()})
    assert out.exit_code == 0, out.output
    assert "uploaded 1" in out.output
    status = CliRunner().invoke(cli, ["store", "status", "--json", "--store", str(tmp_path / "store")], env={})
    assert json.loads(status.output)["bucket"] == {"url": bucket.as_uri(), "uploaded": 1, "local_only": 0}
    again = ArtifactStore(tmp_path / "store", objects_url=bucket.as_uri())
    assert [p.remote for p in item_placements(again, attempt_id).values()] == [RemoteState.UPLOADED]
    assert (bucket / "objects" / events[0][names.INPUT_SHA256]).read_bytes() == b"before the bucket"


def test_capture_without_fsspec_stays_local_and_never_imports_it(tmp_path: Path) -> None:
    """With fsspec unavailable, a configured bucket is logged as unusable and capture completes locally;
    without a bucket URL fsspec is never imported at all."""
    script = textwrap.dedent("""
        import sys
        from pathlib import Path
        from opentelemetry.sdk.trace import TracerProvider
        from otel_inputs import AgentObserver, resolve_request
        from otel_inputs.store import ArtifactStore
        from otel_inputs.store.bucket import attach, item_placements
        root = Path(sys.argv[1]); (root / "ctx").mkdir(); (root / "ctx" / "a.txt").write_text("x")
        for name, url in (("plain", None), ("with-url", (root / "bucket").as_uri())):
            if url:
                sys.modules["fsspec"] = None  # import fsspec now raises ImportError
            store = ArtifactStore(root / name, objects_url=url)
            obs = AgentObserver(store=store, tracer_provider=TracerProvider())
            with obs.attempt(run_id="r", request=resolve_request("t"), context_roots=[root / "ctx"]) as rec:
                pass
            attach(store).flush(10)
            places = sorted(p.describe() for p in item_placements(store, rec.attempt_id).values())
            print(name, rec.packet.coverage.value, places, "fsspec" in sys.modules)
    """)

    out = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["plain complete ['local only'] False",
                                     "with-url complete ['local only'] True"]
    assert "fsspec is not installed" in out.stderr


def test_store_verify_checks_the_bucket_copy_of_an_object_whose_local_copy_is_gone(tmp_path: Path) -> None:
    """`store verify` counts an uploaded object without a local copy as in the bucket (not missing),
    re-hashes that copy, and fails on a bucket copy whose bytes were altered."""
    bucket = tmp_path / "bucket"
    store = ArtifactStore(tmp_path / "store", objects_url=bucket.as_uri())
    _, events = capture(store, tmp_path / "ctx", {"a.txt": b"kept in the bucket"})
    assert attach(store).flush(30)
    digest = events[0][names.INPUT_SHA256]
    os.unlink(store.objects.path(digest))
    args = ["store", "verify", "--store", str(tmp_path / "store")]
    out = CliRunner().invoke(cli, args, env={})
    assert out.exit_code == 0, out.output
    assert "missing: 0, in the bucket only: 1" in out.output
    (bucket / "objects" / digest).write_bytes(b"altered in the bucket")
    out = CliRunner().invoke(cli, args, env={})
    assert out.exit_code == 1 and f"MISMATCH {digest}: bucket copy does not match its name" in out.output, out.output


def test_a_forked_child_uploads_with_its_own_uploader_and_the_parents_keeps_working(tmp_path: Path) -> None:
    """After a fork the child's store has dropped the parent's uploader and lock (one register_at_fork
    hook): the child's commit is uploaded by its own new uploader, and the parent's uploader goes on."""
    import time

    bucket = tmp_path / "bucket"
    store = ArtifactStore(tmp_path / "store", objects_url=bucket.as_uri())
    capture(store, tmp_path / "c0", {"parent-1.txt": b"parent one"})
    assert attach(store).flush(30)
    parent_uploader = attach(store)._uploader
    assert parent_uploader is not None
    pid = os.fork()
    if pid == 0:  # the child: report through the exit code only
        code = 2
        try:
            fresh = attach(store)._uploader is None
            child_attempt, _ = capture(store, tmp_path / "c1", {"child.txt": b"child bytes"})
            flushed = attach(store).flush(30)
            uploaded = all(p.in_bucket for p in item_placements(store, child_attempt).values())
            code = 0 if fresh and flushed and uploaded and attach(store)._uploader is not parent_uploader else 3
        finally:
            os._exit(code)
    status = None
    for _ in range(1200):  # at most 60 s
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        time.sleep(0.05)
    else:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        pytest.fail("the forked child did not finish in 60 s")
    assert os.waitstatus_to_exitcode(status) == 0
    attempt_id, _ = capture(store, tmp_path / "c2", {"parent-2.txt": b"parent two"})
    assert attach(store).flush(30)
    assert attach(store)._uploader is parent_uploader
    assert all(p.in_bucket for p in item_placements(store, attempt_id).values())
    assert {d.read_bytes() for d in (bucket / "objects").iterdir()} == {b"parent one", b"child bytes", b"parent two"}
