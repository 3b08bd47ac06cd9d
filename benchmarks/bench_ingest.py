"""Ingest throughput: in-process exporter and OTLP sink, each against the fastest raw DuckDB insert.

Run: ``python -m benchmarks.bench_ingest [--quick] [--spans N] [--runs R] [--paths sink,exporter]``.

Span shape (performance-anchors §3): 20 span attributes and 20 ``otel_inputs.input`` events of
15 attributes each, string values 8-80 characters.  Paths, each into a fresh DuckDB file:

* ``raw_arrow``: SDK spans → the exporter's reference conversion → one pyarrow table of the
  ``otel_traces`` rows → ``INSERT … SELECT`` in one transaction per 512 spans on one long-lived
  connection.  No typed tables, no lock, no dedupe.
* ``raw_anchor``: the performance anchors' own fastest end-to-end path (``arrow_e2e`` of
  ``../shared/anchors/duckdb_ingest.py``: a column-wise conversion written for speed, same
  ``otel_traces`` shape, same transactions), run on the same spans when that folder is present.
  The bar every ratio is taken against is the faster of the two raw paths.
* ``exporter``: ``DuckDBSpanExporter.export`` per 512 spans (sidecar lock, open/close per
  batch, keyed replace, otel_traces + agent_attempts + agent_attempt_inputs).
* ``sink``: the stock ``OTLPSpanExporter`` posting 512-span requests to ``otel-inputs collect``
  in its own process, timed until every span is queryable; its peak RSS is reported.  The stock
  exporter's protobuf encoding (pure Python, ~2-3 ms per rich span) shares the 2 cores.
* ``sink_pre``: the same sink fed pre-encoded request bodies: the sink's own capacity.

Per path it reports spans/s (wall), CPU-ms per span (this process for in-process paths; the sink
process's own utime+stime for the sink paths, so a loaded shared host distorts it far less than
wall time), bytes per span on disk after the final checkpoint (file, and the part in used blocks),
and for the sink its peak RSS (VmHWM).  The stock exporter's encode rate is measured alone, so
the report can say whether the sender or the sink limits the end-to-end figure.

Figures are medians over ``--runs``; no assertions here (tests never time anything).
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import importlib.util
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
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


def _proc_cpu_s(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def run_raw(spans: list[ReadableSpan], db: Path) -> dict[str, float]:
    return _raw_bar(db, "otel_traces", (traces_table([from_readable(s) for s in batch]) for batch in _batches(spans)),
                    len(spans))  # fmt: skip


def _raw_bar(db: Path, table: str, batches: Iterator[pa.Table], n: int) -> dict[str, float]:
    """The raw bar: each batch, converted as it is taken (timed), INSERTed into ``table`` in a
    transaction of its own on one connection."""
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
    """The anchors' DuckDB ingest script (``../shared/anchors`` beside the repository, or the
    folder ``OTEL_INPUTS_ANCHORS`` names), if present; loaded once per process."""
    folder = ANCHORS
    script = folder / "duckdb_ingest.py"
    if not script.is_file():
        return None
    sys.path.insert(0, str(folder))  # it imports its sibling ``shapes``
    spec = importlib.util.spec_from_file_location("anchor_duckdb_ingest", script)
    if spec is None or spec.loader is None:
        return None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_raw_anchor(spans: list[ReadableSpan], db: Path) -> dict[str, float]:
    anchor = _anchor_module()
    if anchor is None:
        raise FileNotFoundError("../shared/anchors/duckdb_ingest.py not found")
    con = duckdb.connect(str(db))
    con.execute(anchor.DDL)
    t0, c0 = time.perf_counter(), time.process_time()
    for batch in _batches(spans):
        table = anchor.arrow_of(batch)
        con.register("b", table)
        con.begin()
        con.execute("INSERT INTO otel_traces SELECT * FROM b")
        con.commit()
        con.unregister("b")
    elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
    con.close()
    return {"spans_per_s": len(spans) / elapsed, "cpu_ms_per_span": cpu * 1000 / len(spans), **_storage(db, len(spans))}


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
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    m = re.search(r"VmHWM:\s+(\d+) kB", text)
    return int(m.group(1)) if m else 0


def _start_sink(db: Path) -> tuple[subprocess.Popen[str], str, str]:
    """``otel-inputs collect`` in its own process: the process, its HTTP traces endpoint and gRPC target."""
    cli = Path(sys.executable).with_name("otel-inputs")
    proc = subprocess.Popen([str(cli), "collect", "--db", str(db), "--port", "0", "--grpc-port", "0"],
                            stderr=subprocess.PIPE, text=True)  # fmt: skip
    line = proc.stderr.readline() if proc.stderr else ""
    if "listening on " not in line:
        proc.kill()
        raise RuntimeError(f"sink did not start: {line!r}")
    return proc, line.split("listening on ")[1].split(" ")[0], line.split("OTLP/gRPC on ")[1].split()[0]


def _until_stored(db: Path, table: str, expected: int, t0: float, what: str) -> float:
    """Seconds from ``t0`` until ``expected`` rows of ``table`` are queryable in the sink's file (600 s at most)."""
    stored = 0
    while stored < expected:
        time.sleep(0.05)
        with read_connection(db, timeout_s=60) as con:
            stored = con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
        if time.perf_counter() - t0 > 600:
            raise RuntimeError(f"sink stored only {stored} of {expected} {what}")
    return time.perf_counter() - t0


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
        t0 = time.perf_counter()
        for batch in _batches(spans):
            sender.export(batch)
        sent = time.perf_counter() - t0
        elapsed = _until_stored(db, "otel_traces", len(spans), t0, "spans")
        rss_kib = _vm_hwm_kib(proc.pid)
        cpu = _proc_cpu_s(proc.pid)
        sender.shutdown()
    finally:
        proc.terminate()
        proc.wait(60)
    return {"spans_per_s": len(spans) / elapsed, "sender_spans_per_s": len(spans) / sent,
            "cpu_ms_per_span": cpu * 1000 / len(spans), "peak_rss_mib": rss_kib / 1024,
            **_storage(db, len(spans))}  # fmt: skip


def run_sink_prebuilt(spans: list[ReadableSpan], db: Path) -> dict[str, float]:
    """The sink's own capacity: request bodies pre-encoded (untimed), posted back to back."""
    import http.client
    from urllib.parse import urlsplit

    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    bodies = [encode_spans(b).SerializeToString() for b in _batches(spans)]
    proc, endpoint, _ = _start_sink(db)
    try:
        url = urlsplit(endpoint)
        t0 = time.perf_counter()
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
        stored = 0
        while stored < len(spans):
            time.sleep(0.05)
            with read_connection(db, timeout_s=60) as con:
                stored = con.execute("SELECT count(*) FROM otel_traces").fetchone()[0]
        elapsed = time.perf_counter() - t0
        rss_kib = _vm_hwm_kib(proc.pid)
        cpu = _proc_cpu_s(proc.pid)
    finally:
        proc.terminate()
        proc.wait(60)
    return {"spans_per_s": len(spans) / elapsed, "cpu_ms_per_span": cpu * 1000 / len(spans),
            "peak_rss_mib": rss_kib / 1024, **_storage(db, len(spans))}  # fmt: skip


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
        t0 = time.perf_counter()
        for i in range(0, len(records), BATCH):
            if sender.export(records[i : i + BATCH]).name != "SUCCESS":
                raise RuntimeError("log export failed")
        elapsed = _until_stored(db, "otel_logs", len(records), t0, "log records")
        rss_kib = _vm_hwm_kib(proc.pid)
        cpu = _proc_cpu_s(proc.pid)
        sender.shutdown()
    finally:
        proc.terminate()
        proc.wait(60)
    return {"spans_per_s": len(records) / elapsed, "cpu_ms_per_span": cpu * 1000 / len(records),
            "peak_rss_mib": rss_kib / 1024, **_storage(db, len(records))}  # fmt: skip


def _median(runs: list[dict[str, float]]) -> dict[str, float]:
    return {k: statistics.median(r[k] for r in runs) for k in runs[0]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2,048 spans, 1 run (a smoke run, not a figure)")
    parser.add_argument("--spans", type=int, default=None)
    parser.add_argument("--runs", type=int, default=None)
    parser.add_argument("--paths", default=None,
                        help="comma-separated subset of exporter,sink,sink_grpc,sink_pre,encode,logs "
                             "(the raw paths always run: they are the bar)")
    args = parser.parse_args(argv)
    count = args.spans or (2048 if args.quick else 10_240)
    runs = args.runs or (1 if args.quick else 3)
    print(f"building {count} rich spans (20 attributes, 20 input events x 15 attributes) ...", flush=True)
    spans = make_spans(count)
    paths: dict[str, Callable[[list[ReadableSpan], Path], dict[str, float]]] = {
        "raw_arrow": run_raw, "raw_anchor": run_raw_anchor, "exporter": run_exporter, "sink": run_sink,
        "sink_grpc": run_sink_grpc, "sink_pre": run_sink_prebuilt, "encode": run_encode,
    }  # fmt: skip
    if args.paths:
        wanted = {"raw_arrow", "raw_anchor", *args.paths.split(",")}
        unknown = wanted - set(paths) - {"logs"}
        if unknown:
            parser.error(f"unknown paths: {', '.join(sorted(unknown))}")
        paths = {k: v for k, v in paths.items() if k in wanted}
    if _anchor_module() is None:
        print("../shared/anchors not found: the bar is raw_arrow alone", flush=True)
        paths.pop("raw_anchor")
    log_paths: dict[str, Callable[[list[Any], Path], dict[str, float]]] = {}
    if not args.paths or "logs" in args.paths.split(","):
        log_paths = {"raw_logs": run_raw_logs, "sink_logs": run_sink_logs}
    paths.pop("logs", None)
    records = make_log_records(count) if log_paths else []
    results: dict[str, list[dict[str, float]]] = {k: [] for k in [*paths, *log_paths]}
    tmp = Path(tempfile.mkdtemp(prefix="bench-ingest-"))
    try:
        for r in range(runs):
            for name, fn in paths.items():  # interleaved, so drift on a shared host hits every path
                db = tmp / f"{name}-{r}.duckdb"
                results[name].append(fn(spans, db))
                print(f"  run {r + 1}/{runs} {name:9s} {results[name][-1]['spans_per_s']:8.0f} spans/s", flush=True)
            for name, log_fn in log_paths.items():
                db = tmp / f"{name}-{r}.duckdb"
                results[name].append(log_fn(records, db))
                print(f"  run {r + 1}/{runs} {name:9s} {results[name][-1]['spans_per_s']:8.0f} records/s", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    med = {k: _median(v) for k, v in results.items()}
    fastest = max((k for k in ("raw_arrow", "raw_anchor") if k in med), key=lambda k: med[k]["spans_per_s"])
    bar = med[fastest]["spans_per_s"]
    bar_cpu = med[fastest]["cpu_ms_per_span"]
    print(f"\n{count} spans x {runs} runs, batch {BATCH}, duckdb {duckdb.__version__}, {os.cpu_count()} cpus, "
          f"load average {os.getloadavg()[0]:.1f}")  # fmt: skip
    print(f"ratios against the fastest raw path: {fastest}")
    print(f"{'path':10s} {'spans/s':>9s} {'x raw':>7s} {'CPU ms/span':>12s} {'x raw CPU':>10s} {'B/span':>8s} {'used B/sp':>10s}  notes")
    for name, m in med.items():
        if name in log_paths:
            continue
        notes = ""
        if name in ("sink", "sink_grpc"):
            notes = (f"stock OTLP/{'gRPC' if name == 'sink_grpc' else 'HTTP'} exporter, durable 200; sink peak RSS "
                     f"{m['peak_rss_mib']:.0f} MiB, sender side {m['sender_spans_per_s']:.0f} spans/s")  # fmt: skip
        elif name == "sink_pre":
            notes = f"pre-encoded bodies (sink capacity); sink peak RSS {m['peak_rss_mib']:.0f} MiB"
        elif name == "encode":
            notes = "stock exporter encode only (sender CPU), no sink"
        storage = (f"{m['bytes_per_span']:8.0f} {m['used_bytes_per_span']:10.0f}" if "bytes_per_span" in m
                   else f"{'-':>8s} {'-':>10s}")  # fmt: skip
        print(f"{name:10s} {m['spans_per_s']:9.0f} {m['spans_per_s'] / bar:7.2f} {m['cpu_ms_per_span']:12.2f} "
              f"{bar_cpu / m['cpu_ms_per_span']:10.2f} {storage}  {notes}")  # fmt: skip
    if "encode" in med and "sink_pre" in med:
        enc, pre = med["encode"]["cpu_ms_per_span"], med["sink_pre"]["cpu_ms_per_span"]
        limiter = "the sender's encoding" if enc > pre else "the sink"
        print(f"\nend to end: the sender spends {enc:.2f} CPU-ms/span encoding, the sink {pre:.2f}: {limiter} limits "
              f"(on 2 cores they also share CPU, so neither runs alone)")  # fmt: skip
    if "sink_logs" in med:
        raw_logs, sink_logs = med["raw_logs"], med["sink_logs"]
        print(f"\nGenAI log events ({GENAI_EVENT}, structured body, 10 attributes), records/s:")
        print(f"  raw_logs  {raw_logs['spans_per_s']:9.0f}  (reference conversion + INSERT into otel_logs, one connection)")
        print(f"  sink_logs {sink_logs['spans_per_s']:9.0f}  {sink_logs['spans_per_s'] / raw_logs['spans_per_s']:.2f}x raw_logs, "
              f"{sink_logs['spans_per_s'] / bar:.2f}x the span bar; stock OTLP/HTTP log exporter, durable 200; "
              f"sink peak RSS {sink_logs['peak_rss_mib']:.0f} MiB")  # fmt: skip
    phoenix = 98.2
    print("vs Phoenix (98 spans/s, 1,717 MiB, ~21 KB/span): " + ", ".join(
        f"{name} {med[name]['spans_per_s'] / phoenix:.0f}x" for name in ("exporter", "sink", "sink_pre") if name in med))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
