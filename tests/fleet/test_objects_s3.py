"""Snapshot bytes on S3: moto's server on 127.0.0.1 and the real s3fs client, fed by real captures
through the public agent API."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from s3_server import S3, Relay, relay, s3  # noqa: F401 - fixtures

from otel_inputs import names, resolve_request
from otel_inputs.store import ArtifactStore, EvidenceReader, RetentionPolicy, apply_retention, purge
from otel_inputs.store.bucket import RemoteState, attach, bucket_counts, item_placements, sync_bucket
from otel_inputs.testing import RecordingHarness
from otel_inputs.types import ReadbackOutcome
from otel_inputs.viewer._evidence import open_evidence

FILES = {"a.txt": b"alpha\n" * 700, "b.md": b"# beta\n" * 600, "c.py": b"print('gamma')\n" * 300}


def context(tmp_path: Path, files: dict[str, bytes] = FILES, name: str = "ctx") -> Path:
    root = tmp_path / name
    root.mkdir(exist_ok=True)
    for rel, data in files.items():
        (root / rel).write_bytes(data)
    return root


def capture(store: ArtifactStore, roots: list[Path], *, run_id: str = "r", attempt_id: str | None = None):
    """One attempt through AgentObserver; returns (attempt id, its input events, seconds the call took)."""
    with RecordingHarness(store.root) as h:
        h.store = store
        started = time.perf_counter()
        with h.observer().attempt(run_id=run_id, request=resolve_request("summarise the files"),
                                  context_roots=roots, attempt_id=attempt_id) as rec:
            pass
        took = time.perf_counter() - started
        events = h.inputs(h.span_for(rec.attempt_id))
    return rec.attempt_id, events, took


def s3_store(tmp_path: Path, s3: S3, bucket: str, *, endpoint: str | None = None, name: str = "store",  # noqa: F811
             timeout_s: float = 60.0, **kwargs) -> ArtifactStore:
    return ArtifactStore(tmp_path / name, objects_url=f"s3://{bucket}/fleet",
                         objects_options=s3.options(endpoint, timeout_s=timeout_s), **kwargs)


def captured(events: list[dict]) -> list[dict]:
    return [e for e in events if e.get(names.INPUT_CAPTURE_STATUS) == "captured"]


def test_capture_upload_then_viewer_reads_from_bucket(tmp_path: Path, s3: S3, monkeypatch) -> None:  # noqa: F811
    """A real capture is uploaded; with the local copies deleted the viewer's reader serves the bucket's bytes, verified."""
    bucket = s3.new_bucket()
    store = s3_store(tmp_path, s3, bucket)
    attempt_id, events, _ = capture(store, [context(tmp_path)])
    assert len(captured(events)) == 3
    assert attach(store).flush(30)
    places = item_placements(store, attempt_id)
    assert len(places) == 3 and all(p.remote is RemoteState.UPLOADED and p.local for p in places.values())
    keys = {k.rsplit("/", 1)[-1] for k in s3.client().ls(f"{bucket}/fleet/objects")}
    assert keys == {e[names.INPUT_SHA256] for e in captured(events)}

    for e in captured(events):
        os.unlink(store.objects.path(e[names.INPUT_SHA256]))
    assert {p.describe() for p in item_placements(store, attempt_id).values()} == {"bucket only"}
    # The viewer opens the store itself, with neither the URL nor options: the catalog names the
    # bucket, the standard AWS variables name the endpoint.
    monkeypatch.delenv(names.ENV_OBJECTS_URL, raising=False)
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3.endpoint)
    ev = open_evidence(store.root, viewer="tester")
    by_name = {e[names.INPUT_LABEL].rsplit("/", 1)[-1]: e for e in captured(events)}
    for filename, data in FILES.items():
        result = ev.reader.read("tester", attempt_id, by_name[filename][names.INPUT_ID])
        assert result.ok, result.message
        assert result.snapshot.data == data


def test_queued_is_never_reported_stored_and_a_timeout_is_a_recorded_failure(tmp_path: Path, s3: S3,  # noqa: F811
                                                                             relay: Relay, monkeypatch) -> None:  # noqa: F811
    """While the bucket hangs the agent call returns at once and items read "local only (upload queued)";
    the read timeout then records a failed upload with its reason."""
    bucket = s3.new_bucket()
    monkeypatch.setenv(names.ENV_OBJECTS_TIMEOUT_S, "1")
    # A 3 s timeout: long enough that the placements below are read while the PUT still hangs, however
    # loaded the machine (0.5 s had often run out first); the agent call returning with its items still
    # "upload queued" shows it did not wait for the bucket.
    store = s3_store(tmp_path, s3, bucket, endpoint=relay.endpoint, timeout_s=3.0)
    attempt_id, events, _ = capture(store, [context(tmp_path)])
    assert len(captured(events)) == 3
    for _ in range(100):
        if relay.accepted:
            break
        time.sleep(0.05)
    places = item_placements(store, attempt_id).values()
    assert all(not p.in_bucket and p.local for p in places)
    assert all(p.describe() in ("local only", "local only (upload queued)") for p in places)
    assert attach(store).flush(60)
    places = item_placements(store, attempt_id).values()
    assert {p.remote for p in places} == {RemoteState.FAILED}
    assert all(p.reason.startswith("timeout:") for p in places), [p.reason for p in places]
    assert all(p.describe().startswith("local only (upload failed: timeout") for p in places)
    assert store.read_input(attempt_id, next(iter(item_placements(store, attempt_id)))).data in FILES.values()


def test_full_queue_skips_uploads_as_recorded_gaps_that_store_upload_retries(tmp_path: Path, s3: S3,  # noqa: F811
                                                                             relay: Relay) -> None:  # noqa: F811
    """With the uploader stuck and a queue of 2, further commits are skipped (failed, queue_full), the
    agent calls unaffected; `sync_bucket` (otel-inputs store upload) later uploads them all."""
    bucket = s3.new_bucket()
    store = s3_store(tmp_path, s3, bucket, endpoint=relay.endpoint)
    attach(store)._queue_max = 2
    first, _, _ = capture(store, [context(tmp_path, {"first.txt": b"first"}, "c0")])
    for _ in range(200):  # the uploader is now inside its first PUT, held by the paused relay
        if relay.accepted:
            break
        time.sleep(0.05)
    assert relay.accepted
    ids = [capture(store, [context(tmp_path, {f"f{k}.txt": f"file {k}".encode()}, f"c{k + 1}")])[0]
           for k in range(6)]
    relay.running.set()
    assert attach(store).flush(60)
    places = [p for a in ids for p in item_placements(store, a).values()]
    skipped = [p for p in places if p.remote is RemoteState.FAILED]
    assert len(skipped) >= 3 and all(p.reason.startswith("queue_full") for p in skipped)
    assert all(p.local for p in places)  # the gap is about the bucket only
    report = sync_bucket(store)
    assert report.uploaded == len(skipped) and not report.failed
    assert all(p.in_bucket for a in [first, *ids] for p in item_placements(store, a).values())


def test_bucket_refusing_writes_records_refused_upload(tmp_path: Path, s3: S3) -> None:  # noqa: F811
    """A bucket whose credentials may only read (403 AccessDenied) records each upload failed ("refused")
    while the attempt itself is captured completely."""
    bucket = s3.new_bucket()
    key, secret = s3.read_only_user()
    options = s3.options() | {"key": key, "secret": secret}
    store = ArtifactStore(tmp_path / "store", objects_url=f"s3://{bucket}/fleet", objects_options=options)
    with s3.iam_enforced():
        attempt_id, events, _ = capture(store, [context(tmp_path)])
        assert attach(store).flush(60)
    assert len(captured(events)) == 3
    record = store.attempt(attempt_id)
    assert record.coverage == "complete" and all(i.artifact_status == "available" for i in record.items if i.sha256)
    places = item_placements(store, attempt_id).values()
    assert {p.remote for p in places} == {RemoteState.FAILED}
    assert all(p.reason.startswith("refused:") for p in places), [p.reason for p in places]
    assert not s3.client().find(bucket)


def test_bytes_corrupted_on_the_way_up_are_never_recorded_uploaded(tmp_path: Path, s3: S3,  # noqa: F811
                                                                   relay: Relay) -> None:  # noqa: F811
    """An upload whose bytes change in transit is caught by the ETag check: recorded failed (integrity),
    never uploaded, and the wrong object removed from the bucket."""
    bucket = s3.new_bucket()
    relay.rewrite = (b"ORIGINAL-BYTES", b"TAMPERED-BYTES")
    relay.running.set()
    store = s3_store(tmp_path, s3, bucket, endpoint=relay.endpoint)
    attempt_id, events, _ = capture(store, [context(tmp_path, {"x.txt": b"the ORIGINAL-BYTES of x\n"})])
    assert attach(store).flush(30)
    [place] = item_placements(store, attempt_id).values()
    assert place.remote is RemoteState.FAILED and not place.in_bucket, place
    assert place.reason.startswith("integrity: bucket stored other bytes"), place.reason
    assert not s3.client().find(f"{bucket}/fleet/objects")  # the wrong object was removed again


def test_corrupted_bucket_object_is_refused_never_shown(tmp_path: Path, s3: S3) -> None:  # noqa: F811
    """An object altered in the bucket is refused as an integrity mismatch when the local copy is gone."""
    bucket = s3.new_bucket()
    store = s3_store(tmp_path, s3, bucket)
    attempt_id, events, _ = capture(store, [context(tmp_path)])
    assert attach(store).flush(30)
    victim = captured(events)[0]
    digest = victim[names.INPUT_SHA256]
    s3.client().pipe_file(f"{bucket}/fleet/objects/{digest}", b"tampered bytes")
    os.unlink(store.objects.path(digest))
    result = EvidenceReader(store).read("tester", attempt_id, victim[names.INPUT_ID])
    assert result.outcome == ReadbackOutcome.INTEGRITY_MISMATCH and result.snapshot is None
    os.unlink(store.objects.path(captured(events)[1][names.INPUT_SHA256]))
    s3.client().rm(f"{bucket}/fleet/objects/{captured(events)[1][names.INPUT_SHA256]}")
    gone = EvidenceReader(store).read("tester", attempt_id, captured(events)[1][names.INPUT_ID])
    assert gone.outcome == ReadbackOutcome.NOT_FOUND and "bucket" in gone.message


def test_purge_and_retention_delete_only_unreferenced_bucket_objects(tmp_path: Path, s3: S3) -> None:  # noqa: F811
    """Purging one attempt deletes its own bucket objects but keeps one another attempt shares; retention
    evicting the rest empties the bucket."""
    bucket = s3.new_bucket()
    store = s3_store(tmp_path, s3, bucket)
    shared = {"shared.txt": b"used by both attempts"}
    one, ev1, _ = capture(store, [context(tmp_path, shared | {"one.txt": b"only one"}, "c1")], run_id="r1")
    two, ev2, _ = capture(store, [context(tmp_path, shared | {"two.txt": b"only two"}, "c2")], run_id="r2")
    assert attach(store).flush(30)
    listing = lambda: {k.rsplit("/", 1)[-1] for k in s3.client().find(f"{bucket}/fleet/objects")}  # noqa: E731
    digest = {e[names.INPUT_LABEL].rsplit("/", 1)[-1]: e[names.INPUT_SHA256] for e in captured(ev1) + captured(ev2)}
    assert listing() == set(digest.values())
    purge(store, attempt_ids=[one])
    assert listing() == {digest["shared.txt"], digest["two.txt"]}
    store.flush()
    report = apply_retention(store, RetentionPolicy(budget_bytes=0))
    assert report.evicted_attempts == 1
    assert listing() == set() and bucket_counts(store).get("uploaded", 0) == 0


CRASHING_AGENT = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    sys.path.insert(0, sys.argv[4])
    from test_objects_s3 import capture
    from otel_inputs.store import ArtifactStore
    from otel_inputs.store.bucket import attach
    store = ArtifactStore(sys.argv[1], objects_url=sys.argv[2], objects_options={
        "endpoint_url": sys.argv[3], "key": "testing", "secret": "testing", "skip_instance_cache": True})
    capture(store, [Path(sys.argv[5])])
    print("committed", flush=True)
    time.sleep(120)
""")


def test_queued_uploads_survive_a_killed_process(tmp_path: Path, s3: S3, relay: Relay) -> None:  # noqa: F811
    """An agent killed while its uploads hang leaves them queued; the next process's uploader resumes them."""
    bucket = s3.new_bucket()
    url = f"s3://{bucket}/fleet"
    ctx = context(tmp_path)
    proc = subprocess.Popen([sys.executable, "-c", CRASHING_AGENT, str(tmp_path / "store"), url, relay.endpoint,
                             str(Path(__file__).parent), str(ctx)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "committed"
        store = ArtifactStore(tmp_path / "store", objects_url=url, objects_options=s3.options())
        for _ in range(200):
            if bucket_counts(store).get("queued") == 3:
                break
            time.sleep(0.05)
        assert bucket_counts(store).get("queued") == 3
    finally:
        proc.kill()
        proc.wait(10)
    up = attach(store).uploader()  # a new process: its uploader first resumes what was left
    assert up is not None and up.flush(30)
    assert bucket_counts(store).get("uploaded") == 3
    assert len(s3.client().ls(f"{bucket}/fleet/objects")) == 3
