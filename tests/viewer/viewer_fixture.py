"""Reusable, realistic viewer fixture builder: a migrated DuckDB file plus real artifact-store snapshots.

Rows are written with plain INSERTs into ``migrate_file()``'d DuckDB files (the exporter's job in
production); snapshot bytes go through :class:`ArtifactStore` exactly as capture writes them.
"""

from __future__ import annotations

import hashlib
import io
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
from PIL import Image, ImageDraw

from otel_inputs.exporter import migrate_file
from otel_inputs.store import ArtifactStore, AttemptRecord, CatalogItem

T0 = 1_767_261_600_000_000_000  # 2026-01-01 10:00:00 UTC in ns
MINUTE = 60_000_000_000
HOSTILE_LABEL = "**x** <img src=x onerror=alert(1)>"
HOSTILE_PATH_PART = "[a](javascript:alert(1))<script>alert(2)</script>"
WIDE_RUN = "run-2026-01-02-wide"
WIDE_ITEMS = 100

TASK_TEXT = (
    "Add a --dry-run flag to the export command.\n\n"
    "Acceptance: `export --dry-run` prints the plan and writes nothing; covered by a test."
)
LEGACY_TASK = "Rename the `colour` setting to `color` everywhere and keep a deprecation alias."
LEGACY_MESSAGE = (
    "## Implement the work described in ### prompt\n\n"
    "You are working in the repository at /srv/repo.\n\n"
    "### prompt\n"
    f"{LEGACY_TASK}\n\n"
    "### output contract\n"
    "Reply with a JSON envelope: {\"status\": ..., \"summary\": ...}\n"
)
NOTES_V1 = "# Notes\n\n- export lives in cli.py\n- keep output stable\n"
NOTES_V2 = "# Notes\n\n- export lives in cli.py\n- keep output stable\n- dry-run must not open the DB for writing\n"


def png_bytes(size: tuple[int, int] = (96, 64), color: str = "#2a7ab0") -> bytes:
    img = Image.new("RGB", size, color)
    ImageDraw.Draw(img).rectangle((10, 10, size[0] - 10, size[1] - 10), outline="white", width=3)
    out = io.BytesIO()
    img.save(out, format="PNG")
    return out.getvalue()


def jpeg_bytes(size: tuple[int, int] = (80, 60)) -> bytes:
    img = Image.new("RGB", size, "#c0603a")
    ImageDraw.Draw(img).ellipse((5, 5, size[0] - 5, size[1] - 5), fill="#f0d060")
    out = io.BytesIO()
    img.save(out, format="JPEG", quality=85)
    return out.getvalue()


PDF_BYTES = b"%PDF-1.4\n1 0 obj<</Type/Catalog>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n"


@dataclass
class _Input:
    attempt_id: str
    seq: int
    label: str
    source_kind: str
    delivery_mode: str
    source_path: str | None = None
    data: bytes | None = None
    media_type: str | None = None
    preview_kind: str = "none"
    capture_status: str = "captured"
    artifact_status: str = "available"
    detail: str | None = None
    status_reason: str | None = None
    tamper: bool = False
    size_bytes: int | None = None

    @property
    def input_id(self) -> str:
        return f"{self.attempt_id}-in{self.seq}"


@dataclass
class FixtureBuilder:
    """Collects attempts and inputs, then writes the DuckDB rows and the store snapshots."""

    root: Path
    attempts: list[dict[str, Any]] = field(default_factory=list)
    inputs: list[_Input] = field(default_factory=list)
    health: list[tuple[str, str, int]] = field(default_factory=list)
    parts: list[dict[str, Any]] = field(default_factory=list)
    legacy_input_rows: set[str] = field(default_factory=set)
    """Attempts whose input rows are landed without attempt_started_at (rows from before migration 7)."""
    steps: list[dict[str, Any]] = field(default_factory=list)
    messages: list[dict[str, Any]] = field(default_factory=list)
    with_steps_table: bool = True
    """False: a database from before migration 11 (its steps table and messages view are dropped)."""
    objects_url: str | None = None
    """A bucket the store uploads committed snapshots to (docs/objects.md), with ``objects_options``."""
    objects_options: dict[str, Any] | None = None
    store: ArtifactStore | None = None
    """The store :meth:`write` wrote through (its uploader may still be working)."""

    def add_step(self, attempt_id: str, seq: int, kind: str, *, start_s: float, dur_s: float = 0.5, **cols: Any) -> None:
        """One C1 step row; ``start_s`` is seconds after its attempt's start."""
        self.steps.append({"attempt_id": attempt_id, "seq": seq, "step_kind": kind, "start_s": start_s,
                           "dur_s": dur_s, **cols})

    def add_model_step_messages(self, attempt_id: str, system: str | None, user: str | None) -> None:
        """The attempt span carried no messages; its first model step sent these (C2 source model_step)."""
        self.messages.append({"attempt_id": attempt_id, "system": system, "user": user})

    def _write_steps(self, con: duckdb.DuckDBPyConnection) -> None:
        if not self.with_steps_table:
            con.execute("DROP VIEW agent_attempt_messages")
            con.execute("DROP TABLE agent_attempt_steps")
            return
        start_of = {a["attempt_id"]: a.get("started_at") for a in self.attempts}
        for st in self.steps:
            base = start_of.get(st["attempt_id"]) or T0
            row = {k: v for k, v in st.items() if k not in ("start_s", "dur_s")}
            row.setdefault("span_id", f"{st['attempt_id']}-step{st['seq']}")
            row["started_at"] = base + int(st["start_s"] * 1e9)
            row["ended_at"] = base + int((st["start_s"] + st["dur_s"]) * 1e9)
            row["attempt_started_at"] = start_of.get(st["attempt_id"])
            cols = list(row)
            exprs = ["make_timestamp_ns(?::BIGINT)" if c.endswith("_at") else "?" for c in cols]
            con.execute(f"INSERT INTO agent_attempt_steps ({', '.join(cols)}) VALUES ({', '.join(exprs)})",
                        [row[c] for c in cols])
        for m in self.messages:
            con.execute("UPDATE agent_attempts SET system_prompt = NULL, user_prompt = NULL, step_system_prompt = ?, "
                        "step_user_prompt = ?, step_messages_span_id = ? WHERE attempt_id = ?",
                        [m["system"], m["user"], f"{m['attempt_id']}-step0", m["attempt_id"]])

    def attempt(self, attempt_id: str, minute: float | None, **cols: Any) -> str:
        row: dict[str, Any] = {
            "attempt_id": attempt_id,
            "input_coverage": "complete",
            "input_packet_version": 1,
            "status": "ok",
            "agent_name": "coder",
            "provider_name": "anthropic",
            "request_model": "claude-sonnet",
            "service_name": "factory",
            "source_format": "otel_inputs",
            "capture_decision": "admitted",
            "system_prompt": "You are a careful software engineer. Follow the repository conventions.",
        }
        if minute is not None:
            row["started_at"] = T0 + int(minute * MINUTE)
            row["ended_at"] = T0 + int(minute * MINUTE) + 30_000_000_000
        row.update(cols)
        self.attempts.append(row)
        return attempt_id

    def add_input(self, attempt_id: str, seq: int, label: str, source_kind: str, delivery_mode: str, **kw: Any) -> _Input:
        item = _Input(attempt_id, seq, label, source_kind, delivery_mode, **kw)
        self.inputs.append(item)
        return item

    def add_part(self, attempt_id: str, part: str, data: bytes | None, *, dispatch: str | None = "dispatched",
                 persistence: str = "queued", reason: str | None = None, store: bool = True) -> None:
        """An exchange part: the span's row as at submit, and (``store``) the bytes through the real queue."""
        self.parts.append({"attempt_id": attempt_id, "part": part, "data": data, "dispatch": dispatch,
                           "persistence": persistence, "reason": reason, "store": store})

    def _write_parts(self, con: duckdb.DuckDBPyConnection, store_path: Path) -> None:
        from otel_inputs._parts import EvidenceQueue

        queue = EvidenceQueue(store_path)
        run_of = {a["attempt_id"]: a.get("run_id") for a in self.attempts}
        start_of = {a["attempt_id"]: a.get("started_at") for a in self.attempts}
        for p in self.parts:
            ref = sha = size = None
            capture = "not_captured"
            if p["data"] is not None:
                capture = "captured"
                if p["store"]:
                    r = queue.submit(run_of.get(p["attempt_id"]) or "", p["attempt_id"], p["part"], p["data"],
                                     p["dispatch"])
                    ref, sha, size, capture = r.ref, r.sha256, r.size_bytes, r.capture.value
                else:
                    sha, size = hashlib.sha256(p["data"]).hexdigest(), len(p["data"])
            con.execute(
                "INSERT INTO agent_exchange_parts (attempt_id, part_name, capture, reason, dispatch, ref, sha256, "
                "size_bytes, persistence, recorded_at, attempt_started_at) VALUES (?,?,?,?,?,?,?,?,?, "
                "make_timestamp_ns(?::BIGINT), make_timestamp_ns(?::BIGINT))",
                [p["attempt_id"], p["part"], capture, p["reason"], p["dispatch"], ref, sha, size, p["persistence"],
                 (start_of.get(p["attempt_id"]) or T0) + 1_000_000, start_of.get(p["attempt_id"])],
            )
        assert queue.flush(10)

    def write(self) -> tuple[Path, Path]:
        db_path = self.root / "otel.duckdb"
        store_path = self.root / "store"
        store = self.store = ArtifactStore(store_path, objects_url=self.objects_url,
                                           objects_options=self.objects_options)
        migrate_file(db_path)
        con = duckdb.connect(str(db_path))
        try:
            for row in self.attempts:
                cols = list(row)
                exprs = [
                    "make_timestamp_ns(?::BIGINT)" if c in ("started_at", "ended_at") else "?" for c in cols
                ]
                con.execute(
                    f"INSERT INTO agent_attempts ({', '.join(cols)}) VALUES ({', '.join(exprs)})",
                    [row[c] for c in cols],
                )
            by_attempt: dict[str, list[_Input]] = {}
            for item in self.inputs:
                by_attempt.setdefault(item.attempt_id, []).append(item)
            run_of = {a["attempt_id"]: a.get("run_id") for a in self.attempts}
            start_of = {a["attempt_id"]: a.get("started_at") for a in self.attempts}
            for attempt_id, items in by_attempt.items():
                self._write_attempt(con, store, attempt_id, items, run_of.get(attempt_id), start_of.get(attempt_id))
            self._write_parts(con, store_path)
            self._write_steps(con)
            for source, metric, value in self.health:
                con.execute("INSERT INTO exporter_health VALUES (?, ?, ?, now())", [source, metric, value])
        finally:
            con.close()
        return db_path, store_path

    def _write_attempt(
        self, con: duckdb.DuckDBPyConnection, store: ArtifactStore, attempt_id: str,
        items: list[_Input], run_id: str | None, started: int | None,
    ) -> None:
        staging = store.begin_attempt(attempt_id)
        manifest_items = []
        captured_at = started or T0
        for item in items:
            ref = sha = None
            size = item.size_bytes
            if item.data is not None:
                blob = staging.put_bytes(item.data)
                ref, sha, size = blob.snapshot_ref, blob.sha256, blob.size_bytes
            manifest_items.append(
                {
                    "input_id": item.input_id, "seq": item.seq, "label": item.label,
                    "source_kind": item.source_kind, "delivery_mode": item.delivery_mode,
                    "source_path": item.source_path, "snapshot_ref": ref, "media_type": item.media_type,
                    "preview_kind": item.preview_kind, "size_bytes": size, "sha256": sha,
                    "capture_status": item.capture_status, "artifact_status": item.artifact_status,
                    "status_reason": item.status_reason, "detail": item.detail, "captured_at_ns": captured_at,
                }
            )
            con.execute(
                "INSERT INTO agent_attempt_inputs (input_id, attempt_id, seq, label, source_kind, delivery_mode, "
                "source_path, snapshot_ref, media_type, preview_kind, size_bytes, sha256, capture_status, "
                "artifact_status, detail, captured_at, attempt_started_at) "
                "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?, make_timestamp_ns(?::BIGINT), make_timestamp_ns(?::BIGINT))",
                [
                    item.input_id, attempt_id, item.seq, item.label, item.source_kind, item.delivery_mode,
                    item.source_path, ref, item.media_type, item.preview_kind, size, sha,
                    item.capture_status, "available" if item.artifact_status == "evicted" else item.artifact_status,
                    item.detail, captured_at, None if attempt_id in self.legacy_input_rows else started,
                ],
            )
            con.execute(
                "INSERT INTO agent_artifacts (attempt_id, input_id, run_id, seq, sha256, size_bytes, snapshot_ref, "
                "media_type, capture_status, artifact_status, status_reason, captured_at, updated_at) "
                "VALUES (?,?,?,?,?,?,?,?,?,?,?, make_timestamp_ns(?::BIGINT), now())",
                [
                    attempt_id, item.input_id, run_id, item.seq, sha, size, ref, item.media_type,
                    item.capture_status, item.artifact_status, item.status_reason, captured_at,
                ],
            )
        staging.commit(AttemptRecord(attempt_id, run_id, coverage="complete", decision="admitted", committed_at_ns=T0,
                                     items=tuple(CatalogItem(attempt_id=attempt_id, **m) for m in manifest_items)))
        for item, m in zip(items, manifest_items):
            if item.tamper and m["sha256"]:
                path = store.object_path(m["sha256"])
                os.chmod(path, 0o644)
                path.write_bytes(item.data[:-1] + b"!" if item.data else b"tampered")


@dataclass(frozen=True)
class ViewerFixture:
    db_path: Path
    store_path: Path
    run_id: str
    legacy_run_id: str
    ids: dict[str, str]


def build_fixture(root: Path) -> ViewerFixture:
    """A realistic multi-phase run, an opted-out attempt, and a legacy run; see the module docstring."""
    b = FixtureBuilder(root)
    run, s1 = "run-2026-01-01-feature", "sess-impl-1"
    common = {"run_id": run, "session_id": s1, "task_prompt": TASK_TEXT, "task_source_kind": "prompt_file",
              "task_source_path": "/work/tasks/dry-run.md", "task_size_bytes": len(TASK_TEXT.encode()),
              "task_sha256": hashlib.sha256(TASK_TEXT.encode()).hexdigest()}
    a1 = b.attempt("att-001", 0, phase="implement", send_kind="initial", turn_index=1,
                   user_prompt=f"## Task\n{TASK_TEXT}\n\nContext notes are at /work/handoff/notes.md",
                   declared_input_count=2, captured_input_count=2, omitted_input_count=0, item_count=2, **common)
    b.add_input(a1, 0, "Task prompt file", "prompt_file", "inline", source_path="/work/tasks/dry-run.md",
                data=TASK_TEXT.encode(), media_type="text/markdown", preview_kind="text")
    b.add_input(a1, 1, "notes.md", "context_handoff", "path_reference", source_path="/work/handoff/notes.md",
                data=NOTES_V1.encode(), media_type="text/markdown", preview_kind="text")
    a2 = b.attempt("att-002", 1, phase="implement", send_kind="parse_retry", turn_index=2,
                   previous_turn_attempt_id=a1, retry_of_attempt_id=a1,
                   user_prompt="Your reply did not parse as the JSON envelope. Reply again with only the envelope.",
                   declared_input_count=1, captured_input_count=1, omitted_input_count=0, item_count=1, **common)
    b.add_input(a2, 0, "notes.md", "context_handoff", "path_reference", source_path="/work/handoff/notes.md",
                data=NOTES_V1.encode(), media_type="text/markdown", preview_kind="text")
    a3 = b.attempt("att-003", 2, phase="implement", send_kind="gate_retry", turn_index=3,
                   previous_turn_attempt_id=a2, retry_of_attempt_id=a2,
                   user_prompt="The test gate failed: test_dry_run_writes_nothing. Fix the change.",
                   declared_input_count=2, captured_input_count=2, omitted_input_count=0, item_count=2, **common)
    b.add_input(a3, 0, "notes.md", "context_handoff", "path_reference", source_path="/work/handoff/notes.md",
                data=NOTES_V2.encode(), media_type="text/markdown", preview_kind="text")
    b.add_input(a3, 1, HOSTILE_LABEL, "explicit_attachment", "inline", source_path="/work/gate/failure.txt",
                data=b"FAILED test_dry_run_writes_nothing - AssertionError\n", media_type="text/plain", preview_kind="text")
    envelope = b'{"status": "done", "summary": "dry-run flag added; tests green"}'
    a4 = b.attempt("att-004", 5, phase="review", send_kind="initial", turn_index=4, previous_turn_attempt_id=a3,
                   agent_name="reviewer", user_prompt="Review the change. The implementer's envelope is below.\n"
                   + envelope.decode() + "\nHandoff directory: /work/handoff/review/",
                   declared_input_count=10, captured_input_count=7, omitted_input_count=2, item_count=10, **common)
    hd = "/work/handoff/review/"
    b.add_input(a4, 0, "Previous envelope (implement)", "previous_envelope", "inline", data=envelope,
                media_type="application/json", preview_kind="text")
    b.add_input(a4, 1, "summary.md", "context_handoff", "path_reference", source_path=hd + "summary.md",
                data=("# Review summary\n\n" + "The change adds a dry-run flag.\n" * 40).encode(),
                media_type="text/markdown", preview_kind="text")
    b.add_input(a4, 2, "screenshot.png", "context_handoff", "path_reference", source_path=hd + "screenshot.png",
                data=png_bytes(), media_type="image/png", preview_kind="image")
    b.add_input(a4, 3, "photo.jpg", "context_handoff", "path_reference", source_path=hd + "photo.jpg",
                data=jpeg_bytes(), media_type="image/jpeg", preview_kind="image")
    b.add_input(a4, 4, "latest", "context_handoff", "path_reference", source_path=hd + "latest",
                capture_status="unreadable", artifact_status="never_captured", detail="symlink not followed")
    b.add_input(a4, 5, "build.log", "context_handoff", "path_reference", source_path=hd + "build.log",
                capture_status="limit_exceeded", artifact_status="never_captured", detail="file_bytes",
                size_bytes=50_000_000)
    b.add_input(a4, 6, "design.pdf", "context_handoff", "path_reference", source_path=hd + "design.pdf",
                data=PDF_BYTES, media_type="application/pdf", preview_kind="none")
    b.add_input(a4, 7, "old-plan.md", "context_handoff", "path_reference", source_path=hd + "old-plan.md",
                data=b"# Old plan\n", media_type="text/markdown", preview_kind="text",
                artifact_status="evicted", status_reason="disk_budget")
    b.add_input(a4, 8, "tampered.txt", "context_handoff", "path_reference", source_path=hd + "tampered.txt",
                data=b"original bytes of a handoff file\n", media_type="text/plain", preview_kind="text", tamper=True)
    b.add_input(a4, 9, "diagram.png", "explicit_attachment", "provider_attachment", source_path="/work/diagram.png",
                data=png_bytes((40, 40), "#208040"), media_type="image/png", preview_kind="image")
    a5 = b.attempt("att-005", 7, phase="review", send_kind="initial", turn_index=1, run_id=run, session_id="sess-private",
                   agent_name="reviewer", input_coverage="partial", capture_decision="suppressed",
                   capture_gap_reason="policy_opt_out", captured_input_count=0, task_source_kind="inline_text",
                   task_size_bytes=120, task_sha256="ab" * 32, system_prompt=None)
    legacy_run = "run-2025-12-legacy"
    l1 = b.attempt("leg-001", -300, run_id=legacy_run, session_id="sess-legacy", phase="implement",
                   input_packet_version=None, input_coverage="not_recorded", capture_decision=None,
                   source_format="gen_ai", user_prompt=LEGACY_MESSAGE)
    l2 = b.attempt("leg-002", -299, run_id=legacy_run, session_id="sess-legacy", phase="implement",
                   input_packet_version=None, input_coverage="not_recorded", capture_decision=None,
                   source_format="gen_ai", user_prompt="That did not work. Please fix the failing check.")
    l3 = b.attempt("leg-003", -298, run_id=legacy_run, session_id="sess-legacy", phase="review",
                   input_packet_version=None, input_coverage="not_recorded", capture_decision=None,
                   source_format="gen_ai", user_prompt="Please review what you just did.")
    # Steps: the review attempt read summary.md (absolute path) and screenshot.png (relative path),
    # listed the folder, and never read photo.jpg; att-001 had a model call but no tool steps.
    b.add_step(a4, 0, "model_call", start_s=1, dur_s=2.5, operation_name="chat", span_name="chat claude-sonnet",
               request_model="claude-sonnet", response_model="claude-sonnet-2026", input_tokens=5400,
               output_tokens=320, status="Unset")
    b.add_step(a4, 1, "tool_call", start_s=4, operation_name="execute_tool", span_name="execute_tool read_file",
               tool_name="read_file", tool_call_id="call-1", tool_arguments='{"path": "/work/handoff/review/summary.md"}',
               status="Ok")
    b.add_step(a4, 2, "tool_call", start_s=5, operation_name="execute_tool", span_name="execute_tool Read",
               tool_name="Read", tool_call_id="call-2", tool_arguments='{"file_path": "review/screenshot.png"}',
               status="Ok")
    b.add_step(a4, 3, "tool_call", start_s=6, operation_name="execute_tool", span_name=HOSTILE_LABEL,
               tool_name=HOSTILE_LABEL, tool_call_id="call-3", tool_arguments='{"q": "' + "<b>x</b>" + '"}',
               status="Error")
    b.add_step(a4, 4, "model_call", start_s=7, dur_s=1.2, operation_name="chat", span_name="chat claude-sonnet",
               request_model="claude-sonnet", input_tokens=None, output_tokens=None, status="Unset")
    b.add_step(a1, 0, "model_call", start_s=1, operation_name="chat", span_name="chat claude-sonnet",
               request_model="claude-sonnet", input_tokens=900, output_tokens=120, status="Unset")
    b.add_model_step_messages(a3, "You are a careful software engineer.", "The test gate failed (as sent).")
    # A second run of the same task whose inputs drifted, with a 100-item attempt.
    wide = b.attempt("att-wide", 30, phase="implement", send_kind="initial", turn_index=1, user_prompt="Implement the task; the handoff has 100 files.",
                     declared_input_count=WIDE_ITEMS, captured_input_count=WIDE_ITEMS, omitted_input_count=0,
                     item_count=WIDE_ITEMS, **{**common, "run_id": WIDE_RUN, "session_id": "sess-wide"})
    b.add_input(wide, 0, "notes.md", "context_handoff", "path_reference", source_path="/work/handoff/notes.md",
                data=NOTES_V2.encode(), media_type="text/markdown", preview_kind="text")
    for i in range(1, WIDE_ITEMS):
        label = HOSTILE_LABEL if i == 7 else f"file-{i:03d}.md"
        path = f"/work/handoff/wide/{HOSTILE_PATH_PART}{i}.md" if i == 7 else f"/work/handoff/wide/file-{i:03d}.md"
        b.add_input(wide, i, label, "context_handoff", "path_reference", source_path=path,
                    data=f"# File {i}\n\nWide attempt content line for file {i}.\n".encode(),
                    media_type="text/markdown", preview_kind="text")
    b.add_step(wide, 0, "tool_call", start_s=1, operation_name="execute_tool", tool_name="cat",
               tool_arguments='{"path": "wide/file-003.md"}', status="Ok")
    b.add_step(wide, 1, "tool_call", start_s=2, operation_name="execute_tool", tool_name="search", status="Ok")
    b.health += [("duckdb_exporter", "spans_spilled", 3), ("duckdb_exporter", "spans_dropped", 0),
                 ("duckdb_exporter", "batches_failed", 1)]
    db, store = b.write()
    ids = {"initial": a1, "parse_retry": a2, "gate_retry": a3, "review": a4, "opted_out": a5, "wide": wide,
           "legacy": l1, "legacy_correction": l2, "legacy_other_phase": l3}
    return ViewerFixture(db, store, run, legacy_run, ids)
