from __future__ import annotations

from pathlib import Path

from otel_inputs import names

ROOT = Path(__file__).parents[1]


def test_readme_opens_with_the_two_commands() -> None:
    """The README's first code block is `make demo` then `make test`."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = text.split("```")[1]
    lines = [line.split("#")[0].strip() for line in block.splitlines()[1:] if line.strip()]
    assert lines == ["make demo", "make test"]


def test_readme_names_table_lists_every_wire_name() -> None:
    """Every attribute/event name in the registry appears in the README's wire-names table."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    wire = {k: v for k, v in vars(names).items()
            if k.isupper() and isinstance(v, str) and v.startswith(("otel_inputs.", "gen_ai."))}
    missing = [f"{k} = {v}" for k, v in wire.items() if f"| `{k}` | `{v}`" not in text]
    assert missing == []
