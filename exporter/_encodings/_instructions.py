"""Instruction files as inputs of a turn: declared (present at dispatch, loaded) versus delivered.

Two separate facts per file (docs/coding-agents.md, "Declared versus delivered"):

- **loaded**, the runtime's own report: ``reported`` (Claude Code's ``InstructionsLoaded`` hook,
  Gemini CLI's ``--- Context from: PATH ---`` block in its recorded request), ``not_reported``
  (the runtime reports loads and did not report this one), ``not_reported_by_runtime`` (Codex
  reports none), ``not_recorded`` (the report would exist but was not recorded);
- **delivered**, the file's bytes found in the recorded request: ``whole``, ``partial`` (the
  recorded request ends inside the file: N of M bytes), ``differs`` (the request holds other
  bytes where the file goes), ``absent`` (the whole request was recorded and the file is not in
  it), ``not_in_recorded_part`` (the request was recorded only in part and the file is not in that
  part), ``in_request`` (found, but no digest at dispatch to compare with), ``request_not_recorded``.

The file's bytes at dispatch are known only from the hook's digest (``otel_inputs.input.sha256``):
the receiver never opens a path named in telemetry.  A request is searched as the runtime
recorded it, its JSON string escapes undone (:func:`unescape`); the file's place in it is the
runtime's own marker: ``Contents of PATH (…):`` (Claude Code), ``--- Context from: PATH ---``
(Gemini CLI).  The same rules are written in ClickHouse SQL (clickhouse/projection.sql).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence

from otel_inputs import names as n
from otel_inputs.types import DeliveryMode, SourceKind

from otel_inputs.exporter._encodings._turns import InstructionFile, Log, Request, as_int

LOADED_REPORTED = "reported"
LOADED_NOT_REPORTED = "not_reported"
LOADED_NOT_BY_RUNTIME = "not_reported_by_runtime"
LOADED_NOT_RECORDED = "not_recorded"
DELIVERED_WHOLE = "whole"
DELIVERED_PARTIAL = "partial"
DELIVERED_DIFFERS = "differs"
DELIVERED_ABSENT = "absent"
DELIVERED_NOT_IN_PART = "not_in_recorded_part"
DELIVERED_IN_REQUEST = "in_request"
DELIVERED_NO_REQUEST = "request_not_recorded"

_PLACEHOLDER = "\x00"
_ESCAPES = (("\\n", "\n"), ("\\t", "\t"), ("\\r", "\r"), ('\\"', '"'), ("\\/", "/"), ("\\b", "\b"), ("\\f", "\f"))


def unescape(text: str) -> str:
    """JSON string escapes undone everywhere in ``text`` (a request as recorded, possibly cut, so not
    parsed): ``\\\\`` first (held aside), then the one-character escapes; ``\\uXXXX`` kept as is.
    The ClickHouse projection does exactly these replacements, in this order."""
    out = text.replace("\\\\", _PLACEHOLDER)
    for escaped, plain in _ESCAPES:
        out = out.replace(escaped, plain)
    return out.replace(_PLACEHOLDER, "\\")


def claude_marker(path: str) -> str:
    return f"Contents of {path} ("


def gemini_marker(path: str) -> str:
    return f"--- Context from: {path} ---\n"


_CLAUDE_BLOCK = re.compile(r"Contents of (/[^\n]*?) \([^\n]*?\):\n\n")
_GEMINI_BLOCK = re.compile(r"--- Context from: ([^\n]+?) ---\n")


def content_start(runtime: str, text: str, path: str) -> int | None:
    """Where the file's content begins in the request text, by the runtime's own marker."""
    if runtime == n.RUNTIME_CLAUDE_CODE:
        at = text.find(claude_marker(path))
        if at < 0:
            return None
        end = text.find("):\n\n", at)
        return None if end < 0 else end + 4
    if runtime == n.RUNTIME_GEMINI_CLI:
        at = text.find(gemini_marker(path))
        return None if at < 0 else at + len(gemini_marker(path))
    return None


def delivered(runtime: str, f: InstructionFile, request: Request | None, runtime_label: str) -> tuple[str, str]:
    """(delivered, its detail) of one file against the turn's recorded request."""
    if request is None or request.text is None:
        return DELIVERED_NO_REQUEST, (request.note if request is not None and request.note
                                      else f"the request was not recorded by {runtime_label}")
    text = unescape(request.text)
    start = content_start(runtime, text, f.path)
    cut = "" if request.whole else _cut_words(request)
    if start is None:
        if request.whole:
            return DELIVERED_ABSENT, "the recorded request (whole) does not hold this file"
        return DELIVERED_NOT_IN_PART, f"not in the part of the request that was recorded{cut}"
    if f.sha256 is None or f.size_bytes is None:
        return DELIVERED_IN_REQUEST, "in the request; its bytes at dispatch were not recorded, so not compared"
    held = text[start:].encode("utf-8", "surrogatepass")
    piece = held[:f.size_bytes]
    if len(piece) == f.size_bytes and hashlib.sha256(piece).hexdigest() == f.sha256:
        return DELIVERED_WHOLE, f"all {f.size_bytes} bytes, as at dispatch"
    if len(piece) < f.size_bytes and not request.whole:
        return DELIVERED_PARTIAL, f"{len(piece)} of {f.size_bytes} bytes before the recorded request ends{cut}"
    return DELIVERED_DIFFERS, ("the request holds other bytes where this file goes: the file changed after the hook "
                               f"saw it, or {runtime_label} shortened or rewrote it ({f.size_bytes} bytes at dispatch)")


def _cut_words(request: Request) -> str:
    got = len(request.text.encode("utf-8", "surrogatepass")) if request.text is not None else 0
    total = f" of {request.length}" if request.length else ""
    return f" (the record is cut at {got}{total} bytes)"


def from_hook_records(records: Sequence[Log]) -> list[InstructionFile]:
    """One file per path of the hook's otel_inputs.instruction_file records, in the hook's order
    (``otel_inputs.input.seq``, then time); a path listed twice keeps its latest record."""
    by_path: dict[str, InstructionFile] = {}
    order: dict[str, tuple[int, int]] = {}
    for rec in sorted(records, key=lambda r: (r.ts_ns, as_int(r.attrs.get(n.INPUT_SEQ)) or 0, r.attrs.get(n.INPUT_ID, ""))):
        a = rec.attrs
        path = a.get(n.INPUT_SOURCE_PATH)
        if not path:
            continue
        by_path[path] = InstructionFile(
            path=path, input_id=a.get(n.INPUT_ID) or f"{a.get(n.HOOK_CAPTURE_ID)}#{path}",
            capture_attempt_id=a.get(n.HOOK_CAPTURE_ID), size_bytes=as_int(a.get(n.INPUT_SIZE_BYTES)),
            sha256=a.get(n.INPUT_SHA256), snapshot_ref=a.get(n.INPUT_SNAPSHOT_REF), media_type=a.get(n.INPUT_MEDIA_TYPE),
            preview_kind=a.get(n.INPUT_PREVIEW_KIND), capture_status=a.get(n.INPUT_CAPTURE_STATUS),
            artifact_status=a.get(n.INPUT_ARTIFACT_STATUS), detail=a.get(n.INPUT_DETAIL), captured_ns=rec.ts_ns)
        order.setdefault(path, (as_int(a.get(n.INPUT_SEQ)) or 0, rec.ts_ns))
    return [by_path[p] for p in sorted(by_path, key=lambda p: (order[p][1], order[p][0], p))]


def from_request(runtime: str, request: Request | None, turn_id: str) -> list[InstructionFile]:
    """The files the runtime's own markers name in its recorded request (no hook record to go on)."""
    if request is None or request.text is None:
        return []
    pattern = _CLAUDE_BLOCK if runtime == n.RUNTIME_CLAUDE_CODE else _GEMINI_BLOCK if runtime == n.RUNTIME_GEMINI_CLI else None
    if pattern is None:
        return []
    seen: list[str] = []
    for m in pattern.finditer(unescape(request.text)):
        if m.group(1) not in seen:
            seen.append(m.group(1))
    return [InstructionFile(path=p, input_id=f"{turn_id}#request:{p}", capture_status="not_applicable",
                            artifact_status="never_captured",
                            detail="named in the request; no otel-inputs hook recorded it at dispatch") for p in seen]


def row(f: InstructionFile, attempt_id: str, seq: int, started_ns: int | None) -> dict[str, object]:
    """The agent_attempt_inputs row of one instruction file."""
    return {
        "input_id": f.input_id, "attempt_id": attempt_id, "seq": seq, "label": f.path.rsplit("/", 1)[-1] or f.path,
        "source_kind": SourceKind.INSTRUCTION_FILE.value, "delivery_mode": f.delivery_mode, "source_path": f.path,
        "snapshot_ref": f.snapshot_ref, "media_type": f.media_type, "preview_kind": f.preview_kind,
        "size_bytes": f.size_bytes, "sha256": f.sha256, "capture_status": f.capture_status,
        "artifact_status": f.artifact_status, "detail": f.detail, "captured_at": f.captured_ns, "row_problem": None,
        "attempt_started_at": started_ns, "loaded": f.loaded, "loaded_detail": f.loaded_detail,
        "delivered": f.delivered, "delivered_detail": f.delivered_detail, "capture_attempt_id": f.capture_attempt_id,
    }


def settle_delivery(runtime: str, files: Iterable[InstructionFile], request: Request | None, label: str) -> None:
    """Fill each file's delivered fact (and its delivery mode: inline when its bytes are in the request)."""
    for f in files:
        if f.delivered is None:
            f.delivered, f.delivered_detail = delivered(runtime, f, request, label)
        if f.delivered in (DELIVERED_WHOLE, DELIVERED_PARTIAL, DELIVERED_DIFFERS, DELIVERED_IN_REQUEST):
            f.delivery_mode = DeliveryMode.INLINE.value


def loaded_by_report(files: Iterable[InstructionFile], reports: Mapping[str, str], report_recorded: bool,
                     label: str, not_reported_detail: str) -> None:
    """Loaded facts from a runtime that reports loads: ``reports`` maps a path to the report's words."""
    for f in files:
        if f.path in reports:
            f.loaded, f.loaded_detail = LOADED_REPORTED, reports[f.path]
        elif report_recorded:
            f.loaded, f.loaded_detail = LOADED_NOT_REPORTED, not_reported_detail
        else:
            f.loaded, f.loaded_detail = LOADED_NOT_RECORDED, f"{label}'s report of loaded files was not recorded"
