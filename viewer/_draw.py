"""Streamlit drawing of the ONE shared attempt panel (used by the attempt page and the run drawer).

Only draws a :class:`~otel_inputs.viewer._panel.PanelModel`; every decision was made in plain functions.
Untrusted strings (labels, paths, ids, file contents, messages) go through ``st.text`` /
``st.code`` only; the few that must become widget labels or notes are Markdown-escaped first.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow as pa
import streamlit as st

from otel_inputs.viewer._changes import ChangesModel, text_diff
from otel_inputs.viewer._evidence import Evidence, read_part
from otel_inputs.viewer._format import md_escape, short_sha
from otel_inputs.viewer._panel import HeaderModel, ItemGroup, ItemRow, PanelModel, PartsModel
from otel_inputs.viewer._previews import preview, refusal_text
from otel_inputs.viewer._steps import StepsSection

PART_SHOW_BYTES = 64 * 1024

MAX_ITEMS_PER_GROUP = 2000
TABLE_ROW_PX = 35
TABLE_MAX_ROWS = 10
"""A group's table shows up to this many rows before it scrolls, so 100 items fit on two screens."""
NO_SELECTION = "(choose an item)"


def note(text: str, kind: str = "info") -> None:
    """An owner-facing sentence in a callout, Markdown-escaped so it shows literally."""
    getattr(st, kind)(md_escape(text))


def kv_lines(pairs: tuple[tuple[str, str], ...] | list[tuple[str, str]]) -> None:
    st.text("\n".join(f"{k}: {v}" for k, v in pairs))


def draw_panel(p: PanelModel, ev: Evidence, *, key: str, open_attempt: Callable[[str], None],
               con: Any = None) -> None:
    """Draw the header, then the six sections in order, then the steps; previews open beside their table.

    ``con`` (the refresh's read-only connection) enables the on-demand "where else" look-ups.
    """
    if p.header is not None:
        _header(p.header, key, open_attempt)
    else:
        kv_lines(p.facts)
    if p.read_tools_problem:
        note(p.read_tools_problem, "warning")
    _task(p, key, con, open_attempt)
    _dispatch(p, ev, key, con, open_attempt)
    _inherited(p, ev, key, open_attempt, con)
    _files(p, ev, key, con, open_attempt)
    _attachments(p, ev, key, con, open_attempt)
    _messages(p)
    if p.steps is not None:
        _steps(p.steps, key)


def _header(h: HeaderModel, key: str, open_attempt: Callable[[str], None]) -> None:
    # The badge carries icon + word + colour: never colour alone.
    st.badge(f"Input coverage: {h.badge_word}", icon=h.badge_icon, color=h.badge_color)
    st.text(h.facts_line)
    links = list(h.lineage) + [(o.text, o.attempt_id) for o in h.operation if not o.current]
    if h.operation:
        st.text(h.operation_text)
    if links:
        cols = st.columns(min(len(links), 4))
        for i, (text, target) in enumerate(links):
            with cols[i % len(cols)]:
                if st.button(md_escape(text), key=f"{key}:lineage:{i}", type="tertiary"):
                    open_attempt(target)


def _link_table(rows: list[dict[str, Any]], targets: list[str], key: str, open_attempt: Callable[[str], None]) -> None:
    """A plain-text table whose selected row opens that attempt."""
    event = st.dataframe(_frame(rows), hide_index=True, on_select="rerun", selection_mode="single-row", key=key,
                         width="stretch", height=_table_height(len(rows)))
    picked = event.selection.rows if event is not None else []
    if picked and picked[0] < len(targets):
        open_attempt(targets[picked[0]])


def _frame(rows: list[dict[str, Any]]) -> pa.Table | list[dict[str, Any]]:
    """Rows as an Arrow table: st.dataframe sends Arrow as is, where a list of dicts goes through
    pandas first (~15 ms per table on a loaded host, measured; most of it a string-index check)."""
    return pa.Table.from_pylist(rows) if rows else rows


def _table_height(n: int) -> int:
    return TABLE_ROW_PX * (min(max(n, 1), TABLE_MAX_ROWS) + 1) + 3


def _task(p: PanelModel, key: str, con: Any, open_attempt: Callable[[str], None]) -> None:
    t = p.task
    st.subheader("1. " + t.title)
    for n in t.notes:
        note(n, "warning" if "could not be separated" in n or n.startswith("The task text was not captured") else "info")
    if t.text is not None:
        st.code(t.text, language=None, wrap_lines=True)
    st.text(" · ".join(f"{k}: {v}" for k, v in t.provenance))
    sha = dict(t.provenance).get("SHA-256")
    if con is not None and sha and sha != "unknown" and st.toggle("Runs that used this task", key=f"{key}:taskruns"):
        _task_runs(con, p, key, open_attempt)


def _task_runs(con: Any, p: PanelModel, key: str, open_attempt: Callable[[str], None]) -> None:
    from otel_inputs.viewer._where import task_drift

    if p.record is None:
        return
    records = [r.record for r in p.all_items() if r.record is not None]
    rows = task_drift(con, p.record, tuple(records))
    if not rows:
        st.text("No run recorded this task SHA-256.")
        return
    st.text(f"{len(rows)} run(s) used this task; inputs compared with this attempt's, by path and SHA-256.")
    _link_table(
        [{"run": ("▶ " if r.current else "") + r.run, "attempts": r.attempts, "first attempt": r.first_attempt_id,
          "started": r.started, "inputs of its first attempt vs this one": r.difference} for r in rows],
        [r.first_attempt_id for r in rows], f"{key}:taskruns_tbl", open_attempt)


def _dispatch(p: PanelModel, ev: Evidence, key: str, con: Any, open_attempt: Callable[[str], None]) -> None:
    d = p.dispatch
    st.subheader("2. " + d.title)
    pairs = [("Send kind", d.send_kind), ("Turn index", d.turn_index)]
    if d.retry_of:
        pairs.append(("Retry of", d.retry_of))
    if d.previous_turn:
        pairs.append(("Previous turn", d.previous_turn))
    c = d.coverage
    st.text(
        " · ".join(f"{k}: {v}" for k, v in pairs) + "\n" + d.added_summary + "\n"
        f"Input packet coverage: {c.coverage} · declared {c.declared} · captured {c.captured} · "
        f"omitted {c.omitted} · input events recorded {c.recorded_events}, received {c.received_events} · "
        f"capture decision {c.decision}"
    )
    for n in d.notes:
        note(n)
    for n in c.notes:
        note(n, "warning" if c.coverage != "complete" else "info")
    _groups(d.groups, ev, key, con, open_attempt)
    _parts(d.parts, ev, key)
    with st.expander("Exact current user message"):
        if d.current_message is None:
            st.text(p.messages.withheld or "The exact current message was not recorded.")
        else:
            st.code(d.current_message, language=None, wrap_lines=True)


def _inherited(p: PanelModel, ev: Evidence, key: str, open_attempt: Callable[[str], None], con: Any = None) -> None:
    s = p.inherited
    st.subheader("3. " + s.title)
    for n in s.notes:
        note(n)
    for i, t in enumerate(s.turns):
        label = f"Turn {t.turn_index} · {t.attempt_id} · {t.send_kind} · {t.phase} · {t.started}"
        if st.button(md_escape(label), key=f"{key}:turn:{i}"):
            open_attempt(t.attempt_id)
    _groups(s.groups, ev, key, con, open_attempt)


def _files(p: PanelModel, ev: Evidence, key: str, con: Any, open_attempt: Callable[[str], None]) -> None:
    s = p.files
    st.subheader("4. " + s.title)
    for n in s.notes:
        note(n)
    _groups(s.groups, ev, key, con, open_attempt)
    _changes(s.changes, ev, key)


def _attachments(p: PanelModel, ev: Evidence, key: str, con: Any, open_attempt: Callable[[str], None]) -> None:
    s = p.attachments
    st.subheader("5. " + s.title)
    for n in s.notes:
        note(n)
    _groups(s.groups, ev, key, con, open_attempt)


def _messages(p: PanelModel) -> None:
    s = p.messages
    st.subheader("6. " + s.title)
    st.text(f"Messages {s.source}.")
    for n in s.notes:
        note(n)
    with st.expander("Show the exact system and user messages"):
        st.text("System message")
        if s.system is None:
            st.text("withheld" if s.withheld else "not recorded")
        else:
            st.code(s.system, language=None, wrap_lines=True)
        st.text("User message")
        if s.user is None:
            st.text("withheld" if s.withheld else "not recorded")
        else:
            st.code(s.user, language=None, wrap_lines=True)


def group_table(g: ItemGroup) -> list[dict[str, Any]]:
    """The rows of one delivery group's table (plain text cells; st.dataframe never renders markup)."""
    with_reads = any(r.read is not None for r in g.items)
    with_change = any(r.change is not None for r in g.items)
    rows = []
    for r in g.items[:MAX_ITEMS_PER_GROUP]:
        row: dict[str, Any] = {"#": r.seq, "label": r.label, "capture": r.capture_status.replace("_", " "),
                               "artifact": r.artifact_status.replace("_", " "), "bytes": r.placement, "size": r.size,
                               "type": r.media_type}
        if with_change:
            row["change"] = r.change or ""
        if with_reads:
            row["read?"] = r.read or ""
        if r.record is not None and (r.record.loaded or r.record.delivered):  # a coding agent's instruction file
            row["loaded"] = (r.record.loaded or "not recorded").replace("_", " ")
            row["delivered"] = (r.record.delivered or "not recorded").replace("_", " ")
        rows.append(row)
    return rows


GROUP_COLUMNS = {
    "#": st.column_config.NumberColumn("#", width=40),
    "label": st.column_config.TextColumn("label", width="medium"),
    "capture": st.column_config.TextColumn("capture", width=95),
    "artifact": st.column_config.TextColumn("artifact", width=110),
    "bytes": st.column_config.TextColumn("bytes", width="medium", help="Where the bytes are now: a local copy, "
                                         "the bucket (only once uploaded), an upload queued or failed"),
    "size": st.column_config.TextColumn("size", width=70),
    "type": st.column_config.TextColumn("type", width=110),
    "change": st.column_config.TextColumn("change", width=80),
    "read?": st.column_config.TextColumn("read?", width="medium"),
}


def _group_key(key: str, g: ItemGroup) -> str:
    return f"{key}:grp:{g.delivery_mode or 'unknown'}"


def _groups(groups: tuple[ItemGroup, ...], ev: Evidence, key: str, con: Any = None,
            open_attempt: Callable[[str], None] | None = None) -> None:
    for g in groups:
        st.markdown(f"**{md_escape(g.title)}** — {len(g.items)} item(s)")
        gk = _group_key(key, g)
        items = g.items[:MAX_ITEMS_PER_GROUP]
        if len(g.items) > MAX_ITEMS_PER_GROUP:
            st.text(f"{len(g.items) - MAX_ITEMS_PER_GROUP} more item(s) in this group are not drawn.")
        left, right = st.columns([5, 2], gap="small")
        with left:
            event = st.dataframe(_frame(group_table(g)), hide_index=True, on_select="rerun", selection_mode="single-row",
                                 key=f"{gk}:table", width="stretch", height=_table_height(len(items)),
                                 column_config=GROUP_COLUMNS)
        picked = list(event.selection.rows) if event is not None else []
        # A clicked row drives the item chooser beside the table (set before that widget exists in
        # this run); the chooser itself is the keyboard path and works without the grid.
        last_key = f"{gk}:last"
        if picked != st.session_state.get(last_key):
            st.session_state[last_key] = picked
            if picked and picked[0] < len(items):
                st.session_state[f"{gk}:item"] = items[picked[0]].input_id
        by_id = {r.input_id: r for r in items}
        with right:
            choice = st.selectbox(f"Open an item ({g.title.lower()})", [NO_SELECTION, *by_id], key=f"{gk}:item",
                                  format_func=lambda i: i if i == NO_SELECTION else f"#{by_id[i].seq}  {by_id[i].label}")
            if choice in by_id:
                _item_detail(by_id[choice], ev, key, con, open_attempt)
            else:
                st.text("Select a row, or choose an item above, to see its details and preview here.")


def _item_detail(row: ItemRow, ev: Evidence, key: str, con: Any, open_attempt: Callable[[str], None] | None) -> None:
    lines = [
        f"#{row.seq}  {row.label}",
        f"{row.delivery_label} · source {row.source_kind}"
        + (f" · changed since previous turn: {row.change}" if row.change else ""),
        f"path {row.source_path if row.source_path else 'none'}",
        f"{row.media_type} · {row.size} · sha256 {row.sha256}",
        f"capture {row.capture_status} · artifact {row.artifact_status}" + (f" · {row.detail}" if row.detail else ""),
        f"bytes: {row.placement}",
    ]
    if row.read is not None:
        lines.append(f"Was it read? {row.read}")
    rec = row.record
    if rec is not None and (rec.loaded or rec.delivered):  # a coding agent's instruction file
        lines.append(f"Loaded: {(rec.loaded or 'not recorded').replace('_', ' ')} — {rec.loaded_detail or ''}")
        lines.append(f"Delivered: {(rec.delivered or 'not recorded').replace('_', ' ')} — {rec.delivered_detail or ''}")
    st.text("\n".join(lines))
    if row.unavailable:
        st.text(f"Unavailable: {row.unavailable}")
    elif not row.previewable:
        st.text("no preview for this type")
    else:
        _preview(row, ev, key)
    if con is not None and row.record is not None and open_attempt is not None:
        if st.toggle("Where else was this item?", key=f"{key}:where:{row.input_id}"):
            _where_else(con, row, key, open_attempt)


def _where_else(con: Any, row: ItemRow, key: str, open_attempt: Callable[[str], None]) -> None:
    from otel_inputs.viewer._where import item_elsewhere

    assert row.record is not None
    by_sha, by_path = item_elsewhere(con, row.record)
    for name, listing in (("sha", by_sha), ("path", by_path)):
        if listing is None:
            st.text("No SHA-256 recorded, so no match by content." if name == "sha" else "No path recorded.")
            continue
        st.text(listing.text)
        if listing.rows:
            _link_table(
                [{"attempt": r.attempt_id, "run": r.run, "phase": r.phase, "started": r.started, "#": r.seq,
                  "label": r.label, "path": r.path} for r in listing.rows],
                [r.attempt_id for r in listing.rows], f"{key}:where:{name}:{row.input_id}", open_attempt)


def _steps(s: StepsSection, key: str) -> None:
    st.subheader("Steps the agent took")
    for n in s.notes:
        note(n)
    if not s.recorded:
        return
    st.text(s.summary)
    show_args = any(r.arguments is not None for r in s.rows)
    rows = []
    for r in s.rows:
        row: dict[str, Any] = {"#": r.seq, "kind": r.kind, "name": r.name, "model": r.model, "started": r.started,
                               "duration": r.duration, "tokens": r.tokens, "status": r.status}
        if show_args:
            row["arguments"] = r.arguments if r.arguments is not None else "not recorded"
        rows.append(row)
    st.dataframe(_frame(rows), hide_index=True, width="stretch", key=f"{key}:steps", height=_table_height(len(rows)))


def _preview(row: ItemRow, ev: Evidence, key: str) -> None:
    assert row.record is not None
    page = 0
    pv = preview(ev, row.record, 0)
    if pv.kind == "text" and pv.pages > 1:
        page = int(st.number_input(f"Page of #{row.seq}", 1, pv.pages, 1, key=f"{key}:page:{row.input_id}")) - 1
        if page:
            pv = preview(ev, row.record, page)
    if pv.kind == "text":
        st.text(f"Preview of #{row.seq}: {pv.message}")
        st.code(pv.text or "", language=None, wrap_lines=True)
    elif pv.kind == "image" and pv.image_png is not None:
        st.text(f"Preview of #{row.seq}: {pv.message}")
        width = min(pv.width or 600, 900)
        if pv.width and pv.height and pv.height * width // pv.width < 1:
            width = pv.width  # a very wide strip would scale to zero height: show it at its own size
        st.image(pv.image_png, width=max(1, width))
    elif pv.kind == "refused":
        st.text(f"Preview refused: {pv.message}")
    else:
        st.text(pv.message)


def _changes(ch: ChangesModel, ev: Evidence, key: str) -> None:
    st.text("What changed since the previous turn: " + ch.note)
    if not ch.rows:
        return
    st.dataframe(
        _frame([
            {"file": r.key, "change": r.mark,
             "previous sha256": short_sha(r.previous.sha256 if r.previous else None) if r.previous else "—",
             "this turn sha256": short_sha(r.current.sha256 if r.current else None) if r.current else "—",
             "note": r.reason}
            for r in ch.rows
        ]),
        hide_index=True,
        width="stretch",
    )
    for i, r in enumerate(ch.rows):
        if r.diffable and st.toggle(f"Text diff of changed file {i + 1}", key=f"{key}:diff:{i}"):
            st.text(r.key)
            diff = text_diff(ev, r)
            if diff.refused:
                st.text(f"Diff refused: {diff.refused}")
            else:
                st.code("\n".join(diff.lines), language="diff")
                if diff.truncated:
                    st.text("Diff truncated.")


def _parts(m: PartsModel, ev: Evidence, key: str) -> None:
    """The logical request and observable output: outcome, dispatch, persistence, content on demand."""
    if not m.rows:
        st.text("Exchange parts: " + " ".join(m.notes))
        return
    st.markdown("**Exchange parts**")
    for n in m.notes:
        st.text(n)
    st.dataframe(
        _frame([{"part": r.title, "capture": r.capture, "dispatch": r.dispatch, "persistence": r.persistence, "size": r.size,
          "sha256": short_sha(r.sha256 if r.sha256 != "unknown" else None), "note": r.detail or ""} for r in m.rows]),
        hide_index=True, width="stretch", key=f"{key}:parts",
    )
    for row in m.rows:
        if not row.content_offered or row.record is None:
            st.text(f"{row.title}: no content was captured for this part.")
            continue
        if st.toggle(f"Show {row.title.lower()} content", key=f"{key}:part:{row.key}"):
            result = read_part(ev, row.record)
            if not result.ok or result.snapshot is None:
                st.text("Content refused: " + refusal_text(result.outcome, result.message))
                continue
            data = result.snapshot.data
            shown = data[:PART_SHOW_BYTES].decode("utf-8", errors="replace")
            st.text(f"{len(data)} bytes; size and SHA-256 verified against the store receipt")
            st.code(shown, language=None, wrap_lines=True)
            if len(data) > PART_SHOW_BYTES:
                st.text(f"Showing the first {PART_SHOW_BYTES} bytes.")
