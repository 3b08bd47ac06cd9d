"""Readback discipline: every read re-checks permission (``permission_denied``), retention (``not_found`` /
``retention_expired``), revocation (``source_unavailable``) and the digest (``integrity_mismatch``), in that
order; the access policy and revocations are described in docs/store.md, "Readback outcomes".
"""

from __future__ import annotations

import dataclasses
import fnmatch
import json
import os
import sqlite3
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from otel_inputs import names
from otel_inputs.store._catalog import CatalogItem, Role, item_changes
from otel_inputs.store._changes import StoreChange
from otel_inputs.store._errors import ReadbackError
from otel_inputs.store._store import ArtifactStore, VerifiedSnapshot, check_retained
from otel_inputs.text import canonical_path, safe_text
from otel_inputs.types import ReadbackOutcome


class PolicyError(ValueError):
    """The access policy or revocation file cannot be used; reads are refused until it is fixed."""


def _viewers(raw: Any) -> dict[str, tuple[str, ...]]:
    """``{"name": {"runs": ["pattern", ...]}}`` exactly; any other shape is refused, never read
    leniently (a string iterated as a list of characters would grant ``*``)."""
    if not isinstance(raw, dict):
        raise ValueError("'viewers' must be an object of viewer name -> {\"runs\": [patterns]}")
    viewers: dict[str, tuple[str, ...]] = {}
    for name, spec in raw.items():
        if not isinstance(spec, dict):
            raise ValueError(f"viewer {name!r} must be an object like {{\"runs\": [\"run-*\"]}}")
        runs = spec.get("runs", [])
        if not isinstance(runs, list) or not all(isinstance(r, str) for r in runs):
            raise ValueError(f"viewer {name!r}: 'runs' must be a list of strings, not {type(runs).__name__}")
        viewers[str(name)] = tuple(runs)
    return viewers


@dataclass(frozen=True)
class AccessPolicy:
    default_allow: bool = True
    viewers: dict[str, tuple[str, ...]] = field(default_factory=dict)
    source: str | None = None

    @classmethod
    def load(cls, path: str | os.PathLike[str] | None = None) -> AccessPolicy:
        path = path or os.environ.get(names.ENV_ACCESS_POLICY)
        if not path:
            return cls()
        try:
            body = json.loads(Path(path).read_text(encoding="utf-8"))
            if not isinstance(body, dict):
                raise ValueError("the policy must be a JSON object")
            default = body.get("default", "deny")
            if default not in ("allow", "deny"):
                raise ValueError("'default' must be 'allow' or 'deny'")
            viewers = _viewers(body.get("viewers", {}))
        except (OSError, ValueError, AttributeError, TypeError) as exc:
            raise PolicyError(f"access policy {path} is unusable: {exc}") from exc
        return cls(default == "allow", viewers, str(path))

    def allows(self, viewer: str, run_id: str | None) -> bool:
        patterns = self.viewers.get(viewer)
        if patterns is None:
            return self.default_allow
        return any(fnmatch.fnmatchcase(run_id or "", p) for p in patterns)


@dataclass(frozen=True)
class Revocation:
    """One entry of the revocation list: the revoked source path or digest, why, and when."""

    what: str
    reason: str = ""
    revoked_at_ns: int | None = None  # None: revoked before the list recorded times
    is_path: bool = True  # a source path (and everything under it), else a SHA-256


@dataclass(frozen=True)
class RevocationList:
    entries: tuple[Revocation, ...] = ()

    @classmethod
    def load(cls, store: ArtifactStore | None, path: str | os.PathLike[str] | None = None) -> RevocationList:
        """The store's revocations (none without a store) plus those of the file ``path`` (or
        ``OTEL_INPUTS_REVOCATIONS``)."""
        entries: list[Revocation] = []
        try:
            if store is None:
                raise FileNotFoundError
            with store.catalog.read() as con:
                for src, digest, reason, at_ns in con.execute(
                        "SELECT source_path, sha256, reason, at_ns FROM revocations ORDER BY revocation_id"):
                    what = src if isinstance(src, str) else digest
                    if isinstance(what, str):
                        entries.append(Revocation(what, reason or "", at_ns, is_path=isinstance(src, str)))
        except FileNotFoundError:
            pass
        except sqlite3.Error as exc:
            raise PolicyError(f"revocations unreadable: {exc}") from exc
        path = path or os.environ.get(names.ENV_REVOCATIONS)
        if path:
            try:
                body = json.loads(Path(path).read_text(encoding="utf-8"))
                entries.extend(Revocation(canonical_path(str(s["path"])), str(s.get("reason") or ""))
                               for s in body.get("sources", ()))  # fmt: skip
                entries.extend(Revocation(str(d).lower(), is_path=False) for d in body.get("sha256", ()))
            except FileNotFoundError:
                pass
            except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
                raise PolicyError(f"revocation list {path} is unusable: {exc}") from exc
        return cls(tuple(entries))

    def match(self, item: CatalogItem | Mapping[str, Any]) -> Revocation | None:
        """The entry that revokes ``item`` (by digest first, then by source path or a folder above it)."""
        digest = item.get("sha256") if isinstance(item, Mapping) else item.sha256
        src = item.get("source_path") if isinstance(item, Mapping) else item.source_path
        for entry in self.entries:
            if not entry.is_path and entry.what == digest:
                return entry
        if isinstance(src, str):
            text = safe_text(src)
            for entry in self.entries:
                if entry.is_path and (text == entry.what or text.startswith(entry.what.rstrip("/") + "/")):
                    return entry
        return None


def revoke_source(store: ArtifactStore, path: str | os.PathLike[str], reason: str = "") -> str:
    """Revoke a source path (and everything under it); returns the path as recorded."""
    recorded = canonical_path(path)
    under = recorded.rstrip("/") + "/"
    with store.catalog.write(Role.MAINT) as con:
        con.execute("INSERT INTO revocations (source_path, reason, at_ns) VALUES (?, ?, ?)",
                    [recorded, reason, time.time_ns()])
        seq = store.catalog.next_seq(con)
        # every attempt with an item under the path: each item's state now carries its revocation
        changes = item_changes(con, "t.attempt_id IN (SELECT attempt_id FROM items WHERE source_path = ? OR "
                               "substr(source_path, 1, ?) = ?)", [recorded, len(under), under], seq) \
            if store.listeners else []
    store.notify(StoreChange(tuple(changes)))
    return recorded


@dataclass(frozen=True)
class ReadResult:
    outcome: ReadbackOutcome
    message: str
    snapshot: VerifiedSnapshot | None = None

    @property
    def ok(self) -> bool:
        return self.outcome is ReadbackOutcome.OK


def _refused(exc: ReadbackError) -> ReadResult:
    return ReadResult(ReadbackOutcome(exc.outcome), str(exc))


class EvidenceReader:
    """Every content read goes through here: permission, retention, digest and revocation each time."""

    def __init__(self, store: ArtifactStore, *, policy: AccessPolicy | None = None,
                 revocations_path: str | os.PathLike[str] | None = None) -> None:
        self.store = store
        self.policy = policy if policy is not None else AccessPolicy.load()
        self._revocations_path = revocations_path

    def _attempt(self, viewer: str, attempt_id: str):
        try:
            record = self.store.attempt(attempt_id)
        except sqlite3.Error as exc:  # a damaged catalog is not an authority, and never a crash
            return ReadResult(ReadbackOutcome.INTEGRITY_MISMATCH, f"catalog unreadable ({exc})")
        if record is None:
            return ReadResult(ReadbackOutcome.NOT_FOUND, "no committed record for this attempt")
        if not self.policy.allows(viewer, record.run_id):
            return ReadResult(ReadbackOutcome.PERMISSION_DENIED, f"{viewer} may not read run {record.run_id!r}")
        return record

    def list_items(self, viewer: str, attempt_id: str) -> tuple[CatalogItem, ...] | ReadResult:
        """An attempt's items with their status now (permission-checked), without private source
        bindings: no paths, no digests."""
        record = self._attempt(viewer, attempt_id)
        if isinstance(record, ReadResult):
            return record
        return tuple(dataclasses.replace(i, source_path=None, sha256=None, snapshot_ref=None) for i in record.items)

    def part_receipt(self, viewer: str, attempt_id: str, part: str) -> dict[str, Any] | ReadResult:
        """An exchange part's stored receipt, with the same permission and purge checks as reads."""
        try:
            receipt = self.store.part_receipt(attempt_id, part)
        except ReadbackError as exc:
            return _refused(exc)
        if not self.policy.allows(viewer, receipt.get("runId")):
            return ReadResult(ReadbackOutcome.PERMISSION_DENIED, f"{viewer} may not read run {receipt.get('runId')!r}")
        if self.store.is_purged(attempt_id):
            return ReadResult(ReadbackOutcome.RETENTION_EXPIRED, "attempt purged")
        return receipt

    def read_part(self, viewer: str, attempt_id: str, part: str) -> ReadResult:
        """An exchange part's bytes, with the same permission and purge checks as inputs."""
        receipt = self.part_receipt(viewer, attempt_id, part)
        if isinstance(receipt, ReadResult):
            return receipt
        try:
            data = self.store.read_part(attempt_id, part)
        except ReadbackError as exc:
            return _refused(exc)
        return ReadResult(ReadbackOutcome.OK, "verified",
                          VerifiedSnapshot(attempt_id, part, data, receipt.get("sha256", "")))

    def read(self, viewer: str, attempt_id: str, input_id: str, *, max_bytes: int | None = None) -> ReadResult:
        record = self._attempt(viewer, attempt_id)
        if isinstance(record, ReadResult):
            return record
        item = next((i for i in record.items if i.input_id == input_id), None)
        if item is None:
            return ReadResult(ReadbackOutcome.NOT_FOUND, "unknown input id")
        try:
            check_retained(item)
            if RevocationList.load(self.store, self._revocations_path).match(item) is not None:
                return ReadResult(ReadbackOutcome.SOURCE_UNAVAILABLE, "the source of this input has been revoked")
            return ReadResult(ReadbackOutcome.OK, "verified", self.store.read_item_bytes(item, max_bytes=max_bytes))
        except ReadbackError as exc:
            return _refused(exc)
        except PolicyError as exc:  # an unusable revocation list: nothing is vouched for
            return ReadResult(ReadbackOutcome.SOURCE_UNAVAILABLE, str(exc))
