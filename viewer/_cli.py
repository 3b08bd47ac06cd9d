"""`otel-inputs view` and `otel-inputs demo`: serve the review app on 127.0.0.1."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import click

from otel_inputs import names

APP_PATH = Path(__file__).resolve().parent / "app.py"
HOST = "127.0.0.1"


def free_port() -> int:
    """A currently free TCP port on the loopback interface."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def streamlit_command(port: int) -> list[str]:
    """The Streamlit server command line for the app, bound to loopback only, headless."""
    return [
        sys.executable, "-m", "streamlit", "run", str(APP_PATH),
        "--server.address", HOST,
        "--server.port", str(port),
        "--server.headless", "true",
        "--server.fileWatcherType", "none",
        "--server.runOnSave", "false",
        "--browser.gatherUsageStats", "false",
        "--global.developmentMode", "false",
        "--client.toolbarMode", "minimal",
        "--theme.base", "light",
    ]


def viewer_env(db: Path, store: Path | None) -> dict[str, str]:
    env = dict(os.environ)
    env[names.ENV_DB] = str(db.resolve())
    if store is not None:
        env[names.ENV_STORE] = str(store.resolve())
    return env


def url_for(port: int, attempt_id: str | None = None) -> str:
    from urllib.parse import quote

    base = f"http://{HOST}:{port}/"
    return base + (f"?attempt={quote(attempt_id, safe='')}" if attempt_id else "")


def serve(db: Path, store: Path | None, port: int) -> int:
    """Run the Streamlit server in the foreground until it exits or Ctrl-C; return its exit code."""
    proc = subprocess.Popen(streamlit_command(port), env=viewer_env(db, store))
    try:
        return proc.wait()
    except KeyboardInterrupt:
        proc.send_signal(signal.SIGINT)
        try:
            return proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            return proc.wait()


def upgrade_schema(db: Path) -> str | None:
    """Bring an existing database to this version's schema before serving; return a warning or None.

    The viewer itself only ever reads; this one short exclusive open at start-up is what lets a
    newer viewer show data an older exporter wrote.
    """
    if not db.exists():
        return None
    from otel_inputs.exporter._db import connect_with_retry, file_lock
    from otel_inputs.exporter._schema import SchemaError, migrate

    try:
        with file_lock(db, exclusive=True, timeout_s=10):
            con = connect_with_retry(db, read_only=False)
            try:
                migrate(con)
            finally:
                con.close()
    except SchemaError:
        raise
    except Exception as exc:  # noqa: BLE001 - a busy or read-only file is served as it is
        return f"could not upgrade the schema of {db} now ({type(exc).__name__}); the page will say if it cannot read it"
    return None


@click.command("view")
@click.option("--db", "db", type=click.Path(path_type=Path), envvar=names.ENV_DB, required=True,
              help="DuckDB file written by the exporter (or OTEL_INPUTS_DB).")
@click.option("--store", "store", type=click.Path(path_type=Path), envvar=names.ENV_STORE, default=None,
              help="Artifact store directory, for previews (or OTEL_INPUTS_STORE).")
@click.option("--port", type=int, default=8501, show_default=True, help="Port on 127.0.0.1; 0 picks a free one.")
def view(db: Path, store: Path | None, port: int) -> None:
    """Serve the review app for DB (and STORE) on 127.0.0.1."""
    port = port or free_port()
    try:
        warning = upgrade_schema(db)
    except Exception as exc:  # SchemaError: a newer or foreign schema, say so plainly
        raise click.ClickException(str(exc)) from exc
    if warning:
        click.echo(f"warning: {warning}", err=True)
    click.echo(f"otel-inputs viewer on {url_for(port)} (database {db}, store {store or 'not set'})")
    sys.exit(serve(db, store, port))


@click.command("demo")
@click.option("--out", "out", type=click.Path(path_type=Path), default=Path("demo-data"), show_default=True,
              help="Folder for the recorded database, store and workspace.")
@click.option("--no-serve", is_flag=True, help="Only record; do not start the viewer.")
@click.option("--port", type=int, default=8501, show_default=True, help="Port on 127.0.0.1; 0 picks a free one.")
def demo(out: Path, no_serve: bool, port: int) -> None:
    """Record a realistic multi-phase agent session into OUT, then serve the viewer on it."""
    from otel_inputs.viewer._demo import record_demo

    paths = record_demo(out)
    click.echo(f"recorded demo session: database {paths.db_path}, store {paths.store_path}", err=True)
    if no_serve:
        click.echo(f"serve it with: otel-inputs view --db {paths.db_path} --store {paths.store_path}", err=True)
        return
    port = port or free_port()
    ids = getattr(paths, "attempt_ids", None) or {}
    first = next(iter(ids.values()), None)
    click.echo(f"open the viewer: {url_for(port)}")
    if first:
        click.echo(f"or jump straight to an attempt: {url_for(port, first)}")
    sys.exit(serve(paths.db_path, paths.store_path, port))


COMMANDS = (view, demo)
