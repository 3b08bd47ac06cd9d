"""A fleet viewer's copy of a published catalog is closed once no page uses it after a newer publish
replaced it: its SQLite connection and its (already unlinked) file do not stay until the viewer exits."""

from __future__ import annotations

import gc
import os
import sqlite3
from pathlib import Path

import pytest

from otel_inputs import AdmissionDecision, ArtifactStore, capture_attempt_inputs
from otel_inputs import names
from otel_inputs.store import FleetCatalogs, publish_now
from otel_inputs.types import CaptureDecision

ADMIT = AdmissionDecision(CaptureDecision.ADMITTED)


def _publish(store: ArtifactStore, tmp_path: Path, n: int) -> str:
    """Capture one more attempt and publish the catalog (a new version of the copy); returns the attempt id."""
    ctx = tmp_path / f"ctx-{n}"
    ctx.mkdir()
    (ctx / "a.txt").write_text(f"content {n}")
    attempt_id = f"att-{n}"
    capture_attempt_inputs(attempt_id=attempt_id, run_id="run", decision=ADMIT, store=store, context_roots=[ctx])
    assert store.bucket.flush(30)
    assert publish_now(store) is not None
    return attempt_id


def _open_files_under(folder: Path) -> list[str]:
    """Files under ``folder`` this process holds open (deleted ones included), from /proc."""
    out = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith(str(folder)):
            out.append(target)
    return out


@pytest.fixture
def bucket_store(tmp_path: Path) -> tuple[ArtifactStore, str]:
    bucket = tmp_path / "bucket"
    return ArtifactStore(tmp_path / "store", objects_url=bucket.as_uri()), bucket.as_uri()


def test_replaced_copy_is_closed_when_its_last_user_releases_it(tmp_path: Path,
                                                                bucket_store: tuple[ArtifactStore, str]) -> None:  # fmt: skip
    """A page still reading the old copy keeps it usable; once it releases the copy, its connection and file are gone."""
    store, url = bucket_store
    first = _publish(store, tmp_path, 1)
    cache = tmp_path / "cache"
    catalogs = FleetCatalogs([url], cache)
    old = catalogs.acquire(url)
    assert old.store.attempt(first) is not None
    second = _publish(store, tmp_path, 2)
    new = catalogs.acquire(url)
    assert new is not old and new.store.attempt(second) is not None
    assert old.store.attempt(first) is not None  # still in use by its page: still open
    assert any(t.endswith("(deleted)") for t in _open_files_under(cache))
    catalogs.release(old)
    assert not any(t.endswith("(deleted)") for t in _open_files_under(cache))  # the disk space is freed
    with pytest.raises(sqlite3.ProgrammingError):
        old.store.attempt(first)
    catalogs.release(new)
    assert new.store.attempt(second) is not None  # the current copy stays open for the next page


def test_viewer_pages_release_their_copy_when_done(tmp_path: Path, bucket_store: tuple[ArtifactStore, str],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """open_fleet_evidence holds its copy for as long as the page's Evidence lives; after a newer publish the old copy is closed once that page is gone."""
    from otel_inputs.viewer._evidence import open_fleet_evidence

    store, url = bucket_store
    cache = tmp_path / "viewer-cache"
    monkeypatch.setenv(names.ENV_CATALOG_CACHE, str(cache))
    _publish(store, tmp_path, 1)
    page_one = open_fleet_evidence(url, (url,), "alice")
    assert page_one.reader is not None
    _publish(store, tmp_path, 2)
    page_two = open_fleet_evidence(url, (url,), "alice")
    assert page_two.vouched_by is not page_one.vouched_by
    assert any(t.endswith("(deleted)") for t in _open_files_under(cache))  # page one still reads its copy
    del page_one
    gc.collect()
    assert not any(t.endswith("(deleted)") for t in _open_files_under(cache))
    assert page_two.store is not None and page_two.store.attempt("att-2") is not None
