"""Access control over every content-bearing field, driven through the real app with AppTest.

A denied viewer sees no run and no content; purged and revoked attempts show no content while
their hashes and counts stay; the page says what was withheld and when.  Every page is searched
as a whole (every element's protobuf, so tables, buttons and the sidebar count too).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from access_fixture import HOSTILE_LABEL, HOSTILE_PATH, OPEN_RUN, SECRET_RUN, AccessFixture, build_access_fixture
from apptest_helpers import APP, boxes, panel_toggles, run_app
from streamlit.testing.v1 import AppTest
from viewer_fixture import FixtureBuilder

from otel_inputs import names
from otel_inputs.store import ArtifactStore, purge, purge_state, revoke_source
from otel_inputs.viewer._access import current_access


@pytest.fixture()
def fx(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AccessFixture:
    """A fresh two-run fixture per test (tests purge and revoke), served by the app's environment."""
    f = build_access_fixture(tmp_path / "fx")
    monkeypatch.setenv(names.ENV_DB, str(f.db_path))
    monkeypatch.setenv(names.ENV_STORE, str(f.store_path))
    monkeypatch.delenv(names.ENV_ACCESS_POLICY, raising=False)
    return f


def policy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: dict) -> None:
    path = tmp_path / "policy.json"
    path.write_text(json.dumps(body))
    monkeypatch.setenv(names.ENV_ACCESS_POLICY, str(path))


def only_open_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A deny-by-default policy letting the current OS user see run-open only; returns the user."""
    who = current_access(None).viewer
    policy(tmp_path, monkeypatch, {"default": "deny", "viewers": {who: {"runs": [OPEN_RUN]}}})
    return who


def page_text(at: AppTest) -> str:
    """Everything the page holds: each element's protobuf as text and every table cell, main area and sidebar."""
    out: list[str] = []

    def walk(node: object) -> None:
        proto = getattr(node, "proto", None)
        if proto is not None:
            out.append(str(proto))
        children = getattr(node, "children", None) or {}
        for child in children.values():
            walk(child)

    walk(at._tree)
    for df in at.dataframe:
        out.extend(str(v) for v in df.value.to_numpy().ravel())
    return "\n".join(out)


def callouts(at: AppTest) -> list[str]:
    """The info, warning and error callouts as plain text (the app Markdown-escapes them)."""
    return [re.sub(r"\\(.)", r"\1", c.value) for c in (*at.info, *at.warning, *at.error)]


LAZY_EXPANDERS = ("page:current_msg", "page:messages", "page:parts_more", "page:steps_table",  # drawn once opened
                  "page:taskruns")


def _toggles_on(at: AppTest) -> None:
    if any(not at.session_state[k] if k in at.session_state else True for k in LAZY_EXPANDERS):
        for k in LAZY_EXPANDERS:
            at.session_state[k] = True
        at.run()
        assert not at.exception, at.exception
    for _ in range(3):  # a toggle can reveal more toggles (where-else inside an item); bounded
        off = [t for t in panel_toggles(at) if not t.value]
        if not off:
            return
        for t in off:
            at.toggle(key=t.key).set_value(True)
        at.run()
        assert not at.exception, at.exception


def everything(at: AppTest, attempt_id: str) -> str:
    """The page's text in every state a viewer can reach: each item opened, every toggle switched on,
    every lazy expander opened."""
    _toggles_on(at)
    seen = [page_text(at)]
    choosers = [s.key for s in at.selectbox if s.key and s.key.endswith(":item")]
    for key in choosers[:20]:
        for option in list(at.selectbox(key=key).options)[1:50]:  # the first option is "no selection"
            seq = option.split()[0].lstrip("#")  # options read "#<seq>  <label>"; the fixture's ids are <attempt>-in<seq>
            at.selectbox(key=key).set_value(f"{attempt_id}-in{seq}").run()
            assert not at.exception, at.exception
            _toggles_on(at)
            seen.append(page_text(at))
    return "\n".join(seen)


# -- permission ---------------------------------------------------------------------------------
def test_open_policy_shows_content_so_the_markers_are_findable(fx: AccessFixture) -> None:
    """With no policy every marker of an attempt reaches its page: the searches below can fail."""
    at = run_app(attempt=fx.secret_id)
    text = everything(at, fx.secret_id)
    missing = [k for k, v in fx.secret_markers.items() if v not in text]
    assert missing == []
    assert OPEN_RUN in text  # "where else" from the shared file lists the other run's attempt
    assert at.get("download_button")


def test_denied_viewer_sees_no_run_and_no_content_anywhere(fx: AccessFixture, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """The denied run is not listed, its run page and attempt page show only the denial, no marker anywhere."""
    who = only_open_run(tmp_path, monkeypatch)
    runs = run_app()
    listed = [row for df in runs.dataframe for row in df.value["run"].tolist()]
    assert listed == [OPEN_RUN]
    assert "Runs that the access policy does not let you see are not listed." in [t.value for t in runs.text]
    for at, aid in ((runs, ""), (run_app(run=SECRET_RUN), ""), (run_app(attempt=fx.secret_id), fx.secret_id)):
        text = everything(at, aid)
        assert [m for m in fx.all_secret_markers if m in text] == []
        assert SECRET_RUN not in text
    denied = run_app(attempt=fx.secret_id)
    assert any(f"does not let {who} see this run" in e for e in callouts(denied))
    assert not denied.get("download_button") and not boxes(denied) and not panel_toggles(denied)


def test_denied_viewer_still_sees_the_allowed_run(fx: AccessFixture, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The same policy lets the viewer read the run it lists, content included."""
    only_open_run(tmp_path, monkeypatch)
    text = everything(run_app(attempt=fx.open_id), fx.open_id)
    assert fx.open_markers["task"] in text and fx.open_markers["notes"] in text and fx.open_markers["part"] in text
    # "where else" from the shared file does not lead into the denied run, nor count it
    assert fx.secret_id not in text and SECRET_RUN not in text
    assert "No other attempt you may see had the same SHA-256." in text


def test_unusable_policy_denies_everything(fx: AccessFixture, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A policy file that cannot be parsed lists no run and opens no attempt (never allow by default)."""
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    monkeypatch.setenv(names.ENV_ACCESS_POLICY, str(bad))
    runs = run_app()
    assert "No run is visible to you." in [t.value for t in runs.text]
    at = run_app(attempt=fx.open_id)
    text = page_text(at)
    assert any("until the access policy is fixed" in n for n in callouts(at))
    assert [m for m in fx.open_markers.values() if m in text] == []


def test_login_configured_and_nobody_logged_in_shows_only_the_login_button(fx: AccessFixture) -> None:
    """With [auth] in the secrets and no login, the page holds a login button and nothing recorded."""
    at = AppTest.from_file(APP, default_timeout=30)
    at.secrets["auth"] = {"redirect_uri": "http://127.0.0.1:1/oauth2callback", "cookie_secret": "x" * 32,
                          "client_id": "viewer", "client_secret": "s",
                          "server_metadata_url": "http://127.0.0.1:1/.well-known/openid-configuration"}
    at.query_params["attempt"] = fx.open_id
    at.run()
    assert not at.exception, at.exception
    assert [b.label for b in at.button] == ["Log in"]
    text = page_text(at)
    assert [m for m in fx.open_markers.values() if m in text] == [] and OPEN_RUN not in text


# -- purge -------------------------------------------------------------------------------------
def test_purged_attempt_shows_no_content_but_keeps_hashes_counts_and_when(fx: AccessFixture) -> None:
    """After purge: task, messages, labels, paths, previews, parts withheld; SHA-256, sizes, counts and time shown."""
    store = ArtifactStore(fx.store_path, create=False)
    purge(store, attempt_ids=[fx.open_id])
    at = run_app(attempt=fx.open_id)
    text = everything(at, fx.open_id)
    assert [k for k, v in fx.open_markers.items() if v in text] == []
    assert fx.task_path not in text and fx.notes_dir not in text
    purged_at = purge_state(store, fx.open_id).attempt_purged_at_ns
    assert purged_at is not None
    notes = callouts(at)
    assert any("The task text is withheld: this attempt was purged at " in n for n in notes)
    assert any("The exact messages are withheld: this attempt was purged at " in n for n in notes)
    for item in store.attempt(fx.open_id).items:
        assert f"SHA-256: {item.sha256}" in text  # identity stays
    assert "4 inputs declared, 4 captured, 0 left out" in text
    assert "Unavailable: purged" in text and "withheld (purged at " in text  # "was it read?" is withheld too
    assert "content withheld: this attempt was purged at " in text
    assert not boxes(at)  # no preview, no part content, no task, no message


def test_purged_prompt_file_is_not_shown_as_the_task(fx: AccessFixture) -> None:
    """Purging the prompt file by source path withholds the task and the messages that carry it; other items stay."""
    store = ArtifactStore(fx.store_path, create=False)
    purge(store, source_path=fx.task_path)
    at = run_app(attempt=fx.open_id)
    text = everything(at, fx.open_id)
    m = fx.open_markers
    assert m["task"] not in text and m["user"] not in text and m["system"] not in text and m["part"] not in text
    assert any("its prompt file was purged at " in n for n in callouts(at))
    assert m["notes"] in text and m["label"] in text  # an item the purge did not cover still reads


def test_policy_may_keep_labels_and_paths_of_purged_items(fx: AccessFixture, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """``"withheld": {"labels": "show", "paths": "show"}`` keeps labels and paths; content stays withheld."""
    policy(tmp_path, monkeypatch, {"default": "allow", "withheld": {"labels": "show", "paths": "show"}})
    purge(ArtifactStore(fx.store_path, create=False), attempt_ids=[fx.open_id])
    text = everything(run_app(attempt=fx.open_id), fx.open_id)
    m = fx.open_markers
    assert m["label"] in text and m["path"] in text
    assert m["task"] not in text and m["notes"] not in text and m["user"] not in text


# -- revocation --------------------------------------------------------------------------------
def test_revoked_path_reference_withholds_its_label_path_and_preview_only(fx: AccessFixture) -> None:
    """A revoked path-reference source hides that item's label, path and bytes; task and messages stay."""
    revoke_source(ArtifactStore(fx.store_path, create=False), fx.notes_dir, reason="consent withdrawn")
    at = run_app(attempt=fx.open_id)
    text = everything(at, fx.open_id)
    m = fx.open_markers
    assert m["label"] not in text and m["path"] not in text and m["notes"] not in text
    assert m["task"] in text and m["user"] in text  # a path reference is not part of the messages
    assert "(label withheld: source revoked at " in text and "reason: consent withdrawn" in text


def test_revoked_inline_item_withholds_the_messages_that_carry_it(fx: AccessFixture) -> None:
    """A revoked inline item hides the exact messages and part content (they embed it)."""
    revoke_source(ArtifactStore(fx.store_path, create=False), fx.inline_path)
    at = run_app(attempt=fx.open_id)
    text = everything(at, fx.open_id)
    m = fx.open_markers
    assert m["inline"] not in text and m["user"] not in text and m["system"] not in text and m["part"] not in text
    assert any("they carry input #2, which was source revoked at " in n for n in callouts(at))
    assert m["task"] in text  # the task's own prompt file was not revoked


def test_revoked_prompt_file_withholds_the_task(fx: AccessFixture) -> None:
    """Revoking the prompt file's path hides the task text, though its bytes still match their hash."""
    store = ArtifactStore(fx.store_path, create=False)
    revoke_source(store, fx.task_path)
    at = run_app(attempt=fx.open_id)
    assert fx.open_markers["task"] not in page_text(at)
    assert any("its prompt file was source revoked at " in n for n in callouts(at))


# -- hostile labels and paths -------------------------------------------------------------------
def test_hostile_labels_and_paths_stay_plain_text_or_withheld(builder: FixtureBuilder, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Markup in labels and paths is drawn only as plain text; once revoked it is not on the page at all."""
    builder.attempt("h-1", 0, run_id=OPEN_RUN, session_id="s", send_kind="initial", turn_index=1, item_count=2)
    builder.add_input("h-1", 0, HOSTILE_LABEL, "context_handoff", "path_reference", source_path=HOSTILE_PATH,
                      data=b"hostile\n", media_type="text/plain", preview_kind="text")
    builder.add_input("h-1", 1, HOSTILE_LABEL + " 2", "context_handoff", "path_reference",
                      source_path="/work/other/x.txt", data=b"other\n", media_type="text/plain", preview_kind="text")
    db, store = builder.write()
    monkeypatch.setenv(names.ENV_DB, str(db))
    monkeypatch.setenv(names.ENV_STORE, str(store))
    monkeypatch.delenv(names.ENV_ACCESS_POLICY, raising=False)
    at = run_app(attempt="h-1")
    shown = everything(at, "h-1")
    markdown = "\n".join(m.value for m in at.markdown)
    assert "LABELHOSTILE" not in markdown and "PATHHOSTILE" not in markdown
    assert HOSTILE_LABEL in shown and "PATHHOSTILE" in shown  # as plain text and table cells only
    revoke_source(ArtifactStore(store, create=False), "/work/ctx")
    text = everything(run_app(attempt="h-1"), "h-1")
    assert "PATHHOSTILE" not in text and HOSTILE_LABEL + " 2" in text
    assert [m.start() for m in re.finditer(re.escape(HOSTILE_LABEL), text)] == \
        [m.start() for m in re.finditer(re.escape(HOSTILE_LABEL + " 2"), text)]  # only the unrevoked label


def test_unreadable_revocation_list_withholds_content_instead_of_showing_it(
        fx: AccessFixture, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """A revocation list that cannot be parsed fails closed: labels, paths, task and messages are withheld."""
    broken = tmp_path / "revocations.json"
    broken.write_text("{broken")
    monkeypatch.setenv(names.ENV_REVOCATIONS, str(broken))
    at = run_app(attempt=fx.open_id)
    text = page_text(at)
    m = fx.open_markers
    assert [k for k in ("task", "user", "system", "label", "path") if m[k] in text] == []
    assert "(label withheld: unknown whether revoked: the revocation list cannot be read" in text


def test_rows_about_other_attempts_drop_denied_runs_and_withhold_purged_labels(
        fx: AccessFixture, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """gate_foreign (where-else, drift): denied runs' rows are dropped and counted; purged inputs lose label and path."""
    from dataclasses import dataclass

    @dataclass(frozen=True)
    class Row:  # the shape of a where-else row: another attempt's input
        attempt_id: str
        run_id: str | None
        label: str | None
        source_path: str | None
        sha256: str | None
        input_id: str | None = None

    only_open_run(tmp_path, monkeypatch)
    store = ArtifactStore(fx.store_path, create=False)
    purge(store, source_path=fx.notes_dir)
    rows = [Row(fx.secret_id, SECRET_RUN, "HIDDENLABEL", "/x/HIDDENPATH", "a" * 64, f"{fx.secret_id}-in1"),
            Row(fx.open_id, OPEN_RUN, "notes.md", f"{fx.notes_dir}/notes.md", "b" * 64, f"{fx.open_id}-in1"),
            Row(fx.open_id, OPEN_RUN, "failure.txt", fx.inline_path, "c" * 64, f"{fx.open_id}-in2"),
            Row(fx.open_id, OPEN_RUN, "no-id.txt", "/work/y.txt", "d" * 64)]
    access = current_access(fx.store_path)
    assert not access.sees_all  # a restricted viewer: totals over all runs must not be shown
    shown, hidden = access.gate_foreign(rows)
    assert hidden == 1 and [r.attempt_id for r in shown] == [fx.open_id] * 3
    assert shown[0].label.startswith("(label withheld: purged at ") and fx.notes_dir not in shown[0].source_path
    assert shown[1].label == "failure.txt" and shown[1].source_path == fx.inline_path  # not purged: as recorded
    assert shown[2].label.startswith("(label withheld: purged at ")  # no input id: cannot tell which, so withheld


def test_view_auth_options_become_a_private_streamlit_auth_section(tmp_path: Path) -> None:
    """--auth-* options give a TOML [auth] section (default loopback redirect) in a 0600 file; a client id is required."""
    import os
    import stat
    import tomllib

    import click

    from otel_inputs.viewer._cli import auth_secrets, write_secrets

    assert auth_secrets(8501, None, None, None, None, None) is None  # no provider: login stays off
    with pytest.raises(click.UsageError):
        auth_secrets(8501, "http://127.0.0.1:9/.well-known/openid-configuration", None, None, None, None)
    text = auth_secrets(8501, "http://127.0.0.1:9/.well-known/openid-configuration", "viewer", 'se"cr\\et', None, None)
    path = write_secrets(text)
    try:
        auth = tomllib.loads(path.read_text())["auth"]
        assert auth["redirect_uri"] == "http://127.0.0.1:8501/oauth2callback"
        assert auth["client_secret"] == 'se"cr\\et' and len(auth["cookie_secret"]) == 64
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    finally:
        path.unlink()
        path.parent.rmdir()
