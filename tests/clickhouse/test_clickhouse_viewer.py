"""The viewer on ClickHouse: the same corpus landed through the DuckDB path and into the stock
ClickHouse tables (chdb, in-process, under clickhouse/*.sql) gives the same query results and the
same Streamlit pages (AppTest) on both backends; what ClickHouse does not record says so."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("chdb.session", reason="chdb (in-process ClickHouse) is not installed")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "viewer"))
from apptest_helpers import open_expander, open_item, run_app, texts  # noqa: E402
from ch_corpus import BACKEND_LINES, DATABASE, corpus, land_duckdb, load_chdb, use_backend  # noqa: E402

from otel_inputs import names  # noqa: E402
from otel_inputs.viewer import _queries as q  # noqa: E402
from otel_inputs.viewer import _records as records  # noqa: E402
from otel_inputs.viewer._backend import chdb_session, close_chdb_sessions, open_backend  # noqa: E402

pytestmark = pytest.mark.timeout(600)


@dataclasses.dataclass(frozen=True)
class Both:
    duckdb: Path
    clickhouse: str


@pytest.fixture(scope="module")
def both(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Both]:
    """The corpus in a DuckDB file and in a chdb session directory (every row inserted twice)."""
    tmp = tmp_path_factory.mktemp("chviewer")
    records, logs = corpus()
    db = land_duckdb(tmp, records, logs)
    path = tmp / "chdb"
    path.mkdir()
    load_chdb(chdb_session(path), tmp)
    try:
        yield Both(db, f"chdb:{path}?database={DATABASE}")
    finally:
        close_chdb_sessions()


def _stock(record: Any) -> Any:
    """An attempt record as the stock schema can give it: the dropped counts are not in otel_traces."""
    return dataclasses.replace(record, dropped_events_count=None, dropped_attributes_count=None)


def _bundle(b: records.AttemptBundle | None) -> records.AttemptBundle | None:
    return None if b is None else dataclasses.replace(b, attempt=_stock(b.attempt))


def _everything(db: q.Backend) -> dict[str, Any]:
    """Every query result the pages use, for every attempt, run, SHA-256, path and task of the corpus."""
    ids = [r[0] for r in db.rows("SELECT attempt_id FROM agent_attempts ORDER BY attempt_id")]
    runs = q.list_runs(db)
    out: dict[str, Any] = {"runs": runs, "ids": ids}
    for r in runs:
        out[f"run {r.run_id}"] = (q.list_attempts(db, r.run_id), q.run_facets(db, r.run_id),
                                  q.run_coverage(db, r.run_id), q.run_timeline(db, r.run_id),
                                  q.run_retry_links(db, r.run_id),
                                  q.list_attempts(db, r.run_id, records.AttemptFilters(newest_first=True, phase=q.NULL_VALUE)))
    shas, paths, tasks = set(), set(), set()
    for a in ids:
        bundle = q.load_attempt(db, a)
        out[f"attempt {a}"] = _bundle(bundle)
        assert bundle is not None
        shas |= {i.sha256 for i in bundle.inputs if i.sha256}
        paths |= {i.source_path for i in bundle.inputs if i.source_path}
        if bundle.attempt.task_sha256:
            tasks.add(bundle.attempt.task_sha256)
    for s in sorted(shas):
        out[f"sha {s}"] = q.where_else(db, sha256=s, exclude_attempt="att-8")
    for p in sorted(paths):
        out[f"path {p}"] = q.where_else(db, source_path=p)
    for t in sorted(tasks):
        out[f"task {t}"] = q.task_runs(db, t)
    return out


def test_every_query_gives_the_duckdb_results(both: Both) -> None:
    """Every page query (runs, run lists and facets, charts' data, attempt pages, where else, task runs)
    gives on ClickHouse exactly what it gives on DuckDB for the same spans."""
    with open_backend(both.duckdb) as d:
        want = _everything(d)
    with open_backend(both.clickhouse) as c:
        assert c.kind == "clickhouse"
        got = _everything(c)
    assert len(want["ids"]) >= 20 and any(k.startswith("sha ") and v.total for k, v in want.items() if k.startswith("sha "))
    assert want["attempt att-9"].operation and want["attempt att-9"].steps == ()  # a retry, steps recorded as none
    assert any(b is not None and b.steps for k, b in want.items() if k.startswith("attempt "))
    assert set(got) == set(want)
    for key in want:
        assert got[key] == want[key], key


def test_what_clickhouse_does_not_record_is_not_recorded(both: Both) -> None:
    """The DuckDB-only tables read as None on ClickHouse (not recorded), never as no rows."""
    with open_backend(both.clickhouse) as c:
        assert q.exporter_health(c) is None
        assert q.run_artifact_usage(c, "run-1") is None
        assert not c.has("agent_artifacts") and c.has("agent_attempt_steps")
    with open_backend(both.duckdb) as d:
        assert isinstance(q.exporter_health(d), tuple) and q.run_artifact_usage(d, "run-1") == []


# What differs by design: the sidebar's name, the exporter counters (DuckDB's exporter keeps them,
# the stock ClickHouse exporter does not) and the store rows (agent_artifacts is DuckDB's).


LAZY_SECTIONS = ("runs_coverage", "page:current_msg", "page:messages", "page:parts_more", "page:steps_table")


def _page(monkeypatch: pytest.MonkeyPatch, source: str | Path, steps: Any = None, **params: str) -> tuple[list[str], list[str]]:
    """The page's texts (backend-specific lines left out) and table cells, on one backend."""
    monkeypatch.delenv(names.ENV_STORE, raising=False)
    use_backend(monkeypatch, source)
    at = run_app(**params)
    for key in LAZY_SECTIONS:  # the parts drawn only once opened are compared too
        at.session_state[key] = True
    at.run()
    if steps is not None:
        at = steps(at)
    lines = [t for t in texts(at) if not t.startswith(BACKEND_LINES)]
    assert not at.error, [e.value for e in at.error]
    cells = [str(v) for df in at.dataframe if "counter" not in df.value.columns for v in df.value.to_numpy().ravel()]
    return lines, cells


def _where_and_drift(at: Any) -> Any:
    at = open_item(at, "path_reference", "in-8-1")
    at.toggle(key="page:where:in-8-1").set_value(True).run()
    return open_expander(at, "page:taskruns")


@pytest.mark.parametrize("params", [{}, {"run": "run-1"}, {"run": "run-2"}, {"attempt": "att-8"}, {"attempt": "att-9"},
                                    {"attempt": "att-3"}, {"attempt": "att-inner"}, {"attempt": "att-2"}],
                         ids=lambda p: "-".join(f"{k}={v}" for k, v in p.items()) or "runs")
def test_the_pages_are_the_same_on_both_backends(both: Both, monkeypatch: pytest.MonkeyPatch,
                                                 params: dict[str, str]) -> None:
    """The runs page, run pages (attempts, operations, timeline, coverage texts) and attempt pages
    read the same on ClickHouse as on DuckDB, line for line and cell for cell."""
    want = _page(monkeypatch, both.duckdb, **params)
    got = _page(monkeypatch, both.clickhouse, **params)
    assert len(want[0]) >= 3 and want[1]  # a page with text and a table
    assert got == want


def test_where_else_and_task_drift_on_the_page_are_the_same(both: Both, monkeypatch: pytest.MonkeyPatch) -> None:
    """An item's where-else listings and the task's runs-with-drift table are the same on both backends."""
    want = _page(monkeypatch, both.duckdb, _where_and_drift, attempt="att-8")
    got = _page(monkeypatch, both.clickhouse, _where_and_drift, attempt="att-8")
    assert any("input(s) of other attempts had the same SHA-256" in t for t in want[0])
    assert "run-2" in " ".join(want[1])
    assert got == want


def test_the_page_says_what_clickhouse_does_not_record(both: Both, monkeypatch: pytest.MonkeyPatch) -> None:
    """On ClickHouse the store-rows tab and the exporter counters say "not recorded on this backend"."""
    monkeypatch.delenv(names.ENV_DB, raising=False)
    monkeypatch.setenv(names.ENV_CLICKHOUSE, both.clickhouse)
    at = run_app(run="run-1")
    all_text = texts(at)
    assert any(t.startswith("Snapshot rows per run: not recorded on this backend") for t in all_text)
    assert any(t.startswith("Exporter counters: not recorded on this backend") for t in all_text)
    assert any(t.startswith(f"Database: chdb chdb/{DATABASE}") for t in all_text)


def test_an_unprepared_clickhouse_database_is_a_message(both: Both, monkeypatch: pytest.MonkeyPatch) -> None:
    """A ClickHouse database without the projection views is a sentence naming the SQL to apply."""
    chdb_session(both.clickhouse.split(":", 1)[1].split("?")[0]).query("CREATE DATABASE IF NOT EXISTS bare")
    monkeypatch.delenv(names.ENV_DB, raising=False)
    monkeypatch.setenv(names.ENV_CLICKHOUSE, both.clickhouse.replace(f"database={DATABASE}", "database=bare"))
    at = run_app()
    errors = [e.value.replace("\\", "") for e in at.error]  # note() escapes Markdown
    assert any("has no otel-inputs projection" in e and "clickhouse/projection.sql" in e for e in errors), errors


# -- the clickhouse-connect path: the real client, over HTTP on loopback, against the real engine ---
def test_clickhouse_connect_gives_the_same_results_and_pages(both: Both, monkeypatch: pytest.MonkeyPatch) -> None:
    """Through clickhouse-connect (HTTP to a loopback endpoint that runs each query on chdb and answers
    in the format the client asked for), every page query and an attempt page equal the DuckDB ones."""
    pytest.importorskip("clickhouse_connect", reason="clickhouse-connect is not installed")
    from chdb_http import chdb_http

    path = Path(both.clickhouse.split(":", 1)[1].split("?")[0])
    with open_backend(both.duckdb) as d:
        want = _everything(d)
    want_page = _page(monkeypatch, both.duckdb, _where_and_drift, attempt="att-8")
    with chdb_http(path) as server:
        url = f"http://127.0.0.1:{server.server_address[1]}/{DATABASE}"
        with open_backend(url) as c:
            assert type(c).__name__ == "ConnectBackend"
            got = _everything(c)
        got_page = _page(monkeypatch, url, _where_and_drift, attempt="att-8")
        assert server.requests > len(want)  # the answers really came through the client
    assert set(got) == set(want)
    for key in want:
        assert got[key] == want[key], key
    assert got_page == want_page


def _closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # closed on exit: nothing listens there


def test_unreachable_clickhouse_is_a_message_not_a_crash(monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """A ClickHouse URL where nothing listens gives the page one error sentence naming the server
    (no exception, no password), and `view --clickhouse` warns at start-up instead of failing."""
    pytest.importorskip("clickhouse_connect", reason="clickhouse-connect is not installed")
    from otel_inputs.viewer._backend import DbUnavailable
    from otel_inputs.viewer._cli import check_clickhouse

    url = f"http://reader:s3cret@127.0.0.1:{_closed_port()}/{DATABASE}"
    with pytest.raises(DbUnavailable, match="cannot be reached"):
        with open_backend(url):
            pass
    monkeypatch.delenv(names.ENV_DB, raising=False)
    monkeypatch.setenv(names.ENV_CLICKHOUSE, url)
    at = run_app(attempt="att-8")
    errors = [e.value.replace("\\", "") for e in at.error]
    assert len(errors) == 1 and "cannot be reached" in errors[0] and "127.0.0.1" in errors[0]
    assert "s3cret" not in " ".join(errors + texts(at))
    assert check_clickhouse(url).startswith("ClickHouse 127.0.0.1:")
    assert "warning:" in capsys.readouterr().err


def test_a_url_that_is_not_clickhouse_is_refused_plainly() -> None:
    """Only http(s)/clickhouse/chdb URLs are ClickHouse; anything else is a DuckDB path or a sentence."""
    from otel_inputs.viewer._backend import ClickHouseTarget, DbUnavailable, is_clickhouse, literal, render

    assert is_clickhouse("http://h:8123/otel") and not is_clickhouse("/var/lib/x.duckdb")
    with pytest.raises(DbUnavailable, match="not a ClickHouse URL"):
        ClickHouseTarget.parse("ftp://h/otel")
    with pytest.raises(DbUnavailable, match="not a ClickHouse URL") as refused:  # the password is never echoed
        ClickHouseTarget.parse("postgres://admin:s3cret-pw@db.example/otel")
    assert "s3cret-pw" not in str(refused.value) and "admin" not in str(refused.value)
    assert ClickHouseTarget.parse("https://u:pw@ch.example:8443/otel").label == "ClickHouse ch.example:8443/otel"
    # Parameters are literals with backslash and quote escaped; a ? inside a quoted string stays.
    assert render("SELECT '?', ? , ? IN ?", ["it's \\ x", None, ["a", "b"]]) == \
        "SELECT '?', 'it\\'s \\\\ x' , NULL IN ('a', 'b')"
    assert literal(["one"]) == "('one',)"


def test_parameters_reach_the_engine_unchanged(both: Both) -> None:
    """Hostile parameter text (quotes, backslashes, ?, %, newlines, braces) comes back from ClickHouse
    exactly as sent: rendering literals cannot change a query or its values."""
    hostile = ["it's", "a\\'; DROP TABLE otel_traces; --", "?", "100% {x} %s", "line\nbreak\ttab", "\\", "ünï"]
    with open_backend(both.clickhouse) as c:
        for value in hostile:
            assert c.rows("SELECT ? AS v, '?' AS q", [value]) == [(value, "?")]
        assert c.has("otel_traces")


def _members(path: Path) -> dict[str, bytes]:
    import tarfile

    with tarfile.open(path) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers()}  # type: ignore[union-attr]


def _bundle_cli(*args: str) -> tuple[int, str]:
    from click.testing import CliRunner

    from otel_inputs.exporter.cli import main

    result = CliRunner().invoke(main, ["bundle", *args], catch_exceptions=False)
    return result.exit_code, result.output


def _same_bundle(duck: Path, ch: Path) -> dict[str, Any]:
    """Assert two bundles of one attempt hold the same rows, statuses and bytes, apart from what differs by
    design (when, which database, agent_artifacts, the columns the stock schema lacks); the ClickHouse manifest."""
    import json

    from otel_inputs.viewer._backend import NOT_IN_STOCK_SCHEMA
    from otel_inputs.viewer._bundle import MANIFEST, verify_bundle

    want, got = verify_bundle(duck), verify_bundle(ch)
    assert want["source"]["backend"] == "duckdb" and got["source"]["backend"] == "clickhouse"
    assert got["source"]["columns_not_recorded"] == {t: sorted(c) for t, c in NOT_IN_STOCK_SCHEMA.items()}
    assert got["tables"].pop("agent_artifacts").startswith("not recorded")
    assert isinstance(want["tables"].pop("agent_artifacts"), int)
    for m in (want, got):
        for key in ("created_at_ns", "source", "members"):
            m.pop(key)
    assert got == want
    d, c = _members(duck), _members(ch)
    d.pop("rows/agent_artifacts.json")
    assert set(c) == set(d)
    for name in set(d) - {MANIFEST}:
        if name == "rows/agent_attempts.json":  # the stock schema's gaps read null there, never 0
            rows = json.loads(d[name])
            for row in rows:
                row.update(dict.fromkeys(NOT_IN_STOCK_SCHEMA["agent_attempts"]))
            assert json.loads(c[name]) == rows and rows
        else:
            assert c[name] == d[name], name
    return verify_bundle(ch)


def test_the_bundle_from_clickhouse_equals_the_duckdb_bundle(both: Both, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """`otel-inputs bundle create --clickhouse chdb:...` writes, for every attempt of the corpus, the bundle
    `--db` writes (rows, statuses, withheld fields), apart from what the stock schema does not record, and
    `bundle verify` passes on it."""
    from otel_inputs.viewer._bundle import write_bundle_file

    for var in (names.ENV_DB, names.ENV_CLICKHOUSE, names.ENV_STORE):
        monkeypatch.delenv(var, raising=False)
    with open_backend(both.duckdb) as d:
        ids = [r[0] for r in d.rows("SELECT attempt_id FROM agent_attempts ORDER BY attempt_id")]
    assert len(ids) >= 20
    code, out = _bundle_cli("create", "att-8", "-o", str(tmp_path / "ch.tar"), "--clickhouse", both.clickhouse)
    assert code == 0 and "wrote " in out, out
    assert _bundle_cli("create", "att-8", "-o", str(tmp_path / "duck.tar"), "--db", str(both.duckdb))[0] == 0
    manifest = _same_bundle(tmp_path / "duck.tar", tmp_path / "ch.tar")
    assert manifest["tables"]["agent_attempt_inputs"] == 3
    code, out = _bundle_cli("verify", str(tmp_path / "ch.tar"))
    assert code == 0 and "OK, attempt att-8" in out, out
    for attempt_id in ids:  # the rest in-process (the same function the command calls)
        write_bundle_file(tmp_path / "d.tar", both.duckdb, None, attempt_id)
        write_bundle_file(tmp_path / "c.tar", both.clickhouse, None, attempt_id)
        _same_bundle(tmp_path / "d.tar", tmp_path / "c.tar")


def test_bundle_create_through_clickhouse_connect(both: Both, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`bundle create --clickhouse http://...` reads through the real clickhouse-connect client (the loopback
    endpoint running each query on chdb) and writes the DuckDB bundle, which verifies."""
    pytest.importorskip("clickhouse_connect", reason="clickhouse-connect is not installed")
    from chdb_http import chdb_http

    for var in (names.ENV_DB, names.ENV_STORE):
        monkeypatch.delenv(var, raising=False)
    path = Path(both.clickhouse.split(":", 1)[1].split("?")[0])
    assert _bundle_cli("create", "att-2", "-o", str(tmp_path / "duck.tar"), "--db", str(both.duckdb))[0] == 0
    with chdb_http(path) as server:
        monkeypatch.setenv(names.ENV_CLICKHOUSE, f"http://127.0.0.1:{server.server_address[1]}/{DATABASE}")
        code, out = _bundle_cli("create", "att-2", "-o", str(tmp_path / "ch.tar"))  # the URL from the environment
        assert code == 0, out
        assert server.requests >= 6  # the rows really came through the client
    manifest = _same_bundle(tmp_path / "duck.tar", tmp_path / "ch.tar")
    assert manifest["tables"]["agent_exchange_parts"] == 2
    assert manifest["source"]["database"] == f"ClickHouse 127.0.0.1:{server.server_address[1]}/{DATABASE}"


def test_bundle_create_from_unreachable_clickhouse_is_a_message(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where nothing listens, `bundle create --clickhouse` exits non-zero with one sentence naming host and
    database (no password, no traceback) and leaves no file behind."""
    pytest.importorskip("clickhouse_connect", reason="clickhouse-connect is not installed")
    for var in (names.ENV_DB, names.ENV_STORE):
        monkeypatch.delenv(var, raising=False)
    port = _closed_port()
    out = tmp_path / "b.tar"
    code, text = _bundle_cli("create", "att-8", "-o", str(out), "--clickhouse",
                             f"http://reader:s3cret@127.0.0.1:{port}/{DATABASE}")
    assert code == 1, text
    assert f"no bundle written: ClickHouse 127.0.0.1:{port}/{DATABASE} cannot be reached" in text
    assert "s3cret" not in text and "reader" not in text and "Traceback" not in text
    assert not out.exists() and list(tmp_path.iterdir()) == []
