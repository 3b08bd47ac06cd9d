"""Readback discipline (seed 001 §5): who may read which evidence, checked again on every read.

Three separate checks, in order, each with its own outcome:

1. the viewer and the run's scope are authorized (``permission_denied``);
2. the item exists and its bytes are retained (``not_found`` / ``retention_expired``);
3. the bytes still match the recorded digest and the source is not revoked
   (``integrity_mismatch`` / ``source_unavailable``).

The access policy is a local JSON file (``OTEL_INPUTS_ACCESS_POLICY``)::

    {"default": "deny",
     "viewers": {"alice": {"runs": ["*"]}, "bob": {"runs": ["demo-run-*"]}}}

With no policy file every local viewer is allowed (a single-user workstation); the file turns
that off.  The revocation list is ``<store>/revocations.json`` (or ``OTEL_INPUTS_REVOCATIONS``)::

    {"sources": [{"path": "/data/customer-a", "reason": "consent withdrawn"}],
     "sha256": ["<hex digest>"]}

A revoked source is refused even when its bytes still match their hash.
"""

from __future__ import annotations

import fnmatch
import getpass
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from otel_inputs import names
from otel_inputs._text import canonical_path, safe_text
from otel_inputs.store._store import ArtifactStore, ReadbackError, VerifiedSnapshot


OUTCOMES = ("permission_denied", "not_found", "retention_expired", "integrity_mismatch", "source_unavailable")


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


@dataclass(frozen=True)
class RevocationList:
    paths: tuple[str, ...] = ()
    digests: frozenset[str] = frozenset()
    entries: tuple[Revocation, ...] = ()

    @classmethod
    def load(cls, store: ArtifactStore, path: str | os.PathLike[str] | None = None) -> RevocationList:
        path = Path(path or os.environ.get(names.ENV_REVOCATIONS) or store.root / "revocations.json")
        try:
            raw = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return cls()
        except OSError as exc:
            raise PolicyError(f"revocation list {path} is unreadable: {exc.strerror}") from exc
        try:
            body = json.loads(raw)
            sources = [(canonical_path(str(s["path"])), s) for s in body.get("sources", ())]
            paths = tuple(p for p, _ in sources)
            raw_digests = list(body.get("sha256", ()))
            digests = frozenset((str(d["sha256"]) if isinstance(d, dict) else str(d)).lower() for d in raw_digests)
            entries = tuple(Revocation(p, str(s.get("reason") or ""), _ns(s.get("revoked_at_ns"))) for p, s in sources)
            entries += tuple(Revocation(str(d["sha256"]).lower(), str(d.get("reason") or ""), _ns(d.get("revoked_at_ns")))
                             if isinstance(d, dict) else Revocation(str(d).lower()) for d in raw_digests)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise PolicyError(f"revocation list {path} is malformed: {exc}") from exc
        return cls(paths, digests, entries)

    def match(self, item: dict[str, Any]) -> Revocation | None:
        """The entry that revokes ``item`` (by digest first, then by source path), else ``None``."""
        if not self.revoked(item):
            return None
        digest = item.get("sha256")
        src = safe_text(item["source_path"]) if isinstance(item.get("source_path"), str) else None
        for entry in self.entries:
            if entry.what == digest:
                return entry
        if isinstance(src, str):
            for entry in self.entries:
                if src == entry.what or src.startswith(entry.what.rstrip("/") + "/"):
                    return entry
        return Revocation(str(digest or src))

    def revoked(self, item: dict[str, Any]) -> bool:
        if item.get("sha256") in self.digests:
            return True
        src = item.get("source_path")
        if not isinstance(src, str):
            return False
        src = safe_text(src)
        return any(src == p or src.startswith(p.rstrip("/") + "/") for p in self.paths)


def _ns(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def revoke_source(store: ArtifactStore, path: str, reason: str = "") -> Path:
    """Append a source to the store's revocation list (atomically), with the time of revocation."""
    target = store.root / "revocations.json"
    try:
        body = json.loads(target.read_text(encoding="utf-8"))
    except FileNotFoundError:
        body = {"sources": [], "sha256": []}
    body.setdefault("sources", []).append({"path": canonical_path(path), "reason": reason,
                                          "revoked_at_ns": time.time_ns()})
    tmp = target.with_suffix(".tmp")
    tmp.write_text(json.dumps(body, indent=2), encoding="utf-8")
    os.replace(tmp, target)
    return target


def current_viewer(streamlit_user: str | None = None) -> str:
    """The logged-in Streamlit user when login is configured, else the OS user."""
    if streamlit_user:
        return streamlit_user
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return f"uid:{os.getuid()}"


@dataclass(frozen=True)
class ReadResult:
    outcome: str  # "ok" or one of OUTCOMES
    message: str
    snapshot: VerifiedSnapshot | None = None

    @property
    def ok(self) -> bool:
        return self.outcome == "ok"


class EvidenceReader:
    """Every content read goes through here: permission, retention, digest and revocation each time."""

    def __init__(self, store: ArtifactStore, *, policy: AccessPolicy | None = None,
                 revocations_path: str | os.PathLike[str] | None = None) -> None:
        self.store = store
        self.policy = policy if policy is not None else AccessPolicy.load()
        self._revocations_path = revocations_path

    def list_items(self, viewer: str, attempt_id: str) -> list[dict[str, Any]] | ReadResult:
        """Metadata of an attempt's items without private source bindings (no paths, no digests)."""
        manifest = self.store.manifest(attempt_id)
        if manifest is None:
            return ReadResult("not_found", "no committed record for this attempt")
        if not self.policy.allows(viewer, manifest.get("run_id")):
            return ReadResult("permission_denied", f"{viewer} may not read run {manifest.get('run_id')!r}")
        keep = ("input_id", "seq", "label", "source_kind", "delivery_mode", "media_type", "preview_kind",
                "size_bytes", "capture_status", "artifact_status", "status_reason", "captured_at_ns")
        return [{k: item.get(k) for k in keep} for item in manifest.get("items", ()) or ()]

    def read_part(self, viewer: str, attempt_id: str, part: str) -> ReadResult:
        """An exchange part's bytes, with the same permission and purge checks as inputs."""
        from otel_inputs.store._part_readback import read_part, read_part_receipt

        try:
            receipt = read_part_receipt(self.store.root, attempt_id, part)
        except ReadbackError as exc:
            return ReadResult(exc.outcome, str(exc))
        except Exception as exc:  # noqa: BLE001 - a corrupt receipt reads as absent
            return ReadResult("not_found", f"part receipt unreadable: {exc}")
        if not self.policy.allows(viewer, receipt.get("runId")):
            return ReadResult("permission_denied", f"{viewer} may not read run {receipt.get('runId')!r}")
        if self.store.is_purged(attempt_id):
            return ReadResult("retention_expired", "attempt purged")
        try:
            data = read_part(self.store.root, attempt_id, part)
        except ReadbackError as exc:
            return ReadResult(exc.outcome, str(exc))
        return ReadResult("ok", "verified", VerifiedSnapshot(attempt_id, part, data, receipt.get("sha256", ""), receipt))

    def read(self, viewer: str, attempt_id: str, input_id: str, *, max_bytes: int | None = None) -> ReadResult:
        try:
            manifest = self.store.manifest(attempt_id)
        except Exception:  # noqa: BLE001 - a corrupt manifest reads as absent, never as content
            manifest = None
        if manifest is None:
            return ReadResult("not_found", "no committed record for this attempt")
        if not self.policy.allows(viewer, manifest.get("run_id")):
            return ReadResult("permission_denied", f"{viewer} may not read run {manifest.get('run_id')!r}")
        item = next((i for i in manifest.get("items", ()) or () if i.get("input_id") == input_id), None)
        if item is None:
            return ReadResult("not_found", "unknown input id")
        try:
            self.store.check_retained(attempt_id, item)
        except ReadbackError as exc:
            return ReadResult(exc.outcome, str(exc))
        try:
            revocations = RevocationList.load(self.store, self._revocations_path)
        except PolicyError as exc:
            return ReadResult("source_unavailable", str(exc))
        if revocations.revoked(item):
            return ReadResult("source_unavailable", "the source of this input has been revoked")
        try:
            # The item found above is read as is: the manifest is not parsed a second time.
            snap = self.store.read_item_bytes(attempt_id, item, max_bytes=max_bytes)
        except ReadbackError as exc:
            return ReadResult(exc.outcome, str(exc))
        return ReadResult("ok", "verified", snap)
