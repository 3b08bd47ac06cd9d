"""Streamlit drawing of the ONE shared attempt panel (used by the attempt page and the run drawer).

Only draws a :class:`~viewer._panel.PanelModel`; every decision was made in plain functions.
Untrusted strings (labels, paths, ids, file contents, messages) go through ``st.text`` /
``st.code`` only; the few that must become widget labels or notes are Markdown-escaped first.
"""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from viewer._changes import ChangesModel, text_diff
from viewer._format import md_escape, short_sha
from viewer._panel import ItemGroup, ItemRow, PanelModel
from viewer._previews import preview

MAX_ITEMS_PER_GROUP = 200


def note(text: str, kind: str = "info") -> None:
    """An owner-facing sentence in a callout, Markdown-escaped so it shows literally."""
    getattr(st, kind)(md_escape(text))


def kv_lines(pairs: tuple[tuple[str, str], ...] | list[tuple[str, str]]) -> None:
    st.text("\n".join(f"{k}: {v}" for k, v in pairs))


def draw_panel(p: PanelModel, store_root: str | None, *, key: str, open_attempt: Callable[[str], None]) -> None:
    """Draw the six sections in order; the task is open, messages are on demand."""
    kv_lines(p.facts)
    _task(p)
    _dispatch(p, store_root, key)
    _inherited(p, store_root, key, open_attempt)
    _files(p, store_root, key)
    _attachments(p, store_root, key)
    _messages(p)


def _task(p: PanelModel) -> None:
    t = p.task
    st.subheader("1. " + t.title)
    for n in t.notes:
        note(n, "warning" if "could not be separated" in n or n.startswith("The task text was not captured") else "info")
    if t.text is not None:
        st.code(t.text, language=None, wrap_lines=True)
    kv_lines(list(t.provenance))


def _dispatch(p: PanelModel, store_root: str | None, key: str) -> None:
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
    _groups(d.groups, store_root, key)
    with st.expander("Exact current user message"):
        if d.current_message is None:
            st.text("The exact current message was not recorded.")
        else:
            st.code(d.current_message, language=None, wrap_lines=True)


def _inherited(p: PanelModel, store_root: str | None, key: str, open_attempt: Callable[[str], None]) -> None:
    s = p.inherited
    st.subheader("3. " + s.title)
    for n in s.notes:
        note(n)
    for i, t in enumerate(s.turns):
        label = f"Turn {t.turn_index} · {t.attempt_id} · {t.send_kind} · {t.phase} · {t.started}"
        if st.button(md_escape(label), key=f"{key}:turn:{i}"):
            open_attempt(t.attempt_id)
    _groups(s.groups, store_root, key)


def _files(p: PanelModel, store_root: str | None, key: str) -> None:
    s = p.files
    st.subheader("4. " + s.title)
    for n in s.notes:
        note(n)
    _groups(s.groups, store_root, key)
    _changes(s.changes, store_root, key)


def _attachments(p: PanelModel, store_root: str | None, key: str) -> None:
    s = p.attachments
    st.subheader("5. " + s.title)
    for n in s.notes:
        note(n)
    _groups(s.groups, store_root, key)


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


def _groups(groups: tuple[ItemGroup, ...], store_root: str | None, key: str) -> None:
    for g in groups:
        st.markdown(f"**{md_escape(g.title)}** — {len(g.items)} item(s)")
        for row in g.items[:MAX_ITEMS_PER_GROUP]:
            _item(row, store_root, key)
        if len(g.items) > MAX_ITEMS_PER_GROUP:
            st.text(f"{len(g.items) - MAX_ITEMS_PER_GROUP} more item(s) in this group are not drawn.")


def _item(row: ItemRow, store_root: str | None, key: str) -> None:
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
            _preview(row, store_root, key)


def _preview(row: ItemRow, store_root: str | None, key: str) -> None:
    assert row.record is not None
    page = 0
    pv = preview(store_root, row.record, 0)
    if pv.kind == "text" and pv.pages > 1:
        page = int(st.number_input(f"Page of #{row.seq}", 1, pv.pages, 1, key=f"{key}:page:{row.input_id}")) - 1
        if page:
            pv = preview(store_root, row.record, page)
    if pv.kind == "text":
        st.text(f"Preview of #{row.seq}: {pv.message}")
        st.code(pv.text or "", language=None, wrap_lines=True)
    elif pv.kind == "image" and pv.image_png is not None:
        st.text(f"Preview of #{row.seq}: {pv.message}")
        st.image(pv.image_png, width=min(pv.width or 600, 900))
    elif pv.kind == "refused":
        st.error(md_escape(f"Preview refused: {pv.message}"))
    else:
        st.text(pv.message)


def _changes(ch: ChangesModel, store_root: str | None, key: str) -> None:
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
            diff = text_diff(store_root or "", r)
            if diff.refused:
                st.error(md_escape(f"Diff refused: {diff.refused}"))
            else:
                st.code("\n".join(diff.lines), language="diff")
                if diff.truncated:
                    st.text("Diff truncated.")
