"""The repository's rules as configuration (docs/architecture.md, "Checks"): ruff, mypy and import-linter run
here with their settings from pyproject.toml, so `make test` and CI fail on any finding."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
PYPROJECT = ROOT / "pyproject.toml"


def _run(tool: str, *args: str, cwd: Path = ROOT, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run a dev tool from this interpreter's environment (the dev extra installs all three)."""
    exe = Path(sys.executable).parent / tool
    if not exe.exists():
        pytest.fail(f"{tool} is not installed: `make venv` installs the dev extra")
    return subprocess.run([str(exe), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


def _installed_layout(into: Path) -> Path:
    """A tree of links laid out as the package installs: each folder of pyproject's package-dir (exporter/,
    viewer/) appears inside otel_inputs/, where import-linter looks for otel_inputs.exporter and .viewer."""
    package_dir = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["tool"]["setuptools"]["package-dir"]
    top = into / "otel_inputs"
    top.mkdir(parents=True)
    for entry in (ROOT / package_dir["otel_inputs"]).iterdir():
        if entry.name != "__pycache__":
            (top / entry.name).symlink_to(entry)
    for package, folder in package_dir.items():
        if package != "otel_inputs" and not (top / package.split(".", 1)[1]).exists():
            (top / package.split(".", 1)[1]).symlink_to(ROOT / folder, target_is_directory=True)
    return into


def _lint_imports(tree: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    return _run("lint-imports", str(PYPROJECT), "--no-cache", cwd=tree, env=env)


def test_ruff_finds_nothing() -> None:
    """ruff, with the rule selection in pyproject.toml, finds nothing anywhere in the repository."""
    out = _run("ruff", "check", "--no-cache", "--output-format", "concise", ".")
    assert out.returncode == 0, out.stdout + out.stderr


def test_mypy_finds_nothing() -> None:
    """mypy finds nothing in otel_inputs/: strict on the public faces and the capture behind them, defaults elsewhere."""
    out = _run("mypy")
    assert out.returncode == 0, out.stdout + out.stderr


def test_import_contracts_hold(tmp_path: Path) -> None:
    """import-linter keeps every contract in pyproject.toml on the package as it installs."""
    out = _lint_imports(_installed_layout(tmp_path))
    assert out.returncode == 0, out.stdout + out.stderr
    assert "0 broken" in out.stdout


def test_import_contracts_see_the_exporter_the_viewer_and_a_planted_violation(tmp_path: Path) -> None:
    """On the installed layout the contracts cover the exporter's and viewer's modules and break on an upward
    import, a reach into another part's private module, and a cycle."""
    tree = _installed_layout(tmp_path)
    planted = tree / "otel_inputs"  # a real folder of links: files written here never reach the checkout
    private = "otel_inputs.exporter." + min(p.stem for p in (ROOT / "exporter").glob("_*.py") if p.stem != "__init__")
    (planted / "_planted_a.py").write_text("import otel_inputs.viewer\nimport otel_inputs._planted_b\n")
    (planted / "_planted_b.py").write_text(f"import otel_inputs._planted_a\nimport {private}\n")
    out = _lint_imports(tree)
    assert out.returncode != 0
    broken = out.stdout.split("Broken contracts", 1)[1]
    # An import of a module import-linter had not found would not be reported: these show both folders are seen.
    assert "otel_inputs._planted_a -> otel_inputs.viewer" in broken
    assert f"otel_inputs._planted_b -> {private}" in broken
    assert "No cycles are allowed in otel_inputs." in broken


def test_the_private_module_contract_names_every_private_module_of_the_agent_api() -> None:
    """The contract that keeps the other parts out of the agent API's private modules lists each otel_inputs/_*.py."""
    contracts = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["tool"]["importlinter"]["contracts"]
    [contract] = [c for c in contracts if c["name"].endswith("no private module of the agent API")]
    listed = sorted(m.removeprefix("otel_inputs.") for m in contract["forbidden_modules"])
    assert listed == sorted(p.stem for p in (ROOT / "otel_inputs").glob("_*.py") if p.stem != "__init__")


def test_the_bucket_contract_names_every_module_of_the_store_core() -> None:
    """The contract that keeps the store's core off its bucket lists each module of otel_inputs/store/ but its face."""
    contracts = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["tool"]["importlinter"]["contracts"]
    [contract] = [c for c in contracts if c["name"].startswith("The store's core imports nothing of its bucket")]
    listed = sorted(m.removeprefix("otel_inputs.store.") for m in contract["source_modules"])
    assert listed == sorted(p.stem for p in (ROOT / "otel_inputs" / "store").glob("*.py") if p.stem != "__init__")


def test_the_tools_are_dev_dependencies() -> None:
    """ruff, mypy and import-linter are in the dev extra, so `make test` and CI have them."""
    dev = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]["optional-dependencies"]["dev"]
    names = {d.split(">")[0].split("=")[0].split("[")[0].strip().lower() for d in dev}
    assert {"ruff", "mypy", "import-linter"} <= names
    assert shutil.which("lint-imports", path=str(Path(sys.executable).parent))
