"""The attempt panel's one section list: each section one spec (name, title, build) and one drawing."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from typing import Any

from streamlit.testing.v1 import AppTest
from viewer_fixture import ViewerFixture

from otel_inputs.viewer._draw import DRAWS
from otel_inputs.viewer._panel import SECTIONS, SectionSpec, build_panel
from otel_inputs.viewer._queries import load_attempt, read_only


@dataclass(frozen=True)
class CountSection:
    """A new section's record: its model, how many inputs the attempt recorded."""

    inputs: int
    title: str = ""


COUNT = SectionSpec("count", "Inputs counted", lambda bundle, ctx: CountSection(len(bundle.inputs)))
EMPTY = SectionSpec("empty", "Nothing recorded", lambda bundle, ctx: None)


def test_every_section_has_one_drawing_and_every_drawing_a_section() -> None:
    """The section names are unique, and the drawings registered with @draws are exactly those names."""
    names = [s.model for s in SECTIONS]
    assert len(names) == len(set(names))
    assert sorted(DRAWS) == sorted(names)


def test_the_panel_model_and_its_section_list_import_no_streamlit() -> None:
    """Importing the panel model (the section list and its builds) in a fresh process imports no Streamlit."""
    code = ("import sys, otel_inputs.viewer._panel\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'streamlit'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    assert out.stdout.strip() == "[]"


def _page_with_two_more_sections(db: str, store: str, attempt_id: str) -> None:
    """The attempt page's panel with COUNT and EMPTY after "This dispatch", each with its drawing."""
    import streamlit as st
    from test_sections import COUNT, EMPTY, CountSection  # this module, on the tests' path

    from otel_inputs.viewer._draw import DRAWS, DrawContext, draw_panel
    from otel_inputs.viewer._evidence import open_evidence
    from otel_inputs.viewer._panel import SECTIONS, build_panel
    from otel_inputs.viewer._queries import load_attempt, read_only

    def draw_count(model: CountSection, ctx: DrawContext) -> None:
        assert isinstance(model, CountSection) and ctx.panel.count is model  # the model its spec built
        st.text(f"{model.inputs} input(s) recorded")

    with read_only(db) as con:
        bundle = load_attempt(con, attempt_id)
    assert bundle is not None
    panel = build_panel(bundle, sections=SECTIONS[:2] + (COUNT, EMPTY) + SECTIONS[2:])
    draw_panel(panel, open_evidence(store), key="page", open_attempt=lambda _: None,
               drawings={**DRAWS, "count": draw_count, "empty": draw_count})


def _headings_and_texts(node: Any) -> list[str]:
    """The page's subheaders and texts, in the order drawn."""
    out: list[str] = []
    for child in getattr(node, "children", {}).values():
        if getattr(child, "type", None) in ("subheader", "text"):
            out.append(child.value)
        else:
            out.extend(_headings_and_texts(child))
    return out


def test_a_new_section_is_one_spec_and_one_drawing(viewer_fixture: ViewerFixture) -> None:
    """A section added to the list is built (as p.<name>) and drawn at its place under the next number; one
    whose build returns None is left out and the numbers close up."""
    fx = viewer_fixture
    with read_only(fx.db_path) as con:
        bundle = load_attempt(con, fx.ids["review"])
    assert bundle is not None
    p = build_panel(bundle, sections=SECTIONS + (COUNT, EMPTY))
    assert p.count == CountSection(10, title="Inputs counted") and p.empty is None
    assert p.sections[-1] is p.count and p.task.title == "Task instructions"

    at = AppTest.from_function(_page_with_two_more_sections, default_timeout=30,
                               args=(str(fx.db_path), str(fx.store_path), fx.ids["review"]))
    at.run()
    assert not at.exception, at.exception
    assert [h.value for h in at.subheader] == [
        "1. Task instructions", "2. This dispatch", "3. Inputs counted", "4. Inherited context",
        "5. Files available", "6. Attachments delivered", "7. Exact model messages", "Steps the agent took"]
    shown = _headings_and_texts(at.main)
    assert shown[shown.index("3. Inputs counted") + 1] == "10 input(s) recorded"
    assert "Nothing recorded" not in " ".join(shown)
