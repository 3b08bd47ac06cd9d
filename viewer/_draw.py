"""Streamlit drawing of the ONE shared attempt panel (used by the attempt page and the run drawer).

Only draws a :class:`~otel_inputs.viewer._panel.PanelModel`; every decision was made in plain functions.
Each section's drawing is the function registered with ``@draws(name)`` under the name of its entry in
:data:`otel_inputs.viewer._panel.SECTIONS`, which alone says the sections, their titles and their order.
Untrusted strings (labels, paths, ids, file contents, messages) go through ``st.text`` (and ``st.code``
for an on-demand diff) only; the few that must become widget labels or notes are Markdown-escaped first.

Recorded text (task, messages, previews) is shown with :func:`text_box`, never ``st.code``: any
``st.code`` on a page makes the browser fetch and run Streamlit's 1.5 MB syntax highlighter before
the page settles (docs/performance.md, the browser figure).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

import pyarrow as pa
import streamlit as st

from otel_inputs.viewer._changes import ChangesModel, text_diff
from otel_inputs.viewer._evidence import Evidence, read_part
from otel_inputs.viewer._format import md_escape, short_sha, status_word
from otel_inputs.viewer._panel import (
    AttachmentsSection,
    DispatchSection,
    FilesSection,
    HeaderModel,
    InheritedSection,
    ItemGroup,
    ItemRow,
    MessagesSection,
    PanelModel,
    PartsModel,
    TaskSection,
    common_placement,
)
from otel_inputs.viewer._previews import preview, refusal_text
from otel_inputs.viewer._steps import StepsSection
from otel_inputs.viewer._where import item_elsewhere, task_drift

PART_SHOW_BYTES = 64 * 1024

MAX_ITEMS_PER_GROUP = 2000
TABLE_ROW_PX = 35
TABLE_MAX_ROWS = 10
"""A group's table shows up to this many rows before it scrolls, so 100 items fit on two screens."""
NO_SELECTION = "Open an item: choose it here (or type part of its name), or select its row"
"""The chooser's first entry; its label (what screen readers say) stays "Open an item (<group>)"."""
CHOOSER_PX = 480
TEXT_BOX_KEY = "textbox"
"""Containers keyed ``textbox-…`` show their text monospace (the app's one static style, ``app.STYLE``)."""


def note(text: str, kind: str = "info") -> None:
    """An owner-facing sentence in a callout, Markdown-escaped so it shows literally."""
    getattr(st, kind)(md_escape(text))


def kv_lines(pairs: tuple[tuple[str, str], ...] | list[tuple[str, str]]) -> None:
    st.text("\n".join(f"{k}: {v}" for k, v in pairs))


def text_box(text: str, key: str) -> None:
    """Recorded text verbatim, as plain text in a bordered monospace box (``key``: unique on the page)."""
    with st.container(border=True, key=f"{TEXT_BOX_KEY}-{key}"):
        st.text(text)


@dataclass(frozen=True)
class DrawContext:
    """What every drawing function of one panel shares: the panel, the store, the widget-key prefix, the link action."""

    panel: PanelModel
    ev: Evidence
    key: str
    """Prefix of every widget key of this panel (``page`` or ``drawer``): unique on the page."""
    open_attempt: Callable[[str], None] | None = None
    con: Any = None
    """The refresh's read-only connection; enables the on-demand look-ups ("where else", task runs)."""
    show_bytes: bool = True
    """A bytes column in the item tables: only when the inputs' placements differ."""


Draw = Callable[[Any, DrawContext], None]
"""A section's drawing: its model (what its spec's build returned) and the panel's :class:`DrawContext`."""

DRAWS: dict[str, Draw] = {}
"""Each section's drawing by the name of its spec in :data:`otel_inputs.viewer._panel.SECTIONS` (filled by
:func:`draws`; ``tests/viewer/test_sections.py`` checks the two name the same sections)."""


def draws(name: str) -> Callable[[Draw], Draw]:
    """Register the decorated function as the drawing of the section named ``name``."""

    def register(draw: Draw) -> Draw:
        if name in DRAWS:
            raise ValueError(f"two drawings of the section {name!r}")
        DRAWS[name] = draw
        return draw

    return register


def draw_panel(p: PanelModel, ev: Evidence, *, key: str, open_attempt: Callable[[str], None],
               con: Any = None, drawings: Mapping[str, Draw] = DRAWS) -> None:
    """Draw the header, then each section the panel was built with, in order, by its drawing in ``drawings``
    (under its heading, numbered or not as its spec says); an item's details open below its table.

    ``con`` (the refresh's read-only connection) enables the on-demand "where else" look-ups.
    """
    shared = common_placement(p.all_items())
    bytes_line = f"Bytes of every input with a snapshot: {shared}" if shared is not None else None
    ctx = DrawContext(p, ev, key, open_attempt, con, show_bytes=shared is None)
    if p.header is not None:
        _header(p.header, ctx, bytes_line)
    else:
        st.text("\n".join([f"{k}: {v}" for k, v in p.facts] + ([bytes_line] if bytes_line else [])))
    if p.read_tools_problem:
        note(p.read_tools_problem, "warning")
    number = 0
    for spec, model in p.built:
        if model is None:  # nothing recorded to show: left out, and the numbers close up
            continue
        if spec.numbered:
            number += 1
            st.subheader(f"{number}. {spec.title}")
        else:
            st.subheader(spec.title)
        drawings[spec.model](model, ctx)


def _header(h: HeaderModel, ctx: DrawContext, bytes_line: str | None) -> None:
    # The badge carries icon + word + colour: never colour alone.
    st.badge(f"Input coverage: {h.badge_word}", icon=h.badge_icon, color=h.badge_color)
    # One text element for the lines (each element costs the browser; docs/performance.md)
    st.text("\n".join([h.facts_line] + ([h.operation_text] if h.operation else []) + ([bytes_line] if bytes_line else [])))
    links = list(h.lineage) + [(o.text, o.attempt_id) for o in h.operation if not o.current]
    if links:
        with st.container(horizontal=True, gap="medium"):
            for i, (text, target) in enumerate(links):
                if st.button(md_escape(text), key=f"{ctx.key}:lineage:{i}", type="tertiary") and ctx.open_attempt:
                    ctx.open_attempt(target)


def _link_table(rows: list[dict[str, Any]], targets: list[str], key: str, ctx: DrawContext) -> None:
    """A plain-text table whose selected row opens that attempt."""
    event = st.dataframe(_frame(rows), hide_index=True, on_select="rerun", selection_mode="single-row", key=key,
                         width="stretch", height=_table_height(len(rows)))
    picked = event.selection.rows if event is not None else []
    if picked and picked[0] < len(targets) and ctx.open_attempt is not None:
        ctx.open_attempt(targets[picked[0]])


def _frame(rows: list[dict[str, Any]]) -> pa.Table | list[dict[str, Any]]:
    """Rows as an Arrow table: st.dataframe sends Arrow as is, where a list of dicts goes through
    pandas first (~15 ms per table on a loaded host, measured; most of it a string-index check)."""
    return pa.Table.from_pylist(rows) if rows else rows


def _table_height(n: int) -> int:
    return TABLE_ROW_PX * (min(max(n, 1), TABLE_MAX_ROWS) + 1) + 3


@draws("task")
def _task(t: TaskSection, ctx: DrawContext) -> None:
    for n in t.notes:
        note(n, "warning" if "could not be separated" in n or n.startswith("The task text was not captured") else "info")
    if t.text is not None:
        text_box(t.text, f"{ctx.key}-task")
    st.text(" · ".join(f"{k}: {v}" for k, v in t.provenance))
    sha = dict(t.provenance).get("SHA-256")
    if ctx.con is not None and sha and sha != "unknown":
        runs = st.expander("Runs that used this task", key=f"{ctx.key}:taskruns", on_change="rerun")
        if runs.open:  # lazy: asked and drawn only once opened
            with runs:
                _task_runs(ctx)


def _task_runs(ctx: DrawContext) -> None:
    p = ctx.panel
    if p.record is None:
        return
    records = [r.record for r in p.all_items() if r.record is not None]
    rows = [r for r in task_drift(ctx.con, p.record, tuple(records)) if not r.current]  # never this run against itself
    if not rows:
        st.text("No other run recorded this task SHA-256.")
        return
    st.text(f"{len(rows)} other run(s) used this task; the inputs of each one's first attempt compared with this "
            "attempt's, by path and SHA-256. Select a row to open that attempt.")
    _link_table(
        [{"run": r.run, "attempts": r.attempts, "first attempt": r.first_attempt_id,
          "started": r.started, "its inputs vs this attempt's": r.difference} for r in rows],
        [r.first_attempt_id for r in rows], f"{ctx.key}:taskruns_tbl", ctx)


@draws("dispatch")
def _dispatch(d: DispatchSection, ctx: DrawContext) -> None:
    pairs = [("Send kind", d.send_kind), ("Turn index", d.turn_index)]
    if d.retry_of:
        pairs.append(("Retry of", d.retry_of))
    if d.previous_turn:
        pairs.append(("Previous turn", d.previous_turn))
    c = d.coverage
    st.text(" · ".join(f"{k}: {v}" for k, v in pairs) + "\n" + d.added_summary + "\n" + c.summary)
    for n in d.notes:
        note(n)
    for n in c.notes:
        note(n, "warning" if c.coverage != "complete" else "info")
    _groups(d.groups, ctx)
    _parts(d.parts, ctx)
    # lazy: the message is drawn only once the expander is opened (nothing to render on page load)
    current = st.expander("Exact current user message", key=f"{ctx.key}:current_msg", on_change="rerun")
    if current.open:
        with current:
            if d.current_message is None:
                st.text(ctx.panel.messages.withheld or "The exact current message was not recorded.")
            else:
                text_box(d.current_message, f"{ctx.key}-current")


@draws("inherited")
def _inherited(s: InheritedSection, ctx: DrawContext) -> None:
    for n in s.notes:
        note(n)
    for i, t in enumerate(s.turns):
        label = f"Turn {t.turn_index} · {t.attempt_id} · {t.send_kind} · {t.phase} · {t.started}"
        if st.button(md_escape(label), key=f"{ctx.key}:turn:{i}") and ctx.open_attempt is not None:
            ctx.open_attempt(t.attempt_id)
    _groups(s.groups, ctx)


@draws("files")
def _files(s: FilesSection, ctx: DrawContext) -> None:
    for n in s.notes:
        note(n)
    _groups(s.groups, ctx)
    _changes(s.changes, ctx)


@draws("attachments")
def _attachments(s: AttachmentsSection, ctx: DrawContext) -> None:
    for n in s.notes:
        note(n)
    _groups(s.groups, ctx)


@draws("messages")
def _messages(s: MessagesSection, ctx: DrawContext) -> None:
    key = ctx.key
    st.text(f"Messages {s.source}.")
    for n in s.notes:
        note(n)
    exp = st.expander("Show the exact system and user messages", key=f"{key}:messages", on_change="rerun")
    if not exp.open:  # lazy: drawn only once opened
        return
    with exp:
        st.text("System message")
        if s.system is None:
            st.text("withheld" if s.withheld else "not recorded")
        else:
            text_box(s.system, f"{key}-system")
        st.text("User message")
        if s.user is None:
            st.text("withheld" if s.withheld else "not recorded")
        else:
            text_box(s.user, f"{key}-user")


def shared_read(g: ItemGroup) -> str | None:
    """The one "was it read?" answer every item of ``g`` has (said once above its table), else ``None``."""
    reads = {r.read for r in g.items}
    return reads.pop() if len(reads) == 1 and None not in reads else None


def _short_type(media_type: str) -> str:
    """``text/plain; charset=utf-8`` as ``text/plain`` for a table cell (the item's details keep it whole)."""
    return media_type.split(";", 1)[0].strip() or media_type


def group_table(g: ItemGroup, *, show_bytes: bool = True) -> list[dict[str, Any]]:
    """The rows of one delivery group's table (plain text cells; st.dataframe never renders markup).

    A *bytes* column only when ``show_bytes`` (the inputs' placements differ), a *change* column only
    when some item has one, a *read?* column only when the items' answers differ (else said once)."""
    with_reads = any(r.read is not None for r in g.items) and shared_read(g) is None
    with_change = any(r.change is not None for r in g.items)
    # A coding agent's instruction files: loaded (the runtime's report) and delivered (bytes in the request).
    with_coding = any(r.record is not None and (r.record.loaded or r.record.delivered) for r in g.items)
    rows = []
    for r in g.items[:MAX_ITEMS_PER_GROUP]:
        row: dict[str, Any] = {"#": r.seq, "label": r.label, "capture": r.capture_status,
                               "artifact": r.artifact_status}
        if show_bytes:
            row["bytes"] = r.placement
        row["size"] = r.size
        row["type"] = _short_type(r.media_type)
        if with_change:
            row["change"] = r.change or ""
        if with_reads:
            row["read?"] = r.read or ""
        if with_coding:
            row["loaded"] = status_word(r.record.loaded if r.record is not None else None)
            row["delivered"] = status_word(r.record.delivered if r.record is not None else None)
        rows.append(row)
    return rows


TABLE_BUDGET_PX = 1180
"""What a group's columns may take together: the main column at a 1400 px wide window (about 1,240 px)
less the row-selection column, so every column is on screen without scrolling sideways."""
FIXED_WIDTHS = {"#": 40, "capture": 150, "artifact": 140, "bytes": 240, "size": 75, "type": 130, "change": 80,
                "loaded": 160, "delivered": 150}
COLUMN_HELP = {
    "bytes": "Where the bytes are now: a local copy, the bucket (only once uploaded), an upload queued or failed",
    "read?": "Whether the attempt's tool steps read this file (docs/viewer.md, Was it read?)",
    "loaded": "The coding agent's own report of loading this instruction file",
    "delivered": "Whether the file's bytes are in the model request as recorded",
}


def column_widths(columns: list[str]) -> dict[str, int]:
    """Pixel widths of a group table's ``columns``: fixed ones, and the rest of the budget shared by the
    label (two parts in five when there is a *read?* column, at least 150 px) and *read?*."""
    widths = {c: FIXED_WIDTHS[c] for c in columns if c in FIXED_WIDTHS}
    rest = TABLE_BUDGET_PX - sum(widths.values())
    if "read?" in columns:
        widths["label"] = max(150, rest * 2 // 5)
        widths["read?"] = max(150, rest - widths["label"])
    else:
        widths["label"] = max(150, rest)
    total = sum(widths.values())
    if total > TABLE_BUDGET_PX:  # many optional columns at once (a coding turn's loaded and delivered, too):
        # every column narrower in proportion, so each stays on screen (a cut cell shows whole on hover)
        scale = (TABLE_BUDGET_PX - widths.get("#", 0)) / (total - widths.get("#", 0))
        widths = {c: w if c == "#" else max(40, int(w * scale)) for c, w in widths.items()}
    return widths


def _group_columns(rows: list[dict[str, Any]]) -> dict[str, Any]:
    columns = list(rows[0]) if rows else []
    return {c: (st.column_config.NumberColumn(c, width=w) if c == "#" else
                st.column_config.TextColumn(c, width=w, help=COLUMN_HELP.get(c)))
            for c, w in column_widths(columns).items()}


def _group_key(key: str, g: ItemGroup) -> str:
    return f"{key}:grp:{g.delivery_mode or 'unknown'}"


def _row_picked(gk: str, ids: list[str]) -> None:
    """A clicked table row becomes the chooser's item (a callback: it runs before the page is drawn)."""
    state = st.session_state.get(f"{gk}:table")
    rows = list(state["selection"]["rows"]) if state else []
    st.session_state[f"{gk}:item"] = ids[rows[0]] if rows and rows[0] < len(ids) else NO_SELECTION


def _item_chosen(gk: str, ids: list[str]) -> None:
    """An item chosen in the chooser (the keyboard path) becomes the table's selected, highlighted row."""
    choice = st.session_state.get(f"{gk}:item")
    st.session_state[f"{gk}:table"] = {"selection": {"rows": [ids.index(choice)] if choice in ids else [],
                                                     "columns": [], "cells": []}}


def _groups(groups: tuple[ItemGroup, ...], ctx: DrawContext) -> None:
    """Each delivery group: its table at full width, then the chooser, then the chosen item's details and preview."""
    for g in groups:
        st.markdown(f"**{md_escape(g.title)}** — {len(g.items)} item(s)")
        read = shared_read(g)
        if read is not None:
            st.text(f"Was it read? {read} (every item of this group)")
        gk = _group_key(ctx.key, g)
        items = g.items[:MAX_ITEMS_PER_GROUP]
        if len(g.items) > MAX_ITEMS_PER_GROUP:
            st.text(f"{len(g.items) - MAX_ITEMS_PER_GROUP} more item(s) in this group are not drawn.")
        ids = [r.input_id for r in items]
        rows = group_table(g, show_bytes=ctx.show_bytes)
        st.dataframe(_frame(rows), hide_index=True, on_select=partial(_row_picked, gk, ids),
                     selection_mode="single-row", key=f"{gk}:table", width="stretch",
                     height=_table_height(len(items)), column_config=_group_columns(rows))
        by_id = {r.input_id: r for r in items}
        # The keyboard path to an item (Tab to it, type, Enter).  Not in a popover, although one would load
        # faster: the browser puts a popover's content at the end of the page, out of the Tab order.
        choice = st.selectbox(f"Open an item ({g.title.lower()})", [NO_SELECTION, *by_id], key=f"{gk}:item",
                              on_change=_item_chosen, args=(gk, ids), width=CHOOSER_PX, label_visibility="collapsed",
                              format_func=lambda i: i if i == NO_SELECTION else f"#{by_id[i].seq}  {by_id[i].label}")
        if choice in by_id:
            with st.container(border=True):
                _item_detail(by_id[choice], ctx)


def item_lines(row: ItemRow) -> list[str]:
    """The chosen item's facts, one per line, in words; the SHA-256 on a line of its own."""
    lines = [
        f"#{row.seq}  {row.label}",
        f"{row.delivery_label} · source: {row.source_kind}"
        + (f" · changed since the previous turn: {row.change}" if row.change else ""),
        f"path: {row.source_path if row.source_path else 'none'}",
        f"type: {row.media_type} · size: {row.size}",
        f"SHA-256: {row.sha256}",
        f"capture: {row.capture_status} · artifact: {row.artifact_status}" + (f" · {row.detail}" if row.detail else ""),
        f"bytes: {row.placement}",
    ]
    if row.read is not None:
        lines.append(f"Was it read? {row.read}")
    rec = row.record
    if rec is not None and (rec.loaded or rec.delivered):  # a coding agent's instruction file
        lines.append(f"Loaded: {status_word(rec.loaded)} — {rec.loaded_detail or ''}")
        lines.append(f"Delivered: {status_word(rec.delivered)} — {rec.delivered_detail or ''}")
    return lines


def _item_detail(row: ItemRow, ctx: DrawContext) -> None:
    st.text("\n".join(item_lines(row)))
    if row.unavailable:
        st.text(f"Unavailable: {row.unavailable}")
    elif not row.previewable:
        st.text("no preview for this type")
    else:
        _preview(row, ctx)
    if ctx.con is not None and row.record is not None and ctx.open_attempt is not None:
        if st.toggle("Where else was this item?", key=f"{ctx.key}:where:{row.input_id}"):
            _where_else(row, ctx)


def _where_else(row: ItemRow, ctx: DrawContext) -> None:
    assert row.record is not None
    by_sha, by_path = item_elsewhere(ctx.con, row.record)
    for name, listing in (("sha", by_sha), ("path", by_path)):
        if listing is None:
            st.text("No SHA-256 recorded, so no match by content." if name == "sha" else "No path recorded.")
            continue
        st.text(listing.text)
        if listing.rows:
            _link_table(
                [{"attempt": r.attempt_id, "run": r.run, "phase": r.phase, "started": r.started, "#": r.seq,
                  "label": r.label, "path": r.path} for r in listing.rows],
                [r.attempt_id for r in listing.rows], f"{ctx.key}:where:{name}:{row.input_id}", ctx)


STEP_COLUMNS = {"#": st.column_config.NumberColumn("#", width=40),
                **{c: st.column_config.TextColumn(c, width=w) for c, w in (
                    ("kind", 85), ("name", 140), ("model", 130), ("started", 100), ("duration", 75), ("tokens", 110),
                    ("status", 135), ("arguments", 300))}}
"""The steps table inside its expander: every column on screen at 1400 px (a long argument is cut in its cell)."""


@draws("steps")
def _steps(s: StepsSection, ctx: DrawContext) -> None:
    key = ctx.key
    for n in s.notes:
        note(n)
    if not s.recorded:
        return
    st.text(s.summary)
    table = st.expander(f"Show the {len(s.rows)} step(s)", key=f"{key}:steps_table", on_change="rerun")
    if not table.open:  # lazy: the table is drawn only once opened (docs/performance.md, the browser figure)
        return
    show_args = any(r.arguments is not None for r in s.rows)
    rows = []
    for r in s.rows:
        row: dict[str, Any] = {"#": r.seq, "kind": r.kind, "name": r.name, "model": r.model, "started": r.started,
                               "duration": r.duration, "tokens": r.tokens, "status": r.status}
        if show_args:
            row["arguments"] = r.arguments if r.arguments is not None else "not recorded"
        rows.append(row)
    with table:
        st.dataframe(_frame(rows), hide_index=True, width="stretch", key=f"{key}:steps",
                     height=_table_height(len(rows)), column_config=STEP_COLUMNS)


def _preview(row: ItemRow, ctx: DrawContext) -> None:
    ev, key = ctx.ev, ctx.key
    assert row.record is not None
    page = 0
    pv = preview(ev, row.record, 0)
    if pv.kind == "text" and pv.pages > 1:
        page = int(st.number_input(f"Page of #{row.seq}", 1, pv.pages, 1, key=f"{key}:page:{row.input_id}")) - 1
        if page:
            pv = preview(ev, row.record, page)
    if pv.kind == "text":
        st.text(f"Preview of #{row.seq}: {pv.message}")
        text_box(pv.text or "", f"{key}-preview-{row.seq}")  # a number: recorded ids never reach a key
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


def _changes(ch: ChangesModel, ctx: DrawContext) -> None:
    ev, key = ctx.ev, ctx.key
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


def _parts(m: PartsModel, ctx: DrawContext) -> None:
    """The logical request and observable output: outcome, dispatch, persistence, content on demand."""
    if not m.rows:
        st.text("Exchange parts: " + " ".join(m.notes))
        return
    st.text("\n".join(["Exchange parts:", *part_lines(m), *m.notes]))
    more = st.expander("Exchange parts: sizes, SHA-256 and content", key=f"{ctx.key}:parts_more", on_change="rerun")
    if not more.open:  # lazy: drawn only once opened
        return
    with more:
        _parts_detail(m, ctx)


def part_lines(m: PartsModel) -> list[str]:
    """One line per exchange part: what was captured, whether it was sent, whether the store kept it."""
    return [f"{r.title}: {r.capture} · {r.dispatch} · {r.persistence}" + (f" · {r.detail}" if r.detail else "")
            for r in m.rows]


def _parts_detail(m: PartsModel, ctx: DrawContext) -> None:
    ev, key = ctx.ev, ctx.key
    st.dataframe(
        _frame([{"part": r.title, "capture": r.capture, "dispatch": r.dispatch, "persistence": r.persistence, "size": r.size,
          "sha256": short_sha(r.sha256 if r.sha256 != "unknown" else None), "note": r.detail or ""} for r in m.rows]),
        hide_index=True, width="stretch", key=f"{key}:parts",
    )
    for i, row in enumerate(m.rows):
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
            text_box(shown, f"{key}-part-{i}")
            if len(data) > PART_SHOW_BYTES:
                st.text(f"Showing the first {PART_SHOW_BYTES} bytes.")
