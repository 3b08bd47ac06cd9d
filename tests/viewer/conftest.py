"""Pytest fixtures of the viewer tests; the builder itself lives in ``viewer_fixture.py``."""

from __future__ import annotations

from pathlib import Path

import pytest
from viewer_fixture import FixtureBuilder, ViewerFixture, build_fixture

from otel_inputs import names


@pytest.fixture(scope="session")
def viewer_fixture(tmp_path_factory: pytest.TempPathFactory) -> ViewerFixture:
    """One realistic fixture database + store, shared read-only by the viewer tests."""
    return build_fixture(tmp_path_factory.mktemp("viewer-fixture"))


@pytest.fixture()
def builder(tmp_path: Path) -> FixtureBuilder:
    """An empty builder for a test that needs its own small database."""
    return FixtureBuilder(tmp_path)


@pytest.fixture()
def env(viewer_fixture: ViewerFixture, monkeypatch: pytest.MonkeyPatch) -> ViewerFixture:
    """The shared fixture, with OTEL_INPUTS_DB / OTEL_INPUTS_STORE pointing the app at it."""
    monkeypatch.setenv(names.ENV_DB, str(viewer_fixture.db_path))
    monkeypatch.setenv(names.ENV_STORE, str(viewer_fixture.store_path))
    return viewer_fixture
