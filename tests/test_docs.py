from __future__ import annotations

import re
from enum import Enum
import os
from pathlib import Path

import yaml

from otel_inputs import names
from otel_inputs import types as t

ROOT = Path(__file__).parents[1]
WIRE = ROOT / "docs" / "wire.md"
REGISTRY = ROOT / "docs" / "registry" / "otel_inputs.yaml"

# Attribute names without a dot (OpenInference's top-level `metadata`); every other wire name has one.
UNDOTTED_WIRE_NAMES = {names.OPENINFERENCE_METADATA}

# Enumerated attributes and the Python enum (or registry values) that defines their members.
ENUMS: dict[str, type[Enum] | tuple[str, ...]] = {
    names.SEND_KIND: t.SendKind,
    names.TASK_SOURCE_KIND: t.TaskSourceKind,
    names.PACKET_COVERAGE: t.Coverage,
    names.CAPTURE_DECISION: t.CaptureDecision,
    names.CAPTURE_GAP_REASON: t.GapReason,
    names.INPUT_SOURCE_KIND: t.SourceKind,
    names.INPUT_DELIVERY_MODE: t.DeliveryMode,
    names.INPUT_PREVIEW_KIND: t.PreviewKind,
    names.INPUT_CAPTURE_STATUS: t.CaptureStatus,
    names.INPUT_ARTIFACT_STATUS: t.ArtifactStatus,
    names.PART_NAME: t.PartName,
    names.PART_CAPTURE: t.PartCapture,
    names.PART_REASON: t.PartReason,
    names.PART_DISPATCH: t.PartDispatch,
    names.PART_PERSISTENCE: t.PartPersistence,
    names.STORE_STATE: t.ItemState,
    names.LINK_KIND: (names.LINK_PREVIOUS_TURN, names.LINK_RETRY_OF),
    names.EXPORT_REDACTION: (names.EXPORT_REDACTION_ALLOWLIST,),
}


def wire_names() -> set[str]:
    """Every attribute and event name in names.py (not env vars, sentences, or attribute values)."""
    return {v for k, v in vars(names).items() if k.isupper() and isinstance(v, str)
            and not k.startswith(("ENV_", "SENTENCE_")) and ("." in v or v in UNDOTTED_WIRE_NAMES)}


def wire_rows() -> dict[str, str]:
    """First-column names of every table row in docs/wire.md, mapped to the whole row."""
    rows: dict[str, str] = {}
    for line in WIRE.read_text(encoding="utf-8").splitlines():
        m = re.match(r"^\| `([^`]+)` \|", line)
        if m:
            rows.setdefault(m.group(1), line)
    return rows


def registry() -> list[dict]:
    return yaml.safe_load(REGISTRY.read_text(encoding="utf-8"))["groups"]


def registry_names() -> set[str]:
    out: set[str] = set()
    for group in registry():
        if group["type"] == "event":
            out.add(group["name"])
        if group["type"] == "span" and "span_name" in group:  # a span name read from a coding agent
            out.add(group["span_name"])
        for attr in group.get("attributes", []):
            out.add(attr.get("id") or attr["ref"])
    return out


def enum_values(spec: type[Enum] | tuple[str, ...]) -> set[str]:
    return {m.value for m in spec} if isinstance(spec, type) else set(spec)


def test_readme_opens_with_the_two_commands() -> None:
    """The README's first code block is `make demo` then `make test`."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = text.split("```")[1]
    lines = [line.split("#")[0].strip() for line in block.splitlines()[1:] if line.strip()]
    assert lines == ["make demo", "make test"]


def test_wire_md_has_a_row_for_every_name_and_nothing_else() -> None:
    """docs/wire.md's tables name every attribute and event name of names.py, and no name that is not there."""
    rows = {k for k in wire_rows() if "." in k or k in UNDOTTED_WIRE_NAMES}
    assert sorted(wire_names() - rows) == [], "missing from docs/wire.md"
    assert sorted(rows - wire_names()) == [], "in docs/wire.md but not in names.py"


def test_registry_defines_every_name_and_nothing_else() -> None:
    """docs/registry/otel_inputs.yaml holds every attribute and event name of names.py, and only those."""
    assert sorted(wire_names() - registry_names()) == [], "missing from the registry"
    assert sorted(registry_names() - wire_names()) == [], "in the registry but not in names.py"


def test_registry_is_in_the_semantic_conventions_shape() -> None:
    """Each group has id, type and brief; each defined attribute has type, brief, stability, and examples unless enum."""
    ids = set()
    for group in registry():
        assert {"id", "type", "brief"} <= set(group), group.get("id")
        assert group["type"] in {"attribute_group", "span", "event"}
        assert group["id"] not in ids
        ids.add(group["id"])
        for attr in group.get("attributes", []):
            if "ref" in attr:
                assert set(attr) <= {"ref", "requirement_level", "note", "brief"}
                continue
            assert attr["stability"] == "development" and attr["brief"], attr["id"]
            assert attr["id"].startswith("otel_inputs.") or group["id"] in (
                "registry.otel_inputs.compat", "registry.otel_inputs.foreign"), attr["id"]
            if isinstance(attr["type"], dict):
                assert all(m["id"] == m["value"] and m["stability"] == "development" for m in attr["type"]["members"])
            else:
                assert attr["type"] in {"string", "int", "template[string]"}
                assert attr.get("examples"), f"{attr['id']} needs examples"
    refs = {a["ref"] for g in registry() for a in g.get("attributes", []) if "ref" in a}
    assert all(r.startswith("gen_ai.") or r.startswith("otel_inputs.") for r in refs)
    defined = {a["id"] for g in registry() for a in g.get("attributes", []) if "id" in a}
    assert {r for r in refs if r.startswith("otel_inputs.")} <= defined, "a ref to an undefined otel_inputs name"


def test_enum_members_match_the_python_enums() -> None:
    """Every enumerated attribute lists exactly the Python enum's values, in the registry and in its wire.md row."""
    defined = {a["id"]: a for g in registry() for a in g.get("attributes", []) if "id" in a}
    enumerated = {k for k, a in defined.items() if isinstance(a["type"], dict)}
    assert enumerated == set(ENUMS), "an enum attribute is missing from ENUMS or from the registry"
    rows = wire_rows()
    for name, spec in ENUMS.items():
        members = {m["value"] for m in defined[name]["type"]["members"]}
        assert members == enum_values(spec), name
        in_row = set(re.findall(r"`([^`]+)`", rows[name].split("|", 2)[2]))
        assert enum_values(spec) <= in_row, f"docs/wire.md row of {name} lacks {enum_values(spec) - in_row}"


def test_readme_instrumenting_example_lands_one_attempt(tmp_path, monkeypatch) -> None:
    """The README's Python example runs as written and lands exactly one attempt with its handoff file."""
    import subprocess
    import sys

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    example = text.split("```python\n", 1)[1].split("```", 1)[0]
    (tmp_path / "handoff").mkdir()
    (tmp_path / "handoff" / "notes.md").write_text("# notes\n", encoding="utf-8")
    script = "def call_your_model(text):\n    return 'done'\n\n" + example
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    proc = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    import duckdb

    with duckdb.connect(str(tmp_path / "agents.duckdb"), read_only=True) as con:
        attempts = con.execute("SELECT run_id, task_prompt, input_coverage FROM agent_attempts").fetchall()
        files = con.execute("SELECT delivery_mode, capture_status FROM agent_attempt_inputs "
                            "WHERE source_kind = 'context_handoff'").fetchall()  # fmt: skip
    assert attempts == [("run-1", "Fix the failing test in tests/test_app.py", "complete")]
    assert files == [("path_reference", "captured")]


def test_every_relative_link_in_the_docs_resolves() -> None:
    """Every relative link or image in README.md and docs/ names a file in the repository, and none leaves it."""
    broken = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text(encoding="utf-8")):
            if "://" in target or target.startswith("mailto:"):
                continue
            resolved = (page.parent / target).resolve()
            if not resolved.exists() or ROOT.resolve() not in resolved.parents:
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    assert broken == []


def test_docs_never_cite_files_outside_the_repository() -> None:
    """README.md and docs/ stand on their own: no ../shared paths and no design-seed citations."""
    offenders = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        text = page.read_text(encoding="utf-8")
        if "../shared" in text or re.search(r"\bseed 00\d", text):
            offenders.append(str(page.relative_to(ROOT)))
    assert offenders == []
