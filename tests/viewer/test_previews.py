"""Safe previews through the artifact store: verified text pages, re-encoded rasters, plain refusals."""

from __future__ import annotations

import io
import os

from PIL import Image
from viewer_fixture import FixtureBuilder, ViewerFixture, png_bytes

from otel_inputs.viewer._panel import build_panel
from otel_inputs.viewer._previews import IMAGE_MAX_BYTES, TEXT_PAGE_BYTES, page_bounds, preview, sniff_raster
from otel_inputs.viewer._queries import get_inputs, load_attempt, read_only


def items(fx: ViewerFixture, key: str) -> dict[str, object]:
    with read_only(fx.db_path) as con:
        return {i.label: i for i in get_inputs(con, fx.ids[key])}


def test_text_preview_is_verified_and_shows_the_snapshot_bytes(viewer_fixture: ViewerFixture) -> None:
    """A text snapshot previews as its exact text after SHA-256 verification."""
    pv = preview(str(viewer_fixture.store_path), items(viewer_fixture, "initial")["notes.md"])
    assert pv.kind == "text" and pv.text.startswith("# Notes") and "verified" in pv.message


def test_image_previews_are_reencoded_png(viewer_fixture: ViewerFixture) -> None:
    """PNG and JPEG snapshots come back as freshly encoded PNG bytes of the same dimensions."""
    its = items(viewer_fixture, "review")
    for label, size in (("screenshot.png", (96, 64)), ("photo.jpg", (80, 60))):
        pv = preview(str(viewer_fixture.store_path), its[label])
        assert pv.kind == "image" and pv.image_png.startswith(b"\x89PNG")
        assert Image.open(io.BytesIO(pv.image_png)).size == size


def test_tampered_and_evicted_snapshots_are_refused_by_name(viewer_fixture: ViewerFixture) -> None:
    """Changed bytes read "integrity_mismatch" and an evicted snapshot reads "evicted (disk budget)"."""
    its = items(viewer_fixture, "review")
    tampered = preview(str(viewer_fixture.store_path), its["tampered.txt"])
    assert (tampered.kind, tampered.message, tampered.text) == (
        "refused", "integrity_mismatch (snapshot bytes do not match the recorded SHA-256)", None)
    evicted = preview(str(viewer_fixture.store_path), its["old-plan.md"])
    assert (evicted.kind, evicted.message) == ("refused", "evicted (disk budget)")


def test_pdf_and_never_captured_items_get_no_preview(viewer_fixture: ViewerFixture) -> None:
    """A PDF and an over-limit file get a plain "no preview" row, not their bytes."""
    its = items(viewer_fixture, "review")
    assert preview(str(viewer_fixture.store_path), its["design.pdf"]).message == "no preview for this type"
    assert preview(str(viewer_fixture.store_path), its["build.log"]).kind == "none"


def _one(builder: FixtureBuilder, **kw):
    builder.attempt("p1", 0, run_id="r", session_id="s")
    builder.add_input("p1", 0, "f", "context_handoff", "path_reference", source_path="/f", **kw)
    db, store = builder.write()
    with read_only(db) as con:
        return preview(str(store), get_inputs(con, "p1")[0])


def test_svg_declared_as_image_is_not_previewed(builder: FixtureBuilder) -> None:
    """SVG bytes fail the raster magic check even when the row claims an image preview."""
    pv = _one(builder, data=b"<svg xmlns='http://www.w3.org/2000/svg'><script>alert(1)</script></svg>",
              media_type="image/svg+xml", preview_kind="image")
    assert pv.kind == "none" and "not PNG, JPEG, GIF or WebP" in pv.message


def test_html_declared_as_text_is_not_previewed(builder: FixtureBuilder) -> None:
    """HTML gets no preview even when recorded with a text preview kind."""
    pv = _one(builder, data=b"<html><script>alert(1)</script></html>", media_type="text/html", preview_kind="text")
    assert (pv.kind, pv.text) == ("none", None)


def test_corrupt_raster_with_valid_magic_is_refused(builder: FixtureBuilder) -> None:
    """A file with PNG magic that does not decode is not shown."""
    pv = _one(builder, data=png_bytes()[:40], media_type="image/png", preview_kind="image")
    assert pv.kind == "none" and "does not decode" in pv.message


def test_raster_over_ten_mib_is_refused(builder: FixtureBuilder) -> None:
    """An image snapshot larger than 10 MiB is refused before decoding."""
    pv = _one(builder, data=png_bytes() + os.urandom(IMAGE_MAX_BYTES), media_type="image/png", preview_kind="image")
    assert pv.kind == "refused" and pv.message.startswith("too_large (")


def test_long_text_is_paged_without_splitting_characters(builder: FixtureBuilder) -> None:
    """A multi-page UTF-8 text is served in bounded pages that reassemble to the original."""
    text = ("héllo wörld ✓ " * 12000)
    builder.attempt("p1", 0, run_id="r", session_id="s")
    builder.add_input("p1", 0, "long.txt", "context_handoff", "path_reference", source_path="/l",
                      data=text.encode(), media_type="text/plain", preview_kind="text")
    db, store = builder.write()
    with read_only(db) as con:
        item = get_inputs(con, "p1")[0]
    first = preview(str(store), item, page=0)
    assert first.pages == len(page_bounds(text.encode())) > 1
    pages = [preview(str(store), item, page=i).text for i in range(first.pages)]
    assert "".join(pages) == text
    assert all(len(p.encode()) <= TEXT_PAGE_BYTES for p in pages)


def test_sniff_raster_accepts_only_the_four_formats() -> None:
    """Magic-byte sniffing recognises PNG, JPEG, GIF and WebP and nothing else."""
    assert sniff_raster(b"\x89PNG\r\n\x1a\n....") == "image/png"
    assert sniff_raster(b"\xff\xd8\xff\xe0") == "image/jpeg"
    assert sniff_raster(b"GIF89a...") == "image/gif"
    assert sniff_raster(b"RIFF\x00\x00\x00\x00WEBPVP8 ") == "image/webp"
    assert sniff_raster(b"<svg") is None and sniff_raster(b"%PDF-1.4") is None


def test_preview_never_reads_a_host_path(viewer_fixture: ViewerFixture, tmp_path) -> None:
    """Previews resolve through the store by input id, so an item's source path is never opened."""
    with read_only(viewer_fixture.db_path) as con:
        p = build_panel(load_attempt(con, viewer_fixture.ids["initial"]))
    item = p.files.groups[0].items[0].record
    assert not os.path.exists(item.source_path)  # the recorded host path does not exist here
    assert preview(str(viewer_fixture.store_path), item).kind == "text"
