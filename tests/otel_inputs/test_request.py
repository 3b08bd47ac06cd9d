from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from otel_inputs import RequestError, resolve_request
from otel_inputs.types import TaskSourceKind


def test_inline_text_keeps_exact_text_and_hash() -> None:
    """Inline text resolves to itself with its UTF-8 byte count and lowercase SHA-256."""
    text = "Fix the flaky test in tests/test_io.py — ünïcode included"
    r = resolve_request(text)
    raw = text.encode("utf-8")
    assert r.source_kind is TaskSourceKind.INLINE_TEXT
    assert r.text == text and r.source_path is None
    assert r.size_bytes == len(raw) and r.sha256 == hashlib.sha256(raw).hexdigest()


def test_existing_path_is_a_prompt_file(prompt_file: Path) -> None:
    """An argument naming an existing file resolves as a prompt file with its absolute path."""
    r = resolve_request(str(prompt_file))
    assert r.source_kind is TaskSourceKind.PROMPT_FILE
    assert r.source_path == str(prompt_file.resolve())
    assert r.text == prompt_file.read_text()
    assert r.raw_bytes == prompt_file.read_bytes()
    assert r.sha256 == hashlib.sha256(prompt_file.read_bytes()).hexdigest()


def test_at_prefix_forces_prompt_file(prompt_file: Path) -> None:
    """'@path' is always a prompt file."""
    assert resolve_request("@" + str(prompt_file)).source_kind is TaskSourceKind.PROMPT_FILE


def test_inline_prefix_forces_text(prompt_file: Path) -> None:
    """'inline:' makes even an existing path inline text, with the prefix removed."""
    r = resolve_request("inline:" + str(prompt_file))
    assert r.source_kind is TaskSourceKind.INLINE_TEXT and r.text == str(prompt_file)


def test_vanished_path_is_an_error_not_inline_text(tmp_path: Path) -> None:
    """A path-like argument that does not exist is a clear error, never reinterpreted as the task."""
    with pytest.raises(RequestError, match="does not exist"):
        resolve_request(str(tmp_path / "gone.md"))
    with pytest.raises(RequestError, match="does not exist"):
        resolve_request("@" + str(tmp_path / "gone.txt"))


def test_fifo_prompt_is_refused_without_hanging(tmp_path: Path) -> None:
    """A FIFO named as the prompt file is refused at once instead of blocking on open."""
    fifo = tmp_path / "prompt.fifo"
    os.mkfifo(fifo)
    with pytest.raises(RequestError, match="not a regular file"):
        resolve_request(str(fifo))


def test_directory_prompt_is_refused(tmp_path: Path) -> None:
    """A directory is not a prompt file."""
    with pytest.raises(RequestError):
        resolve_request(str(tmp_path))


def test_non_utf8_prompt_file_is_refused(tmp_path: Path) -> None:
    """Task text must be exact, so a prompt file that is not UTF-8 is an error rather than mangled."""
    p = tmp_path / "latin1.txt"
    p.write_bytes("café".encode("latin-1"))
    with pytest.raises(RequestError, match="UTF-8"):
        resolve_request(str(p))


def test_prompt_bytes_are_held_after_file_deleted(prompt_file: Path) -> None:
    """The file is read once: deleting it after resolution leaves the held text and bytes intact."""
    r = resolve_request(str(prompt_file))
    original = prompt_file.read_bytes()
    prompt_file.unlink()
    assert r.raw_bytes == original and r.text == original.decode()


def test_multiline_text_is_inline_even_if_first_line_is_a_path(prompt_file: Path) -> None:
    """Text with a line break is never treated as a path."""
    r = resolve_request(f"{prompt_file}\nplease")
    assert r.source_kind is TaskSourceKind.INLINE_TEXT
