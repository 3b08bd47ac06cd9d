"""``otel-inputs store …`` and ``otel-inputs purge``: a thin click layer over the store's lifecycle.

Every command works on the artifact store directly (its catalog is the authority on artifact
status); with ``--db`` the catalog's records are landed in DuckDB's ``agent_artifacts`` too, the
one-way copy SQL users query.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from otel_inputs import names
from otel_inputs.store import (
    ArtifactStore,
    PurgeReport,
    ReadbackError,
    RetentionPolicy,
    apply_retention,
    delete_run,
    purge,
    reconcile_store,
    revoke_source,
    store_status,
)
from otel_inputs.store.bucket import bucket_counts, bucket_of, sync_bucket
from otel_inputs.store.facts import SCOPE, StoreFacts, attach_facts, resend_facts

_console = Console(stderr=True)


def _progress() -> Progress:
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    console=_console, transient=True)


def _open_store(store: Path | None) -> ArtifactStore:
    root = store or (Path(os.environ[names.ENV_STORE]) if os.environ.get(names.ENV_STORE) else None)
    if root is None:
        raise click.UsageError(f"give --store DIR or set {names.ENV_STORE}")
    existing = ArtifactStore(root, create=False)
    if not existing.holds_records() and not existing.objects_dir.is_dir():
        raise click.ClickException(f"{root} is not an otel-inputs artifact store (no catalog)")
    return ArtifactStore(root)


def _land(db: Path | None, store: ArtifactStore, attempt_ids: list[str] | None = None) -> None:
    if db is None:
        return
    from otel_inputs.exporter._writer import DuckDBWriter

    records = store.attempts()
    if attempt_ids is not None:
        wanted = set(attempt_ids)
        records = [r for r in records if r.attempt_id in wanted]
    writer = DuckDBWriter(db, source_prefix="store-cli")
    outcome = writer.land_artifacts(records)
    if outcome.spilled or outcome.dropped:
        _console.print(f"[yellow]DuckDB busy: artifact status spooled for later ({db})[/yellow]")


class _Checked:
    """A log exporter that remembers whether any export failed (the SDK's processors only log it)."""

    def __init__(self, exporter: Any) -> None:
        self.exporter = exporter
        self.failed: str | None = None

    def export(self, batch: Any) -> Any:
        result = self.exporter.export(batch)
        if getattr(result, "name", "") != "SUCCESS":
            self.failed = f"the OTLP endpoint answered {getattr(result, 'name', result)}"
        return result

    def shutdown(self) -> None:
        self.exporter.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


def _facts_provider() -> tuple[Any, _Checked] | None:
    """A logger provider sending to the OTLP endpoint the agents use (``OTEL_EXPORTER_OTLP_[LOGS_]ENDPOINT``,
    ``..._PROTOCOL``, ``OTEL_RESOURCE_ATTRIBUTES`` naming the host), exporting each record at once; ``None``
    when no endpoint is configured."""
    env = os.environ
    if not (env.get("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT") or env.get("OTEL_EXPORTER_OTLP_ENDPOINT")):
        return None
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor
    from opentelemetry.sdk.resources import Resource

    protocol = env.get("OTEL_EXPORTER_OTLP_LOGS_PROTOCOL") or env.get("OTEL_EXPORTER_OTLP_PROTOCOL") or "http/protobuf"
    exporter_type: type[Any]  # the gRPC or the HTTP OTLPLogExporter
    try:
        if protocol == "grpc":
            from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter as GRPCLogExporter
            exporter_type = GRPCLogExporter
        else:
            from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter as HTTPLogExporter
            exporter_type = HTTPLogExporter
    except ImportError as exc:
        raise click.ClickException("an OTLP endpoint is configured but its exporter is not installed "
                                   f"(pip install opentelemetry-exporter-otlp): {exc}") from exc
    checked = _Checked(exporter_type())
    provider = LoggerProvider(resource=Resource.create())
    provider.add_log_record_processor(SimpleLogRecordProcessor(checked))  # type: ignore[arg-type]
    return provider, checked


@contextmanager
def _facts(store: ArtifactStore, done: str) -> Iterator[StoreFacts | None]:
    """The command's changes also leave as store facts (docs/wire.md) when an OTLP endpoint is configured,
    so fleet viewers learn them; when sending fails, say that the local change stands but fleet viewers
    do not know it yet, how to resend, and exit 1."""
    pipeline = _facts_provider()
    facts = None if pipeline is None else attach_facts(store, pipeline[0].get_logger(SCOPE), bootstrap=False)
    yield facts
    if pipeline is None:
        return
    provider, checked = pipeline
    provider.shutdown()
    if checked.failed:
        click.echo(f"{done} locally, but fleet viewers do not know it yet: sending its store facts failed "
                   f"({checked.failed}). Resend with: otel-inputs store facts --store {store.root}", err=True)
        raise SystemExit(1)


def _policy(budget: str | None, min_free: str | None, run_budget: str | None) -> RetentionPolicy:
    given = {names.ENV_STORE_BUDGET: budget, names.ENV_STORE_MIN_FREE: min_free, names.ENV_RUN_BUDGET: run_budget}
    try:  # a flag given wins over its variable
        return RetentionPolicy.from_env({**os.environ, **{k: v for k, v in given.items() if v}})
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from exc


_store_opt = click.option("--store", type=click.Path(file_okay=False, path_type=Path), default=None,
                          help=f"Artifact store directory (default: ${names.ENV_STORE}).")
_db_opt = click.option("--db", type=click.Path(dir_okay=False, path_type=Path), default=None,
                       help="Also land the changed artifact status in this DuckDB file.")
_limit_opts = [
    click.option("--budget", default=None, help="Snapshot byte budget, e.g. 2G (env OTEL_INPUTS_STORE_BUDGET)."),
    click.option("--min-free", default=None, help="Minimum free space on the store's filesystem, e.g. 5G."),
    click.option("--run-budget", default=None, help="Snapshot byte cap for any single run."),
]


def _with_limits(f):
    for opt in reversed(_limit_opts):
        f = opt(f)
    return f


@click.group("store")
def store_group() -> None:
    """Inspect and maintain the artifact store (usage, retention, verification, run deletion)."""


@store_group.command("status")
@_store_opt
@_with_limits
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
def status_cmd(store: Path | None, budget: str | None, min_free: str | None, run_budget: str | None,
               as_json: bool) -> None:
    """Usage against the budget, overall and per run."""
    s = _open_store(store)
    info = store_status(s, _policy(budget, min_free, run_budget))
    link = bucket_of(s)
    url = link.url() if link is not None else None
    if url is not None:  # only "uploaded" is in the bucket; every other state is local only
        info["bucket"] = {"url": url, **bucket_counts(s)}
    if as_json:
        click.echo(json.dumps(info, indent=2))
        return
    table = Table(title=f"artifact store {info['store']}")
    table.add_column("what")
    table.add_column("value", justify="right")
    for key in ("attempts", "objects", "object_bytes", "staging_bytes", "protected_bytes", "budget_bytes",
                "run_budget_bytes", "min_free_bytes", "free_bytes"):
        value = info[key]
        table.add_row(key.replace("_", " "), "not set" if value is None else f"{value:,}")
    Console().print(table)
    runs = Table(title="per run")
    runs.add_column("run")
    runs.add_column("snapshot bytes", justify="right")
    for run, used in info["runs"].items():
        runs.add_row(run, f"{used:,}")
    Console().print(runs)
    if "bucket" in info:
        bucket = Table(title=f"bucket {info['bucket']['url']}")
        bucket.add_column("objects")
        bucket.add_column("count", justify="right")
        for state, n in sorted(info["bucket"].items()):
            if state != "url":
                bucket.add_row(state.replace("_", " "), f"{n:,}")
        Console().print(bucket)


@store_group.command("gc")
@_store_opt
@_db_opt
@_with_limits
def gc_cmd(store: Path | None, db: Path | None, budget: str | None, min_free: str | None,
           run_budget: str | None) -> None:
    """Apply retention now: finish interrupted purges, then evict to the limits."""
    s = _open_store(store)
    policy = _policy(budget, min_free, run_budget)
    with _facts(s, "retention applied"):
        _gc(s, policy, db)


def _gc(s: ArtifactStore, policy: RetentionPolicy, db: Path | None) -> None:
    recon = reconcile_store(s)
    with _progress() as progress:
        task = progress.add_task("applying retention", total=None)
        report = apply_retention(s, policy, progress=lambda n: progress.advance(task, n))
    click.echo(f"evicted {report.evicted_items} items of {report.evicted_attempts} attempts; "
               f"deleted {report.deleted_objects} objects ({report.freed_bytes:,} bytes); "
               f"store now {report.total_bytes_after:,} bytes ({policy.describe()})")
    click.echo(f"reconciled: {recon}")
    link = bucket_of(s)
    if link is not None and link.remote() is not None:  # uploads an earlier process left queued (failed ones: store upload)
        _echo_sync(sync_bucket(s, retry_failed=False))
    if report.over_budget_after:
        click.echo(f"still over a limit: protected (running) snapshots hold {report.protected_bytes:,} bytes", err=True)
    _land(db, s)


def _echo_sync(report: Any) -> None:
    click.echo(f"bucket: uploaded {report.uploaded}, failed {len(report.failed or {})}, deleted {report.deleted}")
    for digest, why in sorted((report.failed or {}).items()):
        click.echo(f"  not uploaded {digest[:12]}: {why}", err=True)


@store_group.command("upload", help=f"Upload snapshot bytes not yet in the bucket (${names.ENV_OBJECTS_URL}, or "
                                    "the one the catalog recorded); delete the bucket's unreferenced objects.")
@_store_opt
@click.option("--no-retry-failed", is_flag=True, help="Leave uploads recorded as failed alone.")
def upload_cmd(store: Path | None, no_retry_failed: bool) -> None:
    s = _open_store(store)
    try:
        with _facts(s, "uploads recorded"):
            report = sync_bucket(s, retry_failed=not no_retry_failed)
    except RuntimeError as exc:
        raise click.ClickException(str(exc)) from exc
    _echo_sync(report)
    if report.failed:
        raise SystemExit(1)


@store_group.command("verify")
@_store_opt
def verify_cmd(store: Path | None) -> None:
    """Re-hash every object (and the bucket copy of any whose local copy is gone); report mismatches,
    missing bytes and orphans. Changes nothing."""
    s = _open_store(store)
    referenced: dict[str, list[str]] = {}
    with s.catalog.read() as con:
        bad_catalog = [r[0] for r in con.execute("PRAGMA integrity_check") if r[0] != "ok"]
    for record in s.attempts():
        for item in record.items:
            if item.artifact_status == "available" and isinstance(item.sha256, str):
                referenced.setdefault(item.sha256, []).append(f"{record.attempt_id}/{item.input_id}")
    objects = sorted(e.name for e in os.scandir(s.objects_dir) if not e.name.startswith('.'))
    mismatched, orphans = [], []
    with _progress() as progress:
        task = progress.add_task("re-hashing snapshots", total=len(objects))
        for name in objects:
            h = hashlib.sha256()
            try:
                fd = os.open(s.objects_dir / name, os.O_RDONLY | os.O_NOFOLLOW)
                with os.fdopen(fd, "rb") as fh:
                    for chunk in iter(lambda: fh.read(1 << 20), b""):
                        h.update(chunk)
            except OSError as exc:
                mismatched.append(f"{name}: unreadable ({exc.strerror})")
                progress.advance(task)
                continue
            if h.hexdigest() != name:
                mismatched.append(f"{name}: bytes do not match their name")
            if name not in referenced:
                orphans.append(name)
            progress.advance(task)
    present = set(objects)
    missing = sorted(d for d in referenced if d not in present)
    # A referenced object whose local copy is gone may still be in the bucket: re-hash that copy.
    link = bucket_of(s)
    in_bucket: list[str] = []
    if link is not None:
        in_bucket = [d for d, where in link.placements(missing).items() if where.in_bucket]
        for d in in_bucket:
            try:
                data = link.read(d, None)
            except ReadbackError as exc:
                mismatched.append(f"{d}: bucket copy unreadable ({exc})")
                continue
            if data is None or hashlib.sha256(data).hexdigest() != d:
                mismatched.append(f"{d}: bucket copy does not match its name")
    missing = [d for d in missing if d not in in_bucket]
    click.echo(f"objects: {len(objects)}, referenced: {len(referenced)}, mismatched: {len(mismatched)}, "
               f"missing: {len(missing)}, in the bucket only: {len(in_bucket)}, orphans: {len(orphans)}, "
               f"catalog problems: {len(bad_catalog)}")
    for line in mismatched:
        click.echo(f"MISMATCH {line}")
    for d in missing:
        click.echo(f"MISSING {d} (referenced by {', '.join(referenced[d][:3])})")
    for d in orphans:
        click.echo(f"ORPHAN {d}")
    for err in bad_catalog:
        click.echo(f"BAD-CATALOG {err}")
    if mismatched or missing or bad_catalog:
        raise SystemExit(1)


@store_group.command("delete-run")
@click.argument("run_id")
@_store_opt
@_db_opt
def delete_run_cmd(run_id: str, store: Path | None, db: Path | None) -> None:
    """Delete a run's snapshot bytes and store metadata (and its DuckDB rows with --db)."""
    s = _open_store(store)
    with _facts(s, f"run {run_id} deleted"):
        report = delete_run(s, run_id)
    _report(report)
    if db is not None:
        _delete_run_rows(db, run_id)


@store_group.command("revoke")
@click.argument("source_path")
@_store_opt
@click.option("--reason", default="", help="Why the source is revoked (kept in the revocation list).")
def revoke_cmd(source_path: str, store: Path | None, reason: str) -> None:
    """Revoke a source path: previews from it are refused even when the bytes still match."""
    s = _open_store(store)
    with _facts(s, f"{source_path} revoked"):
        recorded = revoke_source(s, source_path, reason)
        click.echo(f"revoked {recorded}")


@store_group.command("facts")
@_store_opt
def facts_cmd(store: Path | None) -> None:
    """Send the state now of everything the store holds as store facts (docs/wire.md) to the configured OTLP
    endpoint: a host's first facts, or after facts were lost on the way. Fleet viewers decide from them."""
    s = _open_store(store)
    if _facts_provider() is None:
        raise click.ClickException("no OTLP endpoint configured (set OTEL_EXPORTER_OTLP_ENDPOINT, as for the "
                                   "agents); nothing to send the facts to")
    with _facts(s, "nothing changed") as facts:
        assert facts is not None
        count = resend_facts(s, facts.logger)
        click.echo(f"sent {count} store facts of store {s.catalog.store_id()}")


@click.command("purge")
@click.option("--attempt", "attempts", multiple=True, help="Attempt id to purge (repeatable).")
@click.option("--run", "run_id", default=None, help="Purge every attempt of this run.")
@click.option("--source", "source_path", default=None, help="Purge every item captured from this path.")
@_store_opt
@_db_opt
def purge_cmd(attempts: tuple[str, ...], run_id: str | None, source_path: str | None, store: Path | None,
              db: Path | None) -> None:
    """Purge snapshot evidence (the purge record first, then bytes); metadata rows stay, marked purged."""
    if not attempts and run_id is None and source_path is None:
        raise click.UsageError("give --attempt ID, --run ID or --source PATH")
    s = _open_store(store)
    with _facts(s, "purge applied"):
        report = purge(s, attempt_ids=attempts, run_id=run_id, source_path=source_path)
    if report.purge_id is None:
        raise click.ClickException("nothing matched: no attempt or item was purged")
    _report(report)
    _land(db, s)


def _report(report: PurgeReport) -> None:
    click.echo(f"purge {report.purge_id}: {report.attempts} attempts, {report.items} items marked, "
               f"{report.deleted_objects} objects deleted, {report.deleted_attempts} attempt records deleted")


def _delete_run_rows(db: Path, run_id: str) -> None:
    from otel_inputs.exporter._db import connect_with_retry, file_lock

    with file_lock(db, exclusive=True, timeout_s=30):
        con = connect_with_retry(db, read_only=False)
        try:
            con.execute("BEGIN TRANSACTION")
            ids: list[Any] = [r[0] for r in con.execute(
                "SELECT attempt_id FROM agent_attempts WHERE run_id = ?", [run_id]).fetchall()]
            for table in ("agent_attempt_inputs", "agent_exchange_parts", "agent_attempt_steps"):
                con.execute(f"DELETE FROM {table} WHERE attempt_id IN "
                            "(SELECT attempt_id FROM agent_attempts WHERE run_id = ?)", [run_id])
            con.execute("DELETE FROM agent_artifacts WHERE run_id = ?", [run_id])
            con.execute("DELETE FROM agent_attempts WHERE run_id = ?", [run_id])
            # The raw spans carry the same content (task text, messages): they go too.
            con.execute('DELETE FROM otel_traces WHERE "SpanAttributes"[?] = ?', [names.RUN_ID, run_id])
            con.execute("COMMIT")
        finally:
            con.close()
    click.echo(f"deleted {len(ids)} attempt rows of run {run_id} from {db}")


COMMANDS = (store_group, purge_cmd)
