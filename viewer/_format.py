"""Small plain-text formatters shared by the viewer's models: unknown reads as "unknown", never 0."""

from __future__ import annotations

import datetime as _dt
import re

UNKNOWN = "unknown"
NOT_RECORDED = "not recorded"

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|~<>&:\"'$=])")


def count_text(value: int | None) -> str:
    """A count, or "unknown" when it was not recorded (absent never means zero)."""
    return UNKNOWN if value is None else str(int(value))


def size_text(value: int | None) -> str:
    """A human byte size, or "unknown"."""
    if value is None:
        return UNKNOWN
    n = float(value)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{int(n)} B" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{value} B"  # pragma: no cover - loop always returns


def time_text(ns: int | None) -> str:
    """UTC wall time of an epoch-nanosecond timestamp, millisecond precision, or "unknown"."""
    if ns is None:
        return UNKNOWN
    dt = _dt.datetime.fromtimestamp(ns / 1e9, tz=_dt.timezone.utc)
    return dt.strftime("%Y-%m-%d %H:%M:%S.") + f"{dt.microsecond // 1000:03d} UTC"


def duration_text(start_ns: int | None, end_ns: int | None) -> str:
    if start_ns is None or end_ns is None:
        return UNKNOWN
    return f"{(end_ns - start_ns) / 1e9:.2f} s"


def short_sha(sha: str | None) -> str:
    return UNKNOWN if not sha else sha[:12] + "…"


def value_text(value: object | None, *, missing: str = NOT_RECORDED) -> str:
    """Any recorded value as text; absent reads as "not recorded" (or the given word)."""
    if value is None or value == "":
        return missing
    return str(value)


def reason_text(value: str | None) -> str:
    """A wire reason like ``disk_budget`` as owner text ("disk budget")."""
    return value.replace("_", " ") if value else UNKNOWN


def md_escape(text: str) -> str:
    """Backslash-escape every Markdown/HTML special so a widget label shows ``text`` literally.

    Streamlit widget labels accept a Markdown subset; untrusted strings (attempt ids, labels) are
    escaped with this before they become a label.  Content bodies never go through Markdown.
    """
    return _MD_SPECIAL.sub(r"\\\1", text.replace("\n", " "))


STATUS_WORDS = {
    "ok": "succeeded",
    "error": "failed",
    "unset": "finished (no error reported)",
}
"""OpenTelemetry span status codes in owner words (``Unset`` means the instrumentation set none)."""


def status_text(status: str | None, message: str | None = None) -> str:
    """A span status as owner text: "succeeded", "failed: <message>", or "not recorded"."""
    if status is None or status == "":
        return NOT_RECORDED
    word = STATUS_WORDS.get(str(status).lower(), str(status))
    if message and str(status).lower() == "error":
        return f"{word}: {message}"
    return word


def ms_text(start_ns: int | None, end_ns: int | None) -> str:
    """A short duration ("840 ms", "2.31 s"), or "unknown"."""
    if start_ns is None or end_ns is None:
        return UNKNOWN
    ms = (end_ns - start_ns) / 1e6
    return f"{ms:.0f} ms" if ms < 1000 else f"{ms / 1000:.2f} s"


def tokens_text(input_tokens: int | None, output_tokens: int | None) -> str:
    """Token counts as "1200 in / 300 out"; a side not recorded reads "unknown", never 0."""
    if input_tokens is None and output_tokens is None:
        return NOT_RECORDED
    return f"{count_text(input_tokens)} in / {count_text(output_tokens)} out"


def clock_text(ns: int | None) -> str:
    """Time of day (UTC) with milliseconds, for compact table cells, or "unknown"."""
    if ns is None:
        return UNKNOWN
    dt = _dt.datetime.fromtimestamp(ns / 1e9, tz=_dt.timezone.utc)
    return dt.strftime("%H:%M:%S.") + f"{dt.microsecond // 1000:03d}"
