"""A small agent loop instrumented with otel-inputs, with a fake model.

    python examples/agent_loop.py [WORKDIR]

It resolves the task from a prompt file, sends it (initial), gets an unparsable reply and sends a
parse retry in the same session, then runs a later phase that receives the previous envelope and a
context-handoff directory (markdown, a PNG, a symlink and an oversized file).  The spans are
printed as JSON; with ``OTEL_INPUTS_DB`` set they also land in DuckDB.

Instrumenting the loop is the dozen lines marked ``# otel-inputs``.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_inputs import AgentObserver, ArtifactStore, CapturePolicy, resolve_request

PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489"
    "0000000d49444154789c63f8cfc0f01f0005000101ff89993d1d0000000049454e44ae426082"
)


def fake_model(request_bytes: bytes, replies: list[str]) -> str:
    return replies.pop(0)


def make_workspace(root: Path) -> tuple[Path, Path]:
    root.mkdir(parents=True, exist_ok=True)
    prompt = root / "task.md"
    prompt.write_text("Write a function that parses ISO-8601 durations.\n", encoding="utf-8")
    handoff = root / "handoff"
    handoff.mkdir(exist_ok=True)
    (handoff / "notes.md").write_text("# Notes\nSupport PnYnMnDTnHnMnS.\n", encoding="utf-8")
    (handoff / "diagram.png").write_bytes(PNG)
    if not (handoff / "elsewhere").is_symlink():
        os.symlink("/etc/hostname", handoff / "elsewhere")
    with open(handoff / "huge.log", "wb") as fh:
        fh.truncate(11 * 1024 * 1024)
    return prompt, handoff


def run_example(workdir: Path, provider: TracerProvider) -> dict[str, str]:
    """Run the loop; return the attempt ids by role."""
    prompt, handoff = make_workspace(workdir)
    replies = ["I think the answer is...", json.dumps({"code": "def parse(s): ..."}), json.dumps({"ok": True})]
    observer = AgentObserver(  # otel-inputs
        tracer_provider=provider, store=ArtifactStore(workdir / "store"),  # otel-inputs
        policy=CapturePolicy.from_env(), agent_name="coder", provider_name="fake",  # otel-inputs
    )  # otel-inputs
    request = resolve_request(str(prompt))  # otel-inputs: task text + provenance
    ids: dict[str, str] = {}
    user = f"Task:\n{request.text}"
    for send_kind in ("initial", "parse_retry"):
        payload = json.dumps({"messages": [{"role": "user", "content": user}]}).encode()
        with observer.attempt(run_id="example", request=request, phase="implement",  # otel-inputs
                              session_id="s-implement", send_kind=send_kind, user_message=user) as rec:
            ids[send_kind] = rec.attempt_id
            reply = fake_model(payload, replies)
        try:
            envelope = json.loads(reply)
            break
        except json.JSONDecodeError:
            user = "Reply with JSON only."
    with observer.attempt(run_id="example", request=request, phase="review", session_id="s-review",  # otel-inputs
                          previous_envelope=envelope, context_roots=[handoff]) as rec:  # otel-inputs
        ids["review"] = rec.attempt_id
        fake_model(b"{}", replies)
    return ids


def main(argv: list[str]) -> int:
    workdir = Path(argv[1]) if len(argv) > 1 else Path(tempfile.mkdtemp(prefix="otel-inputs-example-"))
    provider = TracerProvider()
    memory = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    if os.environ.get("OTEL_INPUTS_DB"):
        from otel_inputs.exporter import DuckDBSpanExporter

        provider.add_span_processor(SimpleSpanProcessor(DuckDBSpanExporter(store=workdir / "store")))
    run_example(workdir, provider)
    provider.shutdown()
    for span in memory.get_finished_spans():
        print(span.to_json())
    print(f"# store: {workdir / 'store'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
