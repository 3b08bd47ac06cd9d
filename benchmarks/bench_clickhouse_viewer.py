"""The viewer's attempt page on ClickHouse (chdb) against DuckDB, in the same run, at N attempts.

    python -m benchmarks.bench_clickhouse_viewer [--attempts N] [--runs R] [--dir DIR]
                                                 [--baseline-sql DIR] [--block B] [--keep DIR]

The same logical corpus on each side, generated inside each engine: N traces of a packet attempt
(3 input events, a session of 10 turns, run ``run-1``), an ordinary span under it, a chat step
under that (its messages on the span) and a tool step under the attempt.

* ClickHouse: the spans go into the stock ``otel_traces`` table (``INSERT ... SELECT FROM numbers()``,
  as in ``bench_clickhouse_views``) in blocks of ``--block`` attempts, as a Collector's batches
  arrive, so the projection's materialized views derive and settle them as in production;
* DuckDB: the exporter's tables (``agent_attempts``, ``agent_attempt_inputs``, ``agent_attempt_steps``)
  receive the rows the exporter derives from those spans (``INSERT ... SELECT FROM range()``).

Each side runs in a process of its own (so its peak RSS is its own) and reports its load time, its
size on disk, its peak RSS and, over ``--runs`` random attempts (the same ones on each side):
``load_attempt`` — every query of one attempt page (attempt, inputs, parts, session turns, previous
turn, steps, messages, retry operation) through :mod:`otel_inputs.viewer._backend` — p50 and p95,
cold (the attempt's first page, ClickHouse's mark, uncompressed and index caches dropped before it;
DuckDB opens a new connection for every page anyway; the OS page cache is not dropped) and warm (the
same page again), with each query's p50.  ``--baseline-sql`` runs a third process with an older
``clickhouse/`` directory (e.g. ``git archive`` of a previous commit) for a before/after in the same run.
``--keep DIR`` keeps each side's data under ``DIR`` and, when it is already there (a previous run with
the same ``--attempts``), times the pages without loading again: a load that takes an hour runs once.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import duckdb

from benchmarks._common import machine_line
from benchmarks.bench_clickhouse_views import _INSERT, SQL_DIR, _SQL_FILES, statements
from otel_inputs.exporter import migrate_file
from otel_inputs.viewer._backend import Backend, ChdbBackend, chdb_session, close_chdb_sessions, read_only
from otel_inputs.viewer._queries import load_attempt

ROOT = Path(__file__).resolve().parents[1]

_DUCK_ATTEMPTS = """
INSERT INTO agent_attempts (attempt_id, run_id, session_id, phase, agent_name, provider_name, request_model,
    send_kind, turn_index, input_packet_version, input_coverage, item_count, started_at, ended_at, status,
    trace_id, span_id, service_name, source_format, operation_name, step_kind, span_name,
    step_user_prompt, step_input_messages_json, step_messages_span_id)
SELECT 'att-' || i, 'run-1', 's-' || (i // 10), NULL, NULL, NULL, NULL, NULL, NULL, 1, 'complete', 3,
    make_timestamp_ns(1796083200000000000 + i * 10000000), make_timestamp_ns(1796083200000000000 + i * 10000000 + 5000000),
    'ok', hex(i), hex(i) || '-0', 'svc', 'otel_inputs', 'invoke_agent', 'agent', 'invoke_agent',
    'ask ' || i, '[{{"role":"user","parts":[{{"type":"text","content":"ask ' || i || '"}}]}}]', hex(i) || '-2'
FROM range({start}, {stop}) t(i)
"""
_DUCK_INPUTS = """
INSERT INTO agent_attempt_inputs (input_id, attempt_id, seq, label, captured_at, attempt_started_at)
SELECT 'in-' || s, 'att-' || i, s, 'f.py', make_timestamp_ns(1796083200000000000 + i * 10000000),
    make_timestamp_ns(1796083200000000000 + i * 10000000)
FROM range({start}, {stop}) a(i), range(3) b(s) ORDER BY i, s
"""
_DUCK_STEPS = """
INSERT INTO agent_attempt_steps (attempt_id, span_id, trace_id, parent_span_id, seq, step_kind, operation_name,
    span_name, started_at, ended_at, tool_name, status, attempt_started_at)
SELECT 'att-' || i, hex(i) || '-' || k, hex(i), CASE WHEN k = 2 THEN hex(i) || '-1' ELSE hex(i) || '-0' END,
    CASE WHEN k = 2 THEN 0 ELSE 1 END, CASE WHEN k = 2 THEN 'model_call' ELSE 'tool_call' END,
    CASE WHEN k = 2 THEN 'chat' ELSE 'execute_tool' END, CASE WHEN k = 2 THEN 'chat' ELSE 'execute_tool' END,
    make_timestamp_ns(1796083200000000000 + i * 10000000 + k * 1000000),
    make_timestamp_ns(1796083200000000000 + i * 10000000 + k * 1000000 + 5000000 - k * 1000000),
    CASE WHEN k = 3 THEN 'read' END, 'ok', make_timestamp_ns(1796083200000000000 + i * 10000000)
FROM range({start}, {stop}) a(i), (VALUES (2), (3)) b(k) ORDER BY i, k
"""
# The session of ten turns: the ClickHouse generator's packet spans carry it as gen_ai.conversation.id.
_SESSION = "'otel_inputs.run.id', 'run-1', 'gen_ai.conversation.id', concat('s-', toString(intDiv(number, 10)))"
_DUCK_BLOCK = 2_000_000  # attempts per DuckDB statement: bounds the sort of the input and step rows


def _duckdb(path: Path, n: int, block: int) -> float:
    t0 = time.perf_counter()
    migrate_file(path)
    con = duckdb.connect(str(path))
    try:
        for start in range(0, n, _DUCK_BLOCK):
            for sql in (_DUCK_ATTEMPTS, _DUCK_INPUTS, _DUCK_STEPS):
                con.execute(sql.format(start=start, stop=min(n, start + _DUCK_BLOCK)))
        con.execute("CHECKPOINT")
    finally:
        con.close()
    return time.perf_counter() - t0


def _clickhouse(path: Path, n: int, block: int, sql_dir: Path) -> float:
    sess = chdb_session(path)
    sess.query("CREATE DATABASE otel")
    sess.query("USE otel")
    for name in _SQL_FILES:
        for stmt in statements(sql_dir / name):
            sess.query(stmt)
    if "otel_inputs_trace_keys" not in sess.query("SHOW TABLES", "TSV").bytes().decode().split():
        # A baseline schema from before the key table: the viewer's look-up by id, as it was then
        # (the GenAI span table's skip indexes), under the name this viewer reads.
        sess.query("CREATE VIEW otel_inputs_trace_keys AS SELECT 'attempt' AS kind, attempt_id AS key, trace_id "
                   "FROM otel_inputs_genai_spans UNION ALL SELECT 'session', assumeNotNull(session_id), trace_id "
                   "FROM otel_inputs_genai_spans WHERE session_id IS NOT NULL")
    t0 = time.perf_counter()
    # Inserted in blocks, as a Collector's batches arrive; each block settles the traces it touches.
    for start in range(0, n, block):
        sql = _INSERT.format(n=min(block, n - start)).replace("'otel_inputs.run.id', 'run-1'", _SESSION)
        sess.query(sql.replace("FROM numbers(", f"FROM numbers({start}, "))
    return time.perf_counter() - t0


class _Timed(Backend):
    """A backend that records how long each of its queries took, by the table the query reads."""

    def __init__(self, inner: Backend) -> None:
        self.inner, self.kind, self.label = inner, inner.kind, inner.label
        self.times: dict[str, float] = defaultdict(float)

    def query(self, sql: str, params: Any = ()) -> Any:
        t0 = time.perf_counter()
        out = self.inner.query(sql, params)
        dt = time.perf_counter() - t0
        found = re.search(r"FROM (agent_\w+)", sql)
        table = found.group(1) if found else "other"
        key = "session_turns" if "session_id = ?" in sql else table
        self.times[key] += dt
        return out

    def tables(self) -> frozenset[str]:
        return self.inner.tables()

    def by_attempt(self, *args: Any) -> Any:
        return self.inner.by_attempt(*args)

    def in_list(self, column: str) -> str:
        return self.inner.in_list(column)

    def distinct_join(self, column: str) -> str:
        return self.inner.distinct_join(column)

    def session_scope(self, session_id: str) -> Any:
        return self.inner.session_scope(session_id)


def _check(b: Any, i: int) -> None:
    assert b is not None and len(b.inputs) == 3 and b.steps is not None and len(b.steps) == 2
    assert b.messages is not None and b.messages.user_prompt == f"ask {i}" and len(b.session_turns) == 10


def _cpu() -> float:
    """This process's CPU seconds, every thread (the engines' too): less swayed by a busy machine than wall time."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _pct(samples: list[float], q: float) -> float:
    s = sorted(samples)
    return s[min(len(s) - 1, round(q * (len(s) - 1)))] * 1000.0


def side(kind: str, n: int, runs: int, block: int, work: Path, sql_dir: Path, seed: int) -> dict[str, Any]:
    """Load one engine, then time ``runs`` attempt pages cold and warm; a dict for the parent."""
    targets = random.Random(seed).sample(range(n), runs)
    cold, warm, warm_cpu = [], [], []
    per_query: dict[str, list[float]] = defaultdict(list)

    def page(backend: Any, i: int, bucket: list[float]) -> None:
        t = _Timed(backend)
        c0, t0 = _cpu(), time.perf_counter()
        b = load_attempt(t, f"att-{i}")
        bucket.append(time.perf_counter() - t0)
        if bucket is warm:
            warm_cpu.append(_cpu() - c0)
        _check(b, i)
        if bucket is warm:
            for k, v in t.times.items():
                per_query[k].append(v)

    loaded = work / "loaded.json"  # --keep: the data of an earlier run with the same size
    earlier = json.loads(loaded.read_text()) if loaded.exists() else None
    if earlier is not None and earlier["attempts"] != n:
        raise SystemExit(f"{work} holds {earlier['attempts']} attempts, not {n}")
    if kind == "duckdb":
        path = work / "v.duckdb"
        load = earlier["load_s"] if earlier else _duckdb(path, n, block)
        for i in targets:
            for bucket in (cold, warm):
                with read_only(path) as d:
                    page(d, i, bucket)
        size = path.stat().st_size
    else:
        path = work / "chdb"
        path.mkdir(exist_ok=True)
        load = earlier["load_s"] if earlier else _clickhouse(path, n, block, sql_dir)
        sess = chdb_session(path)
        ch = ChdbBackend(str(path), "otel")
        for i in targets:
            for cmd in ("SYSTEM DROP MARK CACHE", "SYSTEM DROP UNCOMPRESSED CACHE", "SYSTEM DROP INDEX MARK CACHE",
                        "SYSTEM DROP INDEX UNCOMPRESSED CACHE"):
                sess.query(cmd)
            for bucket in (cold, warm):
                page(ch, i, bucket)
        close_chdb_sessions()
        size = sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
    if earlier is None:
        loaded.write_text(json.dumps({"attempts": n, "load_s": load}))
    return {"kind": kind, "attempts": n, "load_s": load, "disk_bytes": size,
            "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
            "cold_p50": _pct(cold, 0.5), "cold_p95": _pct(cold, 0.95),
            "warm_p50": _pct(warm, 0.5), "warm_p95": _pct(warm, 0.95), "warm_cpu_p50": _pct(warm_cpu, 0.5),
            "queries_warm_p50": {k: statistics.median(v) * 1000.0 for k, v in sorted(per_query.items())}}


def _run_side(kind: str, args: argparse.Namespace, sql_dir: Path, base: Path) -> dict[str, Any]:
    if args.keep is not None:
        work = args.keep / (kind if sql_dir == SQL_DIR else f"{kind}-baseline")
        work.mkdir(parents=True, exist_ok=True)
    else:
        work = Path(tempfile.mkdtemp(prefix=f"{kind}-", dir=base))
    cmd = [sys.executable, "-m", "benchmarks.bench_clickhouse_viewer", "--side", kind, "--attempts", str(args.attempts),
           "--runs", str(args.runs), "--block", str(args.block), "--dir", str(work), "--sql", str(sql_dir),
           "--seed", str(args.seed)]
    try:
        out = subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True, text=True).stdout
    finally:
        if args.keep is None:
            subprocess.run(["rm", "-rf", str(work)], check=False)
    return json.loads(out.strip().splitlines()[-1])


def _line(r: dict[str, Any], label: str) -> str:
    q = ", ".join(f"{k} {v:.1f}" for k, v in r["queries_warm_p50"].items())
    return (f"  {label:<24} load {r['load_s']:7.1f} s  disk {r['disk_bytes'] / 2**20:8.1f} MiB  peak RSS "
            f"{r['peak_rss_mib']:7.0f} MiB  page cold p50 {r['cold_p50']:7.1f} / p95 {r['cold_p95']:7.1f} ms  "
            f"warm p50 {r['warm_p50']:7.1f} / p95 {r['warm_p95']:7.1f} ms (CPU p50 {r['warm_cpu_p50']:.1f} ms)\n    warm p50 per query (ms): {q}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--attempts", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--block", type=int, default=250_000, help="attempts per ClickHouse INSERT (4 spans each)")
    ap.add_argument("--dir", type=Path, default=None, help="where the data goes (deleted after); default: a temp dir")
    ap.add_argument("--baseline-sql", type=Path, default=None, help="an older clickhouse/ directory to compare with")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--keep", type=Path, default=None, help="keep each side's data here, and reuse it if it is there")
    ap.add_argument("--quick", action="store_true", help="10,000 attempts, 5 runs")
    ap.add_argument("--side", choices=("duckdb", "clickhouse"), help=argparse.SUPPRESS)
    ap.add_argument("--sql", type=Path, default=SQL_DIR, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.side:  # a child: one engine, one JSON line
        print(json.dumps(side(args.side, args.attempts, args.runs, args.block, args.dir, args.sql, args.seed)))
        return 0
    if args.quick:
        args.attempts, args.runs = min(args.attempts, 10_000), min(args.runs, 5)
    print(machine_line())
    base = Path(tempfile.mkdtemp(prefix="otel-inputs-bench-ch-", dir=args.dir))
    try:
        duck = _run_side("duckdb", args, SQL_DIR, base)
        ch = _run_side("clickhouse", args, SQL_DIR, base)
        old = _run_side("clickhouse", args, args.baseline_sql, base) if args.baseline_sql else None
    finally:
        subprocess.run(["rm", "-rf", str(base)], check=False)
    print(f"{args.attempts:,} attempts ({4 * args.attempts:,} spans), {args.runs} random attempts, the same on each side:")
    print(_line(duck, "DuckDB"))
    print(_line(ch, "ClickHouse (chdb)"))
    if old:
        print(_line(old, f"ClickHouse, {args.baseline_sql.name}"))
    print(f"  ratio ClickHouse/DuckDB, warm p50: {ch['warm_p50'] / duck['warm_p50']:.1f}x (CPU "
          f"{ch['warm_cpu_p50'] / duck['warm_cpu_p50']:.1f}x)"
          + (f"; this schema / baseline: {ch['warm_p50'] / old['warm_p50']:.2f}x (CPU "
             f"{ch['warm_cpu_p50'] / old['warm_cpu_p50']:.2f}x)" if old else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
