"""The capture bounds (docs/store.md, "Capture bounds"): each is one `Bound` value, one `CaptureLimits` field
with its row in `BOUND_LIMITS`, and one `Budget` check that reads its limit through that table, so adding a
bound touches one place of each kind."""

from __future__ import annotations

import ast
import dataclasses
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from oi_fixtures import FakeClock
from otel_inputs import AdmissionDecision, ArtifactStore, CaptureLimits, capture_attempt_inputs
from otel_inputs import _snapshot as snapshot
from otel_inputs._snapshot import BOUND_LIMITS, Budget, Incomplete
from otel_inputs.types import Bound, CaptureDecision, CaptureStatus, Coverage

ROOT = Path(__file__).parents[2]
CAPTURE_MODULES = (ROOT / "otel_inputs" / "_snapshot.py", ROOT / "otel_inputs" / "_capture.py")


def _bound_references() -> dict[str, set[str]]:
    """Where the capture code names a `Bound` member: ``Budget.<method>``, or the module-level table
    (``BOUND_LIMITS``), mapped to the members it names."""
    found: dict[str, set[str]] = {}

    def visit(node: ast.AST, where: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef | ast.FunctionDef):
                visit(child, f"{where}.{child.name}" if where else child.name)
                continue
            if (isinstance(child, ast.Attribute) and isinstance(child.value, ast.Name)
                    and child.value.id == "Bound"):
                found.setdefault(where or "<module>", set()).add(child.attr)
            visit(child, where)

    for path in CAPTURE_MODULES:
        visit(ast.parse(path.read_text(encoding="utf-8")), "")
    return found


def test_every_bound_has_a_limit_field_and_a_sentence() -> None:
    """Every `Bound` member names exactly one `CaptureLimits` field, every field is a bound, and each bound's
    detail names the bound and its limit."""
    assert set(BOUND_LIMITS) == set(Bound)
    fields = [f.name for f in dataclasses.fields(CaptureLimits)]
    assert sorted(field for field, _ in BOUND_LIMITS.values()) == sorted(fields)
    limits = CaptureLimits(max_files=7, max_depth=3, max_file_bytes=11, max_total_bytes=13, max_seconds=2.5)
    for bound, (field, _) in BOUND_LIMITS.items():
        detail = limits.describe(bound)
        assert detail.startswith(f"bound {bound.value} tripped (at most ")
        assert f"{getattr(limits, field):g}" in detail


def test_every_bound_is_checked_by_exactly_one_budget_method() -> None:
    """Read from the code: outside the `BOUND_LIMITS` table only `Budget` methods name a bound, each bound in
    exactly one of them and each of them one bound."""
    refs = _bound_references()
    assert set(refs) - {"<module>"} <= {f"Budget.{name}" for name in vars(Budget)}, refs
    assert refs["<module>"] == {b.name for b in Bound}  # the BOUND_LIMITS table
    checks = {where: names for where, names in refs.items() if where != "<module>"}
    assert all(len(names) == 1 for names in checks.values()), checks
    checked = sorted(name for names in checks.values() for name in names)
    assert checked == sorted(b.name for b in Bound)


def _entries(budget: Budget, count: float) -> object:
    result = None
    for _ in range(int(count)):
        result = budget.admit_entry()
    return result


# How each bound's one Budget check is asked about a measure (a new bound adds its line here): the result is
# None when admitted, else what records the refusal.
CHECKS: dict[Bound, Callable[[Budget, float], object]] = {
    Bound.FILE_COUNT: _entries,
    Bound.DEPTH: lambda budget, m: budget.admit_depth(int(m)),
    Bound.FILE_BYTES: lambda budget, m: budget.admit_file_bytes(int(m)),
    Bound.TOTAL_BYTES: lambda budget, m: budget.admit_bytes(int(m)),
    Bound.WALL_TIME: lambda budget, m: budget.admit_time(),
}


def _ask(bound: Bound, limits: CaptureLimits, measure: float) -> object:
    """``bound``'s check on a fresh budget, at ``measure`` (for the wall time: seconds since capture began)."""
    return CHECKS[bound](Budget(limits=limits, clock=lambda: float(measure), started=0.0), measure)


@pytest.mark.parametrize("bound", list(Bound), ids=lambda b: b.value)
def test_each_check_reads_the_field_the_bounds_table_names_and_no_other(bound: Bound) -> None:
    """A bound's check admits its measure up to the limit in the field `BOUND_LIMITS` names and refuses one
    past it; a small limit in any other field changes nothing."""
    assert set(CHECKS) == set(Bound)
    field, _ = BOUND_LIMITS[bound]
    far = {f: 1000 for f, _ in BOUND_LIMITS.values()}  # every limit well past the measures asked
    at_five = CaptureLimits(**{**far, field: 5})
    assert _ask(bound, at_five, 5) is None
    refused = _ask(bound, at_five, 6)
    assert refused is not None and refused in (Incomplete(bound), at_five.describe(bound))
    for other, _ in BOUND_LIMITS.values():
        if other != field:
            assert _ask(bound, CaptureLimits(**{**far, other: 1}), 6) is None, other


def test_the_bounds_table_drives_the_checks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Point two bounds of `BOUND_LIMITS` at each other's fields and their checks follow the table, as does the
    detail recorded: no check names its field itself."""
    swapped = dict(BOUND_LIMITS)
    swapped[Bound.DEPTH], swapped[Bound.FILE_COUNT] = ("max_files", "at most {} files"), ("max_depth", "{} levels")
    monkeypatch.setattr(snapshot, "BOUND_LIMITS", swapped)
    limits = CaptureLimits(max_files=2, max_depth=100)
    assert _ask(Bound.DEPTH, limits, 3) == Incomplete(Bound.DEPTH)
    assert _ask(Bound.FILE_COUNT, limits, 3) is None and _ask(Bound.FILE_COUNT, limits, 101) is not None
    assert limits.describe(Bound.DEPTH) == "bound depth tripped (at most 2 files)"


def _files(root: Path, **sizes: int) -> None:
    for rel, size in sizes.items():
        path = root / rel.replace("__", "/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"x" * size)


# How each bound is made to trip: the limits, the context tree, and whether the clock runs fast.
TRIPS: dict[Bound, tuple[CaptureLimits, Callable[[Path], None], float]] = {
    Bound.FILE_COUNT: (CaptureLimits(max_files=2), lambda r: _files(r, a=1, b=1, c=1), 0.0),
    Bound.DEPTH: (CaptureLimits(max_depth=1), lambda r: _files(r, d__e__f=1), 0.0),
    Bound.FILE_BYTES: (CaptureLimits(max_file_bytes=10), lambda r: _files(r, big=11, small=1), 0.0),
    Bound.TOTAL_BYTES: (CaptureLimits(max_total_bytes=10), lambda r: _files(r, a=6, b=6), 0.0),
    Bound.WALL_TIME: (CaptureLimits(max_seconds=0.5), lambda r: _files(r, a=1, b=1), 1.0),
}


@pytest.mark.parametrize("bound", list(Bound), ids=lambda b: b.value)
def test_each_bound_trips_to_a_gap_that_names_it(tmp_path: Path, bound: Bound) -> None:
    """Driven past its limit, every bound is recorded as its own named gap and the packet is partial (or, for
    the per-file bound, that one item is limit_exceeded and the walk goes on)."""
    limits, make_tree, step = TRIPS[bound]  # a new bound needs a way to trip it here
    root = tmp_path / "ctx"
    root.mkdir()
    make_tree(root)
    clock = FakeClock()
    clock.step = step
    p = capture_attempt_inputs(attempt_id="a", run_id="r", decision=AdmissionDecision(CaptureDecision.ADMITTED),
                               store=ArtifactStore(tmp_path / "store"), context_roots=[root], limits=limits,
                               clock=clock)
    tripped = [i for i in p.items if i.detail == limits.describe(bound)]
    assert len(tripped) == 1
    if bound is Bound.FILE_BYTES:
        assert tripped[0].capture_status is CaptureStatus.LIMIT_EXCEEDED and tripped[0].label == "big"
        assert [i.label for i in p.items] == ["big", "small"] and p.coverage is Coverage.COMPLETE
    else:
        assert tripped[0] is p.items[-1] and tripped[0].capture_status is CaptureStatus.ENUMERATION_INCOMPLETE
        assert p.coverage is Coverage.PARTIAL and p.declared_count is None


def test_every_bound_is_documented_with_its_field() -> None:
    """docs/store.md's capture-bounds table has one row per bound, naming its `CaptureLimits` field."""
    text = (ROOT / "docs" / "store.md").read_text(encoding="utf-8")
    section = text.split("## Capture bounds", 1)[1].split("\n## ", 1)[0]
    rows = dict(re.findall(r"^\| `(\w+)` \| `(\w+)` \|", section, flags=re.MULTILINE))
    assert rows == {bound.value: field for bound, (field, _) in BOUND_LIMITS.items()}
