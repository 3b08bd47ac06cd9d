"""Small plain-text formatters shared by the viewer's models: unknown reads as "unknown", never 0."""

from __future__ import annotations

import datetime as _dt
import re
from typing import Literal

UNKNOWN = "unknown"
NOT_RECORDED = "not recorded"
# The colours of the viewer's badges (st.badge's color takes these among others).
BadgeColor = Literal["green", "orange", "red", "gray"]

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
    """A wire reason like ``disk_budget`` as owner text ("disk budget"), through :data:`STATUS_WORDS`."""
    return status_word(value, missing=UNKNOWN)


def md_escape(text: str) -> str:
    """Backslash-escape every Markdown/HTML special so a widget label shows ``text`` literally.

    Streamlit widget labels accept a Markdown subset; untrusted strings (attempt ids, labels) are
    escaped with this before they become a label.  Content bodies never go through Markdown.
    """
    return _MD_SPECIAL.sub(r"\\\1", text.replace("\n", " "))


STATUS_WORDS: dict[str, str] = {
    # OpenTelemetry span status codes (``Unset``: the instrumentation set none, so no error was reported)
    "ok": "succeeded",
    "error": "failed",
    "unset": "no error reported",
    # input coverage of an attempt
    "complete": "complete",
    "partial": "partial",
    "not_recorded": NOT_RECORDED,
    # capture decision, before any content was read
    "admitted": "content captured",
    "metadata_only": "metadata only",
    "suppressed": "capture suppressed",
    # an input's capture status
    "captured": "captured",
    "missing": "missing (not found)",
    "unreadable": "unreadable",
    "limit_exceeded": "over a capture limit",
    "changed_during_capture": "changed while being copied",
    "enumeration_incomplete": "folder listing incomplete",
    "not_applicable": "not applicable",
    # an input's artifact status (the store's, at render time)
    "available": "available",
    "evicted": "evicted",
    "never_captured": "never captured",
    # where an input came from
    "prompt_file": "prompt file",
    "inline_text": "inline text",
    "previous_envelope": "previous phase's envelope",
    "context_handoff": "context handoff",
    "explicit_attachment": "explicit attachment",
    "instruction_file": "instruction file",
    # the capture bound that tripped (an input's detail)
    "file_bytes": "over the file size limit",
    "total_bytes": "over the total size limit",
    "file_count": "over the file count limit",
    "depth": "deeper than the folder depth limit",
    "wall_time": "over the capture time limit",
    # exchange parts: capture, dispatch, persistence
    "truncated": "truncated",
    "not_captured": "not captured",
    "dispatched": "dispatched",
    "not_dispatched": "not dispatched",
    "unknown": "unknown",
    "queued": "queued",
    "stored": "stored",
    "failed": "failed",
    "timed_out": "timed out",
    "not_queued": "not queued",
    # send kinds
    "initial": "initial request",
    "parse_retry": "parse retry",
    "gate_retry": "check retry",
}
"""THE mapping from recorded status values (``otel_inputs.types`` enums, span status codes) to the
words the viewer shows in tables, panels and chart legends.  A value not listed shows as itself
with underscores as spaces: a word the mapping lacks is never hidden."""


def status_word(value: object | None, *, missing: str = NOT_RECORDED) -> str:
    """A recorded status value in owner words (:data:`STATUS_WORDS`); absent reads ``missing``."""
    if value is None or value == "":
        return missing
    text = str(value)
    return STATUS_WORDS.get(text, STATUS_WORDS.get(text.lower(), text.replace("_", " ")))


def status_text(status: str | None, message: str | None = None) -> str:
    """A span status as owner text: "succeeded", "failed: <message>", or "not recorded"."""
    if status is None or status == "":
        return NOT_RECORDED
    word = status_word(status)
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
