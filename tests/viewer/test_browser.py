"""Real browser: `otel-inputs view` serving the app, Debian chromium driven by Playwright."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from viewer_fixture import HOSTILE_LABEL, WIDE_RUN, ViewerFixture
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


def _choose(page, label: str, option: str) -> None:  # noqa: ANN001
    """Pick ``option`` in the chooser labelled ``label`` by typing part of it (the select filters as you type)."""
    page.get_by_label(label).first.click()
    page.keyboard.type(option)
    page.keyboard.press("Enter")


def _settled(page) -> None:  # noqa: ANN001
    """Wait until Streamlit has finished its run (no running indicator)."""
    page.wait_for_timeout(300)
    page.wait_for_function("() => !document.querySelector('[data-testid=\"stStatusWidget\"]')", timeout=30_000)


def _grids_fit(page) -> list[tuple[float, int, int]]:  # noqa: ANN001
    """(right edge, content width, visible width) of every table on the page, each scrolled into view."""
    out = []
    for grid in page.locator("[data-testid='stDataFrame']").all():
        if not grid.is_visible():  # another tab's
            continue
        grid.scroll_into_view_if_needed()
        out.append(grid.evaluate("el => { const s = el.querySelector('.dvn-scroller'); "
                                 "return [el.getBoundingClientRect().right, s.scrollWidth, s.clientWidth]; }"))
    return out


def test_deep_link_shows_task_then_text_and_image_previews(page, server: str, viewer_fixture: ViewerFixture) -> None:
    """Opening ?attempt= shows the task without a click; a text preview (with where its bytes are) and an image
    preview open beside the files table."""
    page.goto(server + "?attempt=" + viewer_fixture.ids["review"])
    task = page.get_by_text("Add a --dry-run flag to the export command.").first
    task.wait_for(state="visible", timeout=30_000)
    page.get_by_text("6. Exact model messages").wait_for(state="visible", timeout=30_000)
    headings = page.locator("h3").all_inner_texts()
    assert [h for h in headings if h[:2] in {"1.", "2.", "3.", "4.", "5.", "6."}][:6] == [
        "1. Task instructions", "2. This dispatch", "3. Inherited context",
        "4. Files available", "5. Attachments delivered", "6. Exact model messages"]
    assert page.get_by_text("Input coverage: Complete").first.is_visible()  # word + icon, never colour alone
    page.screenshot(path=str(ARTIFACTS / "viewer-attempt-task.png"), full_page=False)

    _choose(page, "Open an item (available by path)", "summary.md")
    page.get_by_text("The change adds a dry-run flag.").first.wait_for(state="visible", timeout=20_000)
    page.get_by_text("Preview of #1: page 1 of 1; SHA-256 verified").scroll_into_view_if_needed()
    assert page.get_by_text("bytes: local copy; bucket not configured").first.is_visible()  # where its bytes are
    page.screenshot(path=str(ARTIFACTS / "viewer-text-preview.png"))

    _choose(page, "Open an item (available by path)", "screenshot.png")
    img = page.locator("[data-testid='stImage'] img").first
    img.wait_for(state="visible", timeout=20_000)
    assert img.evaluate("el => el.complete && el.naturalWidth") == 96
    img.scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "viewer-image-preview.png"))


def test_hostile_label_shows_literally_and_runs_no_script(page, server: str, viewer_fixture: ViewerFixture) -> None:
    """The label **x** <img src=x onerror=...> appears as literal text and creates no element or dialog."""
    page.goto(server + "?attempt=" + viewer_fixture.ids["gate_retry"])
    page.get_by_text("2. This dispatch").wait_for(state="visible", timeout=30_000)
    _settled(page)  # a choice made while the first run still draws is lost to the rerun
    label = page.get_by_text(f"#1  {HOSTILE_LABEL}")
    for attempt in range(2):  # a choice made while a rerun redraws the chooser can be dropped: choose again once
        _choose(page, "Open an item (included in message)", "onerror")
        try:
            label.first.wait_for(state="visible", timeout=15_000)
            break
        except Exception:
            if attempt:
                raise
            _settled(page)
    assert page.locator("img[src='x']").count() == 0
    assert page.dialogs == []  # type: ignore[attr-defined]
    # .first: while a rerun replaces the panel, the old and the new label can both be in the page
    label.first.scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "viewer-hostile-label.png"))


def _main_height(page) -> int:  # noqa: ANN001
    return int(page.evaluate("() => document.querySelector('[data-testid=\"stMain\"]').scrollHeight"))


def test_hundred_item_attempt_fits_two_screens_and_a_clicked_row_opens_its_preview(
        page, server: str, viewer_fixture: ViewerFixture) -> None:
    """A 100-item attempt is one scrolling table within two screens; clicking a row shows that file beside it."""
    page.set_viewport_size({"width": 1400, "height": 1100})
    page.goto(server + "?attempt=" + viewer_fixture.ids["wide"])
    grid = page.locator("[data-testid='stDataFrame']").filter(has_text="file-003.md").first
    grid.wait_for(state="visible", timeout=30_000)
    page.get_by_text("Steps the agent took").wait_for(state="visible", timeout=30_000)
    assert _main_height(page) <= 2 * 1100
    grid.evaluate("el => el.scrollIntoView({block: 'center'})")
    page.wait_for_timeout(300)
    box = grid.bounding_box()
    assert box is not None and box["x"] + box["width"] <= 1400  # the table is not cut off at the page edge
    # Row 5 (seq 4): the row-marker checkbox sits in the first column, rows are 35 px under a 35 px header.
    page.mouse.click(box["x"] + 15, box["y"] + 35 + 4 * 35 + 17)
    page.get_by_text("Wide attempt content line for file 4.").first.wait_for(state="visible", timeout=20_000)
    page.screenshot(path=str(ARTIFACTS / "viewer-wide-attempt.png"))
    assert page.locator("img[src='x']").count() == 0 and page.locator("script:has-text('alert(2)')").count() == 0
    assert page.dialogs == []  # type: ignore[attr-defined]
    page.set_viewport_size({"width": 1400, "height": 1000})


def test_keyboard_alone_opens_previews_and_where_else(page, server: str, viewer_fixture: ViewerFixture) -> None:
    """Tab reaches the files table and its chooser; typing and Enter open a preview; Space opens where-else."""
    page.goto(server + "?attempt=" + viewer_fixture.ids["wide"])
    page.get_by_label("Open an item (available by path)").first.wait_for(state="visible", timeout=30_000)
    page.get_by_text("Steps the agent took").wait_for(state="visible", timeout=30_000)
    _settled(page)
    reached_grid = False
    for _ in range(80):
        page.keyboard.press("Tab")
        where = page.evaluate("() => { const e = document.activeElement; return [e.tagName, e.getAttribute('aria-label') || '',"
                              " !!e.closest('[data-testid=\"stDataFrame\"]')]; }")
        reached_grid = reached_grid or where[2]
        if where[0] == "INPUT" and where[1] == "Open an item (available by path)":
            break
    else:
        pytest.fail("Tab never reached the item chooser")
    assert reached_grid  # the table itself is on the way (arrow keys move through its cells)
    page.keyboard.type("file-012")
    page.keyboard.press("Enter")
    page.get_by_text("Wide attempt content line for file 12.").first.wait_for(state="visible", timeout=20_000)
    page.get_by_label("Where else was this item?").wait_for(state="attached", timeout=20_000)
    _settled(page)
    for _ in range(10):
        page.keyboard.press("Tab")
        if page.evaluate("() => document.activeElement.getAttribute('aria-label')") == "Where else was this item?":
            break
    else:
        pytest.fail("Tab never reached the where-else switch")
    page.keyboard.press("Space")
    page.get_by_text("No other attempt had the same SHA-256.").wait_for(state="visible", timeout=20_000)


def test_run_page_lists_attempts_and_draws_the_session_timeline(page, server: str, viewer_fixture: ViewerFixture) -> None:
    """The run page shows its attempts and operations tables with every column on screen, and a rendered timeline
    chart."""
    page.goto(server + "?run=" + viewer_fixture.run_id)
    page.get_by_text("5 attempt(s) match; page 1 of 1.", exact=False).wait_for(state="visible", timeout=30_000)
    page.locator("[data-testid='stDataFrame']").filter(has_text="att-001").first.wait_for(state="visible",
                                                                                          timeout=20_000)
    for right, content, visible in _grids_fit(page):  # the attempts table: every column on screen
        assert right <= 1400 and content <= visible + 1, (right, content, visible)
    page.get_by_role("tab", name="Operations").click()
    page.get_by_text("3 logical operation(s), 1 with retries, 5 physical attempt(s).", exact=False).wait_for(
        state="visible", timeout=20_000)
    page.wait_for_timeout(500)
    for right, content, visible in _grids_fit(page):  # and the operations table
        assert right <= 1400 and content <= visible + 1, (right, content, visible)
    page.get_by_role("tab", name="Session timeline").click()
    chart = page.locator("[data-testid='stVegaLiteChart']").first
    chart.wait_for(state="visible", timeout=20_000)
    chart.locator("canvas, svg").first.wait_for(state="visible", timeout=20_000)
    page.screenshot(path=str(ARTIFACTS / "viewer-run-timeline.png"))


def test_nothing_sits_under_the_header_and_every_inputs_column_is_on_screen(
        page, server: str, viewer_fixture: ViewerFixture) -> None:
    """At 1400 px the first row (the viewer menu and the health indicator) starts below Streamlit's header, and
    every inputs table (change and read? columns included) ends inside the window with no sideways scrolling."""
    page.set_viewport_size({"width": 1400, "height": 900})
    page.goto(server + "?attempt=" + viewer_fixture.ids["review"])
    page.get_by_text("4. Files available").wait_for(state="visible", timeout=30_000)
    _settled(page)
    header_bottom = page.evaluate("() => document.querySelector('[data-testid=stHeader]').getBoundingClientRect().bottom")
    page.get_by_text("Exporter health").first.wait_for(state="visible", timeout=20_000)
    first = page.locator("[data-testid='stMain'] [data-testid='stElementContainer']").first
    assert first.bounding_box()["y"] >= header_bottom
    assert page.get_by_text("Exporter health").first.bounding_box()["y"] >= header_bottom
    # The inputs table, not the changes table (which lists summary.md too, and may be drawn first).
    files = page.locator("[data-testid='stDataFrame']").filter(has_text="summary.md", has_not_text="previous sha256").first
    files.wait_for(state="visible", timeout=20_000)
    headers = files.evaluate("el => [...el.querySelectorAll('th')].map(h => h.innerText.trim())")
    assert {"read?", "size", "type"} <= set(headers), headers
    for right, content, visible in _grids_fit(page):
        assert right <= 1400 and content <= visible + 1, (right, content, visible)
    page.screenshot(path=str(ARTIFACTS / "viewer-columns.png"))


def test_choosing_an_item_highlights_its_row_and_shows_details_below(
        page, server: str, viewer_fixture: ViewerFixture) -> None:
    """Choosing an item in the chooser marks its row selected in the table, and its details open below the table
    at full width with the SHA-256 on one line."""
    page.goto(server + "?attempt=" + viewer_fixture.ids["review"])
    page.get_by_text("4. Files available").wait_for(state="visible", timeout=30_000)
    _settled(page)
    _choose(page, "Open an item (available by path)", "summary.md")
    details = page.get_by_text("Preview of #1: page 1 of 1; SHA-256 verified").first
    details.wait_for(state="visible", timeout=20_000)
    _settled(page)
    grid = page.locator("[data-testid='stDataFrame']").filter(has_text="summary.md").first
    selected = grid.evaluate("el => [...el.querySelectorAll('tr[aria-selected=true]')].map(r => r.innerText)")
    assert len(selected) == 1 and "summary.md" in selected[0], selected
    sha = page.get_by_text("SHA-256: ", exact=False).first
    assert sha.bounding_box()["height"] < 40  # one line, not wrapped in a narrow column
    assert details.bounding_box()["y"] > grid.bounding_box()["y"] + grid.bounding_box()["height"]
    page.screenshot(path=str(ARTIFACTS / "viewer-selected-row.png"))


def test_runs_that_used_this_task_never_lists_this_run(page, server: str, viewer_fixture: ViewerFixture) -> None:
    """The task's "runs that used this task" lists the other run only, never this attempt's own run."""
    page.goto(server + "?attempt=" + viewer_fixture.ids["wide"])
    page.get_by_text("1. Task instructions").wait_for(state="visible", timeout=30_000)
    _settled(page)
    page.get_by_text("Runs that used this task").click()
    page.get_by_text("1 other run(s) used this task", exact=False).wait_for(state="visible", timeout=20_000)
    drift = page.locator("[data-testid='stDataFrame']").filter(has_text=viewer_fixture.run_id).first
    drift.wait_for(state="visible", timeout=20_000)
    assert WIDE_RUN not in drift.inner_text()


def test_a_missing_database_reads_below_the_header(page, tmp_path) -> None:  # noqa: ANN001
    """`view --db` of a file that is not there shows its error box below Streamlit's header, not under it."""
    with serve_viewer(tmp_path / "nonexistent.duckdb", tmp_path / "store", tmp_path / "view.log") as url:
        pg = page.context.browser.new_page(viewport={"width": 1400, "height": 900})
        try:
            pg.goto(url)
            alert = pg.locator("[data-testid='stAlert']").filter(has_text="No database nonexistent.duckdb").first
            alert.wait_for(state="visible", timeout=30_000)
            header_bottom = pg.evaluate(
                "() => document.querySelector('[data-testid=stHeader]').getBoundingClientRect().bottom")
            assert alert.bounding_box()["y"] >= header_bottom
        finally:
            pg.close()
