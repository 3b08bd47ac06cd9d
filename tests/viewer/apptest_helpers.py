"""Small AppTest helpers shared by the viewer's page tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parents[2] / "viewer" / "app.py")


def run_app(**params: str) -> AppTest:
    """viewer/app.py run once by AppTest with these query parameters; fails on any page exception."""
    at = AppTest.from_file(APP, default_timeout=30)
    for k, v in params.items():
        at.query_params[k] = v
    at.run()
    assert not at.exception, at.exception
    return at


def texts(at: AppTest) -> list[str]:
    return [t.value for t in at.text]


def open_item(at: AppTest, mode: str, input_id: str, *, key: str = "page") -> AppTest:
    """Choose an item in a delivery group's chooser (the keyboard path beside the table) and rerun."""
    at.selectbox(key=f"{key}:grp:{mode}:item").set_value(input_id).run()
    assert not at.exception, at.exception
    return at


def table(at: AppTest, column: str) -> Any:
    """The first table (a pandas DataFrame) on the page that has ``column``."""
    return next(df.value for df in at.dataframe if column in df.value.columns)


def table_cells(at: AppTest) -> list[str]:
    """Every cell of every table on the page, as text."""
    out: list[str] = []
    for df in at.dataframe:
        out.extend(str(v) for v in df.value.to_numpy().ravel())
    return out


def boxes(at: AppTest, node: Any = None, *, in_expanders: bool = True) -> list[str]:
    """The recorded texts shown in text boxes (containers keyed ``textbox-…``: task, messages, previews)."""
    out: list[str] = []
    node = at.main if node is None else node
    for child in getattr(node, "children", {}).values():
        if getattr(child, "type", None) == "expander" and not in_expanders:
            continue
        if str(getattr(child, "key", "") or "").startswith("textbox-"):
            out.extend(t.value for t in child.text)
        else:
            out.extend(boxes(at, child, in_expanders=in_expanders))
    return out


def open_expander(at: AppTest, key: str) -> AppTest:
    """Open a lazy expander (one drawn only once opened) by its key, and rerun."""
    at.session_state[key] = True
    at.run()
    assert not at.exception, at.exception
    return at


def panel_toggles(at: AppTest) -> list[Any]:
    """The attempt panel's switches (the viewer menu's live-refresh switch left out)."""
    return [t for t in at.toggle if t.key != "live"]


def lines(at: AppTest) -> list[str]:
    """Every line of every text element (several facts can share one element)."""
    return [line for t in texts(at) for line in t.split("\n")]
