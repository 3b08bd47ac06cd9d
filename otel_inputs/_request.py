"""Resolve a work-request argument into exact task text with its provenance kept.

The rule for telling inline text from a prompt file, applied in this order:

1. ``inline:<text>`` is always inline text (the prefix is removed): the escape hatch.
2. ``@<path>`` is always a prompt file.
3. An argument without a line break that names an existing filesystem entry is a prompt file.
4. An argument without whitespace that looks like a path (contains ``/`` or ends in ``.md``,
   ``.txt`` or ``.prompt``) but does not exist is an error, never silently inline text.
5. Anything else is inline text.

A prompt file is read exactly once; its bytes are held in the :class:`ResolvedRequest` so later
snapshots use the same bytes the task text came from, even if the file changes or vanishes.
"""

from __future__ import annotations

import hashlib
import os
import stat

from otel_inputs.types import ResolvedRequest, TaskSourceKind

MAX_PROMPT_FILE_BYTES = 10 * 1024 * 1024
_PATHLIKE_SUFFIXES = (".md", ".txt", ".prompt")


class RequestError(ValueError):
    """The work request cannot be resolved; the message says why and what was meant."""


def _inline(text: str) -> ResolvedRequest:
    raw = text.encode("utf-8", "surrogatepass")
    return ResolvedRequest(
        text=text,
        source_kind=TaskSourceKind.INLINE_TEXT,
        source_path=None,
        raw_bytes=raw,
        size_bytes=len(raw),
        sha256=hashlib.sha256(raw).hexdigest(),
    )


def _read_prompt_file(path: str) -> ResolvedRequest:
    # O_NONBLOCK: a FIFO named as a prompt must not hang the agent; we refuse non-regular files.
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError as exc:
        raise RequestError(f"prompt file {path!r} does not exist (vanished?)") from exc
    except PermissionError as exc:
        raise RequestError(f"prompt file {path!r} is not readable: permission denied") from exc
    except OSError as exc:
        raise RequestError(f"prompt file {path!r} cannot be opened: {exc.strerror}") from exc
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise RequestError(f"prompt file {path!r} is not a regular file")
        if st.st_size > MAX_PROMPT_FILE_BYTES:
            raise RequestError(
                f"prompt file {path!r} is {st.st_size} bytes, over the {MAX_PROMPT_FILE_BYTES} byte limit"
            )
        os.set_blocking(fd, True)
        chunks = []
        remaining = MAX_PROMPT_FILE_BYTES + 1
        while remaining > 0:
            chunk = os.read(fd, min(remaining, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
        raw = b"".join(chunks)
    except OSError as exc:
        raise RequestError(f"prompt file {path!r} cannot be read: {exc.strerror}") from exc
    finally:
        os.close(fd)
    if len(raw) > MAX_PROMPT_FILE_BYTES:
        raise RequestError(f"prompt file {path!r} grew past the {MAX_PROMPT_FILE_BYTES} byte limit")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RequestError(f"prompt file {path!r} is not valid UTF-8 (byte {exc.start})") from exc
    return ResolvedRequest(
        text=text,
        source_kind=TaskSourceKind.PROMPT_FILE,
        source_path=os.path.abspath(path),
        raw_bytes=raw,
        size_bytes=len(raw),
        sha256=hashlib.sha256(raw).hexdigest(),
    )


def resolve_request(arg: str) -> ResolvedRequest:
    """Resolve a CLI-style work request into exact task text, reading a prompt file once."""
    if not isinstance(arg, str):
        raise RequestError("the work request must be a string")
    if arg.startswith("inline:"):
        return _inline(arg[len("inline:") :])
    if arg.startswith("@"):
        path = arg[1:]
        if not path:
            raise RequestError("'@' must be followed by a prompt file path")
        return _read_prompt_file(path)
    if arg and "\n" not in arg and "\0" not in arg and len(arg) <= 4096:
        try:
            os.lstat(arg)
            exists = True
        except (FileNotFoundError, NotADirectoryError):
            exists = False
        except OSError:
            exists = True  # e.g. permission denied on a parent: it names a path; report that
        if exists:
            return _read_prompt_file(arg)
        if not any(c.isspace() for c in arg) and ("/" in arg or arg.endswith(_PATHLIKE_SUFFIXES)):
            raise RequestError(
                f"{arg!r} looks like a prompt file path but does not exist; "
                "prefix it with 'inline:' if it really is the task text"
            )
    return _inline(arg)


def inline_request(text: str) -> ResolvedRequest:
    """An explicit inline-text request, for callers that already hold the task text."""
    return _inline(text)
