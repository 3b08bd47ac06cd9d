"""Where each input's bytes are, on the attempt page: a real store uploading to moto's S3 server on
127.0.0.1 (the real s3fs client), read by the page (AppTest) through the store it already opens."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fleet"))
from apptest_helpers import boxes, lines, open_item, run_app, table, texts  # noqa: E402
from s3_server import S3, Relay, relay, s3  # noqa: E402, F401 - fixtures
from viewer_fixture import FixtureBuilder  # noqa: E402

from otel_inputs import names  # noqa: E402
from otel_inputs.store.bucket import RemoteState, attach, item_placements  # noqa: E402
from otel_inputs.viewer._bundle import write_bundle_file, verify_bundle  # noqa: E402

pytestmark = pytest.mark.timeout(180)
FILES = {"notes.md": b"# Notes\n\nthe export lives in cli.py\n", "plan.md": b"# Plan\n\nstep one\n"}


def _attempt(b: FixtureBuilder, attempt_id: str = "pl-1") -> str:
    """One attempt with two captured files by path and one input whose bytes were never captured."""
    b.attempt(attempt_id, 0, run_id="run-pl", session_id="s", phase="implement", send_kind="initial", turn_index=1,
              item_count=3)
    for seq, (name, data) in enumerate(FILES.items()):
        b.add_input(attempt_id, seq, name, "context_handoff", "path_reference", source_path=f"/work/{name}", data=data,
                    media_type="text/markdown", preview_kind="text")
    b.add_input(attempt_id, 2, "big.bin", "context_handoff", "path_reference", source_path="/work/big.bin",
                capture_status="too_large", artifact_status="never_captured")
    return attempt_id


SHARED = "Bytes of every input with a snapshot: "


def _page(monkeypatch: pytest.MonkeyPatch, db: Path, store: Path | None,
          attempt_id: str = "pl-1") -> tuple[dict[str, str], AppTest]:
    """Where the attempt page says each item's bytes are, per label: the "bytes:" line of each opened item,
    checked against the table's *bytes* column when the placements differ, or else the one line above the
    tables that says it once (and then no column)."""
    monkeypatch.setenv(names.ENV_DB, str(db))
    if store is None:
        monkeypatch.delenv(names.ENV_STORE, raising=False)
    else:
        monkeypatch.setenv(names.ENV_STORE, str(store))
    monkeypatch.delenv(names.ENV_ACCESS_POLICY, raising=False)
    monkeypatch.delenv(names.ENV_OBJECTS_URL, raising=False)  # the viewer finds the bucket in the catalog
    at = run_app(attempt=attempt_id)
    df = table(at, "label")
    column = dict(zip(df["label"], df["bytes"])) if "bytes" in df.columns else None
    shared = [t[len(SHARED):] for t in lines(at) if t.startswith(SHARED)]
    assert (column is None) == (len(shared) == 1), (column, shared)
    cells: dict[str, str] = {}
    for seq, label in zip(df["#"], df["label"]):
        at = open_item(at, "path_reference", f"{attempt_id}-in{seq}")
        cells[label] = next(line[len("bytes: "):] for t in texts(at) for line in t.split("\n")
                            if line.startswith("bytes: "))
    if column is not None:
        assert column == cells
    else:
        assert {c for c in cells.values() if c != "no bytes captured"} <= set(shared), (cells, shared)
    at = open_item(at, "path_reference", f"{attempt_id}-in0")
    return cells, at


def _s3_builder(tmp_path: Path, s3: S3, endpoint: str | None = None, **options: object) -> FixtureBuilder:  # noqa: F811
    bucket = s3.new_bucket()
    return FixtureBuilder(tmp_path, objects_url=f"s3://{bucket}/fleet",
                          objects_options=s3.options(endpoint, **options))  # type: ignore[arg-type]


def test_uploaded_bytes_show_in_the_bucket_and_preview_from_it(tmp_path: Path, s3: S3,  # noqa: F811
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Once the uploads are recorded done the page says "in the bucket (uploaded)" for each captured input,
    and with the local copies gone it says so and previews the bucket's verified bytes."""
    b = _s3_builder(tmp_path, s3)
    _attempt(b)
    db, store_path = b.write()
    assert b.store is not None and attach(b.store).flush(30)
    cells, at = _page(monkeypatch, db, store_path)
    assert cells == {"notes.md": "local copy; in the bucket (uploaded)", "plan.md": "local copy; in the bucket (uploaded)",
                     "big.bin": "no bytes captured"}
    assert not any("not in the bucket" in t for t in texts(at))
    for place in item_placements(b.store, "pl-1").values():
        assert place.remote is RemoteState.UPLOADED
    for item in b.store.attempt("pl-1").items:
        if item.sha256:
            os.unlink(b.store.objects.path(item.sha256))
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3.endpoint)  # the viewer's reads reach the bucket the catalog names
    cells, at = _page(monkeypatch, db, store_path)
    assert cells["notes.md"] == cells["plan.md"] == "in the bucket (uploaded); no local copy"
    assert boxes(at)[0].strip() == FILES["notes.md"].decode().strip()  # the preview, read from the bucket
    assert any(t.startswith("Preview of #0: ") and "SHA-256 verified" in t for t in texts(at))
    out = tmp_path / "b.tar"
    write_bundle_file(out, db, store_path, "pl-1")
    snaps = {s["seq"]: s for s in verify_bundle(out)["snapshots"]}
    assert snaps[0]["status"] == "included" and snaps[0]["placement"] == "in the bucket (uploaded); no local copy"
    assert snaps[2]["placement"] == "no bytes captured"


def test_queued_upload_is_never_shown_as_stored(tmp_path: Path, s3: S3, relay: Relay,  # noqa: F811
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """While the uploader is held inside its PUT (a paused relay) the page says "upload queued — not yet in the
    bucket" and notes the gap; "in the bucket" appears only after the upload is recorded."""
    b = _s3_builder(tmp_path, s3, relay.endpoint)
    _attempt(b)
    db, store_path = b.write()
    assert b.store is not None
    for _ in range(200):  # the uploader has recorded the batch queued and is now inside its first PUT
        if relay.accepted:
            break
        time.sleep(0.05)
    assert relay.accepted
    try:
        cells, at = _page(monkeypatch, db, store_path)
        assert cells["notes.md"] == cells["plan.md"] == "local copy; upload queued — not yet in the bucket"
        assert any(t.startswith("2 of 2 input(s) kept on disk are not in the bucket (2 upload(s) queued)") for t in texts(at))
        assert not any("(uploaded)" in c for c in cells.values())
    finally:
        relay.running.set()
    assert attach(b.store).flush(60)
    assert _page(monkeypatch, db, store_path)[0]["notes.md"] == "local copy; in the bucket (uploaded)"


def test_a_bucket_refusing_writes_is_a_visible_gap(tmp_path: Path, s3: S3, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    """Uploads a read-only bucket refuses (403) read "upload failed: refused: … — a gap" on every captured input,
    with a note counting them, in the table, the item's details and the bundle's manifest."""
    key, secret = s3.read_only_user()
    b = _s3_builder(tmp_path, s3, key=key, secret=secret)
    _attempt(b)
    with s3.iam_enforced():
        db, store_path = b.write()
        assert b.store is not None and attach(b.store).flush(60)
    cells, at = _page(monkeypatch, db, store_path)
    for label in FILES:
        assert cells[label].startswith("local copy; upload failed: refused: ") and cells[label].endswith(" — a gap")
    assert any(t.startswith("2 of 2 input(s) kept on disk are not in the bucket (2 upload(s) failed)") for t in texts(at))
    out = tmp_path / "b.tar"
    write_bundle_file(out, db, store_path, "pl-1")
    assert {s["placement"] for s in verify_bundle(out)["snapshots"] if s["seq"] < 2} == {cells["notes.md"], cells["plan.md"]}


def test_without_a_bucket_or_a_store_the_page_says_so(builder: FixtureBuilder, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A store with no bucket shows "local copy; bucket not configured"; no store, or a store that is not
    there, says the placement is not known and why (never a blank cell)."""
    _attempt(builder)
    db, store_path = builder.write()
    cells, at = _page(monkeypatch, db, store_path)
    assert cells == {"notes.md": "local copy; bucket not configured", "plan.md": "local copy; bucket not configured",
                     "big.bin": "no bytes captured"}
    assert SHARED + "local copy; bucket not configured" in lines(at)  # said once: no column repeats it
    assert not any("bytes" in df.value.columns for df in at.dataframe)
    assert not any("not in the bucket" in t for t in texts(at))
    assert set(_page(monkeypatch, db, None)[0].values()) == {"not known: no artifact store configured"}
    missing = tmp_path / "gone"
    assert set(_page(monkeypatch, db, missing)[0].values()) == {f"not known: artifact store not found at {missing}"}


def test_placement_words_for_every_state() -> None:
    """Each remote state has its words: only "uploaded" says in the bucket, failed and unrecorded uploads of
    kept bytes are a gap, and bytes gone from disk and bucket say so."""
    from otel_inputs.store.bucket import Placement
    from otel_inputs.viewer._evidence import placement_text

    words = {
        (True, None, True): "local copy; no upload recorded — not in the bucket, a gap",
        (True, None, False): "local copy; bucket not configured",
        (True, RemoteState.QUEUED, True): "local copy; upload queued — not yet in the bucket",
        (True, RemoteState.FAILED, True): "local copy; upload failed: queue full: upload skipped — a gap",
        (True, RemoteState.DELETING, True): "local copy; bucket copy being deleted — not in the bucket",
        (True, RemoteState.UPLOADED, True): "local copy; in the bucket (uploaded)",
        (False, RemoteState.UPLOADED, True): "in the bucket (uploaded); no local copy",
        (False, RemoteState.QUEUED, True): "no copy: not on disk and not in the bucket",
        (False, RemoteState.FAILED, True): "no copy: not on disk and not in the bucket (upload failed: queue full: upload skipped)",
        (False, None, False): "no copy: not on disk and not in the bucket",
    }
    for (local, remote, bucket), text in words.items():
        reason = "queue_full: upload skipped" if remote is RemoteState.FAILED else None
        assert placement_text(Placement(local, remote, reason), bucket=bucket) == text
    assert placement_text(None, bucket=True) == "not known: the store has no record of these bytes"
