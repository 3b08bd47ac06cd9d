"""Writes a store in the old on-disk layout (manifest files, eviction journal, ended logs,
tombstones, revocations.json), byte for byte as the pre-catalog code wrote them, so the import
can be tested without that code.  Not a test module."""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class LegacyAttempt:
    attempt_id: str
    run_id: str
    files: dict[str, bytes]  # label -> content; each becomes an available item
    state: str = "terminal"  # "running" (with a live owner) or "terminal"
    evicted: bool = False  # named by the eviction journal
    ended_in_log: bool = False  # "running" in its manifest, ended in a process's ended log
    purged: bool = False  # covered by a tombstone
    committed_at_ns: int = field(default_factory=time.time_ns)


def _key(attempt_id: str) -> str:
    return hashlib.sha256(attempt_id.encode("utf-8", "surrogatepass")).hexdigest()


def _input_id(attempt_id: str, seq: int) -> str:
    return "in-" + hashlib.sha256(f"{attempt_id}\x00{seq}".encode()).hexdigest()[:24]


def write_legacy_store(root: Path, attempts: list[LegacyAttempt], *, revoked_source: str | None = None) -> None:
    for d in ("objects", "staging", "manifests", "tombstones", "evictions", "ended", "index"):
        (root / d).mkdir(parents=True, exist_ok=True)
    journal, ended, tomb = [], [], []
    for a in attempts:
        items = []
        for seq, (label, data) in enumerate(sorted(a.files.items())):
            digest = hashlib.sha256(data).hexdigest()
            obj = root / "objects" / digest
            if not obj.exists():
                obj.write_bytes(data)
                os.chmod(obj, 0o444)
            status, reason = "available", None
            if a.purged:
                status, reason = "evicted", "purged"
            items.append({"input_id": _input_id(a.attempt_id, seq), "seq": seq, "label": label,
                          "source_kind": "context_handoff", "delivery_mode": "path_reference",
                          "source_path": f"/work/ctx/{label}", "snapshot_ref": f"sha256:{digest}",
                          "media_type": "text/plain", "preview_kind": "text", "size_bytes": len(data),
                          "sha256": digest, "capture_status": "captured", "artifact_status": status,
                          "status_reason": reason, "detail": None, "captured_at_ns": a.committed_at_ns})
        body = {"manifest_version": 1, "attempt_id": a.attempt_id, "run_id": a.run_id, "session_id": None,
                "state": a.state, "owner": {"pid": os.getpid(), "host": os.uname().nodename},
                "coverage": "complete", "decision": "admitted", "gap_reason": None,
                "declared_count": len(items), "captured_count": len(items), "omitted_count": 0,
                "items": items, "committed_at_ns": a.committed_at_ns}
        if a.purged:
            body["purged"] = True
            tomb.append(a.attempt_id)
        (root / "manifests" / f"{_key(a.attempt_id)}.json").write_bytes(
            json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode())
        if a.evicted:
            journal.append(f"{json.dumps(a.attempt_id, ensure_ascii=True)}\t{a.committed_at_ns:020d}")
        if a.ended_in_log:
            ended.append(json.dumps(a.attempt_id, ensure_ascii=True))
    at = time.time_ns()
    if journal:
        head = f"otel-inputs-evictions 1 {at} {len(journal)}"
        (root / "evictions" / f"{at:020d}-{os.getpid()}-abcd1234.log").write_bytes("\n".join([head, *journal]).encode())
    if ended:
        (root / "ended" / f"{os.getpid()}-abcd.log").write_bytes(("\n".join(ended) + "\n").encode())
    if tomb:
        (root / "tombstones" / f"{at}-abcd.json").write_bytes(json.dumps(
            {"created_at_ns": at, "attempts": tomb, "inputs": [], "digests": [],
             "selector": {"run_id": None, "source_path": None}}, sort_keys=True).encode())
    if revoked_source:
        (root / "revocations.json").write_text(json.dumps(
            {"sources": [{"path": revoked_source, "reason": "consent withdrawn"}], "sha256": []}))
    (root / "index" / "manifests.idx").write_bytes(b"otel-inputs-manifest-index derived, not needed")
    (root / "manifests" / f".spare-{os.getpid()}-abcdef.tmp").write_bytes(b"")


def input_id(attempt_id: str, seq: int) -> str:
    return _input_id(attempt_id, seq)
