from __future__ import annotations

import json
import os
import time
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

from otel_inputs.exporter.cli import main
from otel_inputs.viewer._demo import record_demo


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory):
    out = tmp_path_factory.mktemp("demo")
    paths = record_demo(out, latency_s=0.0)
    for attempt_id in paths.attempt_ids.values():
        from otel_inputs import ArtifactStore

        ArtifactStore(paths.store_path).mark_terminal(attempt_id)
    past = time.time() - 60
    for o in (paths.store_path / "objects").iterdir():
        os.utime(o, (past, past), follow_symlinks=False)
    return paths


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.output


def test_status_reports_usage_per_run(demo) -> None:
    """`store status --json` reports object bytes and per-run usage of the real demo store."""
    code, out = run("store", "status", "--store", str(demo.store_path), "--json")
    info = json.loads(out)
    assert code == 0 and info["objects"] > 0 and info["object_bytes"] > 0
    assert any(run.startswith("demo-run-") for run in info["runs"])


def test_verify_clean_then_tampered(demo, tmp_path: Path) -> None:
    """`store verify` passes on an intact store and reports a tampered object (exit 1), changing nothing."""
    code, out = run("store", "verify", "--store", str(demo.store_path))
    assert code == 0 and "mismatched: 0" in out
    obj = next((demo.store_path / "objects").iterdir())
    original = obj.read_bytes()
    os.chmod(obj, 0o644)
    obj.write_bytes(b"tampered")
    try:
        code, out = run("store", "verify", "--store", str(demo.store_path))
        assert code == 1 and f"MISMATCH {obj.name}" in out
        assert obj.read_bytes() == b"tampered"
    finally:
        obj.write_bytes(original)


def test_gc_with_tiny_budget_lands_evictions_in_duckdb(tmp_path: Path) -> None:
    """`store gc --budget` evicts and, with --db, the artifact rows in DuckDB say evicted (disk_budget)."""
    paths = record_demo(tmp_path / "d", latency_s=0.0)
    from otel_inputs import ArtifactStore

    for a in paths.attempt_ids.values():
        ArtifactStore(paths.store_path).mark_terminal(a)
    past = time.time() - 60
    for o in (paths.store_path / "objects").iterdir():
        os.utime(o, (past, past), follow_symlinks=False)
    code, out = run("store", "gc", "--store", str(paths.store_path), "--budget", "1", "--db", str(paths.db_path))
    assert code == 0 and "evicted" in out
    con = duckdb.connect(str(paths.db_path), read_only=True)
    try:
        rows = con.execute("SELECT DISTINCT artifact_status, status_reason FROM agent_artifacts").fetchall()
        inputs = con.execute("SELECT count(*) FROM agent_attempt_inputs").fetchone()[0]
    finally:
        con.close()
    assert ("evicted", "disk_budget") in rows and inputs > 0  # input rows are never deleted


def test_purge_and_delete_run(tmp_path: Path) -> None:
    """`purge --attempt` refuses readback afterwards; `store delete-run --db` removes the run's rows."""
    paths = record_demo(tmp_path / "d", latency_s=0.0)
    from otel_inputs import ArtifactStore
    from otel_inputs.store import ReadbackError

    store = ArtifactStore(paths.store_path)
    attempt = paths.attempt_ids["build_initial"]
    item = store.attempt(attempt).items[0]
    code, out = run("purge", "--attempt", attempt, "--store", str(paths.store_path))
    assert code == 0 and "purge 1:" in out
    with pytest.raises(ReadbackError):
        store.read_input(attempt, item.input_id)
    code, out = run("purge", "--attempt", "no-such-attempt", "--store", str(paths.store_path))
    assert code != 0
    run_id = store.attempt(attempt).run_id
    con = duckdb.connect(str(paths.db_path), read_only=True)
    try:
        run_attempts = [r[0] for r in con.execute(
            "SELECT attempt_id FROM agent_attempts WHERE run_id = ?", [run_id]).fetchall()]
        parts_before = con.execute("SELECT count(*) FROM agent_exchange_parts WHERE list_contains(?, attempt_id)",
                                   [run_attempts]).fetchone()[0]
    finally:
        con.close()
    assert parts_before > 0
    code, out = run("store", "delete-run", run_id, "--store", str(paths.store_path), "--db", str(paths.db_path))
    assert code == 0
    con = duckdb.connect(str(paths.db_path), read_only=True)
    try:
        left = con.execute("SELECT count(*) FROM agent_attempts WHERE run_id = ?", [run_id]).fetchone()[0]
        parts_left = con.execute("SELECT count(*) FROM agent_exchange_parts WHERE list_contains(?, attempt_id)",
                                 [run_attempts]).fetchone()[0]
    finally:
        con.close()
    assert left == 0 and parts_left == 0 and store.attempt(attempt) is None


def test_missing_store_is_a_clear_error(tmp_path: Path) -> None:
    """Pointing a store command at a non-store directory fails with a clear message."""
    code, out = run("store", "status", "--store", str(tmp_path))
    assert code != 0 and "not an otel-inputs artifact store" in out


def test_long_demo_with_tiny_budget_stays_under_budget(tmp_path: Path) -> None:
    """A long demo session under a tiny disk budget ends under budget, with evictions visible in DuckDB."""
    from otel_inputs import ArtifactStore, RetentionPolicy
    from otel_inputs.store import apply_retention, store_usage

    budget = 48 * 1024
    paths = record_demo(tmp_path / "d", latency_s=0.0, extra_rounds=12,
                        retention=RetentionPolicy(budget_bytes=budget))
    store = ArtifactStore(paths.store_path)
    apply_retention(store, RetentionPolicy(budget_bytes=budget))  # what the background pass converges to
    assert store_usage(store).total_bytes <= budget
    code, _ = run("store", "gc", "--store", str(paths.store_path), "--budget", str(budget), "--db", str(paths.db_path))
    assert code == 0
    con = duckdb.connect(str(paths.db_path), read_only=True)
    try:
        evicted = con.execute("SELECT count(*) FROM agent_artifacts WHERE artifact_status = 'evicted' "
                              "AND status_reason = 'disk_budget'").fetchone()[0]
        inputs = con.execute("SELECT count(*) FROM agent_attempt_inputs").fetchone()[0]
        available = con.execute("SELECT count(*) FROM agent_artifacts WHERE artifact_status = 'available'").fetchone()[0]
    finally:
        con.close()
    assert evicted > 0 and available > 0 and inputs >= evicted


def test_store_facts_sends_the_state_of_everything_held(demo, monkeypatch: pytest.MonkeyPatch) -> None:
    """`store facts` sends, to the configured OTLP endpoint, one store fact per attempt, item and part the
    store holds (and its uploads), all under one fresh change number, and says how many; without an
    endpoint it refuses with the variable to set."""
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor

    from otel_inputs import ArtifactStore, names
    from otel_inputs.exporter import _store_cli

    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", raising=False)
    code, out = run("store", "facts", "--store", str(demo.store_path))
    assert code == 1 and "OTEL_EXPORTER_OTLP_ENDPOINT" in out
    sent = InMemoryLogRecordExporter()

    def provider():
        checked = _store_cli._Checked(sent)
        logger_provider = LoggerProvider()
        logger_provider.add_log_record_processor(SimpleLogRecordProcessor(checked))
        return logger_provider, checked

    monkeypatch.setattr(_store_cli, "_facts_provider", provider)
    code, out = run("store", "facts", "--store", str(demo.store_path))
    store = ArtifactStore(demo.store_path, create=False)
    facts = [r.log_record for r in sent.get_finished_logs()]
    assert code == 0 and out.startswith(f"sent {len(facts)} store facts of store {store.catalog.store_id()}")
    records = store.attempts()
    assert len(facts) >= len(records) + sum(len(r.items) for r in records)
    assert {f.event_name for f in facts} == {names.STORE_FACT_EVENT}
    assert len({f.attributes[names.STORE_SEQ] for f in facts}) == 1
    keys = {(f.attributes[names.ATTEMPT_ID], f.attributes[names.STORE_ITEM_KEY]) for f in facts}
    assert {(r.attempt_id, i.input_id) for r in records for i in r.items} <= keys
