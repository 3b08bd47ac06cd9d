"""A small database + store whose every content-bearing field carries a findable marker.

Two runs: ``run-open`` (the viewer may see it) and ``run-secret`` (a policy may deny it).  Each
attempt has a prompt-file task, system and user messages, an inline item, a path-reference item,
a tool step and a logical-request part, and each of those carries its own marker, so a test can
say exactly which content reached a page, a table or a bundle; both attempts also had one shared
file (same bytes, same path), so "where else" from one leads to the other.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import duckdb
from viewer_fixture import FixtureBuilder

OPEN_RUN, SECRET_RUN = "run-open", "run-secret"
HOSTILE_LABEL = "**LABELHOSTILE** <img src=x onerror=alert(1)> [x](javascript:alert(2))"
SHARED_PATH = "/srv/team/handoff.md"
HOSTILE_PATH = "/work/ctx/<script>PATHHOSTILE</script>\n../../etc/passwd"

STEPS_DDL = """
CREATE TABLE IF NOT EXISTS agent_attempt_steps (
    attempt_id VARCHAR NOT NULL, span_id VARCHAR NOT NULL, trace_id VARCHAR, parent_span_id VARCHAR,
    seq INTEGER, step_kind VARCHAR, operation_name VARCHAR, span_name VARCHAR, provider_name VARCHAR,
    request_model VARCHAR, response_model VARCHAR, started_at TIMESTAMP_NS, ended_at TIMESTAMP_NS,
    input_tokens BIGINT, output_tokens BIGINT, tool_name VARCHAR, tool_call_id VARCHAR,
    tool_arguments VARCHAR, status VARCHAR, attempt_started_at TIMESTAMP_NS)
"""


def markers(prefix: str) -> dict[str, str]:
    """The marker of each content field of one attempt (``prefix`` keeps attempts apart)."""
    return {k: f"{prefix}{k.upper()}SECRET" for k in
            ("task", "system", "user", "inline", "notes", "label", "path", "part", "args")}


@dataclass(frozen=True)
class AccessFixture:
    db_path: Path
    store_path: Path
    open_id: str
    secret_id: str
    open_markers: dict[str, str]
    secret_markers: dict[str, str]
    task_path: str
    notes_dir: str
    inline_path: str

    @property
    def all_secret_markers(self) -> list[str]:
        return list(self.secret_markers.values())


def _attempt(b: FixtureBuilder, attempt_id: str, run: str, minute: int, m: dict[str, str]) -> tuple[str, str, str]:
    task = f"{m['task']}: add a --dry-run flag."
    task_path = f"/work/{attempt_id}/tasks/dry-run.md"
    notes_dir = f"/work/{attempt_id}/{m['path']}"
    inline_path = f"/work/{attempt_id}/gate/failure.txt"
    b.attempt(attempt_id, minute, run_id=run, session_id=f"s-{attempt_id}", phase="implement", send_kind="initial",
              turn_index=1, task_prompt=task, task_source_kind="prompt_file", task_source_path=task_path,
              task_size_bytes=len(task.encode()), task_sha256=hashlib.sha256(task.encode()).hexdigest(),
              system_prompt=f"{m['system']} you are careful", user_prompt=f"{task}\n{m['user']} please",
              declared_input_count=4, captured_input_count=4, omitted_input_count=0, item_count=4)
    b.add_input(attempt_id, 0, "Task prompt file", "prompt_file", "inline", source_path=task_path,
                data=task.encode(), media_type="text/markdown", preview_kind="text")
    b.add_input(attempt_id, 1, f"{m['label']}-notes.md", "context_handoff", "path_reference",
                source_path=f"{notes_dir}/notes.md", data=f"{m['notes']}\n".encode(),
                media_type="text/markdown", preview_kind="text")
    b.add_input(attempt_id, 2, "failure.txt", "explicit_attachment", "inline", source_path=inline_path,
                data=f"{m['inline']} FAILED\n".encode(), media_type="text/plain", preview_kind="text")
    # The same file (bytes and path) in both runs: "where else" from one attempt finds the other.
    b.add_input(attempt_id, 3, "shared.md", "context_handoff", "path_reference", source_path=SHARED_PATH,
                data=b"# shared handoff notes\n", media_type="text/markdown", preview_kind="text")
    request = json.dumps({"messages": [{"role": "user", "content": m["part"]}]}).encode()
    b.add_part(attempt_id, "logical_request", request, dispatch="dispatched")
    return task_path, notes_dir, inline_path


def build_access_fixture(root: Path) -> AccessFixture:
    b = FixtureBuilder(root)
    om, sm = markers("OPEN"), markers("HIDDEN")
    task_path, notes_dir, inline_path = _attempt(b, "open-1", OPEN_RUN, 0, om)
    _attempt(b, "secret-1", SECRET_RUN, 1, sm)
    db, store = b.write()
    con = duckdb.connect(str(db))
    try:
        con.execute(STEPS_DDL)
        for aid, m in (("open-1", om), ("secret-1", sm)):
            con.execute(
                "INSERT INTO agent_attempt_steps (attempt_id, span_id, seq, step_kind, tool_name, tool_arguments, "
                "status) VALUES (?, ?, 0, 'tool_call', 'read_file', ?, 'ok')",
                [aid, f"span-{aid}", json.dumps({"path": f"{notes_dir}/notes.md", "note": m["args"]})])
    finally:
        con.close()
    return AccessFixture(db, store, "open-1", "secret-1", om, sm, task_path, notes_dir, inline_path)
