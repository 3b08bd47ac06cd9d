"""The hook's second half, off the agent's path: snapshot, record, send (docs/coding-agents.md).

``entry.py`` (run by the agent, standard library only) leaves one job per hook invocation in
``<store>/hooks/queue/`` and starts this module detached.  For each job this:

1. claims it (renamed into ``hooks/work/``, so two workers never take the same job);
2. copies each listed instruction file into the artifact store, re-hashing it: bytes that no longer
   match the digest the hook took at dispatch are not stored and say ``changed_during_capture``;
3. commits one store attempt (the *capture*) holding those items, so previews are verified reads;
4. sends the job's records to ``otel-inputs collect`` as OTLP/JSON log records
   (``otel_inputs.hook.turn`` and one ``otel_inputs.instruction_file`` per file);
5. removes the job, or puts it back for a later worker when the collector did not take it (at most
   :data:`MAX_SEND_TRIES` times; then it is moved to ``hooks/failed/``, kept for inspection).

Every bound trips into a named gap on the record, never into a crash; the receiver never opens a
path named in these records (it only compares what they say with what the runtime sent).
"""

from __future__ import annotations

import argparse
import hashlib
import http.client
import json
import os
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from otel_inputs import names as n
from otel_inputs._media import classify_bytes
from otel_inputs.store import ArtifactStore, AttemptRecord, CatalogItem, StoreError
from otel_inputs.types import ArtifactStatus, CaptureStatus, SourceKind

MAX_SEND_TRIES = 20
SEND_TIMEOUT_S = 3.0
STALE_CLAIM_S = 120.0
WORKER_BUDGET_S = 30.0
MAX_FILE_BYTES = 4 << 20
MAX_BODY_BYTES = 16 << 20
MAX_BODIES = 64  # newest request bodies looked at per turn end
SCOPE = "otel_inputs.hooks"
SERVICE = "otel-inputs-hook"
_EVENT_TURN = {"UserPromptSubmit", "BeforeAgent"}


@dataclass(frozen=True)
class Dirs:
    queue: Path
    work: Path
    failed: Path

    @classmethod
    def of(cls, store: Path) -> Dirs:
        base = store / "hooks"
        return cls(base / "queue", base / "work", base / "failed")


def _claim(dirs: Dirs) -> Iterator[Path]:
    """Jobs this worker now owns, oldest first; a claim left by a dead worker is taken back."""
    dirs.work.mkdir(parents=True, exist_ok=True)
    now = time.time()
    for stale in sorted(dirs.work.glob("*.json")):
        try:
            if now - stale.stat().st_mtime > STALE_CLAIM_S:
                os.replace(stale, dirs.queue / stale.name)
        except OSError:
            pass
    try:
        names = sorted(p.name for p in dirs.queue.glob("*.json"))
    except OSError:
        return
    for name in names:
        target = dirs.work / name
        try:
            os.replace(dirs.queue / name, target)
            os.utime(target)  # the claim's age, not the job's, decides when it counts as stale
        except OSError:
            continue  # another worker took it
        yield target


def capture_id(job: Mapping[str, Any]) -> str:
    """The store attempt id of a job's snapshots: runtime, session, turn and time, never a path."""
    fields = job.get("input") or {}
    turn = fields.get("prompt_id") or fields.get("turn_id") or fields.get("hook_event_name") or "hook"
    return f"{job.get('runtime')}:{fields.get('session_id') or 'no-session'}:{turn}:{job.get('time_ns')}"


def _snapshot(staging: Any, entry: Mapping[str, Any]) -> dict[str, Any]:
    """One listed file into the store: its item fields (the bytes must still be what the hook hashed)."""
    out: dict[str, Any] = {"path": entry.get("path"), "role": entry.get("role"), "size": entry.get("size"),
                           "sha256": entry.get("sha256")}  # fmt: skip
    if entry.get("exists") is False:
        out.update(capture=CaptureStatus.MISSING.value, detail="not present when the hook ran")
        return out
    error = entry.get("error")
    if error:
        status = CaptureStatus.LIMIT_EXCEEDED if str(error).startswith("limit_exceeded") else CaptureStatus.UNREADABLE
        out.update(capture=status.value, detail=str(error)[:200])
        return out
    try:
        with open(str(entry["path"]), "rb") as fh:
            data = fh.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        out.update(capture=CaptureStatus.UNREADABLE.value, detail=f"unreadable at capture: {exc.strerror or exc}")
        return out
    if hashlib.sha256(data).hexdigest() != entry.get("sha256"):
        out.update(capture=CaptureStatus.CHANGED_DURING_CAPTURE.value,
                   detail="changed between the hook's digest and the copy; the dispatched bytes were not stored")
        return out
    blob = staging.put_bytes(data)
    media, preview = classify_bytes(data)
    out.update(capture=CaptureStatus.CAPTURED.value, snapshot_ref=blob.snapshot_ref, media_type=media,
               preview_kind=preview.value, stored=True)  # fmt: skip
    return out


def capture_files(store: ArtifactStore | None, job: Mapping[str, Any], cid: str,
                  gaps: list[str]) -> list[dict[str, Any]]:
    """Snapshot the job's files under one store attempt; without a usable store, a gap per file."""
    entries = [e for e in job.get("files") or [] if isinstance(e, Mapping) and e.get("role") != "bound"]
    for e in job.get("files") or []:
        if isinstance(e, Mapping) and e.get("role") == "bound":
            gaps.append(str(e.get("error")))
    if not entries:
        return []
    if store is None:
        gaps.append("store_unavailable: the artifact store could not be opened")
        return [dict(path=e.get("path"), role=e.get("role"), size=e.get("size"), sha256=e.get("sha256"),
                     capture=CaptureStatus.NOT_APPLICABLE.value, detail="store_unavailable") for e in entries]
    fields = job.get("input") or {}
    try:
        staging = store.begin_attempt(cid)
        got = [_snapshot(staging, e) for e in entries]
        items = tuple(_item(cid, i, g) for i, g in enumerate(got))
        staging.commit(AttemptRecord(attempt_id=cid, run_id=fields.get("session_id"), session_id=fields.get("session_id"),
                                     state="ended", coverage="complete", decision="admitted",
                                     declared_count=len(items), captured_count=sum(1 for g in got if g.get("stored")),
                                     committed_at_ns=time.time_ns(), ended_at_ns=time.time_ns(), items=items))
    except (StoreError, OSError) as exc:
        gaps.append(f"store_unavailable: {type(exc).__name__}")
        return [dict(path=e.get("path"), role=e.get("role"), size=e.get("size"), sha256=e.get("sha256"),
                     capture=CaptureStatus.NOT_APPLICABLE.value, detail="store_unavailable") for e in entries]
    return got


def _state_path(store: Path, runtime: str, session: str) -> Path:
    key = hashlib.sha256(f"{runtime}\0{session}".encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return store / "hooks" / "state" / f"{key}.json"


def remember_turn(store: Path, job: Mapping[str, Any], cid: str, files: Sequence[Mapping[str, Any]]) -> None:
    """The session's latest prompt and its files' digests, for the turn's end (Stop) to check bodies against."""
    fields = job.get("input") or {}
    if not fields.get("session_id"):
        return
    path = _state_path(store, str(job.get("runtime")), str(fields["session_id"]))
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {"capture_id": cid, "turn_key": fields.get("prompt_id") or fields.get("turn_id"),
           "files": [{"path": f.get("path"), "size": f.get("size"), "sha256": f.get("sha256")} for f in files]}
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(doc), encoding="utf-8", errors="surrogateescape")
    os.replace(tmp, path)


_UNESCAPES = (("\\n", "\n"), ("\\t", "\t"), ("\\r", "\r"), ('\\"', '"'), ("\\/", "/"), ("\\b", "\b"), ("\\f", "\f"))


def _unescape(text: str) -> str:
    """The receiver's rule (exporter/_encodings/_instructions.py): JSON escapes undone in place."""
    out = text.replace("\\\\", "\0")
    for escaped, plain in _UNESCAPES:
        out = out.replace(escaped, plain)
    return out.replace("\0", "\\")


def delivered_in_body(body: str, path: str, size: Any, sha: Any) -> tuple[str, str]:
    """Whether a file's bytes are in a whole Claude Code request body, by its ``Contents of PATH (…):`` marker."""
    text = _unescape(body)
    at = text.find(f"Contents of {path} (")
    end = text.find("):\n\n", at) if at >= 0 else -1
    if end < 0:
        return "absent", "the request body (whole, read agent-side) does not hold this file"
    if not isinstance(size, int) or not isinstance(sha, str):
        return "in_request", "in the request; its bytes at dispatch were not recorded, so not compared"
    piece = text[end + 4:].encode("utf-8", "surrogatepass")[:size]
    if len(piece) == size and hashlib.sha256(piece).hexdigest() == sha:
        return "whole", f"all {size} bytes, as at dispatch (the request body read agent-side)"
    return "differs", ("the request holds other bytes where this file goes: the file changed after the hook saw it, "
                       f"or Claude Code shortened or rewrote it ({size} bytes at dispatch)")


def _body_session(data: bytes) -> str | None:
    try:
        doc = json.loads(data)
        user = json.loads(doc["metadata"]["user_id"])
        return user.get("session_id") if isinstance(user, dict) else None
    except (ValueError, KeyError, TypeError):
        return None


def capture_bodies(store: ArtifactStore | None, store_root: Path, job: Mapping[str, Any],
                   gaps: list[str]) -> list[dict[str, Any]]:
    """At a Claude Code turn's end: each request body of this session not yet captured, read whole from the
    body directory into the store, with each of the turn's instruction files found in it or not."""
    fields = job.get("input") or {}
    session, folder = fields.get("session_id"), job.get("bodies_dir")
    if not session or not folder or store is None:
        return []
    try:
        state = json.loads(_state_path(store_root, str(job.get("runtime")), str(session)).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        state = {"files": []}
    try:
        bodies = sorted(Path(str(folder)).glob("*.request.json"), key=lambda p: p.stat().st_mtime_ns)[-MAX_BODIES:]
    except OSError as exc:
        gaps.append(f"request bodies unreadable: {exc.strerror or type(exc).__name__}")
        return []
    out: list[dict[str, Any]] = []
    for body in bodies:
        cid = f"{job.get('runtime')}:body:{body.name}"
        if store.attempt(cid) is not None:
            continue  # captured at an earlier turn's end
        try:
            data = body.read_bytes()[:MAX_BODY_BYTES + 1]
        except OSError:
            continue
        if len(data) > MAX_BODY_BYTES or _body_session(data) != session:
            continue
        try:
            staging = store.begin_attempt(cid)
            blob = staging.put_bytes(data)
            item = CatalogItem(attempt_id=cid, input_id=f"{cid}#0", seq=0, label=body.name, source_path=str(body),
                               snapshot_ref=blob.snapshot_ref, media_type="application/json", preview_kind="text",
                               size_bytes=len(data), sha256=blob.sha256, capture_status=CaptureStatus.CAPTURED.value,
                               artifact_status=ArtifactStatus.AVAILABLE.value, captured_at_ns=time.time_ns())
            staging.commit(AttemptRecord(attempt_id=cid, run_id=session, session_id=session, state="ended",
                                         coverage="complete", decision="admitted", committed_at_ns=time.time_ns(),
                                         ended_at_ns=time.time_ns(), items=(item,)))
            captured = True
        except (StoreError, OSError):
            captured, blob = False, None
        text = data.decode("utf-8", "surrogateescape")
        out.append({"ref": str(body), "capture_id": cid, "turn_key": state.get("turn_key"), "size": len(data),
                    "sha256": hashlib.sha256(data).hexdigest(), "captured": captured,
                    "deliveries": [(f.get("path"), *delivered_in_body(text, str(f.get("path")), f.get("size"),
                                                                      f.get("sha256")))
                                   for f in state.get("files") or [] if f.get("path")]})  # fmt: skip
    return out


def input_id(cid: str, index: int) -> str:
    return f"{cid}#{index}"


def _item(cid: str, index: int, got: Mapping[str, Any]) -> CatalogItem:
    stored = bool(got.get("stored"))
    return CatalogItem(
        attempt_id=cid, input_id=input_id(cid, index), seq=index, label=os.path.basename(str(got.get("path") or "")),
        source_kind=SourceKind.INSTRUCTION_FILE.value, delivery_mode=None, source_path=got.get("path"),
        snapshot_ref=got.get("snapshot_ref"), media_type=got.get("media_type"), preview_kind=got.get("preview_kind"),
        size_bytes=got.get("size"), sha256=got.get("sha256"), capture_status=got.get("capture"),
        artifact_status=(ArtifactStatus.AVAILABLE if stored else ArtifactStatus.NEVER_CAPTURED).value,
        detail=got.get("detail"), captured_at_ns=time.time_ns() if stored else None)


# --- OTLP/JSON -------------------------------------------------------------------------------------


def _kv(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    return {"key": key, "value": {"stringValue": str(value)}}


def _attrs(pairs: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [_kv(k, v) for k, v in pairs.items() if v is not None and v != ""]


def records(job: Mapping[str, Any], cid: str, files: Sequence[Mapping[str, Any]], gaps: Sequence[str]) -> list[dict[str, Any]]:
    """The OTLP log records of one job: a turn record (for a turn hook) and one record per file."""
    fields = job.get("input") or {}
    event = fields.get("hook_event_name")
    common = {
        n.HOOK_RUNTIME: job.get("runtime"),
        n.HOOK_EVENT: event,
        n.GEN_AI_CONVERSATION_ID: fields.get("session_id"),
        n.HOOK_TURN_KEY: fields.get("prompt_id") or fields.get("turn_id"),
        n.HOOK_PROCESS_KEY: job.get("process_key"),
        n.HOOK_CAPTURE_ID: cid,
    }
    ts = str(job.get("time_ns") or time.time_ns())
    out: list[dict[str, Any]] = []
    if event in _EVENT_TURN or (event != "Stop" and not files):
        turn = dict(common)
        turn.update({n.HOOK_PROMPT_SHA256: fields.get("prompt_sha256"), n.HOOK_PROMPT_LENGTH: fields.get("prompt_length"),
                     n.HOOK_FILE_COUNT: len(files), n.HOOK_GAP: "\n".join(gaps) or None})  # fmt: skip
        out.append({"timeUnixNano": ts, "observedTimeUnixNano": ts, "eventName": n.HOOK_TURN_EVENT,
                    "attributes": _attrs(turn)})  # fmt: skip
    for index, f in enumerate(files):
        attrs = dict(common)
        reported = f.get("role") == "reported_loaded"
        attrs.update({
            n.INPUT_ID: input_id(cid, index),
            n.INPUT_SEQ: index,
            n.INPUT_LABEL: os.path.basename(str(f.get("path") or "")),
            n.INPUT_SOURCE_KIND: SourceKind.INSTRUCTION_FILE.value,
            n.INPUT_SOURCE_PATH: f.get("path"),
            n.INPUT_SNAPSHOT_REF: f.get("snapshot_ref"),
            n.INPUT_MEDIA_TYPE: f.get("media_type"),
            n.INPUT_PREVIEW_KIND: f.get("preview_kind"),
            n.INPUT_SIZE_BYTES: f.get("size") if isinstance(f.get("size"), int) else None,
            n.INPUT_SHA256: f.get("sha256"),
            n.INPUT_CAPTURE_STATUS: f.get("capture"),
            n.INPUT_ARTIFACT_STATUS: (ArtifactStatus.AVAILABLE if f.get("stored") else ArtifactStatus.NEVER_CAPTURED).value,
            n.INPUT_DETAIL: f.get("detail"),
            n.INSTRUCTION_DISCOVERY: f.get("role"),
            n.INSTRUCTION_MEMORY_TYPE: fields.get("memory_type") if reported else None,
            n.INSTRUCTION_LOAD_REASON: fields.get("load_reason") if reported else None,
        })
        out.append({"timeUnixNano": ts, "observedTimeUnixNano": ts, "eventName": n.INSTRUCTION_FILE_EVENT,
                    "attributes": _attrs(attrs)})  # fmt: skip
    for b in job.get("bodies") or []:
        attrs = dict(common)
        attrs.update({n.HOOK_TURN_KEY: b.get("turn_key"), n.HOOK_CAPTURE_ID: b.get("capture_id"),
                      n.REQUEST_BODY_REF: b.get("ref"), n.PART_SIZE_BYTES: b.get("size"), n.PART_SHA256: b.get("sha256"),
                      n.PART_CAPTURE: "captured" if b.get("captured") else "not_captured"})  # fmt: skip
        for path, state, detail in b.get("deliveries") or [[None, None, None]]:
            one = dict(attrs, **{n.INPUT_SOURCE_PATH: path, n.INSTRUCTION_DELIVERED: state,
                                 n.INSTRUCTION_DELIVERED_DETAIL: detail})
            out.append({"timeUnixNano": ts, "observedTimeUnixNano": ts, "eventName": n.REQUEST_BODY_EVENT,
                        "attributes": _attrs(one)})  # fmt: skip
    return out


def request_body(batch: Sequence[dict[str, Any]]) -> bytes:
    doc = {"resourceLogs": [{"resource": {"attributes": [_kv("service.name", SERVICE)]},
                             "scopeLogs": [{"scope": {"name": SCOPE}, "logRecords": list(batch)}]}]}  # fmt: skip
    return json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")


def send(endpoint: str, body: bytes, timeout_s: float = SEND_TIMEOUT_S) -> bool:
    """POST to ``<endpoint>/v1/logs``; True only for a 200 (the collector's durable acknowledgment)."""
    url = urlsplit(endpoint.rstrip("/") + "/v1/logs")
    if url.scheme != "http" or not url.hostname:
        return False
    conn = http.client.HTTPConnection(url.hostname, url.port or 80, timeout=timeout_s)
    try:
        conn.request("POST", url.path, body=body, headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        resp.read()
        return resp.status == 200
    except OSError:
        return False
    finally:
        conn.close()


def process(path: Path, store: ArtifactStore | None, dirs: Dirs, default_endpoint: str) -> bool:
    """Handle one claimed job; True when its records were sent and the job removed."""
    try:
        job = json.loads(path.read_text(encoding="utf-8", errors="surrogateescape"))
        if not isinstance(job, dict):
            raise ValueError("not an object")
    except (OSError, ValueError):
        _move(path, dirs.failed)
        return False
    cid = str(job.get("capture_id") or capture_id(job))
    gaps = [str(g) for g in job.get("gaps") or []]
    if "captured" not in job:
        job["captured"] = capture_files(store, job, cid, gaps)
        job["bodies"] = capture_bodies(store, dirs.queue.parents[1], job, gaps)
        job["capture_id"], job["gaps"] = cid, gaps
        if (job.get("input") or {}).get("hook_event_name") in _EVENT_TURN:
            remember_turn(dirs.queue.parents[1], job, cid, job["captured"])
    body = request_body(records(job, cid, job["captured"], gaps))
    if send(str(job.get("endpoint") or default_endpoint), body):
        path.unlink(missing_ok=True)
        return True
    job["send_tries"] = int(job.get("send_tries") or 0) + 1
    path.write_text(json.dumps(job, ensure_ascii=False), encoding="utf-8", errors="surrogateescape")
    _move(path, dirs.failed if job["send_tries"] >= MAX_SEND_TRIES else dirs.queue)
    return False


def _move(path: Path, to: Path) -> None:
    try:
        to.mkdir(parents=True, exist_ok=True)
        os.replace(path, to / path.name)
    except OSError:
        pass


def run(store_root: Path, endpoint: str, budget_s: float = WORKER_BUDGET_S) -> int:
    """Process the queue once (bounded by ``budget_s``); returns how many jobs were sent."""
    dirs = Dirs.of(store_root)
    try:
        store: ArtifactStore | None = ArtifactStore(store_root)
    except Exception:  # noqa: BLE001 - every file then records store_unavailable
        store = None
    sent = 0
    deadline = time.monotonic() + budget_s
    for path in _claim(dirs):
        if time.monotonic() > deadline:
            _move(path, dirs.queue)
            continue
        sent += process(path, store, dirs, endpoint)
    return sent


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="otel_inputs.hooks.worker")
    parser.add_argument("--store", required=True, type=Path)
    parser.add_argument("--endpoint", default=os.environ.get(n.ENV_HOOK_ENDPOINT, "http://127.0.0.1:4318"))
    args = parser.parse_args(argv)
    run(args.store, args.endpoint)


if __name__ == "__main__":
    main()
