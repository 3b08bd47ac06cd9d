"""Ingest throughput: in-process exporter and OTLP receiver, each paired with the fastest raw DuckDB insert of the same run.

Run: ``python -m benchmarks.bench_ingest [--quick] [--spans N] [--runs R] [--shapes rich,small] [--paths sink,exporter]``.

Span shapes:

* ``rich`` (performance-anchors §3): 20 span attributes and 20 ``otel_inputs.input`` events of 15
  attributes each, string values 8-80 characters;
* ``small``: 5 attributes, no events, 64 spans per trace (a coding agent's internal spans, ~460 a turn).

Paths, each into a fresh DuckDB file, interleaved within every run:

* the raw bar, the anchors' own end-to-end paths (``../shared/anchors/duckdb_ingest.py``, or the
  folder ``OTEL_INPUTS_ANCHORS`` names) on the same spans, same ``otel_traces`` shape, 512 spans a
  transaction, one long-lived connection, no typed tables, no lock, no dedupe: ``arrow_e2e``,
  ``arrow_e2e_pipelined`` (conversion in a second thread) and ``arrow_e2e_2proc`` (conversion here,
  insert in a second process).  Each run's bar is the fastest of them in that run; without the
  anchors folder the bar is ``raw_arrow`` (the exporter's reference conversion + ``INSERT … SELECT``);
* ``exporter``: ``DuckDBSpanExporter.export`` per 512 spans (sidecar lock, open/close per batch,
  keyed replace, the typed tables);
* ``sink`` / ``sink_grpc``: the stock ``OTLPSpanExporter`` (HTTP / gRPC) posting 512-span requests
  to ``otel-inputs collect`` in its own process, timed until every span is queryable (durable
  acknowledgment); the sender's pure-Python encoding shares the 2 cores;
* ``sink_pre``: the same receiver fed pre-encoded request bodies: its own capacity.

While a receiver path runs, a reader opens the file the viewer's way (shared sidecar lock, a
read-only connection, closed after one query) every 0.5 s; its wait to open is reported as p50/p99
("reader wait"), and its count decides when every span is queryable.

Per path: spans/s (wall); the ratio to the same run's bar, per run and their median (never a ratio
of medians); CPU-ms per span (this process for in-process paths; for the receiver its own
utime+stime from after start-up, so imports and migration are excluded); bytes per span on disk;
the receiver's peak RSS.  The load average is printed before and after.  No assertions (tests
never time anything).
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import importlib
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanLimits, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_inputs.exporter import DuckDBSpanExporter, migrate_file, read_connection
from otel_inputs.exporter._arrow import traces_table
from otel_inputs.exporter._spans import from_readable
from otel_inputs import names as n

BATCH = 512
EXTRA_EVENT_ATTR = "bench.mtime_ns"  # the 15th event attribute; not a wire name


def _hex(seed: str) -> str:
    return hashlib.sha256(seed.encode()).hexdigest()


def _span_attrs(i: int) -> dict[str, Any]:
    return {
        n.GEN_AI_OPERATION_NAME: n.OPERATION_INVOKE_AGENT,
        n.GEN_AI_PROVIDER_NAME: "anthropic",
        n.GEN_AI_REQUEST_MODEL: "claude-sonnet-4-5",
        n.GEN_AI_AGENT_NAME: "developer",
        n.GEN_AI_CONVERSATION_ID: f"conv-{i // 8:08d}",
        n.RUN_ID: f"run-{i // 64:06d}",
        n.ATTEMPT_ID: f"att-{i:010d}",
        n.PHASE: "implement",
        n.SEND_KIND: "initial",
        n.TURN_INDEX: i % 8 + 1,
        n.PREVIOUS_TURN_ATTEMPT_ID: f"att-{max(i - 1, 0):010d}",
        n.TASK_PROMPT: "Fix the failing test in tests/test_capture.py and keep every capture bound.",
        n.TASK_SOURCE_KIND: "prompt_file",
        n.TASK_SOURCE_PATH: "prompts/task-0042.md",
        n.TASK_SIZE_BYTES: 1800 + i % 100,
        n.TASK_SHA256: _hex(f"task{i % 100}"),
        n.PACKET_VERSION_ATTR: n.PACKET_VERSION,
        n.PACKET_COVERAGE: "complete",
        n.PACKET_CAPTURED_COUNT: 20,
        n.PACKET_ITEM_COUNT: 20,
    }


def _event_attrs(i: int, seq: int) -> dict[str, Any]:
    digest = _hex(f"item{(i + seq) % 64}")
    return {
        n.INPUT_ID: f"in-{i:010d}-{seq:03d}",
        n.INPUT_SEQ: seq,
        n.INPUT_LABEL: f"src/module_{seq:02d}/file_{seq:02d}.py",
        n.INPUT_SOURCE_KIND: "explicit_attachment",
        n.INPUT_DELIVERY_MODE: "path_reference",
        n.INPUT_SOURCE_PATH: f"/workspace/repo/src/module_{seq:02d}/file_{seq:02d}.py",
        n.INPUT_SNAPSHOT_REF: "sha256:" + digest,
        n.INPUT_MEDIA_TYPE: "text/x-python",
        n.INPUT_PREVIEW_KIND: "text",
        n.INPUT_SIZE_BYTES: 4096 + seq * 17,
        n.INPUT_SHA256: digest,
        n.INPUT_CAPTURE_STATUS: "captured",
        n.INPUT_ARTIFACT_STATUS: "available",
        n.INPUT_DETAIL: "",
        EXTRA_EVENT_ATTR: 1764460800000000000 + seq,
    }


def make_spans(count: int) -> list[ReadableSpan]:
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "bench-agent"}), span_limits=SpanLimits())
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("bench")
    for i in range(count):
        span = tracer.start_span("invoke_agent developer", attributes=_span_attrs(i))
        for seq in range(20):
            span.add_event(n.INPUT_EVENT, _event_attrs(i, seq))
        span.end()
    spans = list(memory.get_finished_spans())
    provider.shutdown()
    return spans


def make_small_spans(count: int) -> list[ReadableSpan]:
    """Spans shaped like a coding agent's internal ones: 5 attributes, no events, 64 to a trace."""
    from opentelemetry import trace

    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "bench-agent"}), span_limits=SpanLimits())
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("bench")
    for i in range(count):
        parent = trace.set_span_in_context(trace.NonRecordingSpan(trace.SpanContext(
            int(_hex(f"trace{i // 64}")[:32], 16), int(_hex(f"root{i // 64}")[:16], 16), is_remote=False,
            trace_flags=trace.TraceFlags(trace.TraceFlags.SAMPLED))))  # fmt: skip
        span = tracer.start_span("codex.sse_event", context=parent, attributes={
            "conversation.id": f"conv-{i // 460:08d}", "event.kind": "response.output_text.delta",
            "model": "gpt-5-codex", "duration_ms": 3 + i % 40, "sequence": i,
        })  # fmt: skip
        span.end()
    spans = list(memory.get_finished_spans())
    provider.shutdown()
    return spans


def _batches(spans: list[ReadableSpan]) -> list[list[ReadableSpan]]:
    return [spans[i : i + BATCH] for i in range(0, len(spans), BATCH)]


def _size(db: Path) -> int:
    return sum(p.stat().st_size for p in (db, Path(f"{db}.wal")) if p.exists())


def _storage(db: Path, count: int) -> dict[str, float]:
    """File and used-block bytes per span; call after the last writer closed (checkpointed)."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        block_size, _, used = con.execute("SELECT block_size, total_blocks, used_blocks FROM pragma_database_size()").fetchone()
    finally:
        con.close()
    return {"bytes_per_span": _size(db) / count, "used_bytes_per_span": block_size * used / count}


def _tree(pid: int) -> list[int]:
    """``pid`` and its live descendants (the receiver's conversion workers)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        for task in Path(f"/proc/{p}/task").glob("*/children"):
            try:
                todo += [int(c) for c in task.read_text().split()]
            except OSError:
                continue
    return out


def _proc_cpu_s(pid: int) -> float:
    """utime + stime of ``pid`` and its live descendants (a worker started after start-up counts whole)."""
    total = 0
    for p in _tree(pid):
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def _run_anchor(path: str, spans: list[ReadableSpan], db: Path) -> dict[str, float]:
    """One of the anchors' own end-to-end paths, timed as the anchors time it (the insert loop; the
    final close separately, not counted)."""
    anchor = _anchor_module()
    if anchor is None:
        raise FileNotFoundError("../shared/anchors/duckdb_ingest.py not found")
    factory, pre = anchor.PATHS[path]
    con = duckdb.connect(str(db))
    con.execute(anchor.DDL)
    run = factory(con, _batches(spans), pre)
    t0, c0 = time.perf_counter(), time.process_time()
    finish = run()
    elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
    (finish or con.close)()
    return {"spans_per_s": len(spans) / elapsed, "cpu_ms_per_span": cpu * 1000 / len(spans)}


RAW_ANCHOR_PATHS = {"raw_anchor": "arrow_e2e", "raw_anchor_pipelined": "arrow_e2e_pipelined",
                    "raw_anchor_2proc": "arrow_e2e_2proc"}  # fmt: skip


def run_raw(spans: list[ReadableSpan], db: Path) -> dict[str, float]:
    return _raw_bar(db, "otel_traces", (traces_table([from_readable(s) for s in batch]) for batch in _batches(spans)),
                    len(spans))  # fmt: skip


def _raw_bar(db: Path, table: str, batches: Iterator[pa.Table], n: int) -> dict[str, float]:
    """Each batch, converted as it is taken (timed), INSERTed into ``table`` in a transaction of its
    own on one connection."""
    migrate_file(db)
    con = duckdb.connect(str(db))
    t0, c0 = time.perf_counter(), time.process_time()
    for batch in batches:
        con.execute("BEGIN TRANSACTION")
        con.register("b", batch)
        con.execute(f"INSERT INTO {table} SELECT * FROM b")
        con.unregister("b")
        con.execute("COMMIT")
    elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
    con.close()
    return {"spans_per_s": n / elapsed, "cpu_ms_per_span": cpu * 1000 / n, **_storage(db, n)}


ANCHORS = Path(os.environ.get("OTEL_INPUTS_ANCHORS") or Path(__file__).resolve().parents[2] / "shared" / "anchors")


@functools.cache
def _anchor_module() -> Any | None:
    """The anchors' DuckDB ingest script, imported under its own name (its two-process path spawns
    a child that imports it again), if the folder is present."""
    folder = ANCHORS
    if not (folder / "duckdb_ingest.py").is_file():
        return None
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))  # it imports its sibling ``shapes``
    return importlib.import_module("duckdb_ingest")


def run_exporter(spans: list[ReadableSpan], db: Path) -> dict[str, float]:
    exporter = DuckDBSpanExporter(db)
    t0, c0 = time.perf_counter(), time.process_time()
    for batch in _batches(spans):
        exporter.export(batch)
    elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
    exporter.shutdown()
    with read_connection(db) as con:
        stored = con.execute("SELECT count(*) FROM otel_traces").fetchone()[0]
    if stored != len(spans):
        raise RuntimeError(f"exporter stored {stored} of {len(spans)} spans")
    return {"spans_per_s": len(spans) / elapsed, "cpu_ms_per_span": cpu * 1000 / len(spans), **_storage(db, len(spans))}


def _vm_hwm_kib(pid: int) -> int:
    """Peak RSS of ``pid`` plus that of its live descendants (the conversion workers)."""
    total = 0
    for p in _tree(pid):
        try:
            text = Path(f"/proc/{p}/status").read_text()
        except OSError:
            continue
        m = re.search(r"VmHWM:\s+(\d+) kB", text)
        total += int(m.group(1)) if m else 0
    return total


def _start_sink(db: Path) -> tuple[subprocess.Popen[str], str, str]:
    """``otel-inputs collect`` in its own process on a migrated file: the process, its HTTP traces
    endpoint and gRPC target."""
    migrate_file(db)  # as a user's file already is; the migration is start-up, not ingest
    cli = Path(sys.executable).with_name("otel-inputs")
    proc = subprocess.Popen([str(cli), "collect", "--db", str(db), "--port", "0", "--grpc-port", "0"],
                            stderr=subprocess.PIPE, text=True)  # fmt: skip
    line = proc.stderr.readline() if proc.stderr else ""
    if "listening on " not in line:
        proc.kill()
        raise RuntimeError(f"sink did not start: {line!r}")
    return proc, line.split("listening on ")[1].split(" ")[0], line.split("OTLP/gRPC on ")[1].split()[0]


class _Reader:
    """The viewer's way in, every ``interval_s`` while a receiver lands: the shared sidecar lock and
    a read-only connection for one count, then closed.  Records each wait to open, and when the
    count first reached ``expected``."""

    def __init__(self, db: Path, table: str, expected: int, interval_s: float = 0.5) -> None:
        self.db, self.table, self.expected, self.interval_s = db, table, expected, interval_s
        self.waits: list[float] = []
        self.done_at: float | None = None
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def start(self) -> _Reader:
        self._thread.start()
        return self

    def _loop(self) -> None:
        try:
            while not self._stop.is_set():
                t0 = time.perf_counter()
                with read_connection(self.db, timeout_s=120) as con:
                    self.waits.append(time.perf_counter() - t0)
                    stored = con.execute(f"SELECT count(*) FROM {self.table}").fetchone()[0]
                if stored >= self.expected:
                    self.done_at = time.perf_counter()
                    return
                self._stop.wait(self.interval_s)
        except BaseException as exc:  # noqa: BLE001 - reported by wait()
            self.error = exc

    def wait(self, t0: float, what: str, timeout_s: float = 900) -> float:
        """Seconds from ``t0`` until the reader saw every row."""
        self._thread.join(timeout_s)
        self._stop.set()
        if self.error is not None:
            raise RuntimeError(f"reader failed: {self.error}") from self.error
        if self.done_at is None:
            raise RuntimeError(f"sink did not store every {what} within {timeout_s} s")
        return self.done_at - t0

    def figures(self) -> dict[str, float]:
        waits = sorted(self.waits) or [0.0]
        return {"reader_p50_ms": statistics.median(waits) * 1000,
                "reader_p99_ms": waits[min(len(waits) - 1, int(len(waits) * 0.99))] * 1000,
                "reader_max_ms": waits[-1] * 1000, "reader_opens": len(self.waits)}  # fmt: skip


def run_sink(spans: list[ReadableSpan], db: Path) -> dict[str, float]:
    return _run_sink_with(spans, db, grpc=False)


def run_sink_grpc(spans: list[ReadableSpan], db: Path) -> dict[str, float]:
    return _run_sink_with(spans, db, grpc=True)


def _run_sink_with(spans: list[ReadableSpan], db: Path, *, grpc: bool) -> dict[str, float]:
    proc, endpoint, grpc_target = _start_sink(db)
    try:
        if grpc:
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpanExporter

            sender: Any = GrpcSpanExporter(endpoint=grpc_target, insecure=True, timeout=60)
        else:
            sender = OTLPSpanExporter(endpoint=endpoint, timeout=60)
        cpu0 = _proc_cpu_s(proc.pid)  # start-up (imports, listening) excluded
        t0 = time.perf_counter()
        reader = _Reader(db, "otel_traces", len(spans)).start()
        for batch in _batches(spans):
            if sender.export(batch).name != "SUCCESS":
                raise RuntimeError("span export failed")
        sent = time.perf_counter() - t0
        elapsed = reader.wait(t0, "span")
        rss_kib = _vm_hwm_kib(proc.pid)
        cpu = _proc_cpu_s(proc.pid) - cpu0
        sender.shutdown()
    finally:
        proc.terminate()
        proc.wait(60)
    return {"spans_per_s": len(spans) / elapsed, "sender_spans_per_s": len(spans) / sent,
            "cpu_ms_per_span": cpu * 1000 / len(spans), "peak_rss_mib": rss_kib / 1024, "cores": cpu / elapsed,
            **reader.figures(), **_storage(db, len(spans))}  # fmt: skip


def run_sink_prebuilt(spans: list[ReadableSpan], db: Path) -> dict[str, float]:
    """The receiver's own capacity: request bodies pre-encoded (untimed), posted back to back."""
    import http.client
    from urllib.parse import urlsplit

    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    bodies = [encode_spans(b).SerializeToString() for b in _batches(spans)]
    proc, endpoint, _ = _start_sink(db)
    try:
        url = urlsplit(endpoint)
        cpu0 = _proc_cpu_s(proc.pid)
        t0 = time.perf_counter()
        reader = _Reader(db, "otel_traces", len(spans)).start()
        conn = http.client.HTTPConnection(url.hostname, url.port, timeout=120)
        for body in bodies:
            while True:
                conn.request("POST", url.path, body=body, headers={"Content-Type": "application/x-protobuf"})
                resp = conn.getresponse()
                resp.read()
                if resp.status != 503:
                    break
                time.sleep(float(resp.getheader("Retry-After") or 1))
        conn.close()
        elapsed = reader.wait(t0, "span")
        rss_kib = _vm_hwm_kib(proc.pid)
        cpu = _proc_cpu_s(proc.pid) - cpu0
    finally:
        proc.terminate()
        proc.wait(60)
    return {"spans_per_s": len(spans) / elapsed, "cpu_ms_per_span": cpu * 1000 / len(spans),
            "peak_rss_mib": rss_kib / 1024, "cores": cpu / elapsed, **reader.figures(),
            **_storage(db, len(spans))}  # fmt: skip


def run_encode(spans: list[ReadableSpan], db: Path) -> dict[str, float]:
    """The stock exporter's sender-side encoding alone (encode_spans + serialise), no network."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    t0, c0 = time.perf_counter(), time.process_time()
    for batch in _batches(spans):
        encode_spans(batch).SerializeToString()
    elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {"spans_per_s": len(spans) / elapsed, "cpu_ms_per_span": cpu * 1000 / len(spans)}


GENAI_EVENT = n.EVENT_INFERENCE_DETAILS


def make_log_records(count: int) -> list[Any]:
    """GenAI content events as opentelemetry-instrumentation-openai-v2 emits them with EVENT_ONLY:
    ten attributes and the exchanged messages as a structured body, under a span context."""
    from opentelemetry import trace
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor

    memory = InMemoryLogRecordExporter()
    provider = LoggerProvider(resource=Resource.create({"service.name": "bench-agent"}))
    provider.add_log_record_processor(SimpleLogRecordProcessor(memory))
    logger = provider.get_logger("opentelemetry.instrumentation.openai_v2", "2.1b0")
    for i in range(count):
        ctx = trace.set_span_in_context(trace.NonRecordingSpan(trace.SpanContext(
            int(_hex(f"t{i // 8}")[:32], 16), int(_hex(f"s{i}")[:16], 16), is_remote=False)))  # fmt: skip
        body = {
            n.GEN_AI_SYSTEM_INSTRUCTIONS: [{"type": "text", "content": "You are a careful developer agent."}],
            n.GEN_AI_INPUT_MESSAGES: [{"role": "user", "parts": [{"type": "text", "content": f"Fix test {i}: " + "x" * 400}]},
                                      {"role": "assistant", "parts": [{"type": "text", "content": "Looking." * 20}]}],
            n.GEN_AI_OUTPUT_MESSAGES: [{"role": "assistant", "finish_reason": "stop",
                                        "parts": [{"type": "text", "content": "Done. " * 30}]}],
        }  # fmt: skip
        attrs = {n.GEN_AI_OPERATION_NAME: "chat", n.GEN_AI_PROVIDER_NAME: "openai", n.GEN_AI_REQUEST_MODEL: "gpt-4o-mini",
                 "gen_ai.response.model": "gpt-4o-mini-2024-07-18", "gen_ai.response.id": f"chatcmpl-{i:010d}",
                 "gen_ai.usage.input_tokens": 120 + i % 50, "gen_ai.usage.output_tokens": 40 + i % 20,
                 "gen_ai.response.finish_reasons": ["stop"], "server.address": "api.openai.com", "server.port": 443}  # fmt: skip
        logger.emit(timestamp=1764460800000000000 + i, event_name=GENAI_EVENT, body=body, attributes=attrs, context=ctx)
    records = list(memory.get_finished_logs())
    provider.shutdown()
    return records


def run_raw_logs(records: list[Any], db: Path) -> dict[str, float]:
    """The raw bar for log records: the reference conversion, one INSERT per 512 records, one connection."""
    from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs

    from otel_inputs.exporter._logs import logs_table

    return _raw_bar(db, "otel_logs", (logs_table(encode_logs(records[i : i + BATCH])) for i in range(0, len(records), BATCH)),
                    len(records))  # fmt: skip


def run_sink_logs(records: list[Any], db: Path) -> dict[str, float]:
    """The stock OTLP/HTTP log exporter posting 512-record batches to ``otel-inputs collect``,
    timed until every record is queryable (durable 200s)."""
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter

    proc, endpoint, _ = _start_sink(db)
    try:
        sender = OTLPLogExporter(endpoint=endpoint.replace("/v1/traces", "/v1/logs"), timeout=60)
        cpu0 = _proc_cpu_s(proc.pid)
        t0 = time.perf_counter()
        reader = _Reader(db, "otel_logs", len(records)).start()
        for i in range(0, len(records), BATCH):
            if sender.export(records[i : i + BATCH]).name != "SUCCESS":
                raise RuntimeError("log export failed")
        elapsed = reader.wait(t0, "log record")
        rss_kib = _vm_hwm_kib(proc.pid)
        cpu = _proc_cpu_s(proc.pid) - cpu0
        sender.shutdown()
    finally:
        proc.terminate()
        proc.wait(60)
    return {"spans_per_s": len(records) / elapsed, "cpu_ms_per_span": cpu * 1000 / len(records),
            "peak_rss_mib": rss_kib / 1024, **reader.figures(), **_storage(db, len(records))}  # fmt: skip


def _median(values: list[float]) -> float:
    return statistics.median(values)


SPAN_PATHS: dict[str, Callable[[list[ReadableSpan], Path], dict[str, float]]] = {
    "raw_arrow": run_raw, "exporter": run_exporter, "sink": run_sink, "sink_grpc": run_sink_grpc,
    "sink_pre": run_sink_prebuilt, "encode": run_encode,
}  # fmt: skip
NOT_INGEST = {"encode"}  # measured alone, not an ingest path: no ratio to the bar


def _run_shape(shape: str, spans: list[ReadableSpan], paths: list[str], runs: int, tmp: Path) -> None:
    """Every path once per run, interleaved; each run's ratios against that run's fastest raw path."""
    raws = [p for p in paths if p == "raw_arrow" or p in RAW_ANCHOR_PATHS]
    results: dict[str, list[dict[str, float]]] = {k: [] for k in paths}
    bars: list[tuple[str, float, float]] = []
    for r in range(runs):
        for name in paths:
            db = tmp / f"{shape}-{name}-{r}.duckdb"
            if name in RAW_ANCHOR_PATHS:
                out = _run_anchor(RAW_ANCHOR_PATHS[name], spans, db)
            else:
                out = SPAN_PATHS[name](spans, db)
            results[name].append(out)
            extra = f"  reader wait p99 {out['reader_p99_ms']:.0f} ms" if "reader_p99_ms" in out else ""
            print(f"  {shape} run {r + 1}/{runs} {name:20s} {out['spans_per_s']:8.0f} spans/s  "
                  f"load {os.getloadavg()[0]:.1f}{extra}", flush=True)  # fmt: skip
            shutil.rmtree(db, ignore_errors=True)
            for leftover in tmp.glob(f"{db.name}*"):
                shutil.rmtree(leftover, ignore_errors=True) if leftover.is_dir() else leftover.unlink()
        best = max(raws, key=lambda k: results[k][r]["spans_per_s"])
        bars.append((best, results[best][r]["spans_per_s"], results["raw_anchor" if "raw_anchor" in raws else best][r]["cpu_ms_per_span"]))
    print(f"\n{shape} spans: {len(spans)} x {runs} runs, batch {BATCH}; each run's bar = its fastest raw path "
          f"({', '.join(f'run {i + 1}: {b[0]} {b[1]:.0f}/s' for i, b in enumerate(bars))})")  # fmt: skip
    print(f"{'path':20s} {'spans/s':>9s} {'x bar (paired, median)':>24s} {'per run':>18s} {'CPU ms/span':>12s} "
          f"{'B/span':>7s}  notes")  # fmt: skip
    for name in paths:
        runs_of = results[name]
        rate = _median([x["spans_per_s"] for x in runs_of])
        cpu = _median([x["cpu_ms_per_span"] for x in runs_of])
        ratios = [x["spans_per_s"] / bars[i][1] for i, x in enumerate(runs_of)]
        ratio_txt = "-" if name in NOT_INGEST else f"{_median(ratios):.2f}"
        per_run = "-" if name in NOT_INGEST else "/".join(f"{q:.2f}" for q in ratios)
        size = f"{_median([x['bytes_per_span'] for x in runs_of]):7.0f}" if "bytes_per_span" in runs_of[0] else f"{'-':>7s}"
        notes = []
        if "reader_p99_ms" in runs_of[0]:
            notes.append("reader wait p50 {:.0f} / p99 {:.0f} / max {:.0f} ms over {} opens".format(
                _median([x["reader_p50_ms"] for x in runs_of]), max(x["reader_p99_ms"] for x in runs_of),
                max(x["reader_max_ms"] for x in runs_of), sum(int(x["reader_opens"]) for x in runs_of)))  # fmt: skip
        if "peak_rss_mib" in runs_of[0]:
            notes.append(f"peak RSS {_median([x['peak_rss_mib'] for x in runs_of]):.0f} MiB (with its workers)")
        if "cores" in runs_of[0]:
            notes.append(f"receiver CPU {_median([x['cores'] for x in runs_of]):.2f} cores")
        if "sender_spans_per_s" in runs_of[0]:
            notes.append(f"sender side {_median([x['sender_spans_per_s'] for x in runs_of]):.0f} spans/s")
        if name in RAW_ANCHOR_PATHS:
            notes.append(f"anchors' {RAW_ANCHOR_PATHS[name]}" + (" (CPU: this process only)" if "2proc" in name else ""))
        print(f"{name:20s} {rate:9.0f} {ratio_txt:>24s} {per_run:>18s} {cpu:12.2f} {size}  {'; '.join(notes)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2,048 spans, 1 run (a smoke run, not a figure)")
    parser.add_argument("--spans", type=int, default=None, help="rich spans (10,240; small spans: twice as many)")
    parser.add_argument("--runs", type=int, default=None)
    parser.add_argument("--shapes", default="rich,small", help="comma-separated subset of rich,small")
    parser.add_argument("--paths", default=None,
                        help="comma-separated subset of exporter,sink,sink_grpc,sink_pre,encode,logs "
                             "(the raw paths always run: they are the bar)")
    args = parser.parse_args(argv)
    count = args.spans or (2048 if args.quick else 10_240)
    runs = args.runs or (1 if args.quick else 3)
    wanted = args.paths.split(",") if args.paths else ["exporter", "sink", "sink_grpc", "sink_pre", "encode", "logs"]
    unknown = set(wanted) - set(SPAN_PATHS) - {"logs"}
    if unknown:
        parser.error(f"unknown paths: {', '.join(sorted(unknown))}")
    raws = list(RAW_ANCHOR_PATHS) if _anchor_module() is not None else ["raw_arrow"]
    if _anchor_module() is None:
        print("../shared/anchors not found: the bar is raw_arrow alone", flush=True)
    print(f"duckdb {duckdb.__version__}, {os.cpu_count()} cpus, load average at start "
          f"{'/'.join(f'{x:.1f}' for x in os.getloadavg())}", flush=True)  # fmt: skip
    tmp = Path(tempfile.mkdtemp(prefix="bench-ingest-"))
    try:
        for shape in args.shapes.split(","):
            make = {"rich": make_spans, "small": make_small_spans}[shape]
            size = count if shape == "rich" else 2 * count
            print(f"\nbuilding {size} {shape} spans ...", flush=True)
            spans = make(size)
            _run_shape(shape, spans, raws + [p for p in wanted if p in SPAN_PATHS], runs, tmp)
        if "logs" in wanted:
            records = make_log_records(count)
            logs: dict[str, list[dict[str, float]]] = {"raw_logs": [], "sink_logs": []}
            for r in range(runs):
                for name, fn in (("raw_logs", run_raw_logs), ("sink_logs", run_sink_logs)):
                    logs[name].append(fn(records, tmp / f"{name}-{r}.duckdb"))
                    print(f"  logs run {r + 1}/{runs} {name:9s} {logs[name][-1]['spans_per_s']:8.0f} records/s", flush=True)
            ratios = [s["spans_per_s"] / r["spans_per_s"] for s, r in zip(logs["sink_logs"], logs["raw_logs"])]
            sink = logs["sink_logs"]
            print(f"\nGenAI log events ({GENAI_EVENT}, structured body, 10 attributes), {count} records x {runs} runs:")
            print(f"  raw_logs  {_median([x['spans_per_s'] for x in logs['raw_logs']]):9.0f} records/s (reference "
                  f"conversion + INSERT into otel_logs, one connection)")  # fmt: skip
            print(f"  sink_logs {_median([x['spans_per_s'] for x in sink]):9.0f} records/s, {_median(ratios):.2f}x raw_logs "
                  f"paired ({'/'.join(f'{q:.2f}' for q in ratios)}); stock OTLP/HTTP log exporter, durable 200; "
                  f"{_median([x['cpu_ms_per_span'] for x in sink]):.2f} CPU-ms/record; peak RSS "
                  f"{_median([x['peak_rss_mib'] for x in sink]):.0f} MiB; reader wait p99 "
                  f"{max(x['reader_p99_ms'] for x in sink):.0f} ms")  # fmt: skip
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"\nload average at end {'/'.join(f'{x:.1f}' for x in os.getloadavg())} (2 cores shared: compare ratios "
          f"within a run, not absolute rates across runs)")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
