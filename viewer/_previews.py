"""Safe previews: resolved from the input id through the artifact store only, never a host path.

Every read goes through :class:`otel_inputs.EvidenceReader` (``otel_inputs.viewer._evidence``) with the
viewer's identity: permission, retention, digest and source revocation are re-checked each time,
and a refusal is shown by its outcome name (``permission_denied``, ``not_found``,
``retention_expired``, ``integrity_mismatch``, ``source_unavailable``) in plain text.
Before anything is shown the item must be available, its bytes are re-hashed against the
recorded SHA-256 (the store refuses a mismatch), text is paged only after the whole file was
verified, and raster images are limited to PNG/JPEG/GIF/WebP <= 10 MiB, checked by magic
bytes, decoded and re-encoded to PNG with Pillow.  Everything else gets a plain "no preview" row.
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass
from typing import Literal

from otel_inputs.types import ArtifactStatus, PreviewKind
from otel_inputs.viewer._evidence import PURGED, Evidence, as_evidence, read_input
from otel_inputs.viewer._format import reason_text
from otel_inputs.viewer._records import InputRecord

Source = Evidence | str | os.PathLike[str] | None

TEXT_PAGE_BYTES = 64 * 1024
TEXT_MAX_BYTES = 32 * 1024 * 1024
IMAGE_MAX_BYTES = 10 * 1024 * 1024
IMAGE_MAX_PIXELS = 40_000_000

NO_PREVIEW = "no preview for this type"

# Types that never get an inline preview, whatever preview kind was recorded.
DENIED_MEDIA_TYPES = frozenset(
    {
        "image/svg+xml", "text/html", "application/xhtml+xml", "application/xml", "text/xml",
        "text/javascript", "application/javascript", "application/x-javascript", "text/ecmascript",
        "application/ecmascript", "application/x-sh", "text/x-shellscript", "application/x-python-code",
        "application/pdf", "application/zip", "application/gzip", "application/x-tar",
        "application/octet-stream",
    }
)

def refusal_text(outcome: str, message: str) -> str:
    """A readback refusal as plain owner text that names the outcome as such."""
    return f"{outcome} ({message})" if message else outcome

_MAGIC: tuple[tuple[str, bytes], ...] = (
    ("image/png", b"\x89PNG\r\n\x1a\n"),
    ("image/jpeg", b"\xff\xd8\xff"),
    ("image/gif", b"GIF87a"),
    ("image/gif", b"GIF89a"),
)


def sniff_raster(data: bytes) -> str | None:
    """The raster media type from magic bytes (PNG, JPEG, GIF, WebP), else ``None``."""
    for media_type, magic in _MAGIC:
        if data.startswith(magic):
            return media_type
    if len(data) >= 12 and data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


class PreviewRefused(Exception):
    """The snapshot cannot be shown; ``owner_text`` names the outcome (e.g. "integrity mismatch")."""

    def __init__(self, owner_text: str, outcome: str) -> None:
        super().__init__(owner_text)
        self.owner_text = owner_text
        self.outcome = outcome


@dataclass(frozen=True)
class Preview:
    kind: Literal["text", "image", "none", "refused"]
    message: str
    text: str | None = None
    page: int = 0
    pages: int = 0
    image_png: bytes | None = None
    width: int | None = None
    height: int | None = None
    media_type: str | None = None
    sha256: str | None = None


def unavailable_reason(item: InputRecord) -> str | None:
    """Why the item has no snapshot to read, in owner words, or ``None`` when it is available."""
    status = item.current_artifact_status
    if status == ArtifactStatus.AVAILABLE.value:
        return None
    if status == ArtifactStatus.EVICTED.value:
        if item.store_status_reason == PURGED:
            return PURGED
        return f"evicted ({reason_text(item.store_status_reason or item.detail)})"
    if status == ArtifactStatus.NEVER_CAPTURED.value:
        return f"never captured ({reason_text(item.capture_status)})"
    return "artifact status unknown"


def _read(source: Source, item: InputRecord, max_bytes: int) -> bytes:
    refused = unavailable_reason(item)
    if refused is not None:
        raise PreviewRefused(refused, "unavailable")
    result = read_input(as_evidence(source), item, max_bytes)
    if not result.ok or result.snapshot is None:
        raise PreviewRefused(refusal_text(result.outcome, result.message), result.outcome)
    if item.sha256 and result.snapshot.sha256 != item.sha256:
        outcome = "integrity_mismatch"
        raise PreviewRefused(refusal_text(outcome, "the store's digest differs from the recorded SHA-256"), outcome)
    return result.snapshot.data


def _text_allowed(item: InputRecord) -> bool:
    media = (item.media_type or "").split(";")[0].strip().lower()
    return item.preview_kind == PreviewKind.TEXT.value and media not in DENIED_MEDIA_TYPES


def read_verified_text(source: Source, item: InputRecord) -> str:
    """The whole text of a snapshot, verified first; raises :class:`PreviewRefused`."""
    if not _text_allowed(item):
        raise PreviewRefused(NO_PREVIEW, "no_preview")
    data = _read(source, item, TEXT_MAX_BYTES)
    if b"\x00" in data:
        raise PreviewRefused(f"{NO_PREVIEW} (binary content)", "no_preview")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PreviewRefused(f"{NO_PREVIEW} (not UTF-8 text)", "no_preview") from exc


def page_bounds(data: bytes, page_bytes: int = TEXT_PAGE_BYTES) -> list[tuple[int, int]]:
    """Byte ranges of bounded pages that never split a UTF-8 character."""
    bounds: list[tuple[int, int]] = []
    start, n = 0, len(data)
    while start < n or not bounds:
        end = min(start + page_bytes, n)
        while end < n and end > start + 1 and (data[end] & 0xC0) == 0x80:
            end -= 1
        bounds.append((start, end))
        if end >= n:
            break
        start = end
    return bounds


def _text_preview(source: Source, item: InputRecord, page: int) -> Preview:
    text = read_verified_text(source, item)  # whole file verified before any page is cut
    data = text.encode("utf-8")
    bounds = page_bounds(data)
    page = max(0, min(page, len(bounds) - 1))
    lo, hi = bounds[page]
    return Preview(
        "text", f"page {page + 1} of {len(bounds)}; SHA-256 verified",
        text=data[lo:hi].decode("utf-8"), page=page, pages=len(bounds),
        media_type=item.media_type, sha256=item.sha256,
    )


def reencode_image(data: bytes) -> tuple[bytes, int, int, str]:
    """Decode a PNG/JPEG/GIF/WebP (magic-checked) and re-encode it as PNG; raises PreviewRefused."""
    from PIL import Image, UnidentifiedImageError

    media = sniff_raster(data)
    if media is None:
        raise PreviewRefused(f"{NO_PREVIEW} (content is not PNG, JPEG, GIF or WebP)", "no_preview")
    formats = {"image/png": ["PNG"], "image/jpeg": ["JPEG"], "image/gif": ["GIF"], "image/webp": ["WEBP"]}[media]
    try:
        with Image.open(io.BytesIO(data), formats=formats) as probe:
            if probe.width * probe.height > IMAGE_MAX_PIXELS:
                raise PreviewRefused("too large to preview (pixel count)", "too_large")
            probe.verify()
        with Image.open(io.BytesIO(data), formats=formats) as img:
            img.load()
            shown = img if img.mode in ("RGB", "RGBA", "L", "LA") else img.convert("RGBA")
            out = io.BytesIO()
            shown.save(out, format="PNG")
            return out.getvalue(), shown.width, shown.height, media
    except PreviewRefused:
        raise
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError, Image.DecompressionBombError) as exc:
        raise PreviewRefused(f"{NO_PREVIEW} (image does not decode)", "no_preview") from exc


def _image_preview(source: Source, item: InputRecord) -> Preview:
    data = _read(source, item, IMAGE_MAX_BYTES)
    png, width, height, media = reencode_image(data)
    return Preview(
        "image", f"{media}, {width}×{height}; SHA-256 verified, re-encoded as PNG",
        image_png=png, width=width, height=height, media_type=media, sha256=item.sha256,
    )


def preview(source: Source, item: InputRecord, page: int = 0) -> Preview:
    """The safe preview of one input item, or the plain reason there is none.

    ``source`` is the refresh's :class:`~otel_inputs.viewer._evidence.Evidence` (or a store path, read with the
    environment's access policy and the current viewer).
    """
    try:
        if item.preview_kind == PreviewKind.IMAGE.value:
            return _image_preview(source, item)
        if _text_allowed(item):
            return _text_preview(source, item, page)
    except PreviewRefused as exc:
        kind: Literal["none", "refused"] = "none" if exc.outcome == "no_preview" else "refused"
        return Preview(kind, exc.owner_text, media_type=item.media_type, sha256=item.sha256)
    return Preview("none", NO_PREVIEW, media_type=item.media_type, sha256=item.sha256)


def has_preview(item: InputRecord) -> bool:
    """Whether a preview control is offered (the preview itself still verifies and may refuse)."""
    return item.preview_kind == PreviewKind.IMAGE.value or _text_allowed(item)
