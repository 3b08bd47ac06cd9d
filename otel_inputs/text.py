"""The one text form of a file name or path: what is shown, stored and compared (a public leaf module:
the agent API and the store both record paths in this form)."""

from __future__ import annotations

import os


def safe_text(name: str | bytes) -> str:
    """A file name as display-safe, valid UTF-8 text: undecodable bytes and control characters escaped.

    Idempotent on its own output, so a path can be canonicalised wherever it enters (capture,
    revocation, purge) and compared as text.
    """
    raw = os.fsencode(name)
    text = raw.decode("utf-8", "backslashreplace")
    out = []
    for ch in text:
        if ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    return "".join(out)


def canonical_path(path: str | bytes | os.PathLike[str] | os.PathLike[bytes]) -> str:
    """An absolute path in the form the store records and compares (see :func:`safe_text`)."""
    return safe_text(os.path.abspath(os.fsdecode(path)))
