from __future__ import annotations

import ast
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


def _module_imports(folder: str, package: str) -> dict[str, set[str]]:
    """Every ``package`` module under ``folder`` and the modules of ``package`` it imports anywhere
    (function-level imports too; ``TYPE_CHECKING`` blocks left out, they never run)."""
    files = {}
    for path in (ROOT / folder).rglob("*.py"):
        parts = [p for p in path.relative_to(ROOT / folder).with_suffix("").parts if p != "__init__"]
        files[".".join([package, *parts])] = path
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        deps: set[str] = set()

        class Imports(ast.NodeVisitor):
            def visit_If(self, node: ast.If) -> None:
                if not (isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"):
                    self.generic_visit(node)

            def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
                for alias in node.names:  # `from pkg import module` imports the module
                    deps.add(f"{node.module}.{alias.name}" if f"{node.module}.{alias.name}" in files else node.module or "")

            def visit_Import(self, node: ast.Import) -> None:
                deps.update(alias.name for alias in node.names)

        Imports().visit(ast.parse(path.read_text()))
        graph[name] = {d for d in deps if d in files and d != name}
    return graph


def test_no_module_imports_one_that_imports_it_back() -> None:
    """Within otel_inputs (agent API and store), the exporter and the viewer, no module imports a module that imports it back."""
    for folder, package in (("otel_inputs", "otel_inputs"), ("exporter", "otel_inputs.exporter"),
                            ("viewer", "otel_inputs.viewer")):
        graph = _module_imports(folder, package)
        pairs = sorted({tuple(sorted((a, b))) for a, deps in graph.items() for b in deps if a in graph.get(b, ())})
        assert not pairs, pairs
