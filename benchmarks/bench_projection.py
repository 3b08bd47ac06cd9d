"""Cost of the attempt/step projection: at write time (settling steps and log messages per batch)
and at read time (one attempt's steps and messages).

Run: ``python -m benchmarks.bench_projection [--attempts N] [--spans S]``.

* write: the in-process exporter lands S rich packet spans (one attempt per trace, the ingest
  bench's shape) and S spans of nested agent runs (an attempt, a framework agent span, two model
  calls and a tool call per trace); reported is the CPU share of the exporter spent settling
  attempts, steps and log messages (``_steps.resolve`` and ``_messages.settle_for_logs``).
* read: a file with N attempts (each with four steps) built through
  the real writer in 512-span batches (the nested shape above); reported is the best of 7 runs of the per-attempt queries
  the viewer makes, against the plain ``agent_attempts`` lookup by id in the same file.

Figures only; no assertions (tests never time anything).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

import duckdb
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import otel_inputs.exporter._writer as writer_module
from otel_inputs import names as n
from otel_inputs.exporter import DuckDBSpanExporter
from otel_inputs.exporter._spans import from_readable
from otel_inputs.exporter._writer import DuckDBWriter

from benchmarks.bench_ingest import make_spans


def _nested_spans(traces: int) -> list[Any]:
    memory = InMemorySpanExporter()
    tp = TracerProvider()
    tp.add_span_processor(SimpleSpanProcessor(memory))
    tracer = tp.get_tracer("bench")
    for i in range(traces):
        with tracer.start_as_current_span("invoke_agent", attributes={
                n.GEN_AI_OPERATION_NAME: n.OPERATION_INVOKE_AGENT, n.PACKET_VERSION_ATTR: 1,
                n.PACKET_COVERAGE: "complete", n.ATTEMPT_ID: f"att-{i}", n.RUN_ID: "run-b"}):  # fmt: skip
            with tracer.start_as_current_span("invoke_agent agent", attributes={n.GEN_AI_OPERATION_NAME: "invoke_agent"}):
                for k in range(2):
                    with tracer.start_as_current_span("chat m", attributes={
                            n.GEN_AI_OPERATION_NAME: "chat", n.GEN_AI_USAGE_INPUT_TOKENS: 10 + k,
                            n.GEN_AI_INPUT_MESSAGES: f'[{{"role":"user","parts":[{{"type":"text","content":"q{i}"}}]}}]'}):  # fmt: skip
                        pass
                    if k == 0:
                        with tracer.start_as_current_span("execute_tool t", attributes={
                                n.GEN_AI_OPERATION_NAME: "execute_tool", n.GEN_AI_TOOL_NAME: "t"}):  # fmt: skip
                            pass
    tp.shutdown()
    return list(memory.get_finished_spans())


def _write_share(spans: list[Any]) -> tuple[float, float]:
    """(exporter CPU ms per span, share spent settling) landing ``spans`` in 512-span batches."""
    spent = [0.0]
    originals = (writer_module.resolve_steps, writer_module.settle_log_messages)

    def timed(fn: Any) -> Any:
        def run(*args: Any, **kwargs: Any) -> Any:
            t = time.process_time()
            try:
                return fn(*args, **kwargs)
            finally:
                spent[0] += time.process_time() - t
        return run

    writer_module.resolve_steps, writer_module.settle_log_messages = (timed(f) for f in originals)
    try:
        with tempfile.TemporaryDirectory() as d:
            exporter = DuckDBSpanExporter(Path(d) / "w.duckdb")
            t = time.process_time()
            for start in range(0, len(spans), 512):
                exporter.export(spans[start:start + 512])
            total = time.process_time() - t
    finally:
        writer_module.resolve_steps, writer_module.settle_log_messages = originals
    return total * 1000 / len(spans), spent[0] / total


def _read_file(db: Path, attempts: int) -> None:
    spans = [from_readable(s) for s in _nested_spans(attempts)]
    writer = DuckDBWriter(db)
    for start in range(0, len(spans), 512):
        writer.write_spans(spans[start:start + 512])


def _best_ms(con: duckdb.DuckDBPyConnection, sql: str, params: list[Any]) -> float:
    best = float("inf")
    for _ in range(7):
        t = time.perf_counter()
        con.execute(sql, params).fetchall()
        best = min(best, time.perf_counter() - t)
    return best * 1000


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attempts", type=int, default=20_000)
    parser.add_argument("--spans", type=int, default=4096)
    parser.add_argument("--quick", action="store_true", help="2,000 attempts and 1,024 spans")
    args = parser.parse_args(argv)
    if args.quick:
        args.attempts, args.spans = min(args.attempts, 2_000), min(args.spans, 1024)
    print(f"write: {args.spans} spans per shape, 512-span batches")
    for name, spans in (("rich packet spans", make_spans(args.spans)), ("nested agent runs", _nested_spans(args.spans // 5))):
        per_span, share = _write_share(spans)
        print(f"  {name:20s} exporter {per_span:.3f} CPU ms/span, settling {100 * share:.1f} %")
    with tempfile.TemporaryDirectory() as d:
        db = Path(d) / "r.duckdb"
        t = time.perf_counter()
        _read_file(db, args.attempts)
        print(f"read: {args.attempts} attempts x 4 steps built in {time.perf_counter() - t:.1f} s")
        con = duckdb.connect(str(db), read_only=True)
        try:
            aid = f"att-{args.attempts // 2}"
            start = con.execute("SELECT epoch_ns(started_at) FROM agent_attempts WHERE attempt_id = ?", [aid]).fetchone()[0]
            base = _best_ms(con, "SELECT * FROM agent_attempts WHERE attempt_id = ?", [aid])
            steps = _best_ms(con, "SELECT * FROM agent_attempt_steps WHERE attempt_id = ? "
                                  "AND attempt_started_at = make_timestamp_ns(?) ORDER BY seq", [aid, start])  # fmt: skip
            messages = _best_ms(con, "SELECT * FROM agent_attempt_messages WHERE attempt_id = ?", [aid])
        finally:
            con.close()
        print(f"  attempt row {base:.2f} ms; steps {steps:.2f} ms ({steps / base:.1f}x); "
              f"messages {messages:.2f} ms ({messages / base:.1f}x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
