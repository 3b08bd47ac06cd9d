"""otel-inputs review app: runs → attempts of a run → the attempt panel (``?attempt=<id>``).

Run with ``otel-inputs view --db PATH --store DIR`` or ``otel-inputs view --clickhouse URL``; reads
``OTEL_INPUTS_DB`` (or ``OTEL_INPUTS_CLICKHOUSE``) and ``OTEL_INPUTS_STORE``.  Each refresh opens
the backend (the DuckDB file read-only, or a ClickHouse client) and closes it again.
"""

from __future__ import annotations

from pathlib import Path

import os
from typing import Any

import streamlit as st

from otel_inputs import names
from otel_inputs.viewer import _charts as charts
from otel_inputs.viewer import _queries as q
from otel_inputs.viewer import _records as records
from otel_inputs.viewer._backend import ClickHouseTarget, is_clickhouse
from otel_inputs.viewer._access import (
    Access,
    current_access,
    login_gate,
    logout_button,
    viewer_identity,
)
from otel_inputs.viewer._draw import _frame, draw_panel, note
from otel_inputs.viewer._evidence import Evidence, budget_usage, open_evidence, overlay_store
from otel_inputs.viewer._fleet import DECIDED, fleet_decisions, fleet_roots
from otel_inputs.viewer._format import (
    NOT_RECORDED,
    count_text,
    size_text,
    status_text,
    status_word,
    time_text,
    value_text,
)
from otel_inputs.viewer._health import BADGE, health_model
from otel_inputs.viewer._panel import SEND_KIND_TEXT, build_panel
from otel_inputs.viewer._retries import group_operations, position_text

# (comments, not docstrings, in this file: Streamlit's "magic" would draw a bare string on the page)
# Live refresh of the page: off unless switched on (a redraw greys every element while it runs).
# Any click on the page redraws it, the exporter-health indicator included.
LIVE_REFRESH_S = 15
ANY = "any"
# The run's tables: every column on screen at a 1400 px wide window (as the inputs tables); times in
# UTC, said once in the column's title.
STARTED = st.column_config.TextColumn("started (UTC)", width=165)
ATTEMPT_COLUMNS = {"started": STARTED, **{c: st.column_config.TextColumn(c, width=w) for c, w in (
    ("attempt", 240), ("phase", 70), ("agent", 90), ("send kind", 105), ("try", 60), ("turn", 45),
    ("session", 90), ("coverage", 100), ("items", 50), ("status", 125))}}
OPERATION_COLUMNS = {"started": STARTED, "physical attempts": st.column_config.NumberColumn("attempts", width=65),
                     **{c: st.column_config.TextColumn(c, width=w) for c, w in (
                         ("first attempt", 235), ("phase", 55), ("agent", 70), ("sends", 250), ("last attempt", 235),
                         ("last status", 120))}}


def _utc(ns: int | None) -> str:
    """A table cell's time: the column's title says UTC."""
    return time_text(ns).removesuffix(" UTC")
# The app's one static style; no recorded string ever reaches HTML.  The page starts below Streamlit's
# 3.75rem header (docs/viewer.md: nothing sits under the header), with less empty space below the page.
STYLE = (
    "<style>"
    "[data-testid='stMainBlockContainer'] {padding-top: 4.5rem; padding-bottom: 2rem;}"
    # text boxes (recorded task, messages, previews): plain st.text, shown monospace (viewer/_draw.py, text_box)
    "[class*='st-key-textbox'] [data-testid='stText'] span {font-family: monospace;"
    " font-size: 0.85rem;}"
    "</style>"
)


def _db() -> str | None:
    """What this viewer reads: a ClickHouse URL when one is set, else the DuckDB file."""
    return os.environ.get(names.ENV_CLICKHOUSE) or os.environ.get(names.ENV_DB)


def _db_label(db: str | None) -> str:
    """The database as the viewer menu names it: a file name, or ClickHouse host/database (no credentials)."""
    if not db:
        return "not set"
    if is_clickhouse(db):
        try:
            return ClickHouseTarget.parse(db).label
        except q.DbUnavailable:
            return "ClickHouse (URL not understood)"
    return Path(db).name


def _store() -> str | None:
    return os.environ.get(names.ENV_STORE)


def _evidence() -> Evidence:
    """This refresh's reader: the viewer's identity and the environment's access policy."""
    return open_evidence(_store(), viewer_identity())


def _access() -> Access:
    """This refresh's access decisions (identity, policy, purge, revocation), asked anew each time."""
    return current_access(_store())


def _forget_selections() -> None:
    """Drop the attempt panels' widget state (chosen items, selected rows, switches): another attempt
    opens with nothing chosen, never with the row number of the one before."""
    for k in [k for k in st.session_state if str(k).startswith(("page:", "drawer:"))]:
        del st.session_state[k]


def open_attempt(attempt_id: str) -> None:
    _forget_selections()
    st.query_params.clear()
    st.query_params["attempt"] = attempt_id
    st.rerun()


def open_run(run_id: str | None) -> None:
    st.query_params.clear()
    st.query_params["run"] = "" if isinstance(run_id, records.SessionRun) else run_id or ""
    if isinstance(run_id, records.SessionRun):  # attempts with a session id but no run id (docs/encodings.md)
        st.query_params["session"] = str(run_id)
    st.rerun()


def go_home() -> None:
    st.query_params.clear()
    st.rerun()


# --------------------------------------------------------------------------------------------
def _health(con: Any) -> None:
    """A small indicator (ok / spilled / dropped / unknown) with the counters on demand."""
    unmapped = sum(s.spans + s.log_records for s in q.services_without_attempts(con))
    m = health_model(q.exporter_health(con), backend=con.label, unmapped=unmapped)
    icon, color, word = BADGE[m.state]
    st.badge(word, icon=icon, color=color)
    with st.popover("Exporter details", width="content"):
        st.text(m.summary)
        if m.details:
            st.dataframe(_frame(list(m.details)), hide_index=True, width=680,
                         column_config={"source": st.column_config.TextColumn(width=140),
                                        "counter": st.column_config.TextColumn(width=240),
                                        "value": st.column_config.NumberColumn(width=70),
                                        "updated": st.column_config.TextColumn(width=210)})


def _runs_page(con: Any) -> None:
    st.header("Runs")
    runs, hidden = _access().visible_pages(lambda limit, offset: q.list_runs(con, limit=limit, offset=offset), 200)
    if hidden:
        st.text("Runs that the access policy does not let you see are not listed.")
    unmapped = q.services_without_attempts(con)
    for svc in unmapped:  # telemetry landed, yet no attempt was derived: never "nothing recorded"
        st.text(f"{svc.service_name or '(no service name)'}: {svc.spans + svc.log_records} records "
                f"({svc.spans} spans, {svc.log_records} log records), no attempts derived.")
    if unmapped:
        st.text(q.UNMAPPED_DOC_NOTE)
    if not runs:
        if not unmapped:
            st.text("No attempts recorded yet." if not hidden else "No run is visible to you.")
        return
    table = [
        {"run": r.label, "attempts": r.attempts,
         "sessions": r.sessions, "phases": r.phases, "first start": time_text(r.first_ns),
         "last activity": time_text(r.last_ns), "complete": r.complete, "partial": r.partial,
         "not recorded": r.not_recorded}
        for r in runs
    ]
    st.text("Select a run to see its attempts.")
    event = st.dataframe(table, hide_index=True, on_select="rerun", selection_mode="single-row", key="runs_table",
                         width="stretch")
    selected = event.selection.rows if event is not None else []
    if selected:
        open_run(runs[selected[0]].key)
    over_time = st.expander("Coverage per run over time", key="runs_coverage", on_change="rerun")
    if over_time.open:  # lazy: the chart's code is fetched only when someone opens it
        with over_time:
            rows = charts.coverage_over_time_data(runs)
            st.altair_chart(charts.coverage_over_time_chart(rows), width="stretch")
            st.text(charts.coverage_over_time_text(runs))


def _choice(label: str, values: tuple[str | None, ...], key: str) -> str | None:
    options = [ANY] + [v if v is not None else q.NULL_VALUE for v in values]
    picked = st.selectbox(label, options, key=key,
                          format_func=lambda v: NOT_RECORDED if v == q.NULL_VALUE else v if v == ANY else status_word(v))
    return None if picked == ANY else picked


def _run_page(con: Any, run_id: str | None) -> None:
    if st.button("← All runs", key="home"):
        go_home()
    access = _access()
    if not access.run_allowed(None if isinstance(run_id, records.SessionRun) else run_id):
        note(access.denial(), "error")
        return
    st.header("Run")
    st.text(f"(no run id) session {run_id}" if isinstance(run_id, records.SessionRun)
            else run_id if run_id is not None else "(no run id)")
    facets = q.run_facets(con, run_id)
    cols = st.columns(6)
    with cols[0]:
        phase = _choice("Phase", facets.phases, "f_phase")
    with cols[1]:
        agent = _choice("Agent", facets.agents, "f_agent")
    with cols[2]:
        send = _choice("Send kind", facets.send_kinds, "f_send")
    with cols[3]:
        cov = _choice("Coverage", facets.coverages, "f_cov")
    with cols[4]:
        status = _choice("Status", facets.statuses, "f_status")
    with cols[5]:
        newest = st.radio("Sort by time", ["oldest first", "newest first"], key="f_sort") == "newest first"
    filters = records.AttemptFilters(phase, agent, send, cov, status, newest)
    page_no = int(st.session_state.get("f_page", 1))
    page = q.list_attempts(con, run_id, filters, limit=q.PAGE_SIZE, offset=(page_no - 1) * q.PAGE_SIZE)
    pages = max(1, -(-page.total // q.PAGE_SIZE))
    timeline = q.run_timeline(con, run_id)
    links = q.run_retry_links(con, run_id)
    ops = group_operations(timeline, links)
    place = position_text(ops)
    tabs = st.tabs(["Attempts", "Operations", "Session timeline", "Coverage", "Store usage"])
    with tabs[0]:
        st.text(f"{page.total} attempt(s) match; page {page_no} of {pages}. Select one to open it below. "
                f"The run has {len(timeline)} physical attempt(s) in {len(ops)} logical operation(s).")
        table = [
            {"started": _utc(r.started_ns), "attempt": r.attempt_id, "phase": value_text(r.phase),
             "agent": value_text(r.agent_name),
             "send kind": NOT_RECORDED if r.is_legacy else SEND_KIND_TEXT.get(r.send_kind or "", value_text(r.send_kind)),
             "try": place.get(r.attempt_id, "unknown"),
             "turn": count_text(r.turn_index), "session": value_text(r.session_id),
             "coverage": status_word(r.input_coverage), "items": count_text(r.item_count),
             "status": status_text(r.status)}
            for r in page.rows
        ]
        event = st.dataframe(_frame(table), hide_index=True, on_select="rerun", selection_mode="single-row",
                             key="attempts_table", width="stretch", column_config=ATTEMPT_COLUMNS)
        if pages > 1:
            st.number_input("Page", 1, pages, key="f_page")
        selected = event.selection.rows if event is not None else []
        if selected and selected[0] < len(page.rows):
            _drawer(con, page.rows[selected[0]].attempt_id)
    with tabs[1]:
        retried = sum(1 for o in ops if o.count > 1)
        st.text(f"{len(ops)} logical operation(s), {retried} with retries, {len(timeline)} physical attempt(s). "
                "Select one to open its last attempt.")
        op_rows = [
            {"started": _utc(o.attempts[0].started_ns), "first attempt": o.root_id,
             "phase": value_text(o.attempts[0].phase), "agent": value_text(o.attempts[0].agent_name),
             "physical attempts": o.count, "sends": o.sends, "last attempt": o.last.attempt_id,
             "last status": status_text(o.last.status)}
            for o in ops
        ]
        event = st.dataframe(_frame(op_rows), hide_index=True, on_select="rerun", selection_mode="single-row",
                             key="operations_table", width="stretch", column_config=OPERATION_COLUMNS)
        picked = event.selection.rows if event is not None else []
        if picked and picked[0] < len(ops):
            open_attempt(ops[picked[0]].last.attempt_id)
    with tabs[2]:
        bars, link_pts = charts.timeline_data(timeline, links)
        if bars:
            st.altair_chart(charts.timeline_chart(bars, link_pts), width="stretch",
                            height=charts.chart_height(len(bars)) + 60)  # + the time axis
            st.text("Bars are attempts colored by send kind; dashed lines link a retry to the attempt it retries.")
            st.text(charts.timeline_text(ops))
        else:
            st.text("No timed attempts to draw.")
    with tabs[3]:
        cov_rows = q.run_coverage(con, run_id)
        st.altair_chart(charts.coverage_chart(cov_rows), width="stretch",
                        height=charts.chart_height(len({r["phase"] for r in cov_rows})) + 60)
        st.text("In words: " + "; ".join(f"{r['phase']}: {r['attempts']} {status_word(r['coverage'])}"
                                         for r in cov_rows) + ".")
    with tabs[4]:
        usage = q.run_artifact_usage(con, run_id)
        if usage is None:
            st.text(f"Snapshot rows per run: not recorded on this backend ({con.label} has no agent_artifacts "
                    "table); the store's own figures follow.")
        elif usage:
            st.altair_chart(charts.usage_chart(usage), width="stretch",
                            height=charts.chart_height(len({r["artifact_status"] for r in usage})) + 60)
            st.text("In words: " + "; ".join(f"{r['items']} {r['media_type']} item(s) {status_word(r['artifact_status'])}, "
                                             f"{size_text(r['bytes'])}" for r in usage) + ".")
        else:
            st.text("No snapshots recorded for this run.")
        disk = charts.store_usage(_store())
        if disk is None:
            st.text("Artifact store: not configured or not found.")
        else:
            st.text(f"Artifact store on disk: {disk.objects} object(s), {size_text(disk.bytes)}"
                    + (f", plus {size_text(disk.staging_bytes)} staging" if disk.staging_bytes else ""))
            _budget(disk.bytes, disk.truncated)


def _budget(used: int, truncated: bool) -> None:
    """Store usage against the retention budget (OTEL_INPUTS_STORE_BUDGET) when one is set."""
    b = budget_usage(used)
    if b.problem:
        note(b.problem, "warning")
        return
    if b.budget_bytes is None:
        st.text(f"Retention: no store budget set ({b.policy_text}); snapshots are kept until gc or purge.")
        return
    frac = b.fraction or 0.0
    at_least = "at least " if truncated else ""
    st.text(f"Store budget: {at_least}{size_text(used)} used of {size_text(b.budget_bytes)} "
            f"({at_least}{frac:.0%}); retention policy: {b.policy_text}.")
    st.progress(min(frac, 1.0))
    if frac > 1.0:
        note("The store is over its budget: the next gc evicts the oldest snapshots of ended attempts.", "warning")


def _drawer(con: Any, attempt_id: str) -> None:
    """The run page's attempt drawer: the same shared panel as the attempt page."""
    bundle = q.load_attempt(con, attempt_id)
    if bundle is None:
        return
    st.divider()
    if st.button("Open this attempt's own page (deep link)", key="drawer_open"):
        open_attempt(attempt_id)
    _draw_attempt(con, bundle, key="drawer")


def _draw_attempt(con: Any, bundle: records.AttemptBundle, *, key: str) -> None:
    """The shared panel, with the store's current status and part receipts laid over the rows."""
    access = _access()
    if not access.run_allowed(bundle.attempt.run_id):  # before the store is asked anything about it
        note(access.denial(), "error")
        return
    ev = _evidence()
    roots = fleet_roots()
    if roots:  # a fleet viewer: the recording host's store facts decide, or the page says why none can
        ev, access = fleet_decisions(con, bundle.attempt, roots, access.viewer, bundle.previous_turn_id,
                                     bundle.inputs + (bundle.previous_inputs or ()))
        if ev.facts is not None:
            st.text(f"{DECIDED} {ev.facts.describe()}.")
        else:
            note(f"No store facts decide this attempt's previews ({ev.problem_outcome}: {ev.problem}).", "warning")
    bundle, notes = overlay_store(bundle, ev)
    bundle = access.gate(bundle)
    for n in notes:
        st.text(n)
    draw_panel(build_panel(bundle), ev, key=key, open_attempt=open_attempt, con=con)
    _bundle_button(bundle.attempt.attempt_id, access, key)


def _bundle_button(attempt_id: str, access: Access, key: str) -> None:
    """The evidence bundle of this attempt, built only on click and decided afresh for this viewer."""
    from otel_inputs.viewer._bundle import bundle_bytes

    db = _db()
    if not db:
        return
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in attempt_id)[:80]
    st.download_button("Download evidence bundle (tar with SHA-256 manifest)",
                       data=lambda: bundle_bytes(db, _store(), attempt_id, access.viewer),
                       file_name=f"evidence-{safe}.tar", mime="application/x-tar", key=f"{key}:bundle",
                       on_click="ignore")


def _attempt_page(con: Any, attempt_id: str) -> None:
    bundle = q.load_attempt(con, attempt_id)
    if bundle is None:
        if st.button("← All runs", key="home"):
            go_home()
        note(f"No attempt with id {attempt_id} is recorded in this database.", "error")
        return
    with st.container(horizontal=True, vertical_alignment="center", gap="medium"):
        if st.button("← Attempts of this run", key="back_run"):
            open_run(bundle.attempt.run_id)
        st.header("Attempt", anchor=False)
    _draw_attempt(con, bundle, key="page")


def _body(live: bool = False) -> None:
    """The page: a top row (exporter health, the viewer menu), then the runs, a run, or an attempt."""
    top = st.container(horizontal=True, vertical_alignment="center")
    with top:
        _viewer_menu()
    health = top.container(horizontal=True, vertical_alignment="center", width="content")
    if bool(st.session_state.get("live")) != live:  # switched off inside the live fragment: redraw it all
        st.rerun(scope="app")
    db = _db()
    if not db:
        note(f"No database configured: set {names.ENV_DB} or run `otel-inputs view --db PATH` "
             "(or `--clickhouse URL`).", "error")
        return
    try:
        with q.open_backend(db) as con:  # one connection per redraw, the health indicator's too
            params = st.query_params
            if "attempt" in params:
                _attempt_page(con, params["attempt"])
            elif "run" in params:
                session = params.get("session")
                _run_page(con, records.SessionRun(session) if session and not params["run"] else params["run"] or None)
            else:
                _runs_page(con)
            # Asked last, shown first (its place at the top was kept): the page's own content reaches
            # the browser without waiting for this query.
            with health:
                _health(con)
    except q.DbUnavailable as exc:
        note(str(exc), "error")


def _jump() -> None:
    """Open the attempt whose id was typed (a callback: the page then runs with its query parameter)."""
    attempt_id = str(st.session_state.get("jump", "")).strip()
    if attempt_id:
        _forget_selections()
        st.query_params.clear()
        st.query_params["attempt"] = attempt_id


def _viewer_menu() -> None:
    """What this viewer reads and as whom, live refresh and open-by-id, in a popover: its content is
    drawn by the browser only when opened, where a sidebar's widgets cost every page load."""
    with st.popover("otel-inputs", icon=":material/tune:"):
        st.text("What task and inputs did each agent attempt actually have?")
        # File names only: host paths never reach the browser.
        db, store = _db(), _store()
        roots = fleet_roots()
        where = f"the hosts' store facts, bytes under {len(roots)} bucket root(s)" if roots else (
            "configured" if store else "not set")
        st.text(f"Database: {_db_label(db)}\nStore: {where}\nViewing as: {_evidence().viewer}")
        logout_button()
        st.toggle(f"Live refresh (every {LIVE_REFRESH_S} s)", key="live",
                  help="Off: the page redraws when you click on it.")
        st.text_input("Open attempt by id", key="jump", on_change=_jump, placeholder="attempt id, then Enter")


def main() -> None:
    st.set_page_config(page_title="otel-inputs review", layout="wide", initial_sidebar_state="collapsed")
    if not login_gate():  # login configured and nobody logged in: nothing else is drawn
        return
    st.html(STYLE)
    if st.session_state.get("live"):  # opt-in: the page redraws itself every LIVE_REFRESH_S
        st.fragment(run_every=LIVE_REFRESH_S)(_body)(True)
    else:
        _body()


main()
