"""Fixtures for the exporter tests (helpers live in exporter_helpers.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from exporter_helpers import SpanFactory


@pytest.fixture
def spans() -> Iterator[SpanFactory]:
    factory = SpanFactory()
    yield factory
    factory.provider.shutdown()


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "t.duckdb"
