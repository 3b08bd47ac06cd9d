"""Access control in a real browser: `otel-inputs view` served, Debian chromium driven by Playwright.

The OIDC test starts an OpenID Connect provider (``oidc-provider-mock``) on 127.0.0.1 in this
process, serves the viewer with ``--auth-*`` options (Streamlit's own ``st.login``), and logs in
through the provider's real authorization form; the access policy then decides by the login's
e-mail, not by the OS user.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from access_fixture import OPEN_RUN, SECRET_RUN, AccessFixture, build_access_fixture
from viewer_process import serve_viewer

from otel_inputs import names
from otel_inputs.viewer._access import NO_LOGIN, current_access
from otel_inputs.viewer._bundle import verify_bundle

pytestmark = [pytest.mark.browser, pytest.mark.timeout(240)]

ALICE, MALLORY = "alice@example.com", "mallory@example.com"


@pytest.fixture(scope="module")
def fx(tmp_path_factory: pytest.TempPathFactory) -> AccessFixture:
    """The two-run fixture, shared read-only by this module's served viewers."""
    return build_access_fixture(tmp_path_factory.mktemp("access-browser"))


def _policy(root: Path, body: dict) -> Path:
    path = root / "policy.json"
    path.write_text(json.dumps(body))
    return path


def _env(policy: Path) -> dict[str, str]:
    env = dict(os.environ)
    env[names.ENV_ACCESS_POLICY] = str(policy)
    return env


@pytest.fixture(scope="module")
def browser(chromium):  # noqa: ANN001
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = chromium.launch(pw)
        try:
            yield b
        finally:
            b.close()


def body_text(page) -> str:  # noqa: ANN001
    return page.locator("body").inner_text()


def wait_text(page, text: str, timeout: float = 30_000) -> None:  # noqa: ANN001
    page.get_by_text(text, exact=False).first.wait_for(state="visible", timeout=timeout)


def test_denied_viewer_sees_no_content_in_the_browser(fx: AccessFixture, browser, chromium,  # noqa: ANN001
                                                      tmp_path: Path) -> None:
    """Served with a policy denying the OS user run-secret: not listed, no marker on its pages; run-open downloads a bundle that verifies."""
    who = current_access(None).viewer
    policy = _policy(tmp_path, {"default": "deny", "viewers": {who: {"runs": [OPEN_RUN]}}})
    with serve_viewer(fx.db_path, fx.store_path, tmp_path / "view.log", env=_env(policy)) as url:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(url)
        wait_text(page, "Runs that the access policy does not let you see are not listed.")
        assert SECRET_RUN not in page.content()  # the table draws on a canvas: its rows are checked by AppTest
        page.goto(url + "?run=" + SECRET_RUN)
        wait_text(page, f"the access policy does not let {who} see this run")
        assert SECRET_RUN not in body_text(page)
        page.goto(url + "?run=" + OPEN_RUN)
        wait_text(page, "attempt(s) match")
        page.goto(url + "?attempt=" + fx.secret_id)
        wait_text(page, f"the access policy does not let {who} see this run")
        html = page.content()
        assert [m for m in fx.all_secret_markers if m in html] == [] and SECRET_RUN not in html
        page.goto(url + "?attempt=" + fx.open_id)
        wait_text(page, fx.open_markers["task"])
        with page.expect_download(timeout=60_000) as download:
            page.get_by_role("button", name="Download evidence bundle (tar with SHA-256 manifest)").click()
        saved = tmp_path / "downloaded.tar"
        download.value.save_as(saved)
        manifest = verify_bundle(saved)  # the served bytes verify offline
        assert manifest["attempt_id"] == fx.open_id and manifest["viewer"] == who
        assert sum(1 for s in manifest["snapshots"] if s["status"] == "included") == 4
        page.close()


class Provider:
    """oidc-provider-mock's WSGI app on a werkzeug server bound to 127.0.0.1 (stopped by ``close``)."""

    def __init__(self) -> None:
        import oidc_provider_mock
        import werkzeug.serving

        self.server = werkzeug.serving.make_server("127.0.0.1", 0, oidc_provider_mock.app(), threaded=True)
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_port}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


@pytest.fixture()
def provider(monkeypatch: pytest.MonkeyPatch) -> Iterator[Provider]:
    """The OpenID Connect provider for one test; plain http is allowed on loopback for the test only."""
    monkeypatch.setenv("AUTHLIB_INSECURE_TRANSPORT", "1")
    p = Provider()
    try:
        yield p
    finally:
        p.close()


def login(page, url: str, email: str) -> None:  # noqa: ANN001
    """Log in through Streamlit's button and the provider's authorization form."""
    page.goto(url)
    wait_text(page, NO_LOGIN)
    page.get_by_role("button", name="Log in").click()
    page.locator("input[name=sub]").wait_for(state="visible", timeout=30_000)
    page.locator("input[name=sub]").fill(email)
    page.get_by_role("button", name="Authorize").click()
    page.locator("[data-testid='stPopover'] button").filter(has_text="otel-inputs").first.click()  # the viewer menu
    wait_text(page, f"Viewing as: {email}")
    page.keyboard.press("Escape")


def test_oidc_login_decides_access_by_the_logged_in_user(fx: AccessFixture, browser, provider: Provider,  # noqa: ANN001
                                                         tmp_path: Path) -> None:
    """Before login nothing shows; alice (listed) sees run-open only; mallory (unlisted) sees no run."""
    policy = _policy(tmp_path, {"default": "deny", "viewers": {ALICE: {"runs": [OPEN_RUN]}}})
    args = ["--auth-metadata-url", provider.url + "/.well-known/openid-configuration",
            "--auth-client-id", "otel-inputs-viewer", "--auth-client-secret", "test-secret"]
    with serve_viewer(fx.db_path, fx.store_path, tmp_path / "view.log", extra_args=args, env=_env(policy)) as url:
        anon = browser.new_context()
        page = anon.new_page()
        page.goto(url + "?attempt=" + fx.open_id)
        wait_text(page, NO_LOGIN)
        html = page.content()
        assert [m for m in fx.open_markers.values() if m in html] == [] and OPEN_RUN not in html
        anon.close()

        ctx = browser.new_context()
        page = ctx.new_page()
        login(page, url, ALICE)
        wait_text(page, "Runs that the access policy does not let you see are not listed.")
        assert SECRET_RUN not in page.content()
        page.goto(url + "?run=" + OPEN_RUN)
        wait_text(page, "attempt(s) match")
        page.goto(url + "?attempt=" + fx.open_id)
        wait_text(page, fx.open_markers["task"])
        page.goto(url + "?attempt=" + fx.secret_id)
        wait_text(page, f"the access policy does not let {ALICE} see this run")
        assert [m for m in fx.all_secret_markers if m in page.content()] == []
        ctx.close()

        ctx = browser.new_context()
        page = ctx.new_page()
        login(page, url, MALLORY)
        wait_text(page, "No run is visible to you.")
        html = page.content()
        assert OPEN_RUN not in html and SECRET_RUN not in html
        page.goto(url + "?attempt=" + fx.open_id)
        wait_text(page, f"the access policy does not let {MALLORY} see this run")
        assert [m for m in fx.open_markers.values() if m in page.content()] == []
        ctx.close()
