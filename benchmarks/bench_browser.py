"""The attempt page in a real browser: navigation to a visible inputs table, against a bare Streamlit page.

    python -m benchmarks.bench_browser [--runs N] [--quick]

Records the demo session (``record_demo``: a real DuckDB file and artifact store), serves the viewer
on it with the same command line as ``otel-inputs view``, and serves, with the same flags, the floor:
a bare Streamlit page holding one 100-row table (what any Streamlit page costs on this host at this
moment).  Debian chromium (Playwright, no browser download) then loads, in turn and each in a fresh
browser context (no cache, no cookies), the demo's build attempt (``?attempt=<build_initial>``) and
the floor page, and times navigation until the attempt's files table (the row ``README.md``) or the
floor's table is visible.  One unmeasured round first starts both servers' script threads.

Printed: medians and spread of both, the ratio viewer/floor (target <= 1.3x), and the machine's
load average before and after (two cores shared with other work make absolute times swing).
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from benchmarks._common import machine_line, median_ms, spread_ms

TARGET_RATIO = 1.3
VIEWPORT = {"width": 1400, "height": 900}
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"]
FLOOR_APP = """
import streamlit as st
st.set_page_config(layout="wide")
st.text("floor")
st.dataframe([{"#": s, "label": f"file-{s}.md"} for s in range(100)], hide_index=True)
"""
"""The same-run baseline: one text line and one 100-row table, served with the viewer's own flags."""


def _load() -> str:
    return " / ".join(f"{x:.1f}" for x in os.getloadavg())


@contextmanager
def _server(app: Path, env: dict[str, str], log: Path) -> Iterator[str]:
    """``app`` served as ``otel-inputs view`` serves the viewer (same flags); the process group is always stopped."""
    from otel_inputs.viewer._cli import APP_PATH, free_port, streamlit_command

    port = free_port()
    cmd = [str(app) if part == str(APP_PATH) else part for part in streamlit_command(port)]
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"{app.name} did not start: {log.read_text(errors='replace')[-2000:]}") from None
                time.sleep(0.3)
        yield f"http://127.0.0.1:{port}/"
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=5)


def time_to_table(browser, url: str, row_text: str) -> float:  # noqa: ANN001
    """Seconds from navigation, in a fresh context, until the table holding ``row_text`` is visible."""
    context = browser.new_context(viewport=VIEWPORT, device_scale_factor=1)
    try:
        page = context.new_page()
        t0 = time.perf_counter()
        page.goto(url)
        page.locator("[data-testid='stDataFrame']").filter(has_text=row_text).first.wait_for(
            state="visible", timeout=60_000)
        return time.perf_counter() - t0
    finally:
        context.close()


def measure(runs: int, work: Path) -> tuple[list[float], list[float]]:
    """(viewer seconds, floor seconds), loaded in turn so both see the same host load."""
    from playwright.sync_api import sync_playwright

    from otel_inputs import names
    from otel_inputs.viewer._cli import APP_PATH, viewer_env
    from otel_inputs.viewer._demo import record_demo

    chromium = shutil.which("chromium")
    if chromium is None:
        raise SystemExit("Debian chromium is not installed (apt-get install chromium)")
    demo = record_demo(work / "demo", latency_s=0.01)
    floor_app = work / "floor_app.py"
    floor_app.write_text(FLOOR_APP)
    env = viewer_env(demo.db_path, demo.store_path)
    floor_env = {k: v for k, v in env.items() if k not in (names.ENV_DB, names.ENV_STORE)}
    viewer_s: list[float] = []
    floor_s: list[float] = []
    with _server(APP_PATH, env, work / "viewer.log") as viewer_url, \
            _server(floor_app, floor_env, work / "floor.log") as floor_url, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS, headless=True)
        try:
            attempt_url = f"{viewer_url}?attempt={demo.featured_attempt_id}"
            for i in range(runs + 1):
                v = time_to_table(browser, attempt_url, "README.md")
                f = time_to_table(browser, floor_url, "file-3.md")
                if i:  # round 0 starts both servers' script threads: a warm-up
                    viewer_s.append(v)
                    floor_s.append(f)
        finally:
            browser.close()
    return viewer_s, floor_s


def main(argv: list[str] | None = None) -> dict[str, float]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=9, help="measured loads of each page (after one warm-up round)")
    ap.add_argument("--quick", action="store_true", help="5 loads of each")
    args = ap.parse_args(argv)
    runs = 5 if args.quick else args.runs
    print(f"browser benchmark — {machine_line()}")
    print(f"  load average before: {_load()}")
    work = Path(tempfile.mkdtemp(prefix="otel-inputs-bench-browser-"))
    try:
        viewer_s, floor_s = measure(runs, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"  load average after:  {_load()}")
    v, f = median_ms(viewer_s), median_ms(floor_s)
    ratio = v / max(f, 1e-9)
    print(f"  attempt page (demo build attempt), navigation to visible files table: {v:.0f} ms median "
          f"({spread_ms(viewer_s)} ms over {len(viewer_s)} fresh contexts)")
    print(f"  floor, a bare Streamlit page with one 100-row table:                  {f:.0f} ms median "
          f"({spread_ms(floor_s)} ms)")
    ratios = [a / b for a, b in zip(viewer_s, floor_s)]
    print(f"  ratio viewer/floor: x{ratio:.2f} of the medians (per-round ratios {min(ratios):.2f}-{max(ratios):.2f}, "
          f"median {statistics.median(ratios):.2f}); target <= x{TARGET_RATIO}: "
          f"{'met' if ratio <= TARGET_RATIO else 'MISSED'}")
    return {"viewer_ms": v, "floor_ms": f, "ratio": ratio}


if __name__ == "__main__":
    main()
