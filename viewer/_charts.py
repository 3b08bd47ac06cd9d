"""The pictures: session timeline, coverage across a run, artifact-store usage.

Each picture has a pure ``*_data`` function (tested directly) and a chart builder over it.
"""

from __future__ import annotations

import datetime as _dt
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import altair as alt

from otel_inputs.viewer._format import NOT_RECORDED, status_word
from otel_inputs.viewer._panel import SEND_KIND_TEXT
from otel_inputs.viewer._records import AttemptListRow, RunSummary

SEND_KIND_COLORS = {
    "initial request": "#4c78a8",
    "parse retry": "#f58518",
    "check retry": "#e45756",
    NOT_RECORDED: "#9d9d9d",
}
COVERAGE_COLORS = {status_word(c): color for c, color in
                   (("complete", "#54a24b"), ("partial", "#eeca3b"), ("not_recorded", "#9d9d9d"))}
"""Legend words (complete, partial, not recorded) and their colours; the data carries the same words."""
LANE_PX = 28
"""Height of one bar's band: every bar keeps its own label (a shorter band makes Vega drop labels)."""
MIN_BAR_NS = 1_000_000_000  # an attempt without an end time is drawn one second wide


def _dt_of(ns: int) -> str:
    """ISO-8601 UTC with milliseconds: JSON-safe and parsed by Vega-Lite as a UTC time."""
    dt = _dt.datetime.fromtimestamp(ns / 1e9, tz=_dt.timezone.utc)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"


def timeline_data(rows: Sequence[AttemptListRow], retry_of: dict[str, str]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Bars (one per timed attempt) and retry links (two points per link, retried end → retry start)."""
    bars: list[dict[str, Any]] = []
    ends: dict[str, tuple[int, str]] = {}
    for r in rows:
        if r.started_ns is None:
            continue
        end = r.ended_ns if r.ended_ns and r.ended_ns > r.started_ns else r.started_ns + MIN_BAR_NS
        lane = f"{r.session_id or '(no session)'} · {r.attempt_id}"
        kind = NOT_RECORDED if r.is_legacy else SEND_KIND_TEXT.get(r.send_kind or "", r.send_kind or NOT_RECORDED)
        bars.append({"attempt": r.attempt_id, "lane": lane, "start": _dt_of(r.started_ns), "end": _dt_of(end),
                     "send_kind": kind, "phase": r.phase or NOT_RECORDED, "coverage": status_word(r.input_coverage),
                     "order": len(bars)})
        ends[r.attempt_id] = (end, lane)
    starts = {b["attempt"]: b for b in bars}
    links: list[dict[str, Any]] = []
    for retry, target in retry_of.items():
        if retry in starts and target in ends:
            end_ns, lane = ends[target]
            link = f"{target} → {retry}"
            links.append({"link": link, "time": _dt_of(end_ns), "lane": lane, "step": 0})
            links.append({"link": link, "time": starts[retry]["start"], "lane": starts[retry]["lane"], "step": 1})
    return bars, links


def timeline_chart(bars: list[dict[str, Any]], links: list[dict[str, Any]]) -> alt.LayerChart | alt.FacetChart:
    lanes = [b["lane"] for b in sorted(bars, key=lambda b: b["order"])]
    y = alt.Y("lane:N", sort=lanes, title=None, axis=alt.Axis(labelLimit=360, labelOverlap=False))
    color = alt.Color("send_kind:N", title="send kind",
                      scale=alt.Scale(domain=list(SEND_KIND_COLORS), range=list(SEND_KIND_COLORS.values())))
    bar = alt.Chart(alt.Data(values=bars)).mark_bar(height=14).encode(
        x=alt.X("start:T", title="time (UTC)", axis=alt.Axis(format="%H:%M:%S")), x2="end:T", y=y, color=color,
        tooltip=["attempt:N", "send_kind:N", "phase:N", "coverage:N", "start:T", "end:T"],
    )
    link = alt.Chart(alt.Data(values=links)).mark_line(strokeDash=[4, 3], color="#444", point=True).encode(
        x="time:T", y=alt.Y("lane:N", sort=lanes), detail="link:N", order="step:Q", tooltip=["link:N"],
    )
    return alt.layer(bar, link).properties(height=chart_height(len(lanes)))


def chart_height(bands: int) -> int:
    """Pixels for ``bands`` labelled bars (passed to st.altair_chart too, which otherwise sizes it itself)."""
    return max(120, LANE_PX * bands)


def coverage_data(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A run's coverage counts with the coverage in words (the legend's)."""
    return [dict(r, coverage=status_word(r["coverage"])) for r in rows]


def coverage_chart(rows: list[dict[str, Any]]) -> alt.Chart:
    phases = sorted({r["phase"] for r in rows})
    return alt.Chart(alt.Data(values=coverage_data(rows))).mark_bar().encode(
        x=alt.X("attempts:Q", title="attempts", axis=alt.Axis(tickMinStep=1, format="d")),
        y=alt.Y("phase:N", title="phase", sort=phases, axis=alt.Axis(labelOverlap=False)),
        color=alt.Color("coverage:N", title="coverage",
                        scale=alt.Scale(domain=list(COVERAGE_COLORS), range=list(COVERAGE_COLORS.values()))),
        tooltip=["phase:N", "coverage:N", "attempts:Q"],
    ).properties(height=chart_height(len(phases)))


def usage_chart(rows: list[dict[str, Any]]) -> alt.Chart:
    data = [dict(r, bytes=r["bytes"] or 0, artifact_status=status_word(r["artifact_status"])) for r in rows]
    statuses = sorted({d["artifact_status"] for d in data})
    return alt.Chart(alt.Data(values=data)).mark_bar().encode(
        x=alt.X("bytes:Q", title="bytes"),
        y=alt.Y("artifact_status:N", title="artifact status", sort=statuses, axis=alt.Axis(labelOverlap=False)),
        color=alt.Color("media_type:N", title="media type"),
        tooltip=["artifact_status:N", "media_type:N", "items:Q", "bytes:Q"],
    ).properties(height=chart_height(len(statuses)))


def timeline_text(ops: Sequence[Any]) -> str:
    """The timeline in words: each logical operation with its physical attempts (bounded)."""
    lines = []
    for op in ops[:30]:
        first = op.attempts[0]
        when = _dt_of(first.started_ns)[11:19] if first.started_ns is not None else "unknown time"
        lines.append(f"{when} {first.session_id or '(no session)'}: {op.sends} "
                     f"({op.count} physical attempt{'s' if op.count != 1 else ''})")
    if len(ops) > 30:
        lines.append(f"... and {len(ops) - 30} more operation(s).")
    return "In words:\n" + "\n".join(lines)


def coverage_over_time_data(runs: Sequence[RunSummary]) -> list[dict[str, Any]]:
    """One bar segment per run and coverage value: the run (labelled by its first start, UTC, to the second)
    and how many of its attempts had that coverage."""
    out = []
    for r in runs:
        if r.first_ns is None:
            continue
        start = _dt_of(r.first_ns)
        for coverage, n in (("complete", r.complete), ("partial", r.partial), ("not_recorded", r.not_recorded)):
            out.append({"run": r.label, "start": start, "started": f"{start[:10]} {start[11:19]}",
                        "coverage": status_word(coverage), "attempts": n,
                        "share": n / r.attempts if r.attempts else 0.0})
    return out


def coverage_over_time_chart(rows: list[dict[str, Any]]) -> alt.Chart:
    """A bar per run in time order (a band, not a time axis: one run or runs seconds apart stay readable)."""
    order = sorted({(r["start"], r["started"]) for r in rows})
    return alt.Chart(alt.Data(values=rows)).mark_bar().encode(
        x=alt.X("started:N", title="run start (UTC)", sort=[s for _, s in order],
                axis=alt.Axis(labelAngle=-30, labelOverlap=False)),
        y=alt.Y("attempts:Q", title="share of attempts", stack="normalize", axis=alt.Axis(format="%")),
        color=alt.Color("coverage:N", title="coverage",
                        scale=alt.Scale(domain=list(COVERAGE_COLORS), range=list(COVERAGE_COLORS.values()))),
        tooltip=["run:N", "started:N", "coverage:N", "attempts:Q"],
    ).properties(height=300)


def coverage_over_time_text(runs: Sequence[RunSummary]) -> str:
    lines = [f"{r.label}: {r.complete} complete, {r.partial} partial, {r.not_recorded} not recorded"
             for r in runs[:30]]
    return "In words (newest first):\n" + "\n".join(lines)


@dataclass(frozen=True)
class StoreUsage:
    objects: int
    bytes: int
    """Disk space of the committed objects (allocated blocks, as the retention budget counts it)."""
    staging_bytes: int
    truncated: bool = False


def store_usage(store_root: str | os.PathLike[str] | None) -> StoreUsage | None:
    """The artifact store's usage as its catalog keeps it (``otel_inputs.store.store_usage``);
    ``None`` when no store is configured or none is at that path."""
    if not store_root:
        return None
    from otel_inputs.store import ArtifactStore, StoreError
    from otel_inputs.store import store_usage as catalog_usage

    if not os.path.isdir(store_root):
        return None
    try:
        usage = catalog_usage(ArtifactStore(store_root, create=False))
    except (StoreError, OSError):
        return None
    return StoreUsage(usage.objects, usage.object_bytes, usage.staging_bytes)
