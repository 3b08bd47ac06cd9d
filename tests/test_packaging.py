from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).parents[1]


def _config() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]


def test_every_package_folder_is_listed_for_installation() -> None:
    """Every folder holding an __init__.py under the mapped roots is a listed package, so a wheel misses none."""
    config = _config()
    listed = set(config["packages"])
    found = set()
    for name, folder in config["package-dir"].items():
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / folder)
            found.add(".".join([name, *rel.parts]) if rel.parts else name)
    assert found == listed


def test_no_generic_top_level_import_package_is_installed() -> None:
    """Only otel_inputs and its subpackages are installed: exporter/ and viewer/ map under otel_inputs."""
    config = _config()
    assert {name.split(".")[0] for name in config["packages"]} == {"otel_inputs"}
    assert config["package-dir"]["otel_inputs.exporter"] == "exporter"
    assert config["package-dir"]["otel_inputs.viewer"] == "viewer"
