"""Evidence bundles: one attempt's rows, snapshot bytes and exchange parts in one verifiable tar.

Layout of the archive (every name is relative, plain and listed in the manifest)::

    manifest.json                 format, attempt, viewer, time, the database it was read from,
                                  members with SHA-256 and size, the status (and where its bytes
                                  are: local copy, bucket) of every snapshot, every part's status,
                                  and what was withheld
    rows/<table>.json             the attempt's rows of agent_attempts, agent_attempt_inputs,
                                  agent_artifacts, agent_exchange_parts, and agent_attempt_steps /
                                  agent_attempt_messages where the database has those tables
    snapshots/input-<seq>.bin     an input's verified snapshot bytes
    parts/<part>.bin              an exchange part's verified bytes

What goes in is decided by :mod:`otel_inputs.viewer._access` and read through the store's
:class:`otel_inputs.EvidenceReader`, exactly as the page shows it: a denied viewer gets no
bundle; evicted, purged or revoked bytes are listed with their status and never included; content
columns the page withholds are null in the rows and named in ``withheld``.

The rows are the same on either backend (a DuckDB file or a ClickHouse database under the
projection): each table's projection columns (``otel_inputs.exporter.ATTEMPT_TABLE_COLUMNS``), times
as UTC ISO-8601 text to the nanosecond, rows in a fixed order.  What a backend does not record is
said, never filled in: a table it lacks is "not recorded" in ``tables``, and columns it lacks are
null in the rows and listed under ``source.columns_not_recorded``.

:func:`verify_bundle` checks an archive offline: the manifest lists every member exactly once,
each member's size and SHA-256 match, nothing unlisted is present, and no member name could write
outside a directory (absolute, ``..``, links, devices).  The SHA-256 values prove integrity, not
authorship: compare the manifest digest printed at creation through another channel.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import io
import json
import os
import re
import tarfile
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import IO, Any, BinaryIO

from otel_inputs.exporter import ATTEMPT_TABLE_COLUMNS, TIMESTAMP_COLUMNS
from otel_inputs.store import ReadResult
from otel_inputs.types import PartName, ReadbackOutcome
from otel_inputs.viewer import _queries as q
from otel_inputs.viewer._access import Access, Withheld, current_access, gate_row
from otel_inputs.viewer._evidence import open_evidence, overlay_store
from otel_inputs.viewer._fleet import fleet_decisions, fleet_roots

FORMAT = "otel-inputs-evidence-bundle"
VERSION = 1
MANIFEST = "manifest.json"
MAX_MEMBER_BYTES = 1 << 31  # verify reads members streamed; this only bounds a hostile header
TABLES = ("agent_attempts", "agent_attempt_inputs", "agent_artifacts", "agent_exchange_parts",
          "agent_attempt_steps", "agent_attempt_messages")
ROW_ORDER = {"agent_attempt_inputs": ("seq", "input_id"), "agent_artifacts": ("seq", "input_id", "updated_at"),
             "agent_exchange_parts": ("part_name", "recorded_at"), "agent_attempt_steps": ("seq", "span_id")}
"""How each table's rows are ordered (then by their whole content): the same on every backend."""
_SAFE_NAME = re.compile(r"^[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*$")


class BundleRefused(Exception):
    """No bundle for this viewer (``str(exc)`` says why, naming no content)."""


class BundleInvalid(Exception):
    """The archive does not verify; ``problems`` lists each finding in plain words."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


@dataclass
class BundleReport:
    attempt_id: str
    members: list[dict[str, Any]] = field(default_factory=list)
    snapshots: list[dict[str, Any]] = field(default_factory=list)
    parts: list[dict[str, Any]] = field(default_factory=list)
    withheld: list[str] = field(default_factory=list)
    tables: dict[str, Any] = field(default_factory=dict)
    source: dict[str, Any] = field(default_factory=dict)
    """The database the rows were read from: backend kind, its label (no path, no password), and
    the columns that backend does not record."""
    manifest_sha256: str = ""


# -- building --------------------------------------------------------------------------------
def _json_value(value: Any) -> Any:
    if isinstance(value, (_dt.datetime, _dt.date)):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.hex()
    return str(value)


def _iso_ns(ns: int) -> str:
    """Epoch nanoseconds as UTC ISO-8601 text, every digit kept."""
    seconds, frac = divmod(int(ns), 1_000_000_000)
    return _dt.datetime.fromtimestamp(seconds, _dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S") + f".{frac:09d}Z"


def _row_key(table: str, row: dict[str, Any]) -> tuple[Any, ...]:
    order = tuple((row[c] is None, row[c] if row[c] is not None else 0) for c in ROW_ORDER.get(table, ()))
    return (*order, json.dumps(row, default=_json_value, sort_keys=True))


def _table_rows(db: q.Backend, table: str, attempt_id: str) -> list[dict[str, Any]]:
    """The attempt's rows of ``table``: its projection columns, times as text, in :data:`ROW_ORDER`."""
    columns = ATTEMPT_TABLE_COLUMNS[table]  # table from TABLES only; columns from the table spec
    absent = db.columns_not_recorded.get(table, frozenset())
    select = ", ".join(f"NULL AS c{i}" if c in absent else f"epoch_ns({c}) AS c{i}" if c in TIMESTAMP_COLUMNS
                       else f"{c} AS c{i}" for i, c in enumerate(columns))
    rows = []
    for values in db.rows(f'SELECT {select} FROM "{table}" WHERE attempt_id = ?', [attempt_id]):
        rows.append({c: _iso_ns(v) if c in TIMESTAMP_COLUMNS and v is not None else v
                     for c, v in zip(columns, values)})
    return sorted(rows, key=lambda r: _row_key(table, r))


def _item_status(reason: str | None, outcome: str, current: str | None) -> str:
    if reason is not None:
        return "purged" if reason.startswith("purged") else "revoked" if "revoked" in reason else "withheld"
    if outcome == "retention_expired":
        return current or "evicted"
    if outcome == "source_unavailable":
        return "revoked"
    return outcome


def collect(db_path: str | os.PathLike[str], store_root: str | os.PathLike[str] | None, attempt_id: str,
            access: Access) -> tuple[BundleReport, list[tuple[str, bytes]]]:
    """The members of ``attempt_id``'s bundle for ``access.viewer``; raises :class:`BundleRefused`."""
    with q.open_backend(db_path) as db:
        bundle = q.load_attempt(db, attempt_id)
        if bundle is None:
            raise BundleRefused(f"no attempt with id {attempt_id} is recorded in this database")
        if not access.run_allowed(bundle.attempt.run_id):
            raise BundleRefused(access.denial())
        raw = {t: _table_rows(db, t, attempt_id) for t in TABLES if db.has(t)}
        source: dict[str, Any] = {"backend": db.kind, "database": db.label}
        if db.columns_not_recorded:
            source["columns_not_recorded"] = {t: sorted(c) for t, c in sorted(db.columns_not_recorded.items())}
        roots = fleet_roots()
        if roots and store_root is None:  # a fleet viewer: the recording host's store facts decide
            ev, access = fleet_decisions(db, bundle.attempt, roots, access.viewer)
        else:
            ev = open_evidence(store_root, access.viewer)
    bundle, _notes = overlay_store(bundle, ev)
    w: Withheld = access.decide(bundle.attempt, bundle.inputs)
    report = BundleReport(attempt_id, source=source)
    members: list[tuple[str, bytes]] = []
    for table in TABLES:
        if table not in raw:
            report.tables[table] = "not recorded (table absent in this database)"
            continue
        rows = []
        for row in raw[table]:
            gated, why = gate_row(access, table, row, w)
            rows.append(gated)
            report.withheld.extend(why)
        report.tables[table] = len(rows)
        members.append((f"rows/{table}.json",
                        json.dumps(rows, default=_json_value, indent=1, sort_keys=True).encode("utf-8")))
    for item in bundle.inputs:
        entry: dict[str, Any] = {"input_id": item.input_id, "seq": item.seq, "sha256": item.sha256,
                                 "size_bytes": item.size_bytes, "placement": item.placement}
        reason = w.items.get(item.input_id)
        if reason is None and ev.reader is not None and item.current_artifact_status == "available":
            result = ev.reader.read(access.viewer, attempt_id, item.input_id)
        else:  # withheld, not available, or no store: never read, listed with its status
            outcome = ReadbackOutcome.RETENTION_EXPIRED if item.current_artifact_status == "evicted" else (
                ReadbackOutcome(ev.problem_outcome) if ev.reader is None else ReadbackOutcome.NOT_FOUND)
            result = ReadResult(outcome, reason or ev.problem or (item.current_artifact_status or "not captured"))
        if result.ok and result.snapshot is not None and reason is None:
            name = f"snapshots/input-{int(item.seq):04d}.bin"
            members.append((name, result.snapshot.data))
            entry.update(status="included", member=name)
        else:
            entry.update(status=_item_status(reason, result.outcome, item.current_artifact_status),
                         reason=reason or result.message)
        report.snapshots.append(entry)
    for part in bundle.parts:
        entry = {"part": part.part_name, "sha256": part.sha256, "size_bytes": part.size_bytes,
                 "capture": part.capture}
        if w.parts:
            entry.update(status="withheld", reason=w.parts)
        elif part.part_name not in {p.value for p in PartName} or ev.reader is None:
            entry.update(status="not_found", reason=ev.problem or "unknown part name")
        else:
            result = ev.reader.read_part(access.viewer, attempt_id, part.part_name)
            if result.ok and result.snapshot is not None:
                name = f"parts/{part.part_name}.bin"
                members.append((name, result.snapshot.data))
                entry.update(status="included", member=name)
            else:
                status = "purged" if result.outcome == "retention_expired" else result.outcome
                entry.update(status=status, reason=result.message)
        report.parts.append(entry)
    return report, members


def _add(tar: tarfile.TarFile, name: str, data: bytes, mtime: int) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mtime, info.mode, info.type = len(data), mtime, 0o644, tarfile.REGTYPE
    tar.addfile(info, io.BytesIO(data))


def write_bundle(out: BinaryIO, db_path: str | os.PathLike[str], store_root: str | os.PathLike[str] | None,
                 attempt_id: str, access: Access | None = None) -> BundleReport:
    """Write ``attempt_id``'s bundle as a tar to ``out``; raises :class:`BundleRefused`."""
    access = access or current_access(store_root)
    report, members = collect(db_path, store_root, attempt_id, access)
    now_ns = time.time_ns()
    report.members = [{"name": n, "size": len(d), "sha256": hashlib.sha256(d).hexdigest()} for n, d in members]
    manifest = {
        "format": FORMAT, "version": VERSION, "attempt_id": attempt_id, "viewer": access.viewer,
        "created_at_ns": now_ns, "source": report.source, "tables": report.tables, "members": report.members,
        "snapshots": report.snapshots, "parts": report.parts, "withheld": report.withheld,
    }
    body = json.dumps(manifest, indent=1, sort_keys=True).encode("utf-8")
    report.manifest_sha256 = hashlib.sha256(body).hexdigest()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        _add(tar, MANIFEST, body, now_ns // 1_000_000_000)
        for name, data in members:
            _add(tar, name, data, now_ns // 1_000_000_000)
    return report


def bundle_bytes(db_path: str | os.PathLike[str], store_root: str | os.PathLike[str] | None,
                 attempt_id: str, viewer: str) -> bytes:
    """The bundle as bytes for a download button, decided afresh for ``viewer`` when it is built."""
    buf = io.BytesIO()
    write_bundle(buf, db_path, store_root, attempt_id, current_access(store_root, viewer))
    return buf.getvalue()


def write_bundle_file(path: str | os.PathLike[str], db_path: str | os.PathLike[str],
                      store_root: str | os.PathLike[str] | None, attempt_id: str,
                      access: Access | None = None) -> BundleReport:
    """Write the bundle to ``path`` atomically (a temporary file renamed into place)."""
    target = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=".bundle-", dir=target.parent or ".")
    try:
        with os.fdopen(fd, "wb") as fh:
            report = write_bundle(fh, db_path, store_root, attempt_id, access)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return report


# -- verifying -------------------------------------------------------------------------------
def safe_name(name: str) -> bool:
    """A member name that stays inside the bundle: relative, no ``..``, plain characters only."""
    if not isinstance(name, str) or not _SAFE_NAME.match(name):
        return False
    parts = PurePosixPath(name).parts
    return all(p not in (".", "..") for p in parts)


def _digest(fh: IO[bytes], limit: int) -> tuple[str, int]:
    h, n = hashlib.sha256(), 0
    while chunk := fh.read(1 << 20):
        n += len(chunk)
        if n > limit:
            break
        h.update(chunk)
    return h.hexdigest(), n


def _members(tar: tarfile.TarFile) -> Iterator[tarfile.TarInfo]:
    for _ in range(100_000):  # bounded: a bundle has a few hundred members
        info = tar.next()
        if info is None:
            return
        yield info
    raise BundleInvalid(["too many members for an evidence bundle"])


def verify_bundle(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Check an archive offline; return its manifest, or raise :class:`BundleInvalid` with every finding."""
    problems: list[str] = []
    try:
        tar = tarfile.open(path, mode="r:")
    except (OSError, tarfile.TarError) as exc:
        raise BundleInvalid([f"not a readable tar archive: {exc}"]) from exc
    found: dict[str, tuple[str, int]] = {}
    manifest_raw: bytes | None = None
    with tar:
        try:
            for info in _members(tar):
                name = info.name
                if not safe_name(name):
                    problems.append(f"unsafe member name {name!r} (absolute, '..' or unusual characters)")
                    continue
                if not info.isreg():
                    problems.append(f"member {name!r} is not a regular file (links and devices are refused)")
                    continue
                if name in found or (name == MANIFEST and manifest_raw is not None):
                    problems.append(f"member {name!r} appears more than once")
                    continue
                fh = tar.extractfile(info)
                if fh is None:
                    problems.append(f"member {name!r} cannot be read")
                    continue
                if name == MANIFEST:
                    manifest_raw = fh.read(64 << 20)
                    continue
                found[name] = _digest(fh, MAX_MEMBER_BYTES)
        except tarfile.TarError as exc:
            problems.append(f"the archive is damaged: {exc}")
    if manifest_raw is None:
        raise BundleInvalid(problems + [f"{MANIFEST} is missing"])
    try:
        manifest = json.loads(manifest_raw)
        listed = manifest["members"]
        if manifest.get("format") != FORMAT or manifest.get("version") != VERSION:
            problems.append(f"not an {FORMAT} version {VERSION} manifest")
    except (ValueError, KeyError, TypeError) as exc:
        raise BundleInvalid(problems + [f"{MANIFEST} is not a bundle manifest: {exc}"]) from exc
    seen: set[str] = set()
    for entry in listed if isinstance(listed, list) else []:
        member = entry.get("name") if isinstance(entry, dict) else None
        if not isinstance(member, str) or not safe_name(member) or member == MANIFEST:
            problems.append(f"the manifest lists an unsafe member name {member!r}")
            continue
        if member in seen:
            problems.append(f"the manifest lists {member!r} more than once")
            continue
        seen.add(member)
        if member not in found:
            problems.append(f"missing member {member!r} (listed in the manifest, absent from the archive)")
            continue
        digest, size = found[member]
        if size != entry.get("size") or digest != entry.get("sha256"):
            problems.append(f"tampered member {member!r}: size {size} / SHA-256 {digest} does not match the "
                            f"manifest's {entry.get('size')} / {entry.get('sha256')}")
    if not isinstance(listed, list):
        problems.append("the manifest's member list is not a list")
    for name in sorted(set(found) - seen):
        problems.append(f"extra member {name!r} (present in the archive, not listed in the manifest)")
    if problems:
        raise BundleInvalid(problems)
    return manifest
