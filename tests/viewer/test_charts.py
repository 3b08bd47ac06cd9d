"""The pictures' data: timeline bars and retry links, and store usage on disk."""

from __future__ import annotations

from viewer_fixture import ViewerFixture

from otel_inputs.viewer import _charts as charts
from otel_inputs.viewer._queries import read_only, run_retry_links, run_timeline


def test_timeline_has_one_bar_per_attempt_and_links_each_retry(viewer_fixture: ViewerFixture) -> None:
    """Every timed attempt is a bar colored by send kind and each retry links to what it retries."""
    with read_only(viewer_fixture.db_path) as con:
        bars, links = charts.timeline_data(run_timeline(con, viewer_fixture.run_id),
                                           run_retry_links(con, viewer_fixture.run_id))
    assert [b["attempt"] for b in bars] == ["att-001", "att-002", "att-003", "att-004", "att-005"]
    assert [b["send_kind"] for b in bars[:3]] == ["initial request", "parse retry", "check retry"]
    assert sorted({link["link"] for link in links}) == ["att-001 → att-002", "att-002 → att-003"]
    chart = charts.timeline_chart(bars, links).to_dict()
    assert len(chart["layer"]) == 2


def test_store_usage_counts_objects_on_disk(viewer_fixture: ViewerFixture) -> None:
    """Store usage (from the store's catalog) counts the snapshot objects on disk and the blocks they take."""
    usage = charts.store_usage(viewer_fixture.store_path)
    objects = [p for p in (viewer_fixture.store_path / "objects").rglob("*") if p.is_file()]
    assert usage is not None and usage.objects == len(objects) > 0
    assert usage.bytes == sum((p.stat().st_blocks * 512) or p.stat().st_size for p in objects)
    assert charts.store_usage(None) is None
    assert charts.store_usage(viewer_fixture.store_path / "absent") is None


def test_chart_legends_and_axes_read_in_words_with_every_bar_labelled(viewer_fixture: ViewerFixture) -> None:
    """Coverage legends say "not recorded" (never not_recorded), every lane and phase keeps its own label, and
    coverage over time puts runs on a band axis (a lone run never becomes a millisecond time axis)."""
    from otel_inputs.viewer._queries import list_runs, run_coverage

    with read_only(viewer_fixture.db_path) as con:
        bars, links = charts.timeline_data(run_timeline(con, viewer_fixture.run_id),
                                           run_retry_links(con, viewer_fixture.run_id))
        cov = run_coverage(con, viewer_fixture.run_id)
        runs = list_runs(con, limit=50)
    assert "not recorded" in charts.COVERAGE_COLORS and not any("_" in k for k in charts.COVERAGE_COLORS)
    timeline = charts.timeline_chart(bars, links).to_dict()
    assert timeline["height"] >= charts.LANE_PX * len(bars)
    assert timeline["layer"][0]["encoding"]["y"]["axis"]["labelOverlap"] is False
    coverage = charts.coverage_chart(cov).to_dict()
    assert {r["coverage"] for r in coverage["data"]["values"]} <= set(charts.COVERAGE_COLORS)
    assert coverage["encoding"]["y"]["axis"]["labelOverlap"] is False
    over_time = charts.coverage_over_time_chart(charts.coverage_over_time_data(runs[:1])).to_dict()
    assert over_time["encoding"]["x"]["type"] == "nominal"
    assert {r["coverage"] for r in over_time["data"]["values"]} == {"complete", "partial", "not recorded"}
