"""Streamlit drawing of the ONE shared attempt panel (used by the attempt page and the run drawer).

Only draws a :class:`~otel_inputs.viewer._panel.PanelModel`; every decision was made in plain functions.
Untrusted strings (labels, paths, ids, file contents, messages) go through ``st.text`` /
``st.code`` only; the few that must become widget labels or notes are Markdown-escaped first.
"""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from otel_inputs.viewer._changes import ChangesModel, text_diff
from otel_inputs.viewer._evidence import Evidence, read_part
from otel_inputs.viewer._format import md_escape, short_sha
from otel_inputs.viewer._panel import ItemGroup, ItemRow, PanelModel, PartsModel
from otel_inputs.viewer._previews import preview, refusal_text

PART_SHOW_BYTES = 64 * 1024

MAX_ITEMS_PER_GROUP = 200


def note(text: str, kind: str = "info") -> None:
    """An owner-facing sentence in a callout, Markdown-escaped so it shows literally."""
    getattr(st, kind)(md_escape(text))


def kv_lines(pairs: tuple[tuple[str, str], ...] | list[tuple[str, str]]) -> None:
    st.text("\n".join(f"{k}: {v}" for k, v in pairs))


def draw_panel(p: PanelModel, ev: Evidence, *, key: str, open_attempt: Callable[[str], None]) -> None:
    """Draw the six sections in order; the task is open, messages are on demand."""
    kv_lines(p.facts)
    _task(p)
    _dispatch(p, ev, key)
    _inherited(p, ev, key, open_attempt)
    _files(p, ev, key)
    _attachments(p, ev, key)
    _messages(p)


def _task(p: PanelModel) -> None:
    t = p.task
    st.subheader("1. " + t.title)
    for n in t.notes:
        note(n, "warning" if "could not be separated" in n or n.startswith("The task text was not captured") else "info")
    if t.text is not None:
        st.code(t.text, language=None, wrap_lines=True)
    kv_lines(list(t.provenance))


def _dispatch(p: PanelModel, ev: Evidence, key: str) -> None:
    d = p.dispatch
    st.subheader("2. " + d.title)
    pairs = [("Send kind", d.send_kind), ("Turn index", d.turn_index)]
    if d.retry_of:
        pairs.append(("Retry of", d.retry_of))
    if d.previous_turn:
        pairs.append(("Previous turn", d.previous_turn))
    kv_lines(pairs)
    for n in d.notes:
        note(n)
    st.text(d.added_summary)
    c = d.coverage
    st.text(
        f"Input packet coverage: {c.coverage} · declared {c.declared} · captured {c.captured} · "
        f"omitted {c.omitted} · input events recorded {c.recorded_events}, received {c.received_events} · "
        f"capture decision {c.decision}"
    )
    for n in c.notes:
        note(n, "warning" if c.coverage != "complete" else "info")
    _groups(d.groups, ev, key)
    _parts(d.parts, ev, key)
    with st.expander("Exact current user message"):
        if d.current_message is None:
            st.text("The exact current message was not recorded.")
        else:
            st.code(d.current_message, language=None, wrap_lines=True)


def _inherited(p: PanelModel, ev: Evidence, key: str, open_attempt: Callable[[str], None]) -> None:
    s = p.inherited
    st.subheader("3. " + s.title)
    for n in s.notes:
        note(n)
    for i, t in enumerate(s.turns):
        label = f"Turn {t.turn_index} · {t.attempt_id} · {t.send_kind} · {t.phase} · {t.started}"
        if st.button(md_escape(label), key=f"{key}:turn:{i}"):
            open_attempt(t.attempt_id)
    _groups(s.groups, ev, key)


def _files(p: PanelModel, ev: Evidence, key: str) -> None:
    s = p.files
    st.subheader("4. " + s.title)
    for n in s.notes:
        note(n)
    _groups(s.groups, ev, key)
    _changes(s.changes, ev, key)


def _attachments(p: PanelModel, ev: Evidence, key: str) -> None:
    s = p.attachments
    st.subheader("5. " + s.title)
    for n in s.notes:
        note(n)
    _groups(s.groups, ev, key)


def _messages(p: PanelModel) -> None:
    s = p.messages
    st.subheader("6. " + s.title)
    for n in s.notes:
        note(n)
    with st.expander("Show the exact system and user messages"):
        st.text("System message")
        if s.system is None:
            st.text("not recorded")
        else:
            st.code(s.system, language=None, wrap_lines=True)
        st.text("User message")
        if s.user is None:
            st.text("not recorded")
        else:
            st.code(s.user, language=None, wrap_lines=True)


def _groups(groups: tuple[ItemGroup, ...], ev: Evidence, key: str) -> None:
    for g in groups:
        st.markdown(f"**{md_escape(g.title)}** — {len(g.items)} item(s)")
        for row in g.items[:MAX_ITEMS_PER_GROUP]:
            _item(row, ev, key)
        if len(g.items) > MAX_ITEMS_PER_GROUP:
            st.text(f"{len(g.items) - MAX_ITEMS_PER_GROUP} more item(s) in this group are not drawn.")


def _item(row: ItemRow, ev: Evidence, key: str) -> None:
    with st.container(border=True):
        st.text(f"#{row.seq}  {row.label}")
        lines = [
            f"{row.delivery_label} · source {row.source_kind}"
            + (f" · changed since previous turn: {row.change}" if row.change else ""),
            f"path {row.source_path if row.source_path else 'none'}",
            f"{row.media_type} · {row.size} · sha256 {row.sha256}",
            f"capture {row.capture_status} · artifact {row.artifact_status}"
            + (f" · {row.detail}" if row.detail else ""),
        ]
        st.text("\n".join(lines))
        if row.unavailable:
            st.text(f"Unavailable: {row.unavailable}")
            return
        if not row.previewable:
            st.text("no preview for this type")
            return
        if st.toggle(f"Preview #{row.seq}", key=f"{key}:pv:{row.input_id}"):
            _preview(row, ev, key)


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
    st.markdown("**What changed since the previous turn**")
    st.text(ch.note)
    if not ch.rows:
        return
    st.dataframe(
        [
            {"file": r.key, "change": r.mark,
             "previous sha256": short_sha(r.previous.sha256 if r.previous else None) if r.previous else "—",
             "this turn sha256": short_sha(r.current.sha256 if r.current else None) if r.current else "—",
             "note": r.reason}
            for r in ch.rows
        ],
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
    st.markdown("**Exchange parts**")
    for n in m.notes:
        st.text(n)
    for row in m.rows:
        with st.container(border=True):
            st.text(row.title)
            lines = [
                f"capture {row.capture} · dispatch {row.dispatch}",
                f"persistence {row.persistence}",
                f"{row.size} · sha256 {row.sha256}" + (f" · {row.detail}" if row.detail else ""),
            ]
            st.text("\n".join(lines))
            if not row.content_offered or row.record is None:
                st.text("No content was captured for this part.")
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
