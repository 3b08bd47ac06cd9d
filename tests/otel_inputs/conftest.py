from __future__ import annotations

from pathlib import Path

import pytest

from oi_fixtures import FakeClock, make_context_dir
from otel_inputs import ArtifactStore, CapturePolicy
from otel_inputs.testing import RecordingHarness


@pytest.fixture
def harness(tmp_path: Path):
    with RecordingHarness(tmp_path / "store") as h:
        yield h


@pytest.fixture
def store(tmp_path: Path) -> ArtifactStore:
    return ArtifactStore(tmp_path / "store")


@pytest.fixture
def prompt_file(tmp_path: Path) -> Path:
    p = tmp_path / "task.md"
    p.write_text("# Task\nImplement the parser described in SPEC.md.\n", encoding="utf-8")
    return p


@pytest.fixture
def context_dir(tmp_path: Path) -> Path:
    return make_context_dir(tmp_path / "ctx")


@pytest.fixture
def content_policy() -> CapturePolicy:
    return CapturePolicy(message_content=True)


@pytest.fixture
def fake_clock() -> FakeClock:
    return FakeClock()
