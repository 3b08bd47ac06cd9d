"""``otel-inputs store …`` and ``otel-inputs purge``: a thin click layer over the store's lifecycle.

Every command works on the artifact store directly (its catalog is the authority on artifact
status); with ``--db`` the catalog's records are landed in DuckDB's ``agent_artifacts`` too, the
one-way copy SQL users query.
"""

from __future__ import annotations

import hashlib
import json
import os
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
from otel_inputs.store.bucket import CATALOG_KEY, PublishError, bucket_counts, bucket_of, publish_now, sync_bucket, utc_text

_console = Console(stderr=True)


def _progress() -> Progress:
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    console=_console, transient=True)


def _open_store(store: Path | None) -> ArtifactStore:
    root = store or (Path(os.environ[names.ENV_STORE]) if os.environ.get(names.ENV_STORE) else None)
    if root is None:
        raise click.UsageError(f"give --store DIR or set {names.ENV_STORE}")
    store = ArtifactStore(root, create=False)
    if not store.holds_records() and not store.objects_dir.is_dir():
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
    outcome = DuckDBWriter(db, source_prefix="store-cli").land_artifacts(records)
    if outcome.spilled or outcome.dropped:
        _console.print(f"[yellow]DuckDB busy: artifact status spooled for later ({db})[/yellow]")


def _publish(store: ArtifactStore, done: str) -> None:
    """Publish the catalog for fleet viewers after a change to what may be read; when that fails say
    plainly that the local change (``done``) stands but the fleet copy is stale, and exit non-zero."""
    try:
        published = publish_now(store)
    except PublishError as exc:
        click.echo(f"{done} locally, but the fleet copy of the catalog is stale: publishing it failed ({exc}). "
                   f"Fleet viewers still see the previous copy. Retry with: otel-inputs store publish "
                   f"--store {store.root}", err=True)
        raise SystemExit(1) from exc
    if published is not None:
        url, _ = published
        click.echo(f"catalog published to {url}/{CATALOG_KEY}")


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
    _publish(s, "retention applied")


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
    in_bucket = [] if link is None else [d for d, where in link.placements(missing).items() if where.in_bucket]
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
    report = delete_run(s, run_id)
    _report(report)
    if db is not None:
        _delete_run_rows(db, run_id)
    _publish(s, f"run {run_id} deleted")


@store_group.command("revoke")
@click.argument("source_path")
@_store_opt
@click.option("--reason", default="", help="Why the source is revoked (kept in the revocation list).")
def revoke_cmd(source_path: str, store: Path | None, reason: str) -> None:
    """Revoke a source path: previews from it are refused even when the bytes still match."""
    s = _open_store(store)
    recorded = revoke_source(s, source_path, reason)
    click.echo(f"revoked {recorded}")
    _publish(s, f"{recorded} revoked")


@store_group.command("publish")
@_store_opt
def publish_cmd(store: Path | None) -> None:
    """Publish a read-only copy of the catalog beside the store's objects in the bucket (what fleet
    viewers check previews against); the background uploader also does this every few seconds."""
    s = _open_store(store)
    try:
        published = publish_now(s)
    except PublishError as exc:
        raise click.ClickException(f"catalog not published: {exc}") from exc
    if published is None:
        raise click.ClickException(f"no bucket configured (set {names.ENV_OBJECTS_URL}); nothing to publish to")
    url, at_ns = published
    click.echo(f"catalog published to {url}/{CATALOG_KEY} (as of {utc_text(at_ns)})")


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
    report = purge(s, attempt_ids=attempts, run_id=run_id, source_path=source_path)
    if report.purge_id is None:
        raise click.ClickException("nothing matched: no attempt or item was purged")
    _report(report)
    _land(db, s)
    _publish(s, f"purge {report.purge_id} applied")


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
