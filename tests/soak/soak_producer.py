"""One producer process of the soak test (not a test module).

    python soak_producer.py agent   NAME SECONDS WORKDIR DB STORE
    python soak_producer.py runtime NAME SECONDS WORKDIR ENDPOINT STORE

``agent``: AgentObserver + the in-process DuckDBSpanExporter behind a BatchSpanProcessor, writing
the shared DuckDB file.  ``runtime``: AgentObserver + the stock OTLPSpanExporter (HTTP/protobuf)
posting to an ``otel-inputs collect`` sink.  Both run real attempts with a small context dir for
SECONDS, then shut the provider down (flushing the batch processor) and write
``WORKDIR/NAME.json``: every span id ended, every span id the exporter reported exported (and
how), and the process's peak RSS.
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from opentelemetry.sdk.resources import Resource  # noqa: E402
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExportResult  # noqa: E402

from otel_inputs import AgentObserver, ArtifactStore, CapturePolicy, ProviderAttachment, inline_request  # noqa: E402


def vm(field: str, pid: int | str = "self") -> int:
    """A /proc/<pid>/status memory field in KiB (VmHWM: peak RSS, VmRSS: current RSS)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return -1


class Ended(SpanProcessor):
    """Remembers the id of every span that ended, so the parent can prove none was lost."""

    def __init__(self) -> None:
        self.ids: list[str] = []

    def on_end(self, span) -> None:  # noqa: ANN001 - SDK signature
        self.ids.append(format(span.context.span_id, "016x"))


def recording(exporter_cls):
    class Recording(exporter_cls):
        exported: list[str]
        spilled: list[str]
        failed: list[str]

        def export(self, spans):  # noqa: ANN001, ANN201 - SDK signature
            ids = [format(s.context.span_id, "016x") for s in spans]
            writer = getattr(self, "writer", None)
            spilled_before = writer.counters["spans_spilled"] if writer is not None else 0
            result = super().export(spans)
            if result is SpanExportResult.SUCCESS:
                self.exported.extend(ids)
            elif writer is not None and writer.counters["spans_spilled"] >= spilled_before + len(ids):
                self.spilled.extend(ids)  # durable in the spool; drained by the next batch of any writer
            else:
                self.failed.extend(ids)
            return result

    return Recording


def main() -> None:
    mode, name, seconds, workdir, target, store_root = sys.argv[1:7]
    workdir = Path(workdir)
    if mode == "agent":
        from otel_inputs.exporter import DuckDBSpanExporter

        exporter = recording(DuckDBSpanExporter)(target, store=store_root)
    else:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        exporter = recording(OTLPSpanExporter)(endpoint=target, timeout=10)
    exporter.exported, exporter.spilled, exporter.failed = [], [], []
    ended = Ended()
    provider = TracerProvider(resource=Resource.create({"service.name": f"soak-{name}"}))
    provider.add_span_processor(ended)
    provider.add_span_processor(BatchSpanProcessor(exporter, schedule_delay_millis=500))
    observer = AgentObserver(tracer_provider=provider, store=ArtifactStore(store_root),
                             policy=CapturePolicy(message_content=True), agent_name=name,
                             provider_name="fake", request_model="soak-model")
    ctx = workdir / f"ctx-{name}"
    ctx.mkdir(parents=True, exist_ok=True)
    rng = random.Random(name)
    deadline = time.monotonic() + float(seconds)
    n = 0
    rss_after_warmup = None
    warmup_at = time.monotonic() + min(10.0, float(seconds) / 4)
    while time.monotonic() < deadline:
        n += 1
        (ctx / "notes.md").write_text(f"# {name} notes\nturn {n // 3}\n")
        (ctx / f"scratch-{n % 4}.txt").write_text(f"{name} {n} {rng.random()}\n" * rng.randint(1, 30))
        send_kind = "initial" if n % 3 == 1 else "parse_retry"
        with observer.attempt(run_id=f"soak-{mode}", request=inline_request(f"soak task of {name}"),
                              attempt_id=f"{name}-{n}", session_id=f"{name}-s{(n - 1) // 3}", phase="soak",
                              send_kind=send_kind, context_roots=[ctx],
                              attachments=[ProviderAttachment("a.txt", f"{name} {n}".encode())],
                              system_message="You are a soak agent.", user_message=f"turn {n}"):
            time.sleep(rng.uniform(0.005, 0.02))  # the "model call"
        time.sleep(0.05)
        if rss_after_warmup is None and time.monotonic() >= warmup_at:
            rss_after_warmup = vm("VmRSS")
    provider.shutdown()  # flushes the batch processor through the exporter
    out = {
        "name": name, "mode": mode, "attempts": n, "ended": ended.ids, "exported": exporter.exported,
        "spilled": exporter.spilled, "failed": exporter.failed, "vmhwm_kib": vm("VmHWM"),
        "rss_after_warmup_kib": rss_after_warmup, "rss_end_kib": vm("VmRSS"),
    }
    tmp = workdir / f".{name}.json.tmp"
    tmp.write_text(json.dumps(out))
    os.replace(tmp, workdir / f"{name}.json")


if __name__ == "__main__":
    main()
