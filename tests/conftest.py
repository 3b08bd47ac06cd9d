"""Fixtures shared by every test folder: the Debian chromium the browser tests drive."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from typing import Any

import pytest

from otel_inputs import names

# The capture's wall-time bound (5 s by default) is a product bound: on a busy CI machine an
# ordinary capture can cross it, and no test's verdict may depend on the machine's load. Tests of
# that bound pass their own CaptureLimits (or a fake clock); subprocesses inherit this.
os.environ.setdefault(names.ENV_CAPTURE_MAX_SECONDS, "300")

# Without the background-networking flags chromium keeps calling out, and this machine refuses it.
CHROMIUM_ARGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
    "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run",
)


@dataclass(frozen=True)
class Chromium:
    """Debian's chromium binary, launched through Playwright without any browser download."""

    path: str

    def launch(self, playwright: Any) -> Any:
        return playwright.chromium.launch(executable_path=self.path, args=list(CHROMIUM_ARGS), headless=True)


@pytest.fixture(scope="session")
def chromium() -> Chromium:
    """Skip without chromium locally; under CI=true its absence is a failure, since CI must run these."""
    path = shutil.which("chromium")
    if path is None:
        reason = "Debian chromium is not installed (apt-get install chromium); the browser tests need it"
        if os.environ.get("CI") == "true":
            pytest.fail(reason + " and CI must run them")
        pytest.skip(reason)
    return Chromium(path)
