"""`otel-inputs view` and `otel-inputs demo`: serve the review app on 127.0.0.1.

Every ``otel-inputs`` command loads this module (``exporter/cli.py`` registers its commands), so the
viewer's own modules are imported inside the commands that use them, on purpose: ``otel-inputs --help``,
``collect`` and ``store`` start without the viewer's backends, store readers and the bundle writer.
"""

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


def claim_port(port: int) -> int:
    """``port`` if it can be bound on 127.0.0.1 now (0: a free one); else a clear error with the way out."""
    if port == 0:
        return free_port()
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server binds it
        try:
            s.bind((HOST, port))
        except OSError as exc:
            raise click.ClickException(
                f"port {port} on {HOST} is in use ({exc.strerror}); another viewer may be running there. "
                "Choose another with --port N (make demo PORT=N), or --port 0 for a free one.") from exc
    return port


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


def viewer_env(db: Path | str, store: Path | None, objects_roots: tuple[str, ...] = ()) -> dict[str, str]:
    """The app's environment: ``db`` is a DuckDB file, or a ClickHouse URL (``--clickhouse``); with
    ``objects_roots`` a fleet viewer (previews decided by each host's store facts in ClickHouse)."""
    from otel_inputs.viewer._backend import is_clickhouse

    env = dict(os.environ)
    if objects_roots:
        env[names.ENV_OBJECTS_ROOTS] = ",".join(objects_roots)
    if is_clickhouse(db):
        env[names.ENV_CLICKHOUSE] = str(db)
        env.pop(names.ENV_DB, None)
    else:
        env[names.ENV_DB] = str(Path(db).resolve())
        env.pop(names.ENV_CLICKHOUSE, None)
    if store is not None:
        env[names.ENV_STORE] = str(store.resolve())
    return env


def url_for(port: int, attempt_id: str | None = None) -> str:
    from urllib.parse import quote

    base = f"http://{HOST}:{port}/"
    return base + (f"?attempt={quote(attempt_id, safe='')}" if attempt_id else "")


def serve(db: Path | str, store: Path | None, port: int, secrets_path: Path | None = None,
          objects_roots: tuple[str, ...] = ()) -> int:
    """Run the Streamlit server in the foreground until it exits or Ctrl-C; return its exit code."""
    cmd = streamlit_command(port)
    if secrets_path is not None:  # only this file: a stray .streamlit/secrets.toml must not configure login
        cmd += ["--secrets.files", str(secrets_path)]
    proc = subprocess.Popen(cmd, env=viewer_env(db, store, objects_roots))
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
    from otel_inputs.exporter import SchemaError, migrate_file

    try:
        migrate_file(db)
    except SchemaError:
        raise
    except Exception as exc:  # noqa: BLE001 - a busy or read-only file is served as it is
        return f"could not upgrade the schema of {db} now ({type(exc).__name__}); the page will say if it cannot read it"
    return None


def check_clickhouse(url: str) -> str:
    """The ClickHouse database as the start-up line names it; a URL that is not one is a usage error,
    and a server not answering now is a warning (the page says so too, and retries on refresh)."""
    from otel_inputs.viewer._backend import ClickHouseTarget, DbUnavailable, clickhouse

    try:
        target = ClickHouseTarget.parse(url)
    except DbUnavailable as exc:
        raise click.UsageError(str(exc)) from exc
    try:
        with clickhouse(url):
            pass
    except DbUnavailable as exc:
        click.echo(f"warning: {exc}", err=True)
    return target.label


def auth_secrets(port: int, metadata_url: str | None, client_id: str | None, client_secret: str | None,
                 cookie_secret: str | None, redirect_uri: str | None) -> str | None:
    """The ``[auth]`` section of Streamlit's secrets for ``st.login`` (OIDC), or ``None`` when login is off."""
    if not metadata_url:
        return None
    if not client_id:
        raise click.UsageError("--auth-client-id (or OTEL_INPUTS_AUTH_CLIENT_ID) is needed with --auth-metadata-url")
    import json
    import secrets as _secrets

    values = {
        "redirect_uri": redirect_uri or f"http://{HOST}:{port}/oauth2callback",
        "cookie_secret": cookie_secret or _secrets.token_hex(32),
        "client_id": client_id,
        "client_secret": client_secret or "",
        "server_metadata_url": metadata_url,
    }
    # JSON strings are valid TOML basic strings (both escape quotes, backslashes and controls).
    return "[auth]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in values.items())


def write_secrets(text: str) -> Path:
    """Write the secrets to a private file (mode 0600 in a 0700 directory) for ``--secrets.files``."""
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="otel-inputs-view-"))
    path = folder / "secrets.toml"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    return path


def objects_roots_option(given: tuple[str, ...]) -> tuple[str, ...]:
    """``--objects-root`` values (each may be comma-separated; else OTEL_INPUTS_OBJECTS_ROOTS), checked:
    a root with credentials, a query or ``..`` is refused (spans are only ever followed under plain roots)."""
    from otel_inputs.store.bucket import under_roots

    raw = list(given) or [os.environ.get(names.ENV_OBJECTS_ROOTS, "")]
    roots = tuple(r.strip().rstrip("/") for value in raw for r in value.split(",") if r.strip())
    for root in roots:
        if not under_roots(root, [root]):
            raise click.UsageError(f"--objects-root {root!r} is not a plain bucket URL (scheme://bucket/prefix, "
                                   "no credentials, query or '..')")
    return roots


@click.command("view")
@click.option("--db", "db", type=click.Path(path_type=Path), envvar=names.ENV_DB, default=None,
              help="DuckDB file written by the exporter (or OTEL_INPUTS_DB).")
@click.option("--clickhouse", "clickhouse", envvar=names.ENV_CLICKHOUSE, default=None, metavar="URL",
              help="Read a ClickHouse database instead (http://[user:password@]host:8123/database, https://..., "
                   "or chdb:PATH?database=NAME for a local chdb directory; or OTEL_INPUTS_CLICKHOUSE).")
@click.option("--store", "store", type=click.Path(path_type=Path), envvar=names.ENV_STORE, default=None,
              help="Artifact store directory, for previews (or OTEL_INPUTS_STORE).")
@click.option("--objects-root", "objects_roots", multiple=True, metavar="URL",
              help="A fleet viewer: previews are decided by each host's store facts in ClickHouse and read from "
                   "its bucket under this root (s3://bucket/prefix; repeatable or comma-separated; or "
                   "OTEL_INPUTS_OBJECTS_ROOTS). Only bytes under these roots are ever fetched.")
@click.option("--port", type=int, default=8501, show_default=True, help="Port on 127.0.0.1; 0 picks a free one.")
@click.option("--auth-metadata-url", envvar=names.ENV_AUTH_METADATA_URL, default=None,
              help="OpenID Connect discovery URL (.../.well-known/openid-configuration): viewers log in with it.")
@click.option("--auth-client-id", envvar=names.ENV_AUTH_CLIENT_ID, default=None, help="OIDC client id.")
@click.option("--auth-client-secret", envvar=names.ENV_AUTH_CLIENT_SECRET, default=None,
              help="OIDC client secret (prefer the environment variable).")
@click.option("--auth-cookie-secret", envvar=names.ENV_AUTH_COOKIE_SECRET, default=None,
              help="Secret signing the login cookie; random per start when not given.")
@click.option("--auth-redirect-uri", envvar=names.ENV_AUTH_REDIRECT_URI, default=None,
              help="Redirect URI registered at the provider; default http://127.0.0.1:PORT/oauth2callback.")
def view(db: Path | None, clickhouse: str | None, store: Path | None, objects_roots: tuple[str, ...], port: int,
         auth_metadata_url: str | None, auth_client_id: str | None, auth_client_secret: str | None,
         auth_cookie_secret: str | None, auth_redirect_uri: str | None) -> None:
    """Serve the review app for DB or a ClickHouse database (and STORE, or, under --objects-root, the
    fleet's store facts and buckets) on 127.0.0.1."""
    if (db is None) == (clickhouse is None):
        raise click.UsageError("give exactly one of --db FILE or --clickhouse URL")
    roots = objects_roots_option(objects_roots)
    if roots and store is not None:
        raise click.UsageError("give --store DIR (one machine) or --objects-root URL (a fleet), not both")
    port = claim_port(port)
    secrets_text = auth_secrets(port, auth_metadata_url, auth_client_id, auth_client_secret, auth_cookie_secret,
                                auth_redirect_uri)
    source: Path | str
    if clickhouse is not None:
        source, shown = clickhouse, check_clickhouse(clickhouse)
    else:
        assert db is not None
        source, shown = db, f"database {db}"
        try:
            warning = upgrade_schema(db)
        except Exception as exc:  # SchemaError: a newer or foreign schema, say so plainly
            raise click.ClickException(str(exc)) from exc
        if warning:
            click.echo(f"warning: {warning}", err=True)
    secrets_path = write_secrets(secrets_text) if secrets_text else None
    login = "OIDC login required" if secrets_path else "viewer is the OS user"
    previews = f"store facts, bytes under {', '.join(roots)}" if roots else f"store {store or 'not set'}"
    click.echo(f"otel-inputs viewer on {url_for(port)} ({shown}, {previews}; {login})")
    try:
        sys.exit(serve(source, store, port, secrets_path, roots))
    finally:
        if secrets_path is not None:
            secrets_path.unlink(missing_ok=True)
            secrets_path.parent.rmdir()


@click.command("demo")
@click.option("--out", "out", type=click.Path(path_type=Path), default=Path("demo-data"), show_default=True,
              help="Folder for the recorded database, store and workspace.")
@click.option("--no-serve", is_flag=True, help="Only record; do not start the viewer.")
@click.option("--port", type=int, default=8501, show_default=True, help="Port on 127.0.0.1; 0 picks a free one.")
def demo(out: Path, no_serve: bool, port: int) -> None:
    """Record a realistic multi-phase agent session into OUT, then serve the viewer on it."""
    from otel_inputs.viewer._demo import record_demo

    if not no_serve:
        port = claim_port(port)  # before recording: a busy port is said at once
    paths = record_demo(out)
    click.echo(f"recorded demo session: database {paths.db_path}, store {paths.store_path}", err=True)
    if no_serve:
        click.echo(f"serve it with: otel-inputs view --db {paths.db_path} --store {paths.store_path}", err=True)
        return
    featured = paths.featured_attempt_id
    click.echo(f"open the viewer: {url_for(port)}")
    if featured:
        click.echo(f"or jump straight to its most telling attempt (files, previews, reads): {url_for(port, featured)}")
    sys.exit(serve(paths.db_path, paths.store_path, port))


class _BundleGroup(click.Group):
    """``bundle ATTEMPT -o FILE`` creates; ``bundle verify FILE`` checks (``create`` is the default)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("-h", "--help"):
            args = ["create", *args]
        return super().parse_args(ctx, args)


@click.group("bundle", cls=_BundleGroup)
def bundle_group() -> None:
    """Export one attempt as an evidence bundle (a tar with a SHA-256 manifest), or verify one."""


@bundle_group.command("create")
@click.argument("attempt_id")
@click.option("-o", "--output", "output", type=click.Path(path_type=Path, dir_okay=False), required=True,
              help="Archive to write (a tar).")
@click.option("--db", "db", type=click.Path(path_type=Path), envvar=names.ENV_DB, default=None,
              help="DuckDB file written by the exporter (or OTEL_INPUTS_DB).")
@click.option("--clickhouse", "clickhouse", envvar=names.ENV_CLICKHOUSE, default=None, metavar="URL",
              help="Read a ClickHouse database instead, as `view --clickhouse` does (http://[user:password@]"
                   "host:8123/database, https://..., or chdb:PATH?database=NAME; or OTEL_INPUTS_CLICKHOUSE).")
@click.option("--store", "store", type=click.Path(path_type=Path), envvar=names.ENV_STORE, default=None,
              help="Artifact store directory (or OTEL_INPUTS_STORE); without it no bytes are included.")
def bundle_create(attempt_id: str, output: Path, db: Path | None, clickhouse: str | None, store: Path | None) -> None:
    """Write ATTEMPT_ID's rows, snapshots and exchange parts, as this user may see them, to OUTPUT."""
    from otel_inputs.viewer._backend import ClickHouseTarget
    from otel_inputs.viewer._bundle import BundleRefused, write_bundle_file
    from otel_inputs.viewer._queries import DbUnavailable

    if (db is None) == (clickhouse is None):
        raise click.UsageError("give exactly one of --db FILE or --clickhouse URL")
    source: Path | str
    if clickhouse is not None:
        try:
            ClickHouseTarget.parse(clickhouse)
        except DbUnavailable as exc:
            raise click.UsageError(str(exc)) from exc
        source = clickhouse
    else:
        assert db is not None
        source = db
    try:
        report = write_bundle_file(output, source, store, attempt_id)
    except (BundleRefused, DbUnavailable) as exc:
        raise click.ClickException(f"no bundle written: {exc}") from exc
    included = sum(1 for s in report.snapshots + report.parts if s.get("status") == "included")
    listed = len(report.snapshots) + len(report.parts) - included
    click.echo(f"wrote {output}: {len(report.members)} member(s), {included} byte stream(s) included, "
               f"{listed} listed without bytes, {len(report.withheld)} field(s) withheld")
    click.echo(f"manifest sha256 {report.manifest_sha256}")


@bundle_group.command("verify")
@click.argument("archive", type=click.Path(path_type=Path, dir_okay=False, exists=True))
def bundle_verify(archive: Path) -> None:
    """Check ARCHIVE offline: every member listed once, sizes and SHA-256 match, no unsafe names."""
    from otel_inputs.viewer._bundle import MANIFEST, BundleInvalid, verify_bundle

    try:
        manifest = verify_bundle(archive)
    except BundleInvalid as exc:
        for problem in exc.problems:
            click.echo(f"error: {problem}", err=True)
        raise click.ClickException(f"{archive} does not verify ({len(exc.problems)} problem(s))") from exc
    click.echo(f"{archive}: OK, attempt {manifest.get('attempt_id')}, {len(manifest['members'])} member(s) verified "
               f"(plus {MANIFEST})")


COMMANDS = (view, demo, bundle_group)
