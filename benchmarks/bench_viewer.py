"""Viewer query cost on a large DuckDB file: one attempt page, and the first page of a run's list.

    python -m benchmarks.bench_viewer [--quick] [--runs N] [--keep DIR] [--with-index]

The database is generated with DuckDB SQL itself (``range()`` + ``INSERT ... SELECT``) into a
``migrate()``'d file, so it has the exporter's tables and indexes: 1,000,000 attempts in 1,000
runs (100 sessions of 10 turns each), interleaved in time across runs as real traffic is, and
10 inputs per attempt (10,000,000 ``agent_attempt_inputs`` rows and as many ``agent_artifacts``
rows), plus two ``agent_exchange_parts`` rows per attempt.  Input and part rows are inserted in
time order with ``attempt_started_at`` filled from their attempt's start, as the exporter lands
them (spans arrive roughly in time order), so the viewer's ``attempt_started_at = <start> AND
attempt_id = ?`` lookup is pruned by DuckDB's row-group zone maps.  ``--quick`` uses 100,000
attempts / 1,000,000 inputs.  Each size is also measured at a tenth of it, to show how the
figures scale.

Measured, median over ``--runs`` random targets:

* attempt page — every query of one attempt page (``load_attempt``: the attempt, its inputs with
  store status, its session's turns, the previous turn's inputs) plus ``build_panel``, on an
  open read-only connection; and the same including opening and closing the connection, which is
  what each page refresh does.  Target: <= 100 ms median.
* on the schema exactly as ``migrate()`` creates it (no index on ``agent_attempt_inputs``: one
  cost ~28% of ingest), and with ``--with-index`` also with a single-column index on
  ``agent_attempt_inputs(attempt_id)`` added, for comparison.
* first page of a run's attempt list — ``list_attempts`` (50 rows + filtered total) and
  ``run_facets`` for the filter choices.  Target: <= 300 ms median.
"""

from __future__ import annotations

import argparse
import random
import shutil
import tempfile
import time
from pathlib import Path

import duckdb

from benchmarks._common import machine_line, median_ms, spread_ms
from otel_inputs.exporter._schema import migrate
from otel_inputs.viewer._panel import build_panel
from otel_inputs.viewer._queries import list_attempts, load_attempt, read_only, run_facets

ATTEMPTS_PER_RUN = 1000
TURNS_PER_SESSION = 10
INPUTS_PER_ATTEMPT = 10
BASE_TS = "TIMESTAMP_NS '2026-01-01 00:00:00'"
PROPOSED_INDEX = "bench_inputs_attempt"
"""A single-column index on agent_attempt_inputs(attempt_id): DuckDB cannot use the composite
(attempt_id, seq) index for an attempt_id lookup, so the benchmark also measures with this one."""


def generate(db_path: Path, attempts: int) -> float:
    """Write ``attempts`` attempts and 10x inputs/artifacts with SQL; return seconds taken."""
    runs = max(1, attempts // ATTEMPTS_PER_RUN)
    t0 = time.perf_counter()
    con = duckdb.connect(str(db_path))
    try:
        migrate(con)
        con.execute(
            f"""
            INSERT INTO agent_attempts (attempt_id, run_id, session_id, phase, agent_name, provider_name,
                request_model, task_prompt, task_source_kind, task_source_path, task_size_bytes, task_sha256,
                send_kind, turn_index, previous_turn_attempt_id, retry_of_attempt_id, system_prompt, user_prompt,
                input_packet_version, input_coverage, declared_input_count, captured_input_count,
                omitted_input_count, item_count, capture_decision, started_at, ended_at, status, service_name,
                source_format)
            SELECT md5(i::VARCHAR), 'run-' || r, 'run-' || r || '-s' || (k // {TURNS_PER_SESSION}),
                CASE WHEN k % 3 = 0 THEN 'plan' ELSE 'build' END, 'agent-' || (r % 7), 'anthropic', 'model-1',
                'Task ' || r || ': ' || repeat('implement the thing carefully. ', 6), 'prompt_file',
                '/work/tasks/' || r || '.md', 200, sha256('task' || r),
                CASE WHEN t = 1 THEN 'initial' WHEN t % 2 = 0 THEN 'parse_retry' ELSE 'gate_retry' END, t,
                CASE WHEN t > 1 THEN md5((i - {runs})::VARCHAR) END,
                CASE WHEN t > 1 THEN md5((i - {runs})::VARCHAR) END,
                'You are a careful engineer.', 'Turn ' || t || ' of ' || md5(i::VARCHAR) || repeat(' context', 40),
                1, CASE WHEN i % 50 = 0 THEN 'partial' ELSE 'complete' END, {INPUTS_PER_ATTEMPT},
                {INPUTS_PER_ATTEMPT}, 0, {INPUTS_PER_ATTEMPT}, 'admitted',
                {BASE_TS} + to_seconds(i::BIGINT), {BASE_TS} + to_seconds(i::BIGINT) + INTERVAL 20 SECOND,
                'ok', 'bench', 'otel_inputs'
            FROM (SELECT i, i % {runs} AS r, i // {runs} AS k, (i // {runs}) % {TURNS_PER_SESSION} + 1 AS t
                  FROM range({attempts}) tbl(i))
            """
        )
        con.execute(
            f"""
            INSERT INTO agent_attempt_inputs (input_id, attempt_id, seq, label, source_kind, delivery_mode,
                source_path, snapshot_ref, media_type, preview_kind, size_bytes, sha256, capture_status,
                artifact_status, detail, captured_at, attempt_started_at)
            SELECT md5(i::VARCHAR) || '-' || s, md5(i::VARCHAR), s, 'file-' || s || '.md',
                CASE WHEN s = 0 THEN 'prompt_file' ELSE 'context_handoff' END,
                CASE WHEN s = 0 THEN 'inline' ELSE 'path_reference' END,
                '/work/handoff/' || (i % {max(1, attempts // ATTEMPTS_PER_RUN)}) || '/file-' || s || '.md',
                'sha256:' || sha256('c' || (i // 3) || '-' || s), 'text/markdown', 'text', 1000 + s,
                sha256('c' || (i // 3) || '-' || s), 'captured', 'available', NULL,
                {BASE_TS} + to_seconds(i::BIGINT) + INTERVAL 1 SECOND, {BASE_TS} + to_seconds(i::BIGINT)
            FROM range({attempts}) a(i), range({INPUTS_PER_ATTEMPT}) b(s)
            ORDER BY i, s
            """
        )
        con.execute(
            f"""
            INSERT INTO agent_exchange_parts (attempt_id, part_name, capture, reason, dispatch, ref, sha256,
                size_bytes, persistence, detail, recorded_at, attempt_started_at)
            SELECT md5(i::VARCHAR), CASE WHEN p = 0 THEN 'logical_request' ELSE 'observable_output' END,
                CASE WHEN i % 41 = 0 AND p = 1 THEN 'not_captured' ELSE 'captured' END,
                CASE WHEN i % 41 = 0 AND p = 1 THEN 'capacity_exceeded' END,
                CASE WHEN p = 0 THEN 'dispatched' ELSE 'unknown' END,
                'part:' || sha256(md5(i::VARCHAR)) || '/' || p, sha256('p' || i || '-' || p), 2000 + p, 'queued',
                NULL, {BASE_TS} + to_seconds(i::BIGINT) + to_seconds(p * 10), {BASE_TS} + to_seconds(i::BIGINT)
            FROM range({attempts}) a(i), range(2) b(p)
            ORDER BY i, p
            """
        )
        con.execute(
            f"""
            INSERT INTO agent_artifacts (attempt_id, input_id, run_id, seq, sha256, size_bytes, snapshot_ref,
                media_type, capture_status, artifact_status, status_reason, captured_at, updated_at)
            SELECT md5(i::VARCHAR), md5(i::VARCHAR) || '-' || s, 'run-' || (i % {runs}), s,
                sha256('c' || (i // 3) || '-' || s), 1000 + s, 'sha256:' || sha256('c' || (i // 3) || '-' || s),
                'text/markdown', 'captured', CASE WHEN i % 97 = 0 THEN 'evicted' ELSE 'available' END,
                CASE WHEN i % 97 = 0 THEN 'disk_budget' END, {BASE_TS} + to_seconds(i::BIGINT), now()
            FROM range({attempts}) a(i), range({INPUTS_PER_ATTEMPT}) b(s)
            """
        )
        con.execute("CHECKPOINT")
    finally:
        con.close()
    return time.perf_counter() - t0


STEPS_DDL = """
CREATE TABLE IF NOT EXISTS agent_attempt_steps (
    attempt_id VARCHAR NOT NULL, span_id VARCHAR NOT NULL, trace_id VARCHAR, parent_span_id VARCHAR,
    seq INTEGER, step_kind VARCHAR, operation_name VARCHAR, span_name VARCHAR, provider_name VARCHAR,
    request_model VARCHAR, response_model VARCHAR, started_at TIMESTAMP_NS, ended_at TIMESTAMP_NS,
    input_tokens BIGINT, output_tokens BIGINT, tool_name VARCHAR, tool_call_id VARCHAR,
    tool_arguments VARCHAR, status VARCHAR, attempt_started_at TIMESTAMP_NS)
"""
"""Contract C1's table, created here only while the projection's migration 11 is not applied."""
WIDE_ITEMS = 100
STEPS_PER_ATTEMPT = 3


def wide_attempt_index(attempts: int) -> int:
    """The attempt given 100 items (the page the issue's targets are set on)."""
    return attempts // 2


def add_extras(db_path: Path, attempts: int) -> float:
    """Steps for every attempt (a model call and two tool calls, C1) and one 100-item attempt."""
    t0 = time.perf_counter()
    runs = max(1, attempts // ATTEMPTS_PER_RUN)
    con = duckdb.connect(str(db_path))
    try:
        migrate(con)  # a cached file from an older checkout is brought up to this schema
        con.execute("CREATE TABLE IF NOT EXISTS bench_extras (name VARCHAR)")
        if con.execute("SELECT count(*) FROM bench_extras").fetchone()[0]:
            return 0.0
        con.execute(STEPS_DDL)
        con.execute(
            f"""
            INSERT INTO agent_attempt_steps (attempt_id, span_id, trace_id, seq, step_kind, operation_name,
                span_name, provider_name, request_model, started_at, ended_at, input_tokens, output_tokens,
                tool_name, tool_call_id, tool_arguments, status, attempt_started_at)
            SELECT md5(i::VARCHAR), md5(i::VARCHAR || '-' || s), md5(i::VARCHAR), s,
                CASE WHEN s = 0 THEN 'model_call' ELSE 'tool_call' END,
                CASE WHEN s = 0 THEN 'chat' ELSE 'execute_tool' END,
                CASE WHEN s = 0 THEN 'chat model-1' ELSE 'execute_tool read_file' END, 'anthropic',
                CASE WHEN s = 0 THEN 'model-1' END,
                {BASE_TS} + to_seconds(i::BIGINT) + to_seconds(s * 2),
                {BASE_TS} + to_seconds(i::BIGINT) + to_seconds(s * 2 + 1),
                CASE WHEN s = 0 THEN 1200 END, CASE WHEN s = 0 THEN 300 END,
                CASE WHEN s > 0 THEN 'read_file' END, CASE WHEN s > 0 THEN 'call-' || s END,
                CASE WHEN s > 0 THEN '{{"path": "/work/handoff/' || (i % {runs}) || '/file-' || s || '.md"}}' END,
                'ok', {BASE_TS} + to_seconds(i::BIGINT)
            FROM range({attempts}) a(i), range({STEPS_PER_ATTEMPT}) b(s)
            ORDER BY i, s
            """
        )
        w = wide_attempt_index(attempts)
        con.execute(
            f"""
            INSERT INTO agent_attempt_inputs (input_id, attempt_id, seq, label, source_kind, delivery_mode,
                source_path, snapshot_ref, media_type, preview_kind, size_bytes, sha256, capture_status,
                artifact_status, detail, captured_at, attempt_started_at)
            SELECT md5({w}::VARCHAR) || '-' || s, md5({w}::VARCHAR), s, 'file-' || s || '.md', 'context_handoff',
                'path_reference', '/work/handoff/{w % runs}/file-' || s || '.md',
                'sha256:' || sha256('wide-' || s), 'text/markdown', 'text', 1000 + s, sha256('wide-' || s),
                'captured', 'available', NULL, {BASE_TS} + to_seconds({w}::BIGINT) + INTERVAL 1 SECOND,
                {BASE_TS} + to_seconds({w}::BIGINT)
            FROM range({INPUTS_PER_ATTEMPT}, {WIDE_ITEMS}) b(s)
            """
        )
        con.execute(
            f"""
            INSERT INTO agent_artifacts (attempt_id, input_id, run_id, seq, sha256, size_bytes, snapshot_ref,
                media_type, capture_status, artifact_status, status_reason, captured_at, updated_at)
            SELECT md5({w}::VARCHAR), md5({w}::VARCHAR) || '-' || s, 'run-{w % runs}', s, sha256('wide-' || s),
                1000 + s, 'sha256:' || sha256('wide-' || s), 'text/markdown', 'captured', 'available', NULL,
                {BASE_TS} + to_seconds({w}::BIGINT), now()
            FROM range({INPUTS_PER_ATTEMPT}, {WIDE_ITEMS}) b(s)
            """
        )
        con.execute(f"UPDATE agent_attempts SET item_count = {WIDE_ITEMS}, declared_input_count = {WIDE_ITEMS}, "
                    f"captured_input_count = {WIDE_ITEMS} WHERE attempt_id = md5({w}::VARCHAR)")
        con.execute("INSERT INTO bench_extras VALUES ('steps+wide')")
        con.execute("CHECKPOINT")
    finally:
        con.close()
    return time.perf_counter() - t0


def cached_database(cache: Path, attempts: int) -> Path:
    """The generated database of ``attempts`` attempts, built once and kept in ``cache``."""
    cache.mkdir(parents=True, exist_ok=True)
    db = cache / f"viewer-{attempts}.duckdb"
    done = cache / f"viewer-{attempts}.done"
    if not done.exists():
        if db.exists():
            db.unlink()
        gen_s = generate(db, attempts)
        print(f"  generated {attempts:,} attempts / {attempts * INPUTS_PER_ATTEMPT:,} inputs in {gen_s:.1f} s")
        done.write_text("ok\n")
    extra_s = add_extras(db, attempts)
    if extra_s:
        print(f"  added {attempts * STEPS_PER_ATTEMPT:,} steps and a {WIDE_ITEMS}-item attempt in {extra_s:.1f} s")
    return db


def _attempt_page(con: duckdb.DuckDBPyConnection, attempt_id: str) -> None:
    bundle = load_attempt(con, attempt_id)
    assert bundle is not None and len(bundle.inputs) == INPUTS_PER_ATTEMPT and len(bundle.parts) == 2
    build_panel(bundle)


def _list_page(con: duckdb.DuckDBPyConnection, run_id: str) -> None:
    page = list_attempts(con, run_id, limit=50)
    assert page.total > 0 and page.rows
    run_facets(con, run_id)


def measure(db_path: Path, attempts: int, runs: int, seed: int = 7) -> dict[str, object]:
    rng = random.Random(seed)
    targets = [rng.randrange(attempts) for _ in range(runs)]
    n_runs = max(1, attempts // ATTEMPTS_PER_RUN)
    ids = []
    with read_only(db_path) as con:
        for i in targets:
            ids.append(con.execute("SELECT md5(?::VARCHAR)", [str(i)]).fetchone()[0])
        _attempt_page(con, ids[0])  # warm-up
        page_open: list[float] = []
        for a in ids:
            t0 = time.perf_counter()
            _attempt_page(con, a)
            page_open.append(time.perf_counter() - t0)
        run_ids = [f"run-{rng.randrange(n_runs)}" for _ in range(runs)]
        _list_page(con, run_ids[0])
        lists: list[float] = []
        for r in run_ids:
            t0 = time.perf_counter()
            _list_page(con, r)
            lists.append(time.perf_counter() - t0)
    page_refresh: list[float] = []
    for a in ids:
        t0 = time.perf_counter()
        with read_only(db_path) as con:
            _attempt_page(con, a)
        page_refresh.append(time.perf_counter() - t0)
    return {"attempts": attempts, "page": page_open, "refresh": page_refresh, "list": lists}


def main(argv: list[str] | None = None) -> dict[str, object]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="100,000 attempts / 1,000,000 inputs")
    ap.add_argument("--runs", type=int, default=30, help="random targets per figure")
    ap.add_argument("--keep", type=Path, default=None, help="keep the generated databases in this folder")
    ap.add_argument("--with-index", action="store_true",
                    help="also measure with an index on agent_attempt_inputs(attempt_id), for comparison")
    args = ap.parse_args(argv)
    full = 100_000 if args.quick else 1_000_000
    sizes = [full // 10, full]
    work = args.keep or Path(tempfile.mkdtemp(prefix="bench-viewer-"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"viewer query benchmark — {machine_line()}")
    results: list[dict[str, object]] = []
    try:
        for n in sizes:
            db = work / f"viewer-{n}.duckdb"
            if db.exists():
                db.unlink()
            gen_s = generate(db, n)
            size_mib = db.stat().st_size / 2**20
            print(f"  generated {n:,} attempts / {n * INPUTS_PER_ATTEMPT:,} inputs in {gen_s:.1f} s ({size_mib:,.0f} MiB)")
            results.append(dict(measure(db, n, args.runs), variant="as migrated"))
            if not args.with_index:
                continue
            t0 = time.perf_counter()
            con = duckdb.connect(str(db))
            con.execute(f"CREATE INDEX {PROPOSED_INDEX} ON agent_attempt_inputs (attempt_id)")
            con.close()
            print(f"  built the proposed index on {n * INPUTS_PER_ATTEMPT:,} input rows in {time.perf_counter() - t0:.1f} s")
            results.append(dict(measure(db, n, args.runs), variant="+ inputs(attempt_id) index"))
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    print()
    print(f"{'attempts':>10} {'inputs':>11} {'schema':>27} | {'attempt page ms':>15} {'(spread)':>12} | "
          f"{'+ open/close ms':>15} | {'run list 1st page ms':>20} {'(spread)':>12}")
    for r in results:
        n = int(r["attempts"])  # type: ignore[arg-type]
        print(f"{n:>10,} {n * INPUTS_PER_ATTEMPT:>11,} {r['variant']:>27} | {median_ms(r['page']):>15.1f} "
              f"{spread_ms(r['page']):>12} | {median_ms(r['refresh']):>15.1f} | "
              f"{median_ms(r['list']):>20.1f} {spread_ms(r['list']):>12}")
    summary: dict[str, object] = {}
    for variant in ("as migrated", "+ inputs(attempt_id) index"):
        if not any(r["variant"] == variant for r in results):
            continue
        small, big = [r for r in results if r["variant"] == variant]
        for key, name in (("page", "attempt page"), ("refresh", "page + open/close"), ("list", "run list first page")):
            ratio = median_ms(big[key]) / max(median_ms(small[key]), 1e-9)  # type: ignore[arg-type]
            print(f"  [{variant}] scaling x10 data: {name} median x{ratio:.2f}")
        page = median_ms(big["page"])  # type: ignore[arg-type]
        refresh = median_ms(big["refresh"])  # type: ignore[arg-type]
        lst = median_ms(big["list"])  # type: ignore[arg-type]
        print(f"  [{variant}] target attempt page <= 100 ms: {page:.1f} ms ({'met' if page <= 100 else 'MISSED'}); "
              f"with open/close {refresh:.1f} ms ({'met' if refresh <= 100 else 'MISSED'}); "
              f"run list first page <= 300 ms: {lst:.1f} ms ({'met' if lst <= 300 else 'MISSED'})")
        summary[variant] = {"page_ms": page, "refresh_ms": refresh, "list_ms": lst}
    return summary


if __name__ == "__main__":
    main()
