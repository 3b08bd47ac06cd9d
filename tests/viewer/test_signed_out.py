"""With login configured and nobody logged in, no entry point shows content: not the page, not a
bundle, not a preview, whichever default identity each would use (docs/access.md)."""

from __future__ import annotations

from pathlib import Path

import pytest
from access_fixture import OPEN_RUN, AccessFixture, build_access_fixture
from apptest_helpers import APP
from streamlit.testing.v1 import AppTest

from otel_inputs import names

AUTH = {"redirect_uri": "http://127.0.0.1:1/oauth2callback", "cookie_secret": "x" * 32, "client_id": "viewer",
        "client_secret": "s", "server_metadata_url": "http://127.0.0.1:1/.well-known/openid-configuration"}  # fmt: skip


@pytest.fixture()
def fx(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AccessFixture:
    """The two-run fixture, served by the app's environment with the default (allow-all) policy."""
    f = build_access_fixture(tmp_path / "fx")
    monkeypatch.setenv(names.ENV_DB, str(f.db_path))
    monkeypatch.setenv(names.ENV_STORE, str(f.store_path))
    monkeypatch.setenv("SIGNED_OUT_ATTEMPT", f.open_id)
    monkeypatch.delenv(names.ENV_ACCESS_POLICY, raising=False)
    return f


def _entry_points() -> None:
    """Run inside AppTest with [auth] configured and nobody logged in: call each entry point with its defaults."""
    import io
    import os

    import streamlit as st

    from otel_inputs.viewer import _queries as q
    from otel_inputs.viewer._access import current_access, viewer_identity
    from otel_inputs.viewer._bundle import BundleRefused, bundle_bytes, write_bundle
    from otel_inputs.viewer._evidence import open_evidence, read_input
    from otel_inputs.viewer._fleet import fleet_decisions
    from otel_inputs.viewer._previews import preview

    db, store, attempt_id = os.environ["OTEL_INPUTS_DB"], os.environ["OTEL_INPUTS_STORE"], os.environ["SIGNED_OUT_ATTEMPT"]
    st.text(f"identity: {viewer_identity()}")
    with q.open_backend(db) as backend:
        bundle = q.load_attempt(backend, attempt_id)
        assert bundle is not None
        fleet_evidence, _ = fleet_decisions(backend, bundle.attempt, (store,))  # a fleet viewer's default identity
    access = current_access(store)
    st.text(f"run allowed: {access.run_allowed(bundle.attempt.run_id)}")
    gated = access.gate(bundle)
    st.text(f"gated task: {gated.attempt.task_prompt} inputs: {len(gated.inputs)}")
    for ev in (open_evidence(store), fleet_evidence):
        for item in bundle.inputs:
            result = read_input(ev, item, None)
            st.text(f"read {item.input_id}: {result.outcome.value} {result.snapshot is not None}")
    for item in bundle.inputs:  # a store path as the source: the reader and identity are the defaults
        shown = preview(store, item)
        st.text(f"preview {item.input_id}: {shown.kind} {shown.text is not None or shown.image_png is not None}")
    for build in (lambda: bundle_bytes(db, store, attempt_id, viewer_identity()),
                  lambda: write_bundle(io.BytesIO(), db, store, attempt_id)):
        try:
            build()
            st.text("bundle: written")
        except BundleRefused as exc:
            st.text(f"bundle: refused ({exc})")


def test_signed_out_viewer_sees_no_content_through_any_entry_point(fx: AccessFixture) -> None:
    """Login configured, nobody logged in: the page shows only the login button, and previews, readbacks and bundles through their default identity all refuse."""
    page = AppTest.from_file(APP, default_timeout=30)
    page.secrets["auth"] = AUTH
    page.query_params["attempt"] = fx.open_id
    page.run()
    assert not page.exception, page.exception
    assert [b.label for b in page.button] == ["Log in"]

    at = AppTest.from_function(_entry_points, default_timeout=60)
    at.secrets["auth"] = AUTH
    at.run()
    assert not at.exception, at.exception
    lines = [t.value for t in at.text]
    assert "identity: (not logged in)" in lines
    assert "run allowed: False" in lines
    assert any(line.startswith("gated task: None inputs: 0") for line in lines)
    reads = [line for line in lines if line.startswith("read ")]
    assert reads and all(line.endswith("permission_denied False") for line in reads), reads
    previews = [line for line in lines if line.startswith("preview ")]
    assert previews and all(line.endswith(("refused False", "none False")) for line in previews), previews
    bundles = [line for line in lines if line.startswith("bundle: ")]
    assert len(bundles) == 2 and all(b.startswith("bundle: refused") and "Log in" in b for b in bundles), bundles
    text = "\n".join(lines)
    assert [m for m in fx.open_markers.values() if m in text] == [] and OPEN_RUN not in text
