"""tests/frameworks: real agent frameworks on their own telemetry against the fake OpenAI-compatible
server on 127.0.0.1 (docs/encodings.md).  The frameworks are the ``frameworks`` optional group of
pyproject.toml (not in ``dev``); a case skips, saying so, when its framework is not installed."""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "interop"))  # fake_openai, the Collector fixture's class, landed
sys.path.insert(0, str(HERE.parent / "clickhouse"))  # the projection test's loaders and row readers
sys.path.insert(0, str(HERE.parent / "exporter"))
