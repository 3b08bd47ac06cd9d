"""Reading back what landed: DuckDB rows (contracts C1-C3) and the viewer page (Streamlit AppTest)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import pytest
from streamlit.testing.v1 import AppTest

from otel_inputs import names

REPO = Path(__file__).resolve().parents[2]
APP = str(REPO / "viewer" / "app.py")


@dataclass(frozen=True)
class Messages:
    system: str | None
    user: str | None
    input_json: str | None
    source: str | None
    note: str | None


class Landed:
    """A read-only connection to the landed DuckDB file with the queries the interop checks need."""

    def __init__(self, db: Path) -> None:
        self.db = db
        self.con = duckdb.connect(str(db), read_only=True)

    def close(self) -> None:
        self.con.close()

    def rows(self, sql: str, params: list[Any] | None = None) -> list[dict[str, Any]]:
        cur = self.con.execute(sql, params or [])
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, r, strict=True)) for r in cur.fetchall()]

    def has_table(self, name: str) -> bool:
        return bool(self.con.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_name = ?", [name]).fetchone()[0])  # fmt: skip

    def require(self, name: str, what: str) -> None:
        if not self.has_table(name):
            pytest.fail(f"table {name} is missing from {self.db.name}: {what} (product: not landed yet)")

    def attempts(self, where: str, params: list[Any]) -> list[dict[str, Any]]:
        return self.rows(f"SELECT * FROM agent_attempts WHERE {where} ORDER BY started_at, attempt_id", params)

    def attempts_in_trace(self, trace_id: str) -> list[dict[str, Any]]:
        return self.attempts("trace_id = ?", [trace_id])

    def steps(self, attempt_id: str) -> list[dict[str, Any]]:
        self.require("agent_attempt_steps", "contract C1, an attempt's steps")
        return self.rows("SELECT * FROM agent_attempt_steps WHERE attempt_id = ? ORDER BY seq", [attempt_id])

    def messages(self, attempt_id: str) -> Messages:
        self.require("agent_attempt_messages", "contract C2, an attempt's exact messages")
        rows = self.rows("SELECT * FROM agent_attempt_messages WHERE attempt_id = ?", [attempt_id])
        assert len(rows) <= 1, f"C2 allows at most one messages row per attempt, got {len(rows)}"
        if not rows:
            return Messages(None, None, None, None, None)
        r = rows[0]
        return Messages(r["system_prompt"], r["user_prompt"], r["input_messages_json"], r["messages_source"],
                        r["messages_note"])  # fmt: skip

    def inputs(self, attempt_id: str) -> list[dict[str, Any]]:
        return self.rows("SELECT * FROM agent_attempt_inputs WHERE attempt_id = ? ORDER BY seq", [attempt_id])

    def span(self, span_id: str) -> dict[str, Any]:
        rows = self.rows('SELECT * FROM otel_traces WHERE "SpanId" = ?', [span_id])
        assert len(rows) == 1, f"span {span_id} landed {len(rows)} times in otel_traces"
        return rows[0]

    def logs(self, where: str, params: list[Any]) -> list[dict[str, Any]]:
        return self.rows(f'SELECT * FROM otel_logs WHERE {where} ORDER BY "Timestamp"', params)


# --- the viewer page --------------------------------------------------------------------------

# The page's parts drawn only once opened (docs/viewer.md): opened here, as a reader would.
LAZY_SECTIONS = ("page:current_msg", "page:messages", "page:parts_more", "page:steps_table")


def open_page(monkeypatch: pytest.MonkeyPatch, db: Path, store: Path, attempt_id: str) -> AppTest:
    """The attempt page (``?attempt=``) of viewer/app.py, run by Streamlit's AppTest on the landed file,
    with its on-demand parts (messages, exchange parts, steps) opened."""
    monkeypatch.setenv(names.ENV_DB, str(db))
    monkeypatch.setenv(names.ENV_STORE, str(store))
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["attempt"] = attempt_id
    at.run()
    assert not at.exception, at.exception
    for key in LAZY_SECTIONS:
        at.session_state[key] = True
    at.run()
    assert not at.exception, at.exception
    return at


def page_strings(at: AppTest) -> list[str]:
    """Every string the page shows (text, code, Markdown, notes, headers, expander and widget labels)."""
    out: list[str] = []
    for kind in ("text", "code", "markdown", "caption", "info", "warning", "error", "success",
                 "title", "header", "subheader"):  # fmt: skip
        out += [str(e.value) for e in at.get(kind)]
    out += [str(e.label) for e in at.get("expander")]
    out += [str(b.label) for b in at.button] + [str(t.label) for t in at.toggle]
    for df in at.dataframe:
        out.append(df.value.to_csv(index=False))
    return out


def unescaped(s: str) -> str:
    """Markdown-escaped page text back to plain text, to compare with what was sent."""
    return s.replace("\\", "")


def shows(at: AppTest, needle: str) -> bool:
    return any(needle in s or needle in unescaped(s) for s in page_strings(at))


def code_values(at: AppTest, node: object = None) -> list[str]:
    """The recorded texts shown verbatim in the page's text boxes (containers keyed ``textbox-…``)."""
    out: list[str] = []
    for child in (getattr(at.main if node is None else node, "children", None) or {}).values():
        if str(getattr(child, "key", "") or "").startswith("textbox-"):
            out += [t.value for t in child.text]
        else:
            out += code_values(at, child)
    return out


def assert_page_truthful(at: AppTest, *, attempt_id: str, task: str | None, system: str | None,
                         user: str | None) -> None:  # fmt: skip
    """The page names the attempt, shows the task (or the legacy sentence) and the exact messages verbatim."""
    assert shows(at, attempt_id), f"the page does not name attempt {attempt_id}"
    codes = code_values(at)
    if task is not None:
        assert task in codes, f"the task is not shown as code on the page: {codes}"
    else:
        assert shows(at, names.SENTENCE_LEGACY_TASK), "a legacy attempt must show the legacy-task sentence"
    for label, msg in (("system", system), ("user", user)):
        if msg is not None:
            assert msg in codes, f"the exact {label} message is not shown: {msg!r} not in {codes}"
    assert all("<img" not in m.value for m in at.markdown), "untrusted text reached a Markdown element"
