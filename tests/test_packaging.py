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


def _modules(folder: str, package: str) -> dict[str, Path]:
    files = {}
    for path in (ROOT / folder).rglob("*.py"):
        parts = [p for p in path.relative_to(ROOT / folder).with_suffix("").parts if p != "__init__"]
        files[".".join([package, *parts])] = path
    return files


def _all_imports(folder: str, package: str) -> dict[str, set[str]]:
    """Every ``package`` module under ``folder`` and every module it imports anywhere (function-level
    imports too; ``TYPE_CHECKING`` blocks left out, they never run); ``from pkg import name`` counts
    as importing ``pkg`` and ``pkg.name``."""
    graph: dict[str, set[str]] = {}
    for name, path in _modules(folder, package).items():
        deps: set[str] = set()

        class Imports(ast.NodeVisitor):
            def visit_If(self, node: ast.If) -> None:
                if not (isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"):
                    self.generic_visit(node)

            def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
                if node.module:
                    deps.add(node.module)
                    deps.update(f"{node.module}.{alias.name}" for alias in node.names)

            def visit_Import(self, node: ast.Import) -> None:
                deps.update(alias.name for alias in node.names)

        Imports().visit(ast.parse(path.read_text()))
        graph[name] = deps
    return graph


def _module_imports(folder: str, package: str) -> dict[str, set[str]]:
    """The same, limited to the modules of ``package`` (``from pkg import module`` is the module)."""
    files = _modules(folder, package)
    graph = {}
    for name, deps in _all_imports(folder, package).items():
        inside = {d for d in deps if d in files and d != name}
        # `from pkg import module` imports the module, not pkg's __init__ (unless a name of it is used)
        graph[name] = {d for d in inside if not any(o.startswith(d + ".") and o in files for o in inside)}
    return graph


def test_no_module_imports_one_that_imports_it_back() -> None:
    """Within otel_inputs (agent API and store), the exporter and the viewer, no module imports a module that imports it back."""
    for folder, package in (("otel_inputs", "otel_inputs"), ("exporter", "otel_inputs.exporter"),
                            ("viewer", "otel_inputs.viewer")):
        graph = _module_imports(folder, package)
        pairs = sorted({tuple(sorted((a, b))) for a, deps in graph.items() for b in deps if a in graph.get(b, ())})
        assert not pairs, pairs


def test_the_viewer_and_exporter_import_only_public_modules_of_the_other_parts() -> None:
    """The viewer imports no private module of the exporter, the store or the agent API; the exporter none of the store's or the agent API's."""
    private = []
    for folder, package, foreign in (("viewer", "otel_inputs.viewer", ("otel_inputs.exporter", "otel_inputs.store", "otel_inputs")),
                                     ("exporter", "otel_inputs.exporter", ("otel_inputs.store", "otel_inputs"))):
        for name, deps in _all_imports(folder, package).items():
            for dep in deps:
                owner = next((f for f in foreign if dep.startswith(f + ".")), None)
                if owner and not dep.startswith(package) and dep[len(owner) + 1:].split(".")[0].startswith("_"):
                    private.append(f"{name} imports {dep}")
    assert not private, private
