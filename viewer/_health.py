"""Exporter health as one small indicator: ok, spilled (delayed, kept on disk) or dropped (lost).

The exporters' counters are cumulative per source.  *Dropped* wins over *spilled*: any span
dropped, rejected or unconvertible, any failed batch or quarantined spool file means telemetry
was lost.  *Spilled* means spans waited on disk and more were spilled than drained back so far.
No counters at all, or a backend without counters, is "unknown", never "ok".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

from otel_inputs.viewer._format import BadgeColor, time_text
from otel_inputs.viewer._records import HealthRow

LOSS_METRICS = ("spans_dropped", "batches_failed", "spans_rejected", "spans_unconvertible", "spool_quarantined")
METRIC_TEXT = {
    "spans_written": "spans written",
    "spans_spilled": "spans spilled to disk (delayed)",
    "spans_drained": "spilled spans written later",
    "spans_dropped": "spans dropped (lost)",
    "batches_failed": "batches that failed to commit",
    "spans_rejected": "spans rejected",
    "spans_unconvertible": "spans that could not be converted",
    "spool_quarantined": "spool files quarantined",
    "artifact_rows_written": "artifact rows written",
    "spans_unmapped": "spans stored raw, without their attempt projection",
}


class HealthState(str, Enum):
    OK = "ok"
    UNMAPPED = "unmapped"  # nothing lost, but records landed from which no attempt was derived
    SPILLED = "spilled"
    DROPPED = "dropped"
    UNKNOWN = "unknown"


BADGE: dict[HealthState, tuple[str, BadgeColor, str]] = {
    HealthState.OK: (":material/check_circle:", "green", "Exporter health: ok"),
    HealthState.UNMAPPED: (":material/help:", "orange", "Exporter health: records without attempts"),
    HealthState.SPILLED: (":material/schedule:", "orange", "Exporter health: spilled"),
    HealthState.DROPPED: (":material/error:", "red", "Exporter health: dropped"),
    HealthState.UNKNOWN: (":material/help:", "gray", "Exporter health: unknown"),
}


@dataclass(frozen=True)
class HealthModel:
    state: HealthState
    summary: str
    details: tuple[dict[str, object], ...]


def health_model(rows: Sequence[HealthRow] | None, backend: str = "this backend", unmapped: int = 0) -> HealthModel:
    """``rows`` is ``None`` where the backend keeps no exporter counters (the stock ClickHouse
    exporter writes none): unknown, and said so, never "ok".  ``unmapped`` counts the records of
    services from which no attempt was derived (docs/encodings.md): never "ok" while there are any."""
    model = _counters_model(rows, backend)
    if unmapped and model.state is HealthState.OK:
        return HealthModel(HealthState.UNMAPPED, f"Nothing dropped or waiting, but {unmapped} record(s) landed from "
                           "which no attempt was derived (the runs page names their services).", model.details)
    if unmapped:
        return HealthModel(model.state, f"{model.summary} {unmapped} record(s) landed from which no attempt was "
                           "derived.", model.details)
    return model


def _counters_model(rows: Sequence[HealthRow] | None, backend: str) -> HealthModel:
    if rows is None:
        return HealthModel(HealthState.UNKNOWN, f"Exporter counters: not recorded on this backend ({backend} has "
                           "no exporter_health table; the Collector's own metrics say what its exporter dropped).", ())
    if not rows:
        return HealthModel(HealthState.UNKNOWN, "No exporter counters recorded yet.", ())
    totals: dict[str, int] = {}
    for r in rows:
        totals[r.metric] = totals.get(r.metric, 0) + int(r.value or 0)
    lost = sum(totals.get(m, 0) for m in LOSS_METRICS)
    pending = totals.get("spans_spilled", 0) - totals.get("spans_drained", 0)
    if lost:
        state, summary = HealthState.DROPPED, f"Telemetry was lost: {lost} loss event(s) counted (see details)."
    elif pending > 0:
        state, summary = HealthState.SPILLED, f"{pending} span(s) waited on disk and are not written yet."
    else:
        state, summary = HealthState.OK, "Nothing dropped or waiting."
    unmapped = totals.get("spans_unmapped", 0)
    if unmapped:  # kept raw in otel_traces, but no attempt page shows them: say so on every state
        summary += f" {unmapped} span(s) stored raw without their attempt projection (see the exporter log)."
    details = tuple(
        {"source": r.source, "counter": METRIC_TEXT.get(r.metric, r.metric.replace("_", " ")), "value": int(r.value),
         "updated": time_text(r.updated_ns)}
        for r in rows
    )
    return HealthModel(state, summary, details)
