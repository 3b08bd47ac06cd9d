"""Security module: preview refusals, polyglot re-encoding, literal rendering of hostile labels and
paths, the sink's loopback default, content-free vendor pipeline output, and no host path of the
store reaching the browser.

Everything is recorded through the public API (AgentObserver + DuckDBSpanExporter into a real
DuckDB file and artifact store); previews go through ``otel_inputs.viewer._previews`` / ``EvidenceReader``
exactly as the app calls them.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from PIL import Image
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from otel_inputs.exporter import DuckDBSpanExporter
from otel_inputs import (
    AgentObserver,
    ArtifactStore,
    CaptureLimits,
    CapturePolicy,
    ProviderAttachment,
    RetentionPolicy,
    inline_request,
    names,
    resolve_request,
)
from otel_inputs.store import AttemptRecord, CatalogItem, EvidenceReader, apply_retention
from otel_inputs.viewer import _queries as q
from otel_inputs.viewer import _records as records
from otel_inputs.viewer._previews import IMAGE_MAX_BYTES, preview

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "viewer" / "app.py")
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
HOSTILE_LABEL = "**bold** <img src=x onerror=alert(1)> [click](javascript:alert(2)) `code` # heading"
HOSTILE_FILE = "<img src=y onerror=alert(3)> **b** [l](javascript:x).md"
TASK = "TASKSECRET-7731 implement the frobnicator"
SYSTEM = "SYSTEMSECRET-4410 you are careful"
USER = "USERSECRET-9902 please fix"


def refused(pv, words: str) -> bool:  # noqa: ANN001
    """A refusal whose owner text names ``words`` (wire spelling or owner spelling)."""
    return pv.kind == "refused" and words in pv.message.replace("_", " ") and pv.text is None and pv.image_png is None


def png_bytes(size=(40, 30), color="#336699") -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, color).save(out, "PNG")
    return out.getvalue()


def gif_js_polyglot(height: int = 100) -> bytes:
    """``GIF89a/*<gif>*/=alert(document.domain)//``: a valid GIF that is also valid JavaScript.

    The logical-screen width bytes are ``/*`` (10799 px); the height is free.
    """
    out = io.BytesIO()
    Image.new("P", (1, 1)).save(out, "GIF")
    gif = out.getvalue()
    return b"GIF89a" + b"/*" + height.to_bytes(2, "little") + gif[10:] + b"*/=alert(document.domain)//"


PNG_HTML_POLYGLOT = png_bytes() + b"<html><body><script>alert('png-polyglot')</script></body></html>"
SVG_AS_PNG = b'<svg xmlns="http://www.w3.org/2000/svg" onload="alert(4)"><rect width="9" height="9"/></svg>'
HTML_AS_PNG = b"<!doctype html><html><script>alert(5)</script></html>"


@dataclass
class SecFixture:
    root: Path
    db: Path
    store: Path
    ctx: Path
    main: str = "sec-main"
    old: str = "sec-old"

    def inputs(self, attempt_id: str) -> dict[str, records.InputRecord]:
        with q.read_only(self.db) as con:  # the app's own per-refresh read path
            bundle = q.load_attempt(con, attempt_id)
        assert bundle is not None, attempt_id
        return {r.label: r for r in bundle.inputs}


def record_fixture(root: Path, *, store: Path | None = None, db: Path | None = None, evict: bool = True) -> SecFixture:
    """Record an evicted attempt and a main attempt full of hostile inputs; tamper one snapshot."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    store = store or root / "store"
    db = db or root / "sec.duckdb"
    ctx, old_ctx = root / "ctx", root / "old-ctx"
    ctx.mkdir(parents=True)
    old_ctx.mkdir()
    (old_ctx / "evict-me.txt").write_text("bytes that retention will evict\n")
    (ctx / "notes.md").write_text("# notes\nplain text\n")
    (ctx / "clean.png").write_bytes(png_bytes((24, 24), "#00aa00"))
    (ctx / "polyglot.png").write_bytes(PNG_HTML_POLYGLOT)
    (ctx / "gifjs.gif").write_bytes(gif_js_polyglot())
    (ctx / "svg.png").write_bytes(SVG_AS_PNG)
    (ctx / "html.png").write_bytes(HTML_AS_PNG)
    (ctx / "big.png").write_bytes(png_bytes() + b"\0" * (IMAGE_MAX_BYTES + 1024))
    (ctx / "tamper.txt").write_text("original bytes\n")
    (ctx / HOSTILE_FILE).write_text("hostile file name\n")
    prompt = root / "PROMPTSECRET-task.md"
    prompt.write_text(TASK + "\n")

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(DuckDBSpanExporter(db, store=store)))
    art = ArtifactStore(store)
    obs = AgentObserver(tracer_provider=provider, store=art, policy=CapturePolicy(message_content=True),
                        limits=CaptureLimits(max_file_bytes=16 << 20, max_total_bytes=64 << 20), agent_name="sec")
    with obs.attempt(run_id="sec-old-run", request=inline_request("old task"), attempt_id="sec-old",
                     context_roots=[old_ctx]):
        pass
    art.flush()  # the terminal marking runs in the background
    if evict:  # (not when the store is shared with the demo: a 1-byte budget would evict it all)
        report = apply_retention(art, RetentionPolicy(budget_bytes=1), now=time.time() + 60)
        assert report.evicted_items >= 1
    with obs.attempt(run_id="sec-run", request=resolve_request(str(prompt)), attempt_id="sec-main",
                     session_id="sec-session", context_roots=[ctx],
                     attachments=[ProviderAttachment(HOSTILE_LABEL, b"attachment bytes\n")],
                     system_message=SYSTEM, user_message=USER):
        pass
    provider.shutdown()
    fx = SecFixture(root, db, store, ctx)
    got = fx.inputs("sec-main")
    assert "tamper.txt" in got, {k: (v.capture_status, v.detail) for k, v in got.items()}
    tampered = got["tamper.txt"]
    obj = store / "objects" / tampered.sha256
    os.chmod(obj, 0o644)
    obj.write_bytes(b"changed bytes!\n")
    return fx


@pytest.fixture(scope="module")
def fx(tmp_path_factory: pytest.TempPathFactory) -> SecFixture:
    return record_fixture(tmp_path_factory.mktemp("sec"))


# ------------------------------------------------------------------------------------------
# preview refusals through the real preview path
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("bad_input_id", [
    "in-000000000000000000000000", "../../etc/passwd", "/etc/passwd", "in-\x00../../etc/passwd",
    "..", "objects/" + "0" * 64,
])
def test_sec_unknown_and_path_like_input_ids_are_refused(fx: SecFixture, bad_input_id: str) -> None:
    """An input id that is unknown or looks like a path is refused as not found, reading no file."""
    good = fx.inputs(fx.main)["notes.md"]
    pv = preview(str(fx.store), dataclasses.replace(good, input_id=bad_input_id))
    assert refused(pv, "not found"), pv
    res = EvidenceReader(ArtifactStore(fx.store, create=False)).read("me", fx.main, bad_input_id)
    assert res.outcome == "not_found" and res.snapshot is None


@pytest.mark.parametrize("bad_attempt_id", ["../../etc/passwd", "/etc/passwd", "sec-main\x00/etc/passwd", "."])
def test_sec_path_like_attempt_ids_are_refused(fx: SecFixture, bad_attempt_id: str) -> None:
    """An attempt id that looks like a path never names a file: the preview is refused as not found."""
    good = fx.inputs(fx.main)["notes.md"]
    pv = preview(str(fx.store), dataclasses.replace(good, attempt_id=bad_attempt_id))
    assert refused(pv, "not found"), pv
    assert EvidenceReader(ArtifactStore(fx.store, create=False)).read("me", bad_attempt_id, good.input_id).outcome == "not_found"


def test_sec_path_like_digest_in_the_catalog_is_never_opened(fx: SecFixture, tmp_path: Path) -> None:
    """A catalog item whose recorded SHA-256 is a path is refused as an integrity mismatch."""
    store = ArtifactStore(tmp_path / "s")
    staging = store.begin_attempt("a1")
    blob = staging.put_bytes(b"text\n")
    staging.commit(AttemptRecord("a1", "r", items=(CatalogItem("a1", "i1", 0, sha256=blob.sha256,
                                                               size_bytes=blob.size_bytes,
                                                               artifact_status="available"),)))
    with store.catalog.write() as con:  # a commit refuses such a digest, so the row is tampered with
        con.execute("UPDATE items SET sha256 = '../../../../etc/passwd'")
    res = EvidenceReader(store).read("me", "a1", "i1")
    assert res.outcome == "integrity_mismatch" and res.snapshot is None


def test_sec_evicted_snapshot_is_refused(fx: SecFixture) -> None:
    """A snapshot evicted by retention after export is refused by name, even though DuckDB still
    recorded it available at capture time."""
    item = fx.inputs(fx.old)["evict-me.txt"]
    assert item.artifact_status == "available"  # as of capture; the store is the authority now
    pv = preview(str(fx.store), item)
    assert refused(pv, "evicted"), pv


def test_sec_tampered_snapshot_is_refused(fx: SecFixture) -> None:
    """Bytes changed in the store after capture are refused as an integrity mismatch, never shown."""
    pv = preview(str(fx.store), fx.inputs(fx.main)["tamper.txt"])
    assert refused(pv, "integrity mismatch"), pv


def test_sec_oversized_image_is_refused(fx: SecFixture) -> None:
    """A PNG over 10 MiB is refused as too large, before any decoding."""
    item = fx.inputs(fx.main)["big.png"]
    assert item.preview_kind == "image" and item.size_bytes > IMAGE_MAX_BYTES
    pv = preview(str(fx.store), item)
    assert refused(pv, "too large"), pv


@pytest.mark.parametrize("label, original", [("polyglot.png", PNG_HTML_POLYGLOT), ("gifjs.gif", gif_js_polyglot())])
def test_sec_polyglot_images_are_reencoded_clean(fx: SecFixture, label: str, original: bytes) -> None:
    """A PNG+HTML and a GIF/JS polyglot are decoded and re-encoded: the preview bytes are a clean
    PNG with the same pixels and none of the appended script."""
    item = fx.inputs(fx.main)[label]
    assert item.preview_kind == "image"
    pv = preview(str(fx.store), item)
    assert pv.kind == "image" and pv.image_png is not None, pv
    assert pv.image_png != original and pv.image_png.startswith(PNG_MAGIC)
    for marker in (b"alert", b"<script", b"<html", b"document.domain"):
        assert marker not in pv.image_png
    with Image.open(io.BytesIO(pv.image_png)) as clean, Image.open(io.BytesIO(original)) as src:
        assert clean.format == "PNG" and clean.size == src.size
        assert clean.convert("RGBA").tobytes() == src.convert("RGBA").tobytes()
        assert pv.image_png.endswith(b"IEND\xaeB`\x82")  # nothing after the PNG trailer


@pytest.mark.parametrize("label, sniffed", [("svg.png", "image/svg+xml"), ("html.png", "text/html")])
def test_sec_markup_disguised_as_png_gets_no_preview(fx: SecFixture, label: str, sniffed: str) -> None:
    """SVG and HTML named .png are sniffed by content: no preview, and a forged "image" preview kind
    is refused by the preview's own magic-byte check."""
    item = fx.inputs(fx.main)[label]
    assert (item.media_type, item.preview_kind) == (sniffed, "none")
    pv = preview(str(fx.store), item)
    assert pv.kind == "none" and pv.text is None and pv.image_png is None
    forged = dataclasses.replace(item, preview_kind="image", media_type="image/png")
    pv = preview(str(fx.store), forged)
    assert pv.kind == "none" and pv.image_png is None and "not PNG, JPEG, GIF or WebP" in pv.message


# ------------------------------------------------------------------------------------------
# hostile labels and paths through the real app
# ------------------------------------------------------------------------------------------
def test_sec_hostile_labels_and_paths_render_literally_in_the_app(fx: SecFixture, monkeypatch) -> None:
    """Markdown/HTML in an attachment label and in a file name/path is shown verbatim by plain-text
    elements and never reaches a Markdown element unescaped."""
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv(names.ENV_DB, str(fx.db))
    monkeypatch.setenv(names.ENV_STORE, str(fx.store))
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["attempt"] = fx.main
    at.run()
    assert not at.exception, at.exception
    cells = [str(v) for df in at.dataframe for v in df.value.to_numpy().ravel()]
    assert HOSTILE_LABEL in cells and HOSTILE_FILE in cells  # table cells are plain text
    items = fx.inputs(fx.main)
    texts = []
    for label in (HOSTILE_LABEL, HOSTILE_FILE):  # each item's details beside its table, opened by the chooser
        item = items[label]
        at.selectbox(key=f"page:grp:{item.delivery_mode}:item").set_value(item.input_id).run()
        assert not at.exception, at.exception
        texts.append("\n".join(t.value for t in at.text))
    assert f"#{items[HOSTILE_LABEL].seq}  {HOSTILE_LABEL}" in texts[0]
    assert f"#{items[HOSTILE_FILE].seq}  {HOSTILE_FILE}" in texts[1]  # the label
    assert f"path: {fx.ctx / HOSTILE_FILE}" in texts[1]  # the path, on its own line of the details
    for m in at.markdown:
        assert "<img" not in m.value and "javascript:" not in m.value and "**bold**" not in m.value, m.value


def test_sec_extreme_aspect_image_preview_does_not_crash_the_page(tmp_path: Path, monkeypatch) -> None:
    """Opening the preview of a 10799x1 GIF shows a preview or a refusal, never an exception."""
    from streamlit.testing.v1 import AppTest

    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    ctx = tmp_path / "ctx"
    ctx.mkdir()
    (ctx / "wide.gif").write_bytes(gif_js_polyglot(height=1))
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(DuckDBSpanExporter(tmp_path / "w.duckdb", store=tmp_path / "store")))
    obs = AgentObserver(tracer_provider=provider, store=ArtifactStore(tmp_path / "store"), agent_name="wide")
    with obs.attempt(run_id="r", request=inline_request("t"), attempt_id="wide-1", context_roots=[ctx]):
        pass
    provider.shutdown()
    fx = SecFixture(tmp_path, tmp_path / "w.duckdb", tmp_path / "store", ctx)
    item = fx.inputs("wide-1")["wide.gif"]
    assert preview(str(fx.store), item).kind == "image"  # the preview itself decodes fine
    monkeypatch.setenv(names.ENV_DB, str(fx.db))
    monkeypatch.setenv(names.ENV_STORE, str(fx.store))
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["attempt"] = "wide-1"
    at.run()
    assert not at.exception
    at.selectbox(key=f"page:grp:{item.delivery_mode}:item").set_value(item.input_id).run()
    assert not at.exception, at.exception[0].message
    assert any(t.value.startswith(("Preview of #", "Preview refused")) for t in at.text)


# ------------------------------------------------------------------------------------------
# the sink binds loopback by default
# ------------------------------------------------------------------------------------------
def _local_non_loopback_ipv4() -> list[str]:
    """IPv4 addresses assigned to this machine's own interfaces, other than 127/8 (from the kernel)."""
    addrs: set[str] = set()
    try:
        lines = Path("/proc/net/fib_trie").read_text().splitlines()
    except OSError:
        return []
    for i, line in enumerate(lines):
        if "/32 host LOCAL" in line and i > 0:
            ip = lines[i - 1].strip().lstrip("|-+ ").strip()
            if re.fullmatch(r"\d+\.\d+\.\d+\.\d+", ip) and not ip.startswith("127."):
                addrs.add(ip)
    return sorted(addrs)


def _listening(port: int) -> set[str]:
    """Local addresses (hex as in /proc/net/tcp*) in LISTEN state on ``port``."""
    out = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            parts = row.split()
            addr, hexport = parts[1].split(":")
            if int(hexport, 16) == port and parts[3] == "0A":
                out.add(addr)
    return out


@pytest.mark.timeout(60)
def test_sec_sink_binds_loopback_by_default(tmp_path: Path) -> None:
    """`otel-inputs collect` without --host listens on 127.0.0.1 only: the printed endpoint, the
    kernel's socket table and a refused connection on this machine's other addresses agree."""
    proc = subprocess.Popen([sys.executable, "-m", "otel_inputs.exporter.cli", "collect", "--db", str(tmp_path / "s.duckdb"),
                             "--port", "0", "--grpc-port", "0"], cwd=ROOT, stderr=subprocess.PIPE, start_new_session=True,
                            env=dict(os.environ, PYTHONPATH=str(ROOT)))
    try:
        deadline = time.monotonic() + 30
        endpoint = None
        while endpoint is None and time.monotonic() < deadline:
            line = proc.stderr.readline().decode()  # type: ignore[union-attr]
            m = re.search(r"listening on (http://(\S+):(\d+)/v1/traces)", line)
            if m:
                endpoint, host, port = m.group(1), m.group(2), int(m.group(3))
        assert endpoint is not None, "sink did not print its endpoint"
        assert host == "127.0.0.1"
        assert _listening(port) == {"0100007F"}, _listening(port)  # 127.0.0.1, little-endian hex
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass  # the sink is really up
        for addr in _local_non_loopback_ipv4():
            with pytest.raises(ConnectionRefusedError):
                socket.create_connection((addr, port), timeout=5).close()
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)


# ------------------------------------------------------------------------------------------
# the vendor collector pipeline removes content
# ------------------------------------------------------------------------------------------
def _vendor_transform() -> dict:
    config = yaml.safe_load((ROOT / "collector-config" / "vendor.yaml").read_text())
    return config["processors"]["transform/redact_for_vendor"]


EXPORT_KEY = "0123456789abcdef" * 4  # the Collector's local secret for keyed digests (>= 32 characters)


def _apply_vendor(spans, env=None) -> dict:  # noqa: ANN001
    from google.protobuf import json_format
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    sys.path.insert(0, str(ROOT / "tests"))
    from collector_config.ottl_subset import apply_transform

    otlp_json = json_format.MessageToDict(encode_spans(list(spans)))
    return apply_transform(_vendor_transform(), otlp_json, {names.ENV_EXPORT_DIGEST_KEY: EXPORT_KEY} if env is None else env)


def _record_for_vendor(root: Path, *, break_store: bool = False):  # noqa: ANN202
    from otel_inputs.testing import RecordingHarness

    ctx = root / "CTXSECRET-dir"
    ctx.mkdir(parents=True)
    (ctx / "LABELSECRET-notes.md").write_text("FILECONTENTSECRET\n")
    prompt = root / "PROMPTSECRET-task.md"
    prompt.write_text(TASK + "\n")
    harness = RecordingHarness(root / "STORESECRET-store")
    obs = harness.observer()
    if break_store:  # the store's directories vanish under a running agent (volume unmounted, rm -rf)
        shutil.rmtree(root / "STORESECRET-store" / "staging")
    with obs.attempt(run_id="run-v", request=resolve_request(str(prompt)), attempt_id="att-v", session_id="sess-v",
                     context_roots=[ctx], attachments=[ProviderAttachment("ATTACHSECRET.txt", b"ATTACHBYTES\n")],
                     previous_envelope={"summary": "ENVELOPESECRET"}, system_message=SYSTEM, user_message=USER):
        pass
    return harness


# The first seven are on the recorded spans (so their absence downstream is meaningful); the rest
# live only in snapshot bytes or the store path and must never appear either.
SECRETS = ("TASKSECRET", "SYSTEMSECRET", "USERSECRET", "LABELSECRET", "PROMPTSECRET", "CTXSECRET", "ATTACHSECRET",
           "ENVELOPESECRET", "FILECONTENTSECRET", "STORESECRET")


def test_sec_vendor_pipeline_output_has_no_content_but_keeps_hashes(tmp_path: Path) -> None:
    """Spans recorded by otel_inputs, encoded as OTLP and run through vendor.yaml's statements, carry
    no task text, message, label, path or plain SHA-256, but keep ids and the keyed task and input digests."""
    harness = _record_for_vendor(tmp_path)
    try:
        spans = harness.attempt_spans()
        raw = json.dumps(_apply_vendor(spans)) + json.dumps(_apply_vendor([]))
        before = json.dumps(__import__("google.protobuf.json_format", fromlist=["x"]).MessageToDict(
            __import__("opentelemetry.exporter.otlp.proto.common.trace_encoder", fromlist=["x"]).encode_spans(spans)))
        for s in SECRETS[:7]:
            assert s in before, f"{s} was not recorded at all, so its absence would prove nothing"
        leaked = [s for s in SECRETS if s in raw]
        assert leaked == [], f"vendor output still carries {leaked}"
        assert str(tmp_path) not in raw
        [span] = spans
        keyed = lambda plain: hashlib.sha256((EXPORT_KEY + plain).encode()).hexdigest()  # noqa: E731
        task_sha = hashlib.sha256((TASK + "\n").encode()).hexdigest()
        assert task_sha not in raw and keyed(task_sha) in raw
        for event in harness.inputs(span):
            assert event[names.INPUT_SHA256] not in raw and keyed(event[names.INPUT_SHA256]) in raw
            assert event[names.INPUT_ID] in raw
    finally:
        harness.__exit__(None, None, None)


def test_sec_vendor_output_has_no_host_path_when_the_store_breaks(tmp_path: Path) -> None:
    """When the store becomes unusable under a running agent, the gap detail sent to the vendor still
    names no host path."""
    harness = _record_for_vendor(tmp_path, break_store=True)
    try:
        [span] = harness.attempt_spans()
        assert span.attributes[names.CAPTURE_GAP_REASON] == "store_unavailable"
        raw = json.dumps(_apply_vendor([span]))
        leaked = [s for s in SECRETS if s in raw]
        assert leaked == [] and str(tmp_path) not in raw, f"vendor output carries {leaked}"
    finally:
        harness.__exit__(None, None, None)


# ------------------------------------------------------------------------------------------
# no host path of the store reaches the browser
# ------------------------------------------------------------------------------------------
@dataclass
class Served:
    url: str
    demo_attempt: str
    fx: SecFixture


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, chromium) -> Iterator[Served]:  # noqa: ANN001
    """The demo session plus the security attempts in one database and store, served by `otel-inputs view`."""
    from otel_inputs.viewer._demo import record_demo
    from viewer_process import serve_viewer

    root = tmp_path_factory.mktemp("served")
    paths = record_demo(root / "demo", latency_s=0.0)
    fx = record_fixture(root / "sec", store=paths.store_path, db=paths.db_path, evict=False)
    with serve_viewer(paths.db_path, paths.store_path, root / "view.log") as url:
        demo_attempt = paths.attempt_ids.get("build_initial") or next(iter(paths.attempt_ids.values()))
        yield Served(url, demo_attempt, fx)


@pytest.fixture(scope="module")
def browser_page(served: Served, chromium):  # noqa: ANN001, ANN201
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = chromium.launch(pw)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.dialogs = []  # type: ignore[attr-defined]
            page.on("dialog", lambda d: (page.dialogs.append(d.message), d.dismiss()))  # type: ignore[attr-defined]
            page.response_urls = []  # type: ignore[attr-defined]
            page.on("response", lambda r: page.response_urls.append(r.url))  # type: ignore[attr-defined]
            yield page
        finally:
            browser.close()


def _open_attempt(page, served: Served, attempt_id: str) -> None:  # noqa: ANN001
    page.goto(served.url + "?attempt=" + attempt_id)
    page.get_by_text("1. Task instructions").first.wait_for(state="visible", timeout=45_000)


def _choose_item(page, item: records.InputRecord) -> None:  # noqa: ANN001
    """Open ``item`` beside its group's table with the keyboard chooser (options read "#<seq>  <label>")."""
    page.get_by_label(f"Open an item ({names.DELIVERY_LABELS[item.delivery_mode].lower()})").first.click()
    page.keyboard.type(f"#{item.seq}  ")
    page.keyboard.press("Enter")


def _open_previews(page, items: dict[str, records.InputRecord], max_items: int = 12) -> int:  # noqa: ANN001
    """Open up to ``max_items`` previewable items of the attempt page; return how many previews answered."""
    page.get_by_text("6. Exact model messages").first.wait_for(state="visible", timeout=45_000)
    opened = 0
    for item in sorted(items.values(), key=lambda i: i.seq):
        if item.preview_kind not in ("text", "image") or item.delivery_mode not in names.DELIVERY_LABELS:
            continue
        answer = page.get_by_text(f"Preview of #{item.seq}:", exact=False) \
            .or_(page.get_by_text("Preview refused", exact=False)).or_(page.get_by_text("Unavailable:", exact=False))
        # On a loaded machine a rerun can replace the chooser while it is being typed into, and the
        # choice is lost; choosing again is what a person would do. Three tries, then the test fails.
        for attempt in range(3):
            _choose_item(page, item)
            try:
                answer.first.wait_for(state="visible", timeout=20_000)
                break
            except PlaywrightTimeoutError:
                if attempt == 2:
                    raise
                page.keyboard.press("Escape")
        opened += 1
        if opened >= max_items:
            break
    page.wait_for_timeout(1000)
    return opened


def _pages_html(page, served: Served) -> list[tuple[str, str]]:  # noqa: ANN001
    """HTML of the runs page, a run page and both attempt pages with their previews opened."""
    out = []
    page.goto(served.url)
    page.get_by_text("Select a run to see its attempts.").wait_for(state="visible", timeout=45_000)
    out.append(("runs", page.content()))
    page.goto(served.url + "?run=sec-run")
    page.get_by_text("attempt(s) match", exact=False).first.wait_for(state="visible", timeout=45_000)
    page.get_by_role("tab", name="Store usage").click()
    page.wait_for_timeout(1000)
    out.append(("run", page.content()))
    for attempt_id in (served.demo_attempt, served.fx.main):
        _open_attempt(page, served, attempt_id)
        assert _open_previews(page, served.fx.inputs(attempt_id)) > 0
        out.append((attempt_id, page.content()))
    return out


@pytest.mark.browser
@pytest.mark.timeout(240)
def test_sec_no_object_path_reaches_the_browser(browser_page, served: Served) -> None:
    """Pages with opened previews name no object path, and no response URL names the store or an object."""
    store = served.fx.store.resolve()
    digests = [p.name for p in (store / "objects").iterdir()]
    for name, html in _pages_html(browser_page, served):
        assert str(store / "objects") not in html, name
        assert "objects/" not in html, name
        for d in digests:  # a digest is shown as "sha256 <hex>" text, never as a file name
            assert f"/{d}" not in html, f"{name}: object path ending in {d} in page"
    urls = browser_page.response_urls  # type: ignore[attr-defined]
    assert urls and all(u.startswith(served.url) for u in urls), [u for u in urls if not u.startswith(served.url)]
    for u in urls:
        assert str(store) not in u and "objects" not in u and not any(d in u for d in digests), u
    assert browser_page.dialogs == []  # type: ignore[attr-defined]


@pytest.mark.browser
@pytest.mark.timeout(240)
def test_sec_store_root_never_reaches_the_browser(browser_page, served: Served) -> None:
    """No page HTML contains the artifact store's absolute root path."""
    store = str(served.fx.store.resolve())
    for name, html in _pages_html(browser_page, served):
        assert store not in html, f"{name} page shows the store root {store}"


def _image_srcs(page) -> set[str]:  # noqa: ANN001
    return {img.get_attribute("src") or "" for img in page.locator("[data-testid='stImage'] img").all()}


def _new_served_image(page, served: Served, before: set[str], timeout_s: float = 30.0) -> bytes:  # noqa: ANN001
    """The bytes the browser is served for the one preview image that appeared since ``before``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        new = sorted(_image_srcs(page) - before - {""})
        if new:
            src = new[0]
            return page.request.get(src if src.startswith("http") else served.url.rstrip("/") + src).body()
        page.wait_for_timeout(300)
    pytest.fail("no new preview image was served")


@pytest.mark.browser
@pytest.mark.timeout(240)
def test_sec_served_polyglot_bytes_are_a_clean_image(browser_page, served: Served) -> None:
    """The image bytes the browser actually downloads for a polyglot preview are the clean re-encoded
    PNG, and the hostile label creates no element and runs no script."""
    page = browser_page
    _open_attempt(page, served, served.fx.main)
    items = served.fx.inputs(served.fx.main)
    _choose_item(page, items[HOSTILE_LABEL])
    page.get_by_text(f"#{items[HOSTILE_LABEL].seq}  {HOSTILE_LABEL}").first.wait_for(state="visible", timeout=30_000)
    for label, original in (("polyglot.png", PNG_HTML_POLYGLOT), ("gifjs.gif", gif_js_polyglot())):
        seq = items[label].seq
        before = _image_srcs(page)
        _choose_item(page, items[label])
        page.get_by_text(f"Preview of #{seq}:", exact=False).wait_for(state="visible", timeout=30_000)
        body = _new_served_image(page, served, before)
        # Streamlit may re-encode our PNG once more (e.g. to JPEG); either way it is a fresh image.
        assert body != original and not body.startswith((b"GIF", original[:16]))
        assert b"alert" not in body and b"<script" not in body and b"<html" not in body
        with Image.open(io.BytesIO(body)) as served_img:
            assert served_img.format in ("PNG", "JPEG")
    assert page.locator("img[src='x'], img[src='y']").count() == 0
    assert page.dialogs == []  # type: ignore[attr-defined]
