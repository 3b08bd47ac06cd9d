"""Real browser: `otel-inputs view` serving the app, Debian chromium driven by Playwright."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from viewer_fixture import HOSTILE_LABEL, ViewerFixture
from viewer_process import serve_viewer


pytestmark = [pytest.mark.browser, pytest.mark.timeout(180)]

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"


@pytest.fixture(scope="module")
def server(viewer_fixture: ViewerFixture, chromium, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`otel-inputs view` on a free loopback port; the process group is always stopped."""
    log = tmp_path_factory.mktemp("server") / "view.log"
    with serve_viewer(viewer_fixture.db_path, viewer_fixture.store_path, log) as url:
        assert url in log.read_text()
        yield url


@pytest.fixture(scope="module")
def page(chromium, server: str):  # noqa: ANN001
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as pw:
        browser = chromium.launch(pw)
        try:
            pg = browser.new_page(viewport={"width": 1400, "height": 1000})
            dialogs: list[str] = []
            pg.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            pg.dialogs = dialogs  # type: ignore[attr-defined]
            yield pg
        finally:
            browser.close()


def test_deep_link_shows_task_then_text_and_image_previews(page, server: str, viewer_fixture: ViewerFixture) -> None:
    """Opening ?attempt= shows the task without a click; text and image previews open and render."""
    page.goto(server + "?attempt=" + viewer_fixture.ids["review"])
    task = page.get_by_text("Add a --dry-run flag to the export command.").first
    task.wait_for(state="visible", timeout=30_000)
    headings = page.locator("h3").all_inner_texts()
    assert [h for h in headings if h[:2] in {"1.", "2.", "3.", "4.", "5.", "6."}][:6] == [
        "1. Task instructions", "2. This dispatch", "3. Inherited context",
        "4. Files available", "5. Attachments delivered", "6. Exact model messages"]
    page.screenshot(path=str(ARTIFACTS / "viewer-attempt-task.png"), full_page=False)

    page.get_by_text("Preview #1", exact=True).click()
    page.get_by_text("The change adds a dry-run flag.").first.wait_for(state="visible", timeout=20_000)
    page.get_by_text("Preview of #1: page 1 of 1; SHA-256 verified").scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "viewer-text-preview.png"))

    page.get_by_text("Preview #2", exact=True).click()
    img = page.locator("[data-testid='stImage'] img").first
    img.wait_for(state="visible", timeout=20_000)
    assert img.evaluate("el => el.complete && el.naturalWidth") == 96
    img.scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "viewer-image-preview.png"))


def test_hostile_label_shows_literally_and_runs_no_script(page, server: str, viewer_fixture: ViewerFixture) -> None:
    """The label **x** <img src=x onerror=...> appears as literal text and creates no element or dialog."""
    page.goto(server + "?attempt=" + viewer_fixture.ids["gate_retry"])
    label = page.get_by_text(f"#1  {HOSTILE_LABEL}")
    label.wait_for(state="visible", timeout=30_000)
    assert page.locator("img[src='x']").count() == 0
    assert page.dialogs == []  # type: ignore[attr-defined]
    label.scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "viewer-hostile-label.png"))


def test_run_page_lists_attempts_and_draws_the_session_timeline(page, server: str, viewer_fixture: ViewerFixture) -> None:
    """The run page shows its attempt table and a rendered timeline chart."""
    page.goto(server + "?run=" + viewer_fixture.run_id)
    page.get_by_text("5 attempt(s) match; page 1 of 1.", exact=False).wait_for(state="visible", timeout=30_000)
    page.get_by_role("tab", name="Session timeline").click()
    chart = page.locator("[data-testid='stVegaLiteChart']").first
    chart.wait_for(state="visible", timeout=20_000)
    chart.locator("canvas, svg").first.wait_for(state="visible", timeout=20_000)
    page.screenshot(path=str(ARTIFACTS / "viewer-run-timeline.png"))
