"""Helpers shared by the otel_inputs tests (a unique module name, so test dirs never collide)."""

from __future__ import annotations

import os
import socket
from pathlib import Path

from otel_inputs import CaptureLimits

PNG_BYTES = (
    b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89"
    b"\x00\x00\x00\rIDATx\x9cc\xf8\xcf\xc0\xf0\x1f\x00\x05\x00\x01\xff\x89\x99=\x1d\x00\x00\x00\x00IEND\xaeB`\x82"
)


def make_context_dir(root: Path, *, fifo: bool = True, sock: bool = False) -> Path:
    """A context-handoff directory holding a text file, a PNG, a symlink and (optionally) a FIFO."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "notes.md").write_text("# Notes\nUse the v2 API.\n", encoding="utf-8")
    (root / "img").mkdir()
    (root / "img" / "diagram.png").write_bytes(PNG_BYTES)
    outside = root.parent / "outside-secret.txt"
    outside.write_text("secret outside the root\n", encoding="utf-8")
    os.symlink(outside, root / "link-to-outside")
    if fifo:
        os.mkfifo(root / "pipe")
    if sock:
        s = socket.socket(socket.AF_UNIX)
        s.bind(str(root / "sock"))
        s.close()
    return root


class FakeClock:
    """A monotonic clock the test advances; ``on_tick`` can change the real filesystem mid-walk."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.calls = 0
        self.step = 0.0
        self.on_tick = None

    def __call__(self) -> float:
        self.calls += 1
        if self.on_tick is not None:
            self.on_tick(self.calls)
        self.now += self.step
        return self.now


TINY = CaptureLimits(max_files=5, max_depth=2, max_file_bytes=1024, max_total_bytes=4096, max_seconds=300.0)


def run_unprivileged(fn) -> str:
    """``fn()`` (returning text) run without root's power to ignore permission bits.

    As root, a forked child drops to uid/gid 65534 (nobody) and runs the already-loaded code; as
    any other user it simply runs here, where permission bits already apply.
    """
    if os.geteuid() != 0:
        return fn()
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.close(read_fd)
            os.setgid(65534)
            os.setuid(65534)
            os.write(write_fd, fn().encode("utf-8", "surrogateescape"))
            code = 0
        except BaseException as exc:  # noqa: BLE001 - report it to the parent as text
            os.write(write_fd, f"child failed: {type(exc).__name__}: {exc}".encode())
        finally:
            os._exit(code)
    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as fh:
        out = fh.read().decode("utf-8", "surrogateescape")
    os.waitpid(pid, 0)
    return out


def shared_tmp(name: str) -> Path:
    """A fresh world-writable directory under /tmp that an unprivileged child can use."""
    import shutil
    import tempfile

    base = Path(tempfile.mkdtemp(prefix=f"otel-inputs-{name}-", dir="/tmp"))
    os.chmod(base, 0o777)
    return base
