"""The capture path's retention gate never scans the store on the agent's thread after its first answer."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

import otel_inputs._retention_gate as retention
from otel_inputs import ArtifactStore, RetentionPolicy, resolve_request
from otel_inputs._retention_gate import RetentionGate
from otel_inputs.testing import RecordingHarness


@pytest.fixture
def store_with_bytes(tmp_path: Path) -> ArtifactStore:
    ctx = tmp_path / "ctx"
    ctx.mkdir()
    (ctx / "a.bin").write_bytes(b"a" * 5000)
    with RecordingHarness(tmp_path / "store") as h:
        with h.observer().attempt(run_id="r1", request=resolve_request("t"), context_roots=[ctx]):
            pass
        h.store.flush()
        return ArtifactStore(tmp_path / "store")


class BlockedScans:
    """Makes every store scan wait until released, as a scan of a huge store on a slow disk would."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.release = threading.Event()
        self.started = threading.Event()
        real = retention.store_usage

        def slow_scan(*args, **kwargs):
            self.started.set()
            assert self.release.wait(30), "test never released the scan"
            return real(*args, **kwargs)

        monkeypatch.setattr(retention, "store_usage", slow_scan)


def test_stale_index_is_refreshed_in_the_background(store_with_bytes: ArtifactStore,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """With a stale index, remaining() answers from it at once while a background scan runs; bytes
    committed after that scan began stay counted when it lands."""
    gate = RetentionGate(store_with_bytes, RetentionPolicy(budget_bytes=1_000_000), refresh_s=3600)
    first = gate.remaining("r1")
    assert first is not None and 0 < first < 1_000_000
    gate.wait(10)
    scans = BlockedScans(monkeypatch)
    gate.refresh_s = 0.0  # from now on every answer finds the index stale
    assert gate.remaining("r1") == first  # answered from the old index; the new scan is blocked
    assert scans.started.wait(10)
    gate.committed("r1", 100_000)  # after the scan began: it cannot have seen these bytes
    assert gate.remaining("r1") == first - 100_000
    scans.release.set()
    gate.wait(10)
    assert gate.remaining("r1") == first - 100_000


def test_first_answer_waits_a_bounded_time_then_applies_only_what_it_knows(
        store_with_bytes: ArtifactStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before the first scan ends the byte budget is unknown (None), never a guessed number."""
    scans = BlockedScans(monkeypatch)
    gate = RetentionGate(store_with_bytes, RetentionPolicy(budget_bytes=1_000_000), first_wait_s=0.05)
    assert gate.remaining("r1") is None
    floor = RetentionGate(store_with_bytes, RetentionPolicy(budget_bytes=1_000_000, min_free_bytes=1000),
                          first_wait_s=0.05, free_bytes=lambda _p: 4000)
    assert floor.remaining("r1") == 3000  # the free-space floor needs no scan
    assert scans.started.is_set()
    scans.release.set()
    gate.wait(10)
    left = gate.remaining("r1")
    assert left is not None and 0 < left < 1_000_000


def test_gc_pass_refreshes_the_index_before_the_next_capture(tmp_path: Path) -> None:
    """After a background retention pass frees bytes the next answer already reflects it."""
    ctx = tmp_path / "ctx"
    ctx.mkdir()
    policy = RetentionPolicy(budget_bytes=30_000)
    with RecordingHarness(tmp_path / "store") as h:
        obs = h.observer(retention=policy)
        for i in range(8):
            (ctx / "data.bin").write_bytes(bytes([i]) * 9000)
            with obs.attempt(run_id="r", request=resolve_request("t"), context_roots=[ctx]):
                pass
        gate = obs.retention_gate
        assert gate is not None
        h.store.flush()
        gate.collect_in_background()
        gate.wait(30)
        assert gate.last_report is not None and gate.last_report.evicted_attempts > 0
        left = gate.remaining("r")
        assert left is not None and left > 0
