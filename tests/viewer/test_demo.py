"""The demo's deep link opens its most telling attempt."""

from __future__ import annotations

from pathlib import Path

from otel_inputs.viewer._demo import record_demo
from otel_inputs.viewer._panel import build_panel
from otel_inputs.viewer._queries import load_attempt, read_only


def test_demo_deep_link_opens_the_attempt_with_files_previews_and_reads(tmp_path: Path) -> None:
    """The featured attempt (where `otel-inputs demo` points) has files by path, a previewable one, and a recorded read."""
    paths = record_demo(tmp_path / "demo", latency_s=0.0)
    featured = paths.featured_attempt_id
    assert featured is not None and featured != next(iter(paths.attempt_ids.values()))  # not the plan attempt
    with read_only(paths.db_path) as con:
        bundle = load_attempt(con, featured)
    assert bundle is not None
    panel = build_panel(bundle)
    files = [r for g in panel.files.groups for r in g.items]
    assert len(files) >= 3
    assert any(r.previewable for r in files)
    assert any(r.read and r.read.startswith("read by") for r in files)
    assert panel.attachments.groups
