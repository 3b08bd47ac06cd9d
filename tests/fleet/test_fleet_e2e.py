"""Past one machine, end to end: two agent hosts, their spans in ClickHouse as the stock exporter
writes them, their snapshot bytes in one bucket, and the viewer on ClickHouse.

Each host records a real attempt through ``AgentObserver`` under its own resource
(``service.instance.id`` / ``host.name``), with its own artifact store uploading to its own prefix
of one bucket (moto's S3 server on 127.0.0.1, the real s3fs client).  The spans of both hosts land
twice: through the single-machine DuckDB path, and into the stock ``otel_traces`` / ``otel_logs``
tables on the real ClickHouse engine (chdb) under ``clickhouse/*.sql``, the way the Collector's
``clickhouseexporter`` writes them (DuckDB's ``otel_traces`` mirrors its columns; the rows move as
Parquet, inserted twice as a retried export would).  The viewer's pages must then read the same on
both, with the previews on the ClickHouse side served from the bucket (local copies deleted) and
SHA-256 verified.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

pytest.importorskip("chdb.session", reason="chdb (in-process ClickHouse) is not installed")

from s3_server import S3, Relay, s3, s3fs  # noqa: E402,F401 - the module's S3 server fixture (skips without moto/s3fs)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "viewer"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "clickhouse"))
from apptest_helpers import open_item, run_app, texts  # noqa: E402
from ch_corpus import BACKEND_LINES, DATABASE, export_parquet, load_chdb, use_backend  # noqa: E402
from opentelemetry.sdk._logs import LoggerProvider  # noqa: E402
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor  # noqa: E402
from opentelemetry.sdk.resources import Resource  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402

from otel_inputs import AgentObserver, names, resolve_request  # noqa: E402
from otel_inputs.exporter import DuckDBLogExporter, DuckDBSpanExporter  # noqa: E402
from otel_inputs.exporter.cli import main as cli  # noqa: E402
from otel_inputs.store import ArtifactStore  # noqa: E402
from otel_inputs.store.bucket import RemoteState, attach, item_placements  # noqa: E402
from otel_inputs.viewer._backend import chdb_session, close_chdb_sessions, open_backend  # noqa: E402
from otel_inputs.viewer._fleet import DECIDED  # noqa: E402

pytestmark = pytest.mark.timeout(600)

HOSTS = ("host-a", "host-b")
SILENT = "host-c"  # records and sends its spans like the others, but none of its store facts ever arrive
SHARED = b"# shared conventions\nuse tabs\n" * 40  # the same bytes on both hosts


def own_file(host: str) -> bytes:
    return f"# notes of {host}\n".encode() * 60


@dataclasses.dataclass
class Host:
    name: str
    store: ArtifactStore
    attempt_id: str
    inputs: dict[str, str]  # file name -> input id
    digests: dict[str, str]  # file name -> SHA-256
    handoff: Path  # the folder the files were captured from


@dataclasses.dataclass
class Fleet:
    hosts: dict[str, Host]
    bucket: str
    duckdb: Path
    clickhouse: str
    chdb: Path  # the chdb directory (store facts sent later land here too)


def record_host(tmp: Path, s3: S3, bucket: str, host: str) -> tuple[Host, list[Any], list[Any]]:  # noqa: F811
    """One attempt on ``host``: its resource, its store (uploading to its prefix), a task and two files."""
    resource = Resource.create({"service.name": "coder", "service.instance.id": host, "host.name": host})
    spans, logs = InMemorySpanExporter(), InMemoryLogRecordExporter()
    tracer_provider = TracerProvider(resource=resource)
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    logger_provider = LoggerProvider(resource=resource)
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(logs))
    # Generous timeouts: on a loaded machine a 10 s PUT timeout would record an upload failure, which is
    # tests/fleet/test_objects_s3.py's subject, not this layout test's.
    store = ArtifactStore(tmp / host / "store", objects_url=f"s3://{bucket}/otel-inputs/{host}",
                          objects_options=s3.options(timeout_s=120))
    handoff = tmp / host / "handoff"
    handoff.mkdir(parents=True)
    (handoff / "shared.md").write_bytes(SHARED)
    (handoff / f"{host}.md").write_bytes(own_file(host))
    observer = AgentObserver(tracer_provider=tracer_provider, logger_provider=logger_provider, store=store,
                             agent_name="coder", provider_name="openai", request_model="gpt-x")
    request = resolve_request(f"inline:Fix the failing test on {host}")
    with observer.attempt(run_id=f"run-{host}", request=request, session_id=f"session-{host}", send_kind="initial",
                          context_roots=[handoff], system_message="You are a careful coder.",
                          user_message=request.text) as attempt:
        attempt.record_output(text=f"fixed on {host}", settlement="completed", dispatch="dispatched")
    assert attach(store).flush(300)
    with store.catalog.read() as con:
        failed = con.execute("SELECT sha256, reason FROM remote_objects WHERE state != 'uploaded'").fetchall()
    assert not failed, failed  # every upload's outcome, with its reason when it failed
    tracer_provider.shutdown()
    logger_provider.shutdown()
    (span,) = [s for s in spans.get_finished_spans() if s.attributes.get(names.ATTEMPT_ID) == attempt.attempt_id]
    events = [dict(e.attributes) for e in span.events if e.name == names.INPUT_EVENT]
    files = {e[names.INPUT_LABEL].rsplit("/", 1)[-1]: e for e in events if e.get(names.INPUT_SOURCE_PATH)}
    assert set(files) == {"shared.md", f"{host}.md"}
    assert span.attributes[names.STORE_OBJECTS_URL] == f"s3://{bucket}/otel-inputs/{host}"  # where its bytes are
    assert span.attributes[names.STORE_ID] == store.catalog.store_id()  # whose facts decide it
    return (Host(host, store, attempt.attempt_id, {k: e[names.INPUT_ID] for k, e in files.items()},
                 {k: e[names.INPUT_SHA256] for k, e in files.items()}, handoff),
            list(spans.get_finished_spans()), list(logs.get_finished_logs()))


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory, s3: S3) -> Iterator[Fleet]:  # noqa: F811
    """Both hosts recorded; their spans in one DuckDB file and in chdb; their bytes in one bucket."""
    tmp = tmp_path_factory.mktemp("fleet")
    bucket = s3.new_bucket()
    hosts, spans, logs = {}, [], []
    for name in HOSTS + (SILENT,):
        host, host_spans, host_logs = record_host(tmp, s3, bucket, name)
        hosts[name] = host
        spans += host_spans
        logs += [r for r in host_logs if name != SILENT or r.log_record.event_name != names.STORE_FACT_EVENT]
    db = tmp / "single.duckdb"
    span_exporter, log_exporter = DuckDBSpanExporter(db), DuckDBLogExporter(db)  # the single-machine path
    assert span_exporter.export(spans).name == "SUCCESS"
    assert log_exporter.export(logs).name == "SUCCESS"
    span_exporter.shutdown()
    log_exporter.shutdown()
    export_parquet(db, tmp)
    path = tmp / "chdb"
    path.mkdir()
    load_chdb(chdb_session(path), tmp)
    try:
        yield Fleet(hosts, bucket, db, f"chdb:{path}?database={DATABASE}", path)
    finally:
        close_chdb_sessions()
        # The viewer's reads open s3fs without options (the endpoint from AWS_ENDPOINT_URL), and
        # fsspec caches that instance: it must not outlive this module's S3 server.
        s3fs.S3FileSystem.clear_instance_cache()




def page(monkeypatch: pytest.MonkeyPatch, source: str | Path, store: Path, open_input: str | None = None,
         **params: str) -> tuple[list[str], list[str]]:
    """The page's texts (backend-specific lines left out) and table cells, on one backend and store."""
    monkeypatch.setenv(names.ENV_STORE, str(store))
    monkeypatch.delenv(names.ENV_OBJECTS_ROOTS, raising=False)  # the single-machine viewer
    use_backend(monkeypatch, source)
    at = run_app(**params)
    if open_input is not None:
        at = open_item(at, "path_reference", open_input)
    assert not at.error, [e.value for e in at.error]
    lines = [t for t in texts(at) if not t.startswith(BACKEND_LINES)]  # text previews included (plain text)
    cells = [str(v) for df in at.dataframe if "counter" not in df.value.columns for v in df.value.to_numpy().ravel()]
    return lines, cells


ON_DISK, BUCKET_ONLY = "local copy; in the bucket (uploaded)", "in the bucket (uploaded); no local copy"


def placement_blind(shown: tuple[list[str], list[str]]) -> tuple[list[str], list[str]]:
    """A page's texts and cells with the bytes' placement (disk and bucket, or bucket only) left out."""
    return tuple([t.replace(ON_DISK, "<placement>").replace(BUCKET_ONLY, "<placement>") for t in part]
                 for part in shown)  # type: ignore[return-value]


def delete_local_copies(host: Host) -> None:
    for digest in host.digests.values():
        path = host.store.objects.path(digest)
        if path.exists():
            os.unlink(path)


def test_both_hosts_uploaded_to_their_prefix_of_one_bucket(fleet: Fleet, s3: S3) -> None:  # noqa: F811
    """Each host's snapshot bytes are in the bucket under its own prefix, recorded uploaded in its catalog."""
    for host in (fleet.hosts[h] for h in HOSTS):
        keys = {k.rsplit("/", 1)[-1] for k in s3.client().ls(f"{fleet.bucket}/otel-inputs/{host.name}/objects")}
        assert set(host.digests.values()) <= keys
        assert {p.remote for p in item_placements(host.store, host.attempt_id).values()} == {RemoteState.UPLOADED}
    assert fleet.hosts["host-a"].digests["shared.md"] == fleet.hosts["host-b"].digests["shared.md"]


def test_runs_page_lists_both_hosts_the_same_on_clickhouse(fleet: Fleet, monkeypatch: pytest.MonkeyPatch) -> None:
    """otel_traces in ClickHouse holds both hosts' resources, and the runs page over them reads the same
    on ClickHouse as on the single-machine DuckDB file."""
    with open_backend(fleet.clickhouse) as ch:
        resources = ch.rows("SELECT DISTINCT ResourceAttributes['service.instance.id'], ResourceAttributes['host.name'] "
                            "FROM otel_traces ORDER BY 1")
    assert resources == [(h, h) for h in HOSTS + (SILENT,)]
    store = fleet.hosts["host-a"].store.root
    want = page(monkeypatch, fleet.duckdb, store)
    got = page(monkeypatch, fleet.clickhouse, store)
    assert all(f"run-{h}" in " ".join(want[0] + want[1]) for h in HOSTS)
    assert got == want


@pytest.mark.parametrize("name", HOSTS)
def test_attempt_page_and_previews_from_the_bucket_equal_the_single_machine_page(
        fleet: Fleet, monkeypatch: pytest.MonkeyPatch, s3: S3, name: str) -> None:  # noqa: F811
    """Each host's attempt page, with each file's preview open, reads the same on ClickHouse with the
    bytes only in the bucket as on the single-machine DuckDB path with the bytes on disk."""
    host = fleet.hosts[name]
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3.endpoint)
    monkeypatch.delenv(names.ENV_OBJECTS_URL, raising=False)  # the catalog names its bucket
    files = {"shared.md": SHARED, f"{name}.md": own_file(name)}
    assert all(host.store.objects.path(d).exists() for d in host.digests.values()), "the baseline reads the disk"
    want = {}
    for filename, data in files.items():
        want[filename] = page(monkeypatch, fleet.duckdb, host.store.root, host.inputs[filename], attempt=host.attempt_id)
        assert data.decode().rstrip("\n") in [t.rstrip("\n") for t in want[filename][0]], "the preview is shown"
    delete_local_copies(host)
    assert {p.describe() for p in item_placements(host.store, host.attempt_id).values()} == {"bucket only"}
    for filename in files:
        got = page(monkeypatch, fleet.clickhouse, host.store.root, host.inputs[filename], attempt=host.attempt_id)
        # The one honest difference: where the bytes are (on disk and in the bucket, then the bucket only).
        # (said once above the tables when every input agrees, else in the bytes column; and in the item's details)
        assert BUCKET_ONLY in " ".join(got[0] + got[1]) and ON_DISK not in " ".join(got[0] + got[1])
        assert placement_blind(got) == placement_blind(want[filename]), filename


def test_a_tampered_bucket_object_is_refused_on_the_page(fleet: Fleet, monkeypatch: pytest.MonkeyPatch,
                                                          s3: S3) -> None:  # noqa: F811
    """With the local copy gone and the bucket's object altered, the ClickHouse page refuses the preview
    (SHA-256 mismatch) and shows none of the altered bytes."""
    host = fleet.hosts["host-a"]
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3.endpoint)
    monkeypatch.delenv(names.ENV_OBJECTS_URL, raising=False)
    delete_local_copies(host)
    digest = host.digests["host-a.md"]
    key = f"{fleet.bucket}/otel-inputs/host-a/objects/{digest}"
    original = s3.client().cat_file(key)
    s3.client().pipe_file(key, b"# tampered notes\n" * 60)
    try:
        lines, _ = page(monkeypatch, fleet.clickhouse, host.store.root, host.inputs["host-a.md"], attempt=host.attempt_id)
    finally:
        s3.client().pipe_file(key, original)
    assert not any("tampered" in t for t in lines)
    assert any(t.startswith("Preview refused: integrity_mismatch") for t in lines), lines


def test_another_hosts_attempt_without_its_store_is_a_refusal_not_bytes(fleet: Fleet, monkeypatch: pytest.MonkeyPatch,
                                                                       s3: S3) -> None:  # noqa: F811
    """A viewer holding host A's store shows host B's attempt from ClickHouse, and refuses its preview
    with the reason (no committed record), never serving unverified bucket bytes: a store is per host."""
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3.endpoint)
    a, b = fleet.hosts["host-a"], fleet.hosts["host-b"]
    lines, _ = page(monkeypatch, fleet.clickhouse, a.store.root, b.inputs["host-b.md"], attempt=b.attempt_id)
    assert any(t.startswith(f"Attempt {b.attempt_id} · run run-host-b") for t in lines)
    assert "Preview refused: not_found (no committed record for this attempt)" in lines
    assert not any(own_file("host-b").decode()[:30] in t for t in lines)


# -- the fleet viewer: ClickHouse (spans and each host's store facts) and the bucket; no host store --
FLEET_LINES = (DECIDED,)
FLEET_PLACEMENT = "in the bucket (uploaded)"


def fleet_page(monkeypatch: pytest.MonkeyPatch, fleet: Fleet, s3: S3, open_input: str | None = None,  # noqa: F811
               roots: str | None = None, where: bool = False, **params: str) -> tuple[list[str], list[str], list[str]]:
    """The fleet viewer's page (ClickHouse, objects roots, no store): texts without the backend and
    deciding lines, table cells, and every line as shown (the deciding and warning lines included)."""
    monkeypatch.delenv(names.ENV_STORE, raising=False)
    monkeypatch.delenv(names.ENV_OBJECTS_URL, raising=False)
    monkeypatch.setenv(names.ENV_OBJECTS_ROOTS, roots or f"s3://{fleet.bucket}/otel-inputs")
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3.endpoint)
    use_backend(monkeypatch, fleet.clickhouse)
    at = run_app(**params)
    if open_input is not None:
        at = open_item(at, "path_reference", open_input)
        if where:  # the opened item's "where else" listings
            at.toggle(key=f"page:where:{open_input}").set_value(True).run()
    assert not at.error, [e.value for e in at.error]
    shown = texts(at) + [w.value for w in at.warning]  # text previews included (plain text)
    lines = [t for t in texts(at) if not t.startswith(BACKEND_LINES + FLEET_LINES)]
    cells = [str(v) for df in at.dataframe if "counter" not in df.value.columns for v in df.value.to_numpy().ravel()]
    return lines, cells, shown


def cli_facts(monkeypatch: pytest.MonkeyPatch, fleet: Fleet, host: Host, *args: str) -> tuple[int, str]:
    """Run a store command on ``host`` whose store facts go to an OTLP endpoint, and land what it sent
    in ClickHouse as the Collector's exporter would (exit code, output)."""
    from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor

    from otel_inputs.exporter import _store_cli

    sent = InMemoryLogRecordExporter()
    resource = Resource.create({"service.name": "coder", "service.instance.id": host.name, "host.name": host.name})

    def provider():
        checked = _store_cli._Checked(sent)
        logger_provider = LoggerProvider(resource=resource)
        logger_provider.add_log_record_processor(SimpleLogRecordProcessor(checked))
        return logger_provider, checked

    monkeypatch.setattr(_store_cli, "_facts_provider", provider)
    result = CliRunner().invoke(cli, list(args) + ["--store", str(host.store.root)], catch_exceptions=False)
    land_logs(fleet, list(sent.get_finished_logs()))
    return result.exit_code, result.output


def land_logs(fleet: Fleet, logs: list[Any]) -> None:
    """Log records into chdb's otel_logs as the stock exporter writes them (through a scratch DuckDB file)."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "more.duckdb"
        exporter = DuckDBLogExporter(db)
        assert exporter.export(logs).name == "SUCCESS"
        exporter.shutdown()
        con = __import__("duckdb").connect(str(db), read_only=True)
        con.execute(f"COPY otel_logs TO '{tmp}/otel_logs.parquet' (FORMAT parquet)")
        con.close()
        chdb_session(fleet.chdb).query(f"INSERT INTO {DATABASE}.otel_logs SELECT * FROM file('{tmp}/otel_logs.parquet', Parquet)")


def placement_free(shown: tuple[list[str], list[str]]) -> tuple[list[str], list[str]]:
    """A page's texts and cells with where the bytes are (a host's words or the fleet's) left out."""
    return tuple([t.replace(ON_DISK, "<placement>").replace(BUCKET_ONLY, "<placement>").replace(FLEET_PLACEMENT,
                                                                                             "<placement>")
                  for t in part] for part in shown)  # type: ignore[return-value]


@pytest.mark.parametrize("name", HOSTS)
def test_fleet_viewer_without_host_stores_previews_both_hosts_like_the_single_machine_page(
        fleet: Fleet, monkeypatch: pytest.MonkeyPatch, s3: S3, name: str) -> None:  # noqa: F811
    """A viewer with ClickHouse, the bucket and no host store previews each host's files from the bucket,
    decided by the store facts that host sent, with the same page as the single-machine path and a line
    saying whose facts decided and how current they are."""
    host = fleet.hosts[name]
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3.endpoint)
    for filename in ("shared.md", f"{name}.md"):
        want = page(monkeypatch, fleet.duckdb, host.store.root, host.inputs[filename], attempt=host.attempt_id)
        lines, cells, shown = fleet_page(monkeypatch, fleet, s3, host.inputs[filename], attempt=host.attempt_id)
        assert placement_free((lines, cells)) == placement_free(want), filename
        # said once above the tables when every input agrees, else in the bytes column; and in the item's details
        assert FLEET_PLACEMENT in " ".join(lines + cells)
        decided = [t for t in shown if t.startswith(DECIDED)]
        assert len(decided) == 1 and f" {name} (store {host.store.catalog.store_id()[:8]}…), the latest received " \
            f"from {name} at " in decided[0] and decided[0].endswith(" UTC."), decided


def test_a_host_that_never_sent_facts_is_refused_saying_why(fleet: Fleet, monkeypatch: pytest.MonkeyPatch,
                                                            s3: S3) -> None:  # noqa: F811
    """Host C's spans arrived but none of its store facts did: its attempt page shows, its previews are refused
    as not vouched for, saying no fact was received from it, its labels and paths are withheld, and none of
    its bytes are shown although they are in the bucket."""
    c = fleet.hosts[SILENT]
    _, cells, shown = fleet_page(monkeypatch, fleet, s3, c.inputs["shared.md"], attempt=c.attempt_id)
    assert any(t.startswith(f"Attempt {c.attempt_id} · run run-{SILENT}") for t in shown)
    assert any(t.startswith("Preview refused: not_found (not vouched for: no store fact about this attempt has been "
                            f"received (no store fact has been received from {SILENT}))") for t in shown), shown
    assert any(t.startswith(DECIDED) and t.endswith(f"no store fact has been received from {SILENT}.") for t in shown)
    assert not any(c.handoff.name in x and x.endswith("shared.md") for x in cells), cells
    assert not any(SHARED.decode()[:30] in t for t in shown)


def test_a_location_outside_the_roots_is_refused_and_never_fetched(fleet: Fleet, monkeypatch: pytest.MonkeyPatch,
                                                                   s3: S3) -> None:  # noqa: F811
    """With the roots narrowed to host A's prefix, host B's span names a location outside them: its preview
    is refused, and the viewer sends no request for it (a hostile span cannot make it fetch a URL)."""
    from otel_inputs.store.bucket import under_roots

    root = f"s3://{fleet.bucket}/otel-inputs"
    assert under_roots(f"{root}/host-a", [root]) and under_roots(root, [root])
    for hostile in (f"{root}/../secrets", f"{root}-evil/host-a", f"s3://key:secret@{fleet.bucket}/otel-inputs/a",
                    f"{root}/a?versionId=1", f"{root}/%2e%2e/secrets", f"s3://other/otel-inputs/a", "file:///etc", f"{root}//a", "host-a"):
        assert not under_roots(hostile, [root]), hostile
    host, port = s3.endpoint.removeprefix("http://").split(":")
    relay = Relay((host, int(port))).start()
    relay.running.set()
    s3fs.S3FileSystem.clear_instance_cache()
    b = fleet.hosts["host-b"]
    try:
        monkeypatch.setenv("AWS_ENDPOINT_URL", relay.endpoint)
        _, _, shown = fleet_page(monkeypatch, fleet, s3, b.inputs["host-b.md"], roots=f"{root}/host-a",
                                 attempt=b.attempt_id)
        assert relay.accepted == 0, "nothing was fetched for a location outside the roots"
    finally:
        relay.close()
        s3fs.S3FileSystem.clear_instance_cache()
    assert any(t.startswith("Preview refused: permission_denied") and "not under this viewer's objects roots" in t
               for t in shown), shown
    assert not any(own_file("host-b").decode()[:30] in t for t in shown)


def test_a_revocation_sent_by_the_cli_refuses_on_the_fleet_viewer(fleet: Fleet, monkeypatch: pytest.MonkeyPatch,
                                                                  s3: S3) -> None:  # noqa: F811
    """`otel-inputs store revoke` on host A sends its store facts: once they are in ClickHouse the fleet viewer
    refuses A's revoked file, while B's own file still previews."""
    a, b = fleet.hosts["host-a"], fleet.hosts["host-b"]
    code, out = cli_facts(monkeypatch, fleet, a, "store", "revoke", str(a.handoff / "host-a.md"), "--reason", "leaked")
    assert code == 0 and "revoked " in out, out
    _, _, shown = fleet_page(monkeypatch, fleet, s3, a.inputs["host-a.md"], attempt=a.attempt_id)
    assert "Preview refused: source_unavailable (the source of this input has been revoked)" in shown, shown
    assert not any(own_file("host-a").decode()[:30] in t for t in shown)
    lines, _, _ = fleet_page(monkeypatch, fleet, s3, b.inputs["host-b.md"], attempt=b.attempt_id)
    assert own_file("host-b").decode().rstrip("\n") in [t.rstrip("\n") for t in lines]


def test_a_purge_sent_by_the_cli_refuses_on_the_fleet_viewer(fleet: Fleet, monkeypatch: pytest.MonkeyPatch,
                                                             s3: S3) -> None:  # noqa: F811
    """`otel-inputs purge --source` on host B sends its store facts: the fleet viewer refuses B's purged
    file (retention_expired) and no longer shows its bytes."""
    b = fleet.hosts["host-b"]
    code, out = cli_facts(monkeypatch, fleet, b, "purge", "--source", str(b.handoff / "host-b.md"))
    assert code == 0, out
    _, _, shown = fleet_page(monkeypatch, fleet, s3, b.inputs["host-b.md"], attempt=b.attempt_id)
    assert any(t.startswith("Preview refused: retention_expired") for t in shown) or \
        any("purged" in t and t.startswith("Unavailable") for t in shown), shown
    assert not any(own_file("host-b").decode()[:30] in t for t in shown)


def test_where_else_on_the_fleet_viewer_decides_each_row_by_its_own_hosts_facts(
        fleet: Fleet, monkeypatch: pytest.MonkeyPatch, s3: S3) -> None:  # noqa: F811
    """On a fleet viewer, "where else" of one host's shared file lists the other host's copy with its path;
    once that other host revokes the path (its facts sent by the CLI), its row keeps its attempt but its
    path is withheld, decided by its own facts, while the first host's preview still shows; the silent
    host's row is withheld as not vouched for."""
    b, a = fleet.hosts["host-a"], fleet.hosts["host-b"]  # A: the host that revokes
    a_path = "host-b/handoff/shared.md"
    _, cells, shown = fleet_page(monkeypatch, fleet, s3, b.inputs["shared.md"], where=True, attempt=b.attempt_id)
    assert any(t.startswith("2 input(s) of other attempts had the same SHA-256") for t in shown), shown
    assert a.attempt_id in cells and any(c.endswith(a_path) for c in cells), cells
    assert fleet.hosts[SILENT].attempt_id in cells
    assert any(c.startswith("(path withheld: unknown whether revoked: not vouched for") for c in cells), cells
    cli_facts(monkeypatch, fleet, a, "store", "revoke", str(a.handoff / "shared.md"), "--reason", "leaked")
    lines, cells, shown = fleet_page(monkeypatch, fleet, s3, b.inputs["shared.md"], where=True, attempt=b.attempt_id)
    assert a.attempt_id in cells, cells  # the row stays: which attempts had these bytes is not content
    assert not any(c.endswith(a_path) for c in cells), cells
    assert any(c.startswith("(path withheld: source revoked at ") for c in cells), cells
    assert SHARED.decode().rstrip("\n") in [t.rstrip("\n") for t in lines]  # B's own copy is not revoked


def test_facts_the_endpoint_refuses_make_the_cli_say_fleet_viewers_do_not_know_and_exit_non_zero(
        fleet: Fleet, monkeypatch: pytest.MonkeyPatch) -> None:
    """When the OTLP endpoint refuses a command's store facts, `store revoke` keeps the local revocation,
    says fleet viewers do not know it yet with the resend command, and exits 1."""
    from opentelemetry.sdk._logs.export import LogExportResult, SimpleLogRecordProcessor

    from otel_inputs.exporter import _store_cli
    from otel_inputs.store import RevocationList

    class Refusing(InMemoryLogRecordExporter):
        def export(self, batch):  # noqa: ANN001
            return LogExportResult.FAILURE

    def provider():
        checked = _store_cli._Checked(Refusing())
        logger_provider = LoggerProvider()
        logger_provider.add_log_record_processor(SimpleLogRecordProcessor(checked))
        return logger_provider, checked

    monkeypatch.setattr(_store_cli, "_facts_provider", provider)
    c = fleet.hosts[SILENT]
    result = CliRunner().invoke(cli, ["store", "revoke", str(c.handoff / f"{SILENT}.md"), "--store", str(c.store.root)])
    assert result.exit_code == 1, result.output
    assert "revoked locally, but fleet viewers do not know it yet: sending its store facts failed (the OTLP " \
        "endpoint answered FAILURE)" in result.output
    assert f"Resend with: otel-inputs store facts --store {c.store.root}" in result.output
    assert RevocationList.load(ArtifactStore(c.store.root)).entries, "the local revocation stands"
