from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from otel_inputs import AdmissionDecision, ArtifactStore, CaptureLimits, capture_attempt_inputs
from otel_inputs.types import CaptureDecision, CaptureStatus, Coverage

segment = st.text(alphabet="abcAB-_.0", min_size=1, max_size=4).filter(lambda s: s not in (".", ".."))
rel_paths = st.lists(st.lists(segment, min_size=1, max_size=4), min_size=0, max_size=25)
kinds = st.sampled_from(["file", "file", "file", "symlink", "fifo", "big"])


def build(root: Path, spec: list[tuple[list[str], str]]) -> set[str]:
    """Create the tree; return the relative paths of the leaf entries that exist."""
    made: set[str] = set()
    for parts, kind in spec:
        path = root.joinpath(*parts)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            if path.exists() or path.is_symlink():
                continue
            if kind == "file":
                path.write_text("/".join(parts))
            elif kind == "big":
                path.write_bytes(b"x" * 300)
            elif kind == "symlink":
                os.symlink("/etc/hostname", path)
            else:
                os.mkfifo(path)
        except (FileExistsError, NotADirectoryError):
            continue
        made.add("/".join(parts))
    # a path used as a file and then as a directory prefix: keep only leaves
    return {m for m in made if not (root / m).is_dir() or (root / m).is_symlink()}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.lists(segment, min_size=1, max_size=4), kinds), max_size=25),
       st.integers(min_value=1, max_value=30), st.integers(min_value=1, max_value=4))
def test_every_entry_accounted_for_exactly_once(spec, max_files: int, max_depth: int) -> None:
    """For any tree: order is deterministic, each leaf appears once or is covered by the one sentinel, counts match items."""
    tmp = Path(tempfile.mkdtemp())
    try:
        root = tmp / "ctx"
        root.mkdir()
        leaves = build(root, spec)
        limits = CaptureLimits(max_files=max_files, max_depth=max_depth, max_file_bytes=200,
                               max_total_bytes=2000)
        store = ArtifactStore(tmp / "store")
        decision = AdmissionDecision(CaptureDecision.ADMITTED)
        p1 = capture_attempt_inputs(attempt_id="a", run_id="r", decision=decision, store=store,
                                    context_roots=[root], limits=limits)
        p2 = capture_attempt_inputs(attempt_id="b", run_id="r", decision=decision, store=store,
                                    context_roots=[root], limits=limits)
        assert [i.label for i in p1.items] == [i.label for i in p2.items]
        labels = [i.label for i in p1.items if not i.is_sentinel]
        assert len(labels) == len(set(labels))
        sentinels = [i for i in p1.items if i.is_sentinel]
        assert len(sentinels) <= 1
        if sentinels:
            assert p1.items[-1].is_sentinel and p1.coverage is Coverage.PARTIAL
            assert p1.declared_count is None and p1.omitted_count is None
            assert set(labels) <= leaves
        else:
            assert set(labels) == leaves
            assert p1.declared_count == len(labels)
            assert p1.omitted_count == p1.declared_count - p1.captured_count
        assert p1.captured_count == sum(i.capture_status is CaptureStatus.CAPTURED for i in p1.items)
        assert [i.seq for i in p1.items] == list(range(len(p1.items)))
        keys = [tuple(os.fsencode(x) for x in lab.split("/")) for lab in labels]
        assert keys == sorted(keys)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
