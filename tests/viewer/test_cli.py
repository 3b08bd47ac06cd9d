"""`otel-inputs demo --no-serve` records through the lead's recorder and every attempt renders."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from otel_inputs.exporter._schema import SCHEMA_VERSION  # noqa: F401  (the exporter package must import)
from otel_inputs import names
from otel_inputs.viewer._cli import COMMANDS, streamlit_command, url_for
from otel_inputs.viewer._panel import build_panel
from otel_inputs.viewer._queries import load_attempt, read_only

ROOT = Path(__file__).resolve().parents[2]


def test_commands_are_registered_and_bind_loopback_only() -> None:
    """The click group gets `view`, `demo` and `bundle`, and the server command binds 127.0.0.1 headless."""
    assert [c.name for c in COMMANDS] == ["view", "demo", "bundle"]
    cmd = streamlit_command(8765)
    assert cmd[cmd.index("--server.address") + 1] == "127.0.0.1"
    assert cmd[cmd.index("--server.headless") + 1] == "true"
    assert url_for(8765, "a b/c") == "http://127.0.0.1:8765/?attempt=a%20b%2Fc"


def test_demo_no_serve_records_a_session_every_attempt_of_which_renders(tmp_path: Path) -> None:
    """The demo database renders every attempt with a task or an honest legacy/gap sentence."""
    out = tmp_path / "demo"
    proc = subprocess.run([sys.executable, "-m", "otel_inputs.exporter.cli", "demo", "--out", str(out), "--no-serve"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    db = next(out.glob("*.duckdb"))
    with read_only(db) as con:
        ids = [r[0] for r in con.rows("SELECT attempt_id FROM agent_attempts ORDER BY started_at")]
        panels = [build_panel(load_attempt(con, a)) for a in ids]
    assert len(panels) >= 5
    send_kinds = {p.dispatch.send_kind for p in panels}
    assert {"initial request", "parse retry", "check retry"} <= send_kinds
    for p in panels:
        assert p.task.text or p.task.notes, p.attempt_id
    legacy = [p for p in panels if p.is_legacy]
    assert legacy and all(names.SENTENCE_NO_PACKET in p.dispatch.coverage.notes for p in legacy)
    assert any(p.files.groups for p in panels)


def test_view_upgrades_an_older_schema_before_serving(tmp_path) -> None:
    """A database written by an older exporter (fewer migrations) is migrated at `view` start-up."""
    import duckdb

    from otel_inputs.exporter._schema import MIGRATIONS, current_version
    from otel_inputs.viewer._cli import upgrade_schema

    db = tmp_path / "old.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE otel_inputs_schema (version INTEGER PRIMARY KEY, name VARCHAR NOT NULL, applied_at TIMESTAMP NOT NULL)")
    for m in MIGRATIONS[:6]:
        con.execute(m.sql)
        con.execute("INSERT INTO otel_inputs_schema VALUES (?, ?, now())", [m.version, m.name])
    con.close()
    assert upgrade_schema(db) is None
    con = duckdb.connect(str(db), read_only=True)
    try:
        assert current_version(con) == SCHEMA_VERSION
    finally:
        con.close()


def test_view_objects_roots_are_plain_urls_and_exclude_store(tmp_path: Path, monkeypatch) -> None:
    """`view --objects-root` takes repeated or comma-separated plain bucket URLs into the app's
    environment, and refuses one with credentials or '..', and refuses --store beside it."""
    from click.testing import CliRunner

    from otel_inputs.viewer._cli import objects_roots_option, view, viewer_env

    monkeypatch.delenv(names.ENV_OBJECTS_ROOTS, raising=False)
    roots = objects_roots_option(("s3://b/fleet-a,s3://b/fleet-b/", "gs://c"))
    assert roots == ("s3://b/fleet-a", "s3://b/fleet-b", "gs://c")
    assert viewer_env("chdb:/x?database=otel", None, roots)[names.ENV_OBJECTS_ROOTS] == "s3://b/fleet-a,s3://b/fleet-b,gs://c"
    for bad in ("s3://key:secret@b/fleet", "s3://b/fleet/../other", "s3://b/f?x=1"):
        result = CliRunner().invoke(view, ["--clickhouse", "chdb:/nowhere?database=otel", "--objects-root", bad])
        assert result.exit_code == 2 and "is not a plain bucket URL" in result.output, result.output
    result = CliRunner().invoke(view, ["--clickhouse", "chdb:/nowhere?database=otel", "--objects-root", "s3://b/f",
                                       "--store", str(tmp_path)])
    assert result.exit_code == 2 and "not both" in result.output, result.output


def test_a_busy_port_is_said_at_once_with_the_way_out(tmp_path: Path) -> None:
    """`demo` and `view` on a port another process holds exit 1 before recording or serving, naming --port."""
    import socket

    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        for args in (["demo", "--out", str(tmp_path / "demo")], ["view", "--db", str(tmp_path / "x.duckdb")]):
            result = subprocess.run([sys.executable, "-m", "otel_inputs.exporter.cli", *args, "--port", str(port)],
                                    capture_output=True, text=True, timeout=120)
            assert result.returncode == 1, result
            assert f"port {port} on 127.0.0.1 is in use" in result.stderr and "--port" in result.stderr
    assert not (tmp_path / "demo").exists(), "the demo was recorded before the port was checked"
    assert not (tmp_path / "x.duckdb").exists()
