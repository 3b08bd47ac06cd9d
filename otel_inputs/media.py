"""Media type and preview kind from content (magic bytes, UTF-8 validity), never from a name."""

from __future__ import annotations

import codecs

from otel_inputs.types import PreviewKind

SNIFF_BYTES = 512
_PROBE = 4096

_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"%PDF-", "application/pdf"),
    (b"PK\x03\x04", "application/zip"),
    (b"\x1f\x8b", "application/gzip"),
    (b"7z\xbc\xaf\x27\x1c", "application/x-7z-compressed"),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "application/x-ole-storage"),
    (b"\x7fELF", "application/x-executable"),
)
RASTER_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})


class Utf8Validator:
    """Incremental UTF-8 check over a file copied in chunks."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")()
        self.valid = True
        self._started = False

    def feed(self, chunk: bytes | memoryview, final: bool = False) -> None:
        if not self.valid:
            return
        try:
            if not self._started and len(chunk) > _PROBE:
                # Binary files fail within their first bytes: probe a small prefix first so a
                # megabyte chunk is not handed to the decoder just to fail on byte 3.
                self._started = True
                self._decoder.decode(chunk[:_PROBE], False)
                chunk = chunk[_PROBE:]
            self._started = True
            self._decoder.decode(chunk, final)  # a memoryview is decoded in place, no copy
        except UnicodeDecodeError:
            self.valid = False


def _looks_markup(head: bytes) -> str | None:
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    if text.startswith(b"<svg") or (text.startswith(b"<?xml") and b"<svg" in text):
        return "image/svg+xml"
    if text.startswith((b"<!doctype html", b"<html", b"<script", b"<head", b"<body")):
        return "text/html"
    if text.startswith(b"<?xml"):
        return "application/xml"
    if text.startswith(b"#!"):
        return "text/x-script"
    return None


def classify(head: bytes, *, is_utf8: bool, size: int) -> tuple[str, PreviewKind]:
    """Media type and preview kind for content whose first bytes are ``head``."""
    for magic, media in _MAGIC:
        if head.startswith(magic):
            return media, PreviewKind.IMAGE if media in RASTER_TYPES else PreviewKind.NONE
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp", PreviewKind.IMAGE
    if size == 0:
        return "application/x-empty", PreviewKind.NONE
    if is_utf8 and b"\x00" not in head:
        markup = _looks_markup(head)
        if markup is not None:
            return markup, PreviewKind.NONE
        return "text/plain; charset=utf-8", PreviewKind.TEXT
    return "application/octet-stream", PreviewKind.NONE


def classify_bytes(data: bytes) -> tuple[str, PreviewKind]:
    v = Utf8Validator()
    v.feed(data, final=True)
    return classify(data[:SNIFF_BYTES], is_utf8=v.valid, size=len(data))
