"""Importing a store written in the old layout (a JSON manifest per attempt) into the catalog.

The old layout, read here and nowhere else::

    manifests/<key>.json          one attempt: run, owner, state, counts and its items
    evictions/<time>-<pid>-<r>.log header ``otel-inputs-evictions 1 <at_ns> <count>``, then lines
                                  ``<attempt id as ASCII JSON>\\t<committed_at_ns, 20 digits>``: that
                                  commit's available items were evicted (disk budget) at ``at_ns``
    ended/<pid>-<rand>.log        one JSON-quoted attempt id per line: attempts that ended
    tombstones/<time>-<r>.json    a purge: ``attempts``, ``inputs`` ([attempt, input]), ``selector``
    revocations.json              ``{"sources": [{"path", "reason"}], "sha256": [...]}``
    index/, .spare-* files        derived or empty: not needed

Everything is imported in one catalog transaction on the first open, then those files are moved
into ``legacy-layout/`` (kept, so nothing recorded is lost and the import can be checked).  A crash
before the commit imports again next time; after it, the next open only finishes the move.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from pathlib import Path
from typing import Any

from otel_inputs._text import safe_text
from otel_inputs.store._sql import MARK_PURGED, transaction

LEGACY_DIR = "legacy-layout"
_MOVED = ("manifests", "evictions", "ended", "tombstones", "index", "revocations.json")


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _json_files(directory: Path, suffix: str) -> list[Path]:
    try:
        return sorted(p for p in directory.iterdir() if p.name.endswith(suffix) and not p.name.startswith("."))
    except OSError:
        return []


def _evictions(root: Path) -> dict[tuple[str, int], int]:
    """{(attempt id, committed_at_ns): evicted_at_ns} from every complete journal line."""
    found: dict[tuple[str, int], int] = {}
    for path in _json_files(root / "evictions", ".log"):
        try:
            lines = path.read_bytes().decode("ascii").split("\n")
            magic, _version, at, _count = lines[0].split(" ")
            if magic != "otel-inputs-evictions":
                continue
            for line in lines[1:]:
                aid, _, committed = line.partition("\t")
                if len(committed) == 20 and committed.isdigit():
                    found.setdefault((json.loads(aid), int(committed)), int(at))
        except (OSError, ValueError):
            continue
    return found


def _ended(root: Path) -> set[str]:
    ended: set[str] = set()
    for path in _json_files(root / "ended", ".log"):
        try:
            for line in path.read_bytes().split(b"\n")[:-1]:  # the last piece is empty or torn
                value = json.loads(line)
                if isinstance(value, str):
                    ended.add(value)
        except (OSError, ValueError):
            continue
    return ended


def import_legacy_layout(catalog: Any, con: sqlite3.Connection) -> int:
    """Import the old layout under ``catalog.root`` if there is one; how many attempts were imported."""
    root: Path = catalog.root
    if not (root / "manifests").is_dir():
        return 0
    count = 0
    with transaction(con):  # already imported (a crash came before the move): only move
        if con.execute("SELECT 1 FROM meta WHERE key = 'legacy_imported'").fetchone() is None:
            count = _import(root, con)
            con.execute("INSERT INTO meta VALUES ('legacy_imported', ?)", [time.time_ns()])
    _move_aside(root)
    return count


def _import(root: Path, con: sqlite3.Connection) -> int:
    evicted, ended = _evictions(root), _ended(root)
    seq = catalog_seq = con.execute("SELECT value FROM meta WHERE key = 'changed_seq'").fetchone()[0] + 1
    con.execute("UPDATE meta SET value = ? WHERE key = 'changed_seq'", [catalog_seq])
    count = 0
    for path in _json_files(root / "manifests", ".json"):
        try:
            body = json.loads(path.read_bytes())
        except (OSError, ValueError):
            continue  # unreadable: it stays in legacy-layout/ for inspection
        aid = _text(body.get("attempt_id")) if isinstance(body, dict) else None
        if aid is None:
            continue
        committed = _int(body.get("committed_at_ns")) or 0
        owner = body.get("owner") if isinstance(body.get("owner"), dict) else {}
        state = "running" if body.get("state") == "running" and aid not in ended else "ended"
        con.execute("INSERT OR REPLACE INTO attempts VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", [
            aid, _text(body.get("run_id")), _text(body.get("session_id")), state, _int(owner.get("pid")),
            _text(owner.get("host")), _text(body.get("coverage")), _text(body.get("decision")),
            _text(body.get("gap_reason")), _int(body.get("declared_count")), _int(body.get("captured_count")),
            _int(body.get("omitted_count")), committed, _int(body.get("ended_at_ns")), seq])
        at = evicted.get((aid, committed))
        items = body.get("items") if isinstance(body.get("items"), list) else []
        for item in items:
            if not isinstance(item, dict) or _text(item.get("input_id")) is None:
                continue
            status, reason = _text(item.get("artifact_status")) or "never_captured", _text(item.get("status_reason"))
            evicted_at = _int(item.get("evicted_at_ns"))
            if at is not None and status == "available":
                status, reason, evicted_at = "evicted", "disk_budget", at
            src = _text(item.get("source_path"))
            con.execute("INSERT OR REPLACE INTO items VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", [
                aid, item["input_id"], _int(item.get("seq")), _text(item.get("label")), _text(item.get("source_kind")),
                _text(item.get("delivery_mode")), None if src is None else safe_text(src),
                _text(item.get("snapshot_ref")), _text(item.get("media_type")), _text(item.get("preview_kind")),
                _int(item.get("size_bytes")), _text(item.get("sha256")), _text(item.get("capture_status")),
                status, reason, _text(item.get("detail")), _int(item.get("captured_at_ns")), evicted_at])
        count += 1
    _import_objects(root, con)
    _import_tombstones(root, con)
    _import_revocations(root, con)
    return count


def _import_objects(root: Path, con: sqlite3.Connection) -> None:
    from otel_inputs.store._objects import HEX64, allocated

    try:
        entries = list(os.scandir(root / "objects"))
    except OSError:
        return
    con.executemany("INSERT OR IGNORE INTO objects VALUES (?, ?)",
                    [(e.name, allocated(e.stat(follow_symlinks=False))) for e in entries if HEX64.fullmatch(e.name)])


def _import_tombstones(root: Path, con: sqlite3.Connection) -> None:
    for path in _json_files(root / "tombstones", ".json"):
        try:
            body = json.loads(path.read_bytes())
            attempts = [a for a in body.get("attempts", ()) if isinstance(a, str)]
            inputs = [(a, i) for a, i in body.get("inputs", ()) if isinstance(a, str) and isinstance(i, str)]
        except (OSError, ValueError, TypeError, AttributeError):
            continue  # a torn tombstone was never acted on: purge wrote it before any change
        cur = con.execute("INSERT INTO purges (at_ns, selector_json, attempts, items) VALUES (?, ?, ?, ?)",
                          [_int(body.get("created_at_ns")) or 0, json.dumps(body.get("selector")), len(attempts),
                           len(inputs)])
        con.executemany("INSERT OR IGNORE INTO purged VALUES (?, ?, ?)",
                        [(a, "", cur.lastrowid) for a in attempts] + [(a, i, cur.lastrowid) for a, i in inputs])
        con.executemany(MARK_PURGED, [(a,) for a in {*attempts, *(a for a, _ in inputs)}])


def _import_revocations(root: Path, con: sqlite3.Connection) -> None:
    try:
        body = json.loads((root / "revocations.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    now = time.time_ns()
    for src in body.get("sources", ()) if isinstance(body, dict) else ():
        if isinstance(src, dict) and isinstance(src.get("path"), str):
            con.execute("INSERT INTO revocations (source_path, reason, at_ns) VALUES (?, ?, ?)",
                        [safe_text(src["path"]), str(src.get("reason") or ""), now])
    for digest in body.get("sha256", ()) if isinstance(body, dict) else ():
        if isinstance(digest, str):
            con.execute("INSERT INTO revocations (sha256, at_ns) VALUES (?, ?)", [digest.lower(), now])


def import_part_receipts(root: Path, con: sqlite3.Connection) -> None:
    """Once per store: exchange-part receipts written as ``parts/<key>/<part>.json`` files (before
    the catalog held them) become ``parts`` rows; the files then move into ``legacy-layout/parts/``."""
    if con.execute("SELECT 1 FROM meta WHERE key = 'part_receipts_imported'").fetchone() is not None:
        return
    from otel_inputs.store._store import attempt_key

    imported: list[Path] = []
    with transaction(con):
        for path in sorted((root / "parts").glob("*/*.json")):
            try:
                body = json.loads(path.read_bytes()) if not path.is_symlink() else None
            except (OSError, ValueError):
                continue  # unreadable: it stays where it is, as unreadable as before
            aid = body.get("attemptId") if isinstance(body, dict) else None
            if isinstance(aid, str) and body.get("part") == path.stem and path.parent.name == attempt_key(aid):
                con.execute("INSERT OR IGNORE INTO parts VALUES (?, ?, ?, ?)",
                            [aid, path.stem, _text(body.get("runId")), json.dumps(body, sort_keys=True)])
                imported.append(path)
        con.execute("INSERT OR IGNORE INTO meta VALUES ('part_receipts_imported', ?)", [time.time_ns()])
    for path in imported:  # after the commit; a crash (or a read-only store) leaves files nothing reads
        target = root / LEGACY_DIR / "parts" / path.parent.name
        try:
            target.mkdir(parents=True, exist_ok=True)
            os.replace(path, target / path.name)
        except OSError:
            continue


def _move_aside(root: Path) -> None:
    target = root / LEGACY_DIR
    target.mkdir(exist_ok=True)
    for name in _MOVED:
        try:
            os.rename(root / name, target / name)
        except FileNotFoundError:
            continue
        except OSError:
            if (target / name).exists():  # an earlier, interrupted move: keep both, never lose one
                os.rename(root / name, target / f"{name}.{time.time_ns()}")
