"""Readback discipline, store-authoritative status, exchange parts and the budget picture in the viewer."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest
from viewer_fixture import NOTES_V1, FixtureBuilder

from otel_inputs import names
from otel_inputs.names import ENV_ACCESS_POLICY
from otel_inputs.names import ENV_STORE_BUDGET as ENV_BUDGET
from otel_inputs.store import ArtifactStore, purge, revoke_source
from otel_inputs.viewer import _evidence
from otel_inputs.viewer._format import md_escape
from otel_inputs.viewer._panel import PARTS_NOT_RECORDED
from otel_inputs.viewer._backend import DuckDBBackend
from otel_inputs.viewer._queries import get_inputs, load_attempt
from apptest_helpers import boxes, open_expander, open_item, panel_toggles, run_app, table, table_cells, texts

RUN = "run-evidence"
REQUEST = b'{"kind":"logical_request","messages":[{"content":"add a flag","role":"user"}],"model":"m"}'


@pytest.fixture()
def small(builder: FixtureBuilder, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """Three attempts of one run: with parts, without parts, and one whose input rows predate migration 7."""
    b = builder
    common = {"run_id": RUN, "session_id": "s1", "phase": "implement", "send_kind": "initial", "turn_index": 1}
    b.attempt("ev-1", 0, **common, item_count=2)
    b.add_input("ev-1", 0, "notes.md", "context_handoff", "path_reference", source_path="/work/handoff/notes.md",
                data=NOTES_V1.encode(), media_type="text/markdown", preview_kind="text")
    b.add_input("ev-1", 1, "plan.md", "context_handoff", "path_reference", source_path="/work/plans/plan.md",
                data=b"# Plan\n\nstep one\n", media_type="text/markdown", preview_kind="text")
    b.add_part("ev-1", "logical_request", REQUEST, dispatch="dispatched")
    b.add_part("ev-1", "observable_output", None, dispatch=None, persistence="not_queued", reason="capacity_exceeded")
    b.attempt("ev-2", 1, **{**common, "session_id": "s2"}, item_count=1)
    b.add_input("ev-2", 0, "spec.md", "context_handoff", "path_reference", source_path="/work/spec.md",
                data=b"# Spec\n", media_type="text/markdown", preview_kind="text")
    b.add_part("ev-2", "logical_request", REQUEST, persistence="queued", store=False)
    b.attempt("ev-3", 2, **{**common, "session_id": "s3"}, item_count=1)
    b.add_input("ev-3", 0, "old.md", "context_handoff", "path_reference", source_path="/work/old.md",
                data=b"# Old\n", media_type="text/markdown", preview_kind="text")
    b.legacy_input_rows.add("ev-3")
    db, store = b.write()
    monkeypatch.setenv(names.ENV_DB, str(db))
    monkeypatch.setenv(names.ENV_STORE, str(store))
    monkeypatch.delenv(ENV_ACCESS_POLICY, raising=False)
    monkeypatch.delenv(ENV_BUDGET, raising=False)
    return db, store


def _policy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, viewers: dict[str, list[str]]) -> None:
    path = tmp_path / "policy.json"
    path.write_text(json.dumps({"default": "deny", "viewers": {v: {"runs": r} for v, r in viewers.items()}}))
    monkeypatch.setenv(ENV_ACCESS_POLICY, str(path))


# -- item 1: pruned lookup with a fallback -------------------------------------------------------
def test_input_rows_are_found_with_and_without_the_start_column(small: tuple[Path, Path]) -> None:
    """The pruned lookup finds rows that carry attempt_started_at, and the fallback finds legacy NULL rows."""
    db, _ = small
    con = duckdb.connect(str(db), read_only=True)
    try:
        nulls = dict(con.execute("SELECT attempt_id, count(*) FILTER (WHERE attempt_started_at IS NULL) "
                                 "FROM agent_attempt_inputs GROUP BY ALL").fetchall())
        assert nulls == {"ev-1": 0, "ev-2": 0, "ev-3": 1}
        backend = DuckDBBackend(con, db.name)
        for attempt_id, n in (("ev-1", 2), ("ev-3", 1)):
            bundle = load_attempt(backend, attempt_id)
            assert bundle is not None and len(bundle.inputs) == n
            assert len(get_inputs(backend, attempt_id, bundle.attempt.started_ns)) == n
        assert get_inputs(backend, "ev-1", 1) == ()  # a wrong start time really filters (the column is used)
    finally:
        con.close()


# -- item 2: exchange parts ---------------------------------------------------------------------
def test_attempt_without_part_events_says_parts_were_not_recorded(small: tuple[Path, Path]) -> None:
    """An attempt with no exchange-part rows shows the exact not-recorded sentence."""
    at = run_app(attempt="ev-3")
    assert "Exchange parts: " + PARTS_NOT_RECORDED in texts(at)
    assert PARTS_NOT_RECORDED not in texts(run_app(attempt="ev-1"))


def test_both_parts_show_outcome_dispatch_receipt_and_content_on_demand(small: tuple[Path, Path]) -> None:
    """Request and output show their own outcomes; unknown dispatch reads unknown; the receipt beats "queued";
    one line per part is on the page, the table and content once "Exchange parts" is opened."""
    at = run_app(attempt="ev-1")
    assert ("Exchange parts:\nLogical request: captured · dispatched · stored (the store's receipt says so)\n"
            "Observable output: not captured (capacity exceeded) · unknown · not queued (nothing was handed to the "
            "store)") in texts(at)
    parts = table(open_expander(at, "page:parts_more"), "persistence").to_dict("records")
    assert [(p["part"], p["capture"], p["dispatch"]) for p in parts] == [
        ("Logical request", "captured", "dispatched"),
        ("Observable output", "not captured (capacity exceeded)", "unknown")]
    assert parts[0]["persistence"] == "stored (the store's receipt says so)"  # queued at submit, then stored
    assert parts[1]["persistence"] == "not queued (nothing was handed to the store)"
    assert "not dispatched" not in "\n".join(texts(at) + table_cells(at))
    assert REQUEST.decode() not in boxes(at)
    at.toggle(key="page:part:logical_request:0").set_value(True).run()
    assert REQUEST.decode() in boxes(at)


def test_queued_part_without_a_store_receipt_is_not_shown_as_stored(small: tuple[Path, Path]) -> None:
    """A part the span saw queued but the store never receipted reads as unconfirmed, and its content is refused."""
    at = open_expander(run_app(attempt="ev-2"), "page:parts_more")
    assert ("queued at submit, not confirmed durable: no store receipt (not_found)"
            in list(table(at, "persistence")["persistence"]))
    at.toggle(key="page:part:logical_request:0").set_value(True).run()
    assert "Content refused: not_found (no stored receipt for this part)" in texts(at)


# -- item 3: readback discipline ----------------------------------------------------------------
def test_revoked_source_preview_is_refused_although_its_bytes_still_match(small: tuple[Path, Path]) -> None:
    """After revoke_source the preview says source_unavailable, while the store still verifies the bytes."""
    _, store_path = small
    store = ArtifactStore(store_path, create=False)
    revoke_source(store, "/work/handoff", reason="consent withdrawn")
    assert store.read_input("ev-1", "ev-1-in0").data == NOTES_V1.encode()  # bytes intact and matching
    at = run_app(attempt="ev-1")
    open_item(at, "path_reference", "ev-1-in0")
    assert "Preview refused: source_unavailable (the source of this input has been revoked)" in texts(at)
    assert all(NOTES_V1.rstrip("\n") not in b for b in boxes(at))
    open_item(at, "path_reference", "ev-1-in1")  # another source of the same attempt still reads
    assert "# Plan\n\nstep one" in [b.rstrip("\n") for b in boxes(at)]


def test_access_policy_refuses_previews_and_parts_to_an_unlisted_viewer(
        small: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With a deny-by-default policy that does not list the OS user, the attempt page shows only the denial."""
    _policy(tmp_path, monkeypatch, {"someone-else": ["*"]})
    at = run_app(attempt="ev-1")
    who = _evidence.os_user()
    assert [e.value for e in at.error] == [
        md_escape(f"permission_denied: the access policy does not let {who} see this run or its attempts.")]
    assert not panel_toggles(at) and not boxes(at) and not at.get("download_button")
    assert "notes.md" not in "\n".join(texts(at)) and RUN not in "\n".join(texts(at))


def test_streamlit_login_identity_is_the_viewer_when_logged_in(
        small: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A logged-in Streamlit user listed in the policy may read, although the OS user is not listed."""
    _policy(tmp_path, monkeypatch, {"alice@example.com": [RUN]})
    monkeypatch.setattr(_evidence, "streamlit_user", lambda: "alice@example.com")
    at = run_app(attempt="ev-1")
    open_item(at, "path_reference", "ev-1-in0")
    assert NOTES_V1.rstrip("\n") in [b.rstrip("\n") for b in boxes(at)]
    assert any("Viewing as: alice@example.com" in t for t in texts(at))  # in the viewer menu


def test_streamlit_user_is_none_without_a_login() -> None:
    """Outside a logged-in Streamlit session the identity falls back to the OS user."""
    assert _evidence.streamlit_user() is None
    assert _evidence.viewer_identity() == _evidence.os_user()


# -- item 4: store-authoritative status ---------------------------------------------------------
def test_store_eviction_and_purge_show_over_the_capture_time_status(small: tuple[Path, Path]) -> None:
    """Evicted and purged items show the store's status with hash and size still visible; no row is hidden."""
    _, store_path = small
    store = ArtifactStore(store_path, create=False)
    with store.catalog.write() as con:  # what a retention pass records for an evicted attempt
        assert con.execute("UPDATE items SET artifact_status = 'evicted', status_reason = 'disk_budget' "
                           "WHERE attempt_id = 'ev-1' AND artifact_status = 'available'").rowcount == 2
    purge(store, attempt_ids=["ev-2"])
    at = run_app(attempt="ev-1")
    rows = table(at, "artifact").to_dict("records")
    assert [r["label"] for r in rows] == ["notes.md", "plan.md"]
    assert [r["artifact"] for r in rows] == ["evicted (disk budget) (store; at capture: available)"] * 2
    open_item(at, "path_reference", "ev-1-in0")
    t = "\n".join(texts(at))
    assert "Unavailable: evicted (disk budget)" in t
    sha = store.attempt("ev-1").items[0].sha256
    assert f"SHA-256: {sha}" in t and f"{len(NOTES_V1.encode())} B" in t
    at2 = open_item(run_app(attempt="ev-2"), "path_reference", "ev-2-in0")
    # A purged item keeps its row, hash and size; its label and path are withheld (docs/access.md).
    assert "Unavailable: purged" in texts(at2)
    assert [lb.startswith("(label withheld: purged at ") for lb in table(at2, "artifact")["label"]] == [True]


# -- the usage picture --------------------------------------------------------------------------
def test_store_usage_is_shown_against_the_budget(small: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """With OTEL_INPUTS_STORE_BUDGET set, the run's store tab shows usage against it; without, says none is set."""
    assert any(s.startswith("Retention: no store budget set") for s in texts(run_app(run=RUN)))
    monkeypatch.setenv(ENV_BUDGET, "10")
    at = run_app(run=RUN)
    line = next(s for s in texts(at) if s.startswith("Store budget:"))
    assert "used of 10 B" in line
    assert at.get("progress")
    assert any("over its budget" in w.value for w in at.warning)
