from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from otel_inputs import names

ROOT = Path(__file__).parents[2]


def _spans(stdout: str) -> list[dict]:
    decoder = json.JSONDecoder()
    spans, i = [], 0
    while i < len(stdout):
        if stdout[i].isspace():
            i += 1
            continue
        obj, i = decoder.raw_decode(stdout, i)
        spans.append(obj)
    return spans


def test_example_runtime_end_to_end(tmp_path: Path) -> None:
    """The example agent loop records initial, parse retry and a later phase with envelope and context dir."""
    out = subprocess.run([sys.executable, str(ROOT / "examples" / "agent_loop.py"), str(tmp_path / "w")],
                         capture_output=True, text=True, timeout=120, check=True)
    spans = _spans(out.stdout)
    assert [s["attributes"][names.SEND_KIND] for s in spans] == ["initial", "parse_retry", "initial"]
    initial, retry, review = spans
    assert retry["attributes"][names.RETRY_OF_ATTEMPT_ID] == initial["attributes"][names.ATTEMPT_ID]
    assert retry["attributes"][names.TURN_INDEX] == 2
    assert {link["attributes"][names.LINK_KIND] for link in retry["links"]} == {"previous_turn", "retry_of"}
    events = [e["attributes"] for e in review["events"] if e["name"] == names.INPUT_EVENT]
    got = {e[names.INPUT_LABEL]: (e[names.INPUT_DELIVERY_MODE], e[names.INPUT_CAPTURE_STATUS]) for e in events}
    assert got == {
        "task prompt file task.md": ("inline", "captured"),
        "previous envelope": ("inline", "captured"),
        "diagram.png": ("path_reference", "captured"),
        "elsewhere": ("path_reference", "unreadable"),
        "huge.log": ("path_reference", "limit_exceeded"),
        "notes.md": ("path_reference", "captured"),
    }
    assert review["attributes"][names.PACKET_ITEM_COUNT] == 6
