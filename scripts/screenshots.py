"""Make the README screenshots from the demo: record it, serve the viewer, photograph it in chromium.

    python scripts/screenshots.py [--out docs/images] [--data DIR]      (or: make screenshots)

Everything is real: ``record_demo`` writes a DuckDB file and an artifact store, ``otel-inputs
view`` serves them on a free 127.0.0.1 port, and Debian's chromium (driven by Playwright, no
browser download) loads the pages.  PNGs are reduced to a 256-colour palette to stay small.
"""

from __future__ import annotations

import argparse
import io
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"]
VIEWPORT = {"width": 1400, "height": 900}


def _serve(db: Path, store: Path, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    from otel_inputs.viewer._cli import free_port

    port = free_port()
    out = open(log, "wb")  # noqa: SIM115 - the server's whole lifetime
    proc = subprocess.Popen([sys.executable, "-m", "otel_inputs.exporter.cli", "view", "--db", str(db),
                             "--store", str(store), "--port", str(port)], stdout=out, stderr=subprocess.STDOUT,
                            start_new_session=True)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    return proc, f"http://127.0.0.1:{port}/"
        except OSError:
            pass
        if proc.poll() is not None:
            break
        time.sleep(0.3)
    _stop(proc)
    raise SystemExit(f"viewer did not start: {log.read_text(errors='replace')[-2000:]}")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=15)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=5)


def _save(png: bytes, path: Path) -> None:
    from PIL import Image

    img = Image.open(io.BytesIO(png)).convert("RGB")
    img.quantize(colors=256, method=Image.Quantize.MEDIANCUT).save(path, optimize=True)


def _settle(page) -> None:  # noqa: ANN001
    """Wait until Streamlit has finished this run (no running indicator) and charts are drawn."""
    page.wait_for_timeout(400)
    page.wait_for_function("() => !document.querySelector('[data-testid=\"stStatusWidget\"]')", timeout=30_000)
    page.wait_for_timeout(600)


def shoot(out_dir: Path, data_dir: Path) -> list[Path]:
    from playwright.sync_api import sync_playwright

    from otel_inputs.viewer._demo import record_demo

    paths = record_demo(data_dir, latency_s=0.01)
    ids = paths.attempt_ids
    out_dir.mkdir(parents=True, exist_ok=True)
    proc, url = _serve(paths.db_path, paths.store_path, data_dir / "view.log")
    made: list[Path] = []
    try:
        with sync_playwright() as pw:
            chromium = shutil.which("chromium")
            if chromium is None:
                raise SystemExit("Debian chromium is not installed (apt-get install chromium)")
            browser = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS, headless=True)
            page = browser.new_page(viewport=VIEWPORT, device_scale_factor=1)

            def snap(name: str, full: bool = False) -> None:
                target = out_dir / f"{name}.png"
                _save(page.screenshot(full_page=full), target)
                made.append(target)

            # The build attempt (the demo's deep link): badge, facts, one table per group, the chosen item's
            # row highlighted and its details and preview below the table.
            page.goto(url + "?attempt=" + paths.featured_attempt_id)
            page.get_by_text("1. Task instructions").wait_for(timeout=60_000)
            page.get_by_text("Exporter health").wait_for(timeout=60_000)  # asked last, drawn at the top
            _settle(page)
            snap("attempt-header")
            files = page.get_by_text("4. Files available")
            files.scroll_into_view_if_needed()
            page.get_by_label("Open an item (available by path)").first.click()
            page.keyboard.type("README.md")
            page.keyboard.press("Enter")
            page.get_by_text("Preview of #").first.wait_for(timeout=30_000)
            _settle(page)
            page.get_by_text("4. Files available").evaluate("el => el.scrollIntoView({block: 'start'})")
            page.wait_for_timeout(300)
            snap("attempt-files-preview")
            page.get_by_text(re.compile(r"^Show the \d+ step")).click()  # the steps table is drawn once opened
            page.locator("[data-testid='stDataFrame']").filter(has_text="read_file").first.wait_for(timeout=30_000)
            _settle(page)
            page.get_by_text("Steps the agent took").evaluate("el => el.scrollIntoView({block: 'start'})")
            page.wait_for_timeout(300)
            snap("attempt-steps")

            # The run: operations (retries as one), and the session timeline.
            page.goto(url)
            page.get_by_text("Select a run to see its attempts.").wait_for(timeout=60_000)
            _settle(page)
            page.get_by_text("Coverage per run over time").click()
            page.locator("[data-testid='stVegaLiteChart'] canvas, [data-testid='stVegaLiteChart'] svg").first.wait_for(
                timeout=30_000)
            page.wait_for_timeout(800)
            snap("runs")
            page.goto(url + "?attempt=" + ids["plan_gate_retry"])
            page.get_by_text("1. Task instructions").wait_for(timeout=60_000)
            _settle(page)
            page.get_by_text("← Attempts of this run").click()
            page.get_by_role("tab", name="Operations").wait_for(timeout=60_000)
            _settle(page)
            page.get_by_role("tab", name="Operations").click()
            page.wait_for_timeout(500)
            snap("run-operations")
            page.get_by_role("tab", name="Session timeline").click()
            page.locator("[data-testid='stVegaLiteChart'] canvas, [data-testid='stVegaLiteChart'] svg").first.wait_for(
                timeout=30_000)
            page.wait_for_timeout(800)
            snap("run-timeline")
            page.get_by_role("tab", name="Coverage").click()
            page.wait_for_timeout(1500)
            snap("run-coverage")
            browser.close()
    finally:
        _stop(proc)
    return made


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "images")
    ap.add_argument("--data", type=Path, default=None, help="record the demo here (default: a temporary folder)")
    args = ap.parse_args(argv)
    data = args.data or Path(tempfile.mkdtemp(prefix="otel-inputs-shots-"))
    try:
        for p in shoot(args.out, data):
            print(f"{p} ({p.stat().st_size // 1024} KiB)")
    finally:
        if args.data is None:
            shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    main()
