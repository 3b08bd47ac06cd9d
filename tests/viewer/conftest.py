"""Pytest fixtures of the viewer tests; the builder itself lives in ``viewer_fixture.py``."""

from __future__ import annotations

from pathlib import Path

import pytest
from viewer_fixture import FixtureBuilder, ViewerFixture, build_fixture


@pytest.fixture(scope="session")
def viewer_fixture(tmp_path_factory: pytest.TempPathFactory) -> ViewerFixture:
    """One realistic fixture database + store, shared read-only by the viewer tests."""
    return build_fixture(tmp_path_factory.mktemp("viewer-fixture"))


@pytest.fixture()
def builder(tmp_path: Path) -> FixtureBuilder:
    """An empty builder for a test that needs its own small database."""
    return FixtureBuilder(tmp_path)
