"""The repository's rules as configuration (docs/architecture.md, "Checks"): ruff, mypy and import-linter run
here with their settings from pyproject.toml, so `make test` and CI fail on any finding."""

from __future__ import annotations

import os
import re
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


def _package_dir() -> dict[str, str]:
    return tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["tool"]["setuptools"]["package-dir"]


def _installed_layout(into: Path) -> Path:
    """A tree of links laid out as the package installs: each folder of pyproject's package-dir (exporter/,
    viewer/) appears inside otel_inputs/, where import-linter and mypy look for otel_inputs.exporter and .viewer."""
    package_dir = _package_dir()
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


def _mypy(tree: Path, *args: str, cache: str = ".mypy_cache") -> subprocess.CompletedProcess[str]:
    """mypy with pyproject's settings on the installed layout.  Its `files` (otel_inputs) is relative to the working
    directory, here the tree's otel_inputs/ with exporter/ and viewer/ inside, so every module has the name it has
    installed (otel_inputs.viewer._draw) and pyproject's per-module settings match it.  The cache stays in the
    checkout (ignored by git), so a run checks again only what changed; one cache per test, as two tests may run
    at once."""
    return _run("mypy", "--config-file", str(PYPROJECT), "--cache-dir", str(ROOT / cache), *args, cwd=tree)


def _as_checked_out(report: str) -> str:
    """mypy names each file by its path in the tree, which is its installed path (otel_inputs/viewer/_draw.py):
    the path of a mapped folder's file becomes its path in the checkout (viewer/_draw.py) by pyproject's
    package-dir, so a finding reads as the file to open."""
    for package, folder in _package_dir().items():
        installed = package.replace(".", "/")
        if installed != folder:
            report = re.sub(rf"^{re.escape(installed)}/", f"{folder}/", report, flags=re.MULTILINE)
    return report


def _python_files(*folders: str) -> list[Path]:
    return [p for f in folders for p in (ROOT / f).rglob("*.py") if "__pycache__" not in p.parts]


def test_mypy_finds_nothing(tmp_path: Path) -> None:
    """mypy finds nothing in the agent API, the exporter and the viewer, each checked as installed: strict on the
    public faces and the capture behind them, defaults elsewhere (pyproject.toml, [tool.mypy])."""
    out = _mypy(_installed_layout(tmp_path))
    assert out.returncode == 0, _as_checked_out(out.stdout + out.stderr)
    # An override naming no module checked (one renamed or gone) is a note only (warn_unused_configs): fail on it here.
    assert "unused section" not in out.stdout + out.stderr, out.stdout + out.stderr
    # Every Python file of the three parts was checked (pyproject's `files` reaches the mapped folders).
    checked = re.search(r"no issues found in (\d+) source files", out.stdout)
    assert checked and int(checked[1]) == len(_python_files(*_package_dir().values())), out.stdout


def test_mypy_sees_the_exporter_and_the_viewer_as_installed_and_their_faces_strictly(tmp_path: Path) -> None:
    """A module planted in the tree that misuses an exporter and a viewer function is reported: mypy resolved
    otel_inputs.exporter and otel_inputs.viewer to the folders.  An unannotated function added to each part's face
    (in a shadow file mypy reads instead, so the checkout is not written) is reported: the faces are strict."""
    tree = _installed_layout(tmp_path / "tree")
    planted = tree / "otel_inputs" / "_planted.py"  # a real folder of links: files written here never reach the checkout
    planted.write_text(
        "from otel_inputs.exporter import check_version\n"
        "from otel_inputs.viewer._format import count_text\n"
        "check_version(None)\n"
        "count_text('not a count')\n"
    )
    shadows: list[str] = []
    faces = {f"{package.replace('.', '/')}/__init__.py" for package in _package_dir() if package != "otel_inputs"}
    for face in faces:
        shadow = tmp_path / face.replace("/", "-")
        shadow.write_text((tree / face).read_text(encoding="utf-8") + "\n\ndef _unannotated(x):\n    return x\n")
        shadows += ["--shadow-file", face, str(shadow)]
    out = _mypy(tree, *shadows, cache=".mypy_cache/planted")
    assert out.returncode == 1, out.stdout + out.stderr
    findings = [line for line in out.stdout.splitlines() if ": error:" in line]
    planted_findings = [line for line in findings if line.startswith("otel_inputs/_planted.py:")]
    assert len(planted_findings) == 2, out.stdout
    assert '"check_version" has incompatible type "None"' in planted_findings[0]
    assert '"count_text" has incompatible type "str"' in planted_findings[1]
    unannotated = {line.split(":")[0] for line in findings if line.endswith("[no-untyped-def]")}
    assert unannotated == faces and len(findings) == 2 + len(faces), out.stdout


def test_the_strict_mypy_override_names_every_public_module_of_the_exporter_and_the_viewer() -> None:
    """The public faces of the exporter and the viewer (each module no part of whose name starts with an underscore)
    are in the strict override, with the agent API's."""
    overrides = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["tool"]["mypy"]["overrides"]
    [strict] = [o for o in overrides if o.get("disallow_untyped_defs")]
    public: set[str] = set()
    for package, folder in _package_dir().items():
        if package == "otel_inputs":
            continue
        for path in _python_files(folder):
            parts = path.relative_to(ROOT / folder).with_suffix("").parts
            if not any(part.startswith("_") for part in parts if part != "__init__"):
                public.add(".".join([package, *(part for part in parts if part != "__init__")]))
    assert public == {m for m in strict["module"] if m.startswith(("otel_inputs.exporter", "otel_inputs.viewer"))}


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
