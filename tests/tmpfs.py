"""A real, small tmpfs for full-disk tests: mounted where a test asks, or the test is skipped saying why."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest


def mount_tmpfs(directory: Path, size: str) -> None:
    """Mount a tmpfs of ``size`` (``"1m"``, ``"256k"``) on ``directory`` (created), or skip: it needs root."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root")
    directory.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(directory)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {done.stderr.decode().strip()}")


def unmount(directory: Path) -> None:
    subprocess.run(["umount", "-l", str(directory)], check=False)
