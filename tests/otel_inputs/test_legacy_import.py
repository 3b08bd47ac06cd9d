"""A store written in the old layout opens with nothing it recorded lost."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from legacy_layout import LegacyAttempt, input_id, write_legacy_store
from otel_inputs.store import AccessPolicy, ArtifactStore, EvidenceReader, RetentionPolicy, apply_retention
from otel_inputs.types import ReadbackOutcome

T = time.time_ns()


def legacy(root: Path) -> list[LegacyAttempt]:
    attempts = [
        LegacyAttempt("old-1", "run-a", {"a.txt": b"alpha", "b.txt": b"shared"}, committed_at_ns=T - 5000),
        LegacyAttempt("old-2", "run-a", {"c.txt": b"gamma", "b.txt": b"shared"}, evicted=True, committed_at_ns=T - 4000),
        LegacyAttempt("old-3", "run-b", {"d.txt": b"delta"}, purged=True, committed_at_ns=T - 3000),
        LegacyAttempt("old-4", "run-b", {"e.txt": b"eps"}, state="running", committed_at_ns=T - 2000),
        LegacyAttempt("old-5", "run-b", {"f.txt": b"phi"}, state="running", ended_in_log=True, committed_at_ns=T - 1000),
        LegacyAttempt("old-6", "run-c", {"g.txt": b"revoked bytes"}, committed_at_ns=T),
    ]
    write_legacy_store(root, attempts, revoked_source="/work/ctx/g.txt")
    return attempts


def test_old_layout_is_imported_on_first_open_with_nothing_lost(tmp_path: Path) -> None:
    """Every attempt, item status, eviction, ended mark, purge and revocation of an old store is in the catalog."""
    root = tmp_path / "store"
    legacy(root)
    store = ArtifactStore(root)
    records = {r.attempt_id: r for r in store.attempts()}
    assert sorted(records) == ["old-1", "old-2", "old-3", "old-4", "old-5", "old-6"]
    status = {a: [(i.label, i.artifact_status, i.status_reason) for i in r.items] for a, r in records.items()}
    assert status["old-1"] == [("a.txt", "available", None), ("b.txt", "available", None)]
    assert status["old-2"] == [("b.txt", "evicted", "disk_budget"), ("c.txt", "evicted", "disk_budget")]
    assert status["old-3"] == [("d.txt", "evicted", "purged")]
    assert records["old-4"].state == "running" and records["old-5"].state == "ended"
    assert records["old-1"].run_id == "run-a" and records["old-1"].committed_at_ns == T - 5000
    reader = EvidenceReader(store, policy=AccessPolicy())
    assert reader.read("me", "old-1", input_id("old-1", 0)).snapshot.data == b"alpha"
    assert reader.read("me", "old-2", input_id("old-2", 0)).outcome is ReadbackOutcome.RETENTION_EXPIRED
    assert reader.read("me", "old-3", input_id("old-3", 0)).outcome is ReadbackOutcome.RETENTION_EXPIRED
    assert store.is_purged("old-3")
    assert reader.read("me", "old-6", input_id("old-6", 0)).outcome is ReadbackOutcome.SOURCE_UNAVAILABLE
    # the old files are kept aside, not deleted; the catalog is now the one authority
    assert not (root / "manifests").exists() and (root / "legacy-layout" / "manifests").is_dir()
    assert len(list((root / "legacy-layout" / "manifests").glob("*.json"))) == 6
    # and the imported store works: retention sees the old objects and their sizes
    report = apply_retention(store, RetentionPolicy(budget_bytes=0))
    assert report.evicted_attempts >= 1
    assert store.attempt("old-4").items[0].artifact_status == "available"  # running, live owner: protected


def test_import_interrupted_by_kill_is_redone_and_never_doubles(tmp_path: Path) -> None:
    """A process killed during the import leaves the old files in place; the next open imports once."""
    root = tmp_path / "store"
    legacy(root)
    code = ("import os, sys; from otel_inputs.store import _legacy; real = _legacy._import_tombstones\n"
            "def die(*a):\n    os.kill(os.getpid(), 9)\n"
            "_legacy._import_tombstones = die\n"
            f"from otel_inputs.store import ArtifactStore; ArtifactStore({str(root)!r}).attempts()")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60)
    assert proc.returncode == -9
    assert (root / "manifests").is_dir()  # nothing moved: the transaction never committed
    store = ArtifactStore(root)
    assert len(store.attempts()) == 6
    assert ArtifactStore(root).attempts() == store.attempts()
    assert os.listdir(root / "legacy-layout") and not (root / "manifests").exists()


def _old_receipt(root: Path, attempt_id: str, part: str, data: bytes) -> None:
    """Write a part the way the store did before receipts were catalog rows: ``<part>.bin`` plus ``<part>.json``."""
    import hashlib
    import json

    from otel_inputs.store import attempt_key

    d = root / "parts" / attempt_key(attempt_id)
    d.mkdir(parents=True, exist_ok=True)
    (d / f"{part}.bin").write_bytes(data)
    body = {"receipt_version": 1, "runId": "run-p", "attemptId": attempt_id, "part": part, "capture": "captured",
            "dispatch": "dispatched", "persistence": "stored", "sha256": hashlib.sha256(data).hexdigest(),
            "size_bytes": len(data), "written_at": "2026-11-30T10:00:00.000Z"}
    (d / f"{part}.json").write_text(json.dumps(body))


def test_receipt_files_of_an_older_store_open_as_catalog_receipts(tmp_path: Path) -> None:
    """Part receipts an older store kept as files (with or without a catalog) are readable after the first open."""
    for name, with_catalog in (("parts-only", False), ("catalog", True)):
        root = tmp_path / name
        if with_catalog:  # a catalog from before receipts were rows: no parts table, no import mark
            subprocess.run([sys.executable, "-c", (
                "import sys; from otel_inputs.store import ArtifactStore; s = ArtifactStore(sys.argv[1]); s.attempts()\n"
                "with s.catalog.write() as con:\n"
                "    con.execute('DROP TABLE parts'); con.execute(\"DELETE FROM _migrations WHERE name = 'm003_part_receipts'\")\n"
                "    con.execute(\"DELETE FROM meta WHERE key = 'part_receipts_imported'\")"), str(root)], check=True)
        _old_receipt(root, "p-1", "logical_request", b'{"model": "m"}')
        _old_receipt(root, "p-1", "observable_output", b'{"text": "hi"}')
        out = subprocess.run([sys.executable, "-c", (
            "import sys; from otel_inputs.store import read_part, read_part_receipt\n"
            "print(read_part_receipt(sys.argv[1], 'p-1', 'logical_request')['runId'], "
            "read_part(sys.argv[1], 'p-1', 'observable_output').decode())"), str(root)],
            check=True, capture_output=True, text=True).stdout
        assert out.split() == ["run-p", '{"text":', '"hi"}'], name
        moved = sorted(p.name for p in (root / "legacy-layout" / "parts").glob("*/*.json"))
        assert moved == ["logical_request.json", "observable_output.json"], name  # kept aside, no second copy
        assert not list((root / "parts").glob("*/*.json")), name


def test_a_parts_only_older_store_opened_first_by_the_viewer_is_a_store(tmp_path: Path) -> None:
    """The viewer's readers treat a store holding only older part receipt files as a store (and import it), never as "no store"."""
    root = tmp_path / "parts-only"
    _old_receipt(root, "p-1", "logical_request", b'{"model": "m"}')
    out = subprocess.run([sys.executable, "-c", (
        "import sys\n"
        "from otel_inputs.viewer._access import current_access\n"
        "from otel_inputs.viewer._evidence import open_evidence\n"
        "from otel_inputs.store import read_part\n"
        "ev = open_evidence(sys.argv[1]); acc = current_access(sys.argv[1])\n"
        "print(ev.store is not None, acc.store is not None, read_part(sys.argv[1], 'p-1', 'logical_request').decode())"),
        str(root)], check=True, capture_output=True, text=True).stdout
    assert out.split() == ["True", "True", '{"model":', '"m"}']
    assert (root / "catalog.db").exists()
