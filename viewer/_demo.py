"""Record a realistic multi-phase agent session through the public API, for ``make demo``.

Everything here is real: a prompt file on disk, a context-handoff directory with markdown, a PNG,
a JPEG, a PDF, a symlink and an oversized (sparse) file, the ``AgentObserver`` on a real SDK
tracer provider, the DuckDB exporter writing a real database, and the artifact store on disk.
Only the model is fake: it answers deterministically so the session always has a parse retry and
a gate retry.
"""

from __future__ import annotations

import io
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from otel_inputs import (
    AgentObserver,
    ArtifactStore,
    AttemptAdmission,
    CapturePolicy,
    ProviderAttachment,
    RetentionPolicy,
    names,
    resolve_request,
)

TASK = """# Add CSV export to the report service

Implement `export_csv(report_id)` in `reports/export.py`:

- stream rows instead of loading the whole report;
- quote fields per RFC 4180;
- keep the column order of `ReportSchema`.

Add tests for an empty report and for fields containing commas and quotes.
"""

SYSTEM_PLAN = "You are the planning agent. Reply with a JSON plan: {\"steps\": [...], \"tests\": [...]}."
SYSTEM_BUILD = "You are the implementation agent. Work in the repository; reply with a JSON envelope."


FEATURED = "build_initial"
"""The demo's most telling attempt, where its deep link opens: files by path with previews and recorded reads,
an attachment, inline items, and a retry of it in the same session."""


@dataclass(frozen=True)
class DemoPaths:
    out_dir: Path
    db_path: Path
    store_path: Path
    attempt_ids: dict[str, str] = field(default_factory=dict)

    @property
    def featured_attempt_id(self) -> str | None:
        """The attempt the demo's deep link opens (:data:`FEATURED`)."""
        return self.attempt_ids.get(FEATURED)


class FakeModel:
    """A deterministic stand-in for a provider: the replies that make retries happen."""

    def __init__(self, replies: list[str], latency_s: float) -> None:
        self.replies = list(replies)
        self.latency_s = latency_s
        self.requests: list[bytes] = []

    def complete(self, request_bytes: bytes) -> str:
        self.requests.append(request_bytes)
        time.sleep(self.latency_s)
        return self.replies.pop(0)


def _image_bytes(fmt: str, color: tuple[int, int, int], text: str) -> bytes:
    from PIL import Image, ImageDraw

    img = Image.new("RGB", (320, 180), color)
    draw = ImageDraw.Draw(img)
    draw.rectangle([20, 20, 300, 160], outline=(255, 255, 255), width=3)
    draw.text((40, 80), text, fill=(255, 255, 255))
    buf = io.BytesIO()
    img.save(buf, format=fmt)
    return buf.getvalue()


_PDF = (
    b"%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj\n"
    b"3 0 obj<</Type/Page/Parent 2 0 R/MediaBox[0 0 200 200]>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n"
)


def _workspace(root: Path) -> tuple[Path, Path, Path]:
    root.mkdir(parents=True, exist_ok=True)
    prompt = root / "task.md"
    prompt.write_text(TASK, encoding="utf-8")
    handoff = root / "handoff"
    handoff.mkdir(exist_ok=True)
    (handoff / "README.md").write_text(
        "# Handoff from planning\n\n1. Add `export_csv`.\n2. Stream rows.\n3. Tests for quoting.\n", encoding="utf-8"
    )
    (handoff / "diagrams").mkdir(exist_ok=True)
    (handoff / "diagrams" / "flow.png").write_bytes(_image_bytes("PNG", (40, 90, 160), "report -> rows -> csv"))
    (handoff / "screenshot.jpg").write_bytes(_image_bytes("JPEG", (150, 60, 40), "current report page"))
    (handoff / "rfc4180-notes.pdf").write_bytes(_PDF)
    secrets = root / "secrets.env"
    secrets.write_text("API_KEY=not-for-the-agent\n", encoding="utf-8")
    link = handoff / "secrets-link"
    if not link.is_symlink():
        os.symlink(secrets, link)
    with open(handoff / "full-dump.bin", "wb") as fh:
        fh.truncate(12 * 1024 * 1024)  # sparse: over the 10 MiB per-file bound, costs no disk
    attachment = root / "mockup.png"
    attachment.write_bytes(_image_bytes("PNG", (30, 120, 60), "CSV button mockup"))
    return prompt, handoff, attachment


def _render(template_first_line: str, task: str, terminal: str, tail: str) -> str:
    return f"{template_first_line}\n\n### prompt\n{task}\n{terminal}\n{tail}\n"


def record_demo(out_dir: str | os.PathLike[str], *, latency_s: float = 0.15, extra_rounds: int = 0,
                retention: RetentionPolicy | None = None) -> DemoPaths:
    """Record the demo session into ``out_dir`` (database, store, workspace); return the paths.

    ``extra_rounds`` adds that many further build turns (each changing the handoff files), and
    ``retention`` applies a disk budget to the store: together they show eviction at work.
    """
    from otel_inputs.exporter import DuckDBSpanExporter

    out = Path(out_dir).resolve()
    out.mkdir(parents=True, exist_ok=True)
    db_path = out / "otel-inputs.duckdb"
    store_path = out / "store"
    prompt, handoff, attachment_path = _workspace(out / "workspace")
    store = ArtifactStore(store_path)
    provider = TracerProvider(resource=Resource.create({"service.name": "demo-agent"}))
    exporter = DuckDBSpanExporter(db_path, store=store_path, source="demo")
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    # Exact messages on the spans, as OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY says.
    policy = CapturePolicy.from_env({names.ENV_GENAI_CAPTURE_CONTENT: "SPAN_ONLY"})
    retention = retention or RetentionPolicy()
    planner = AgentObserver(tracer_provider=provider, store=store, policy=policy, agent_name="planner",
                            provider_name="fake", request_model="fake-model-1", retention=retention)
    builder = AgentObserver(tracer_provider=provider, store=store, policy=policy, agent_name="builder",
                            provider_name="fake", request_model="fake-model-1", tracker=planner.tracker,
                            retention=retention)
    model = FakeModel(
        [
            "Sure! Here is my plan: stream rows, then quote.",  # not JSON -> parse retry
            json.dumps({"steps": ["add export_csv"], "tests": []}),  # JSON but no tests -> gate retry
            json.dumps({"steps": ["add export_csv", "stream rows"], "tests": ["empty", "quoting"]}),
            json.dumps({"status": "needs_fix", "note": "quoting test fails"}),
            json.dumps({"status": "done", "files": ["reports/export.py", "tests/test_export.py"]}),
            "Looks good.",
        ],
        latency_s,
    )
    run_id = "demo-run-" + time.strftime("%Y%m%d-%H%M%S")
    ids: dict[str, str] = {}
    request = resolve_request(str(prompt))

    def send(obs: AgentObserver, key: str, system: str, user: str, *, interrupted: bool = False,
             reads: tuple[tuple[str, dict[str, str]], ...] = (), **kw) -> str:
        messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        payload = json.dumps({"model": "fake-model-1", "messages": messages}).encode()
        with obs.attempt(run_id=run_id, request=request, system_message=system, user_message=user, **kw) as rec:
            ids[key] = rec.attempt_id
            rec.record_request(route="chat.completions", model="fake-model-1", messages=messages,
                               options={"temperature": 0}, dispatch="dispatched")
            for tool, args in reads:
                _tool_step(provider, tool, args)
            reply = _model_step(provider, model, payload, len(user) // 4)
            if interrupted:
                # The stream broke: the request copy survives, the output is unknown, never "not sent".
                rec.record_output(text=None, settlement="stream_interrupted", dispatch="unknown")
            else:
                rec.record_output(text=reply, usage={"input_tokens": len(user) // 4, "output_tokens": len(reply) // 4},
                                  settlement="completed", dispatch="dispatched")
            return reply

    plan_user = _render("## Plan the work described in ### prompt", request.text, "### plan format",
                        "Reply with JSON: {\"steps\": [...], \"tests\": [...]}")
    send(planner, "plan_initial", SYSTEM_PLAN, plan_user, phase="plan", session_id="sess-plan")
    send(planner, "plan_parse_retry", SYSTEM_PLAN,
         "Your previous reply was not valid JSON. Reply again with only the JSON plan.",
         phase="plan", session_id="sess-plan", send_kind="parse_retry")
    plan = send(planner, "plan_gate_retry", SYSTEM_PLAN,
                "The plan check failed: `tests` is empty. Add the tests the task asks for.",
                phase="plan", session_id="sess-plan", send_kind="gate_retry")
    envelope = {"phase": "plan", "result": json.loads(plan)}
    attachments = [ProviderAttachment.from_path(attachment_path, label="mockup.png (UI mockup)")]
    build_user = _render("## Implement the work described in ### prompt", request.text, "### output contract",
                         "Previous phase envelope:\n" + json.dumps(envelope) +
                         f"\nContext files are available under {handoff}.")
    send(builder, "build_initial", SYSTEM_BUILD, build_user, phase="build", session_id="sess-build",
         previous_envelope=envelope, context_roots=[handoff], attachments=attachments,
         reads=(("read_file", {"path": str(handoff / "README.md")}), ("list_dir", {"path": str(handoff)}),
                ("Read", {"file_path": str(handoff / "diagrams" / "flow.png")})))
    (handoff / "README.md").write_text(
        "# Handoff from planning\n\n1. Add `export_csv`.\n2. Stream rows.\n3. Tests for quoting.\n"
        "4. Quoting test fails: double the embedded quotes.\n", encoding="utf-8")
    (handoff / "screenshot.jpg").unlink()
    (handoff / "failing-test.log").write_text("FAILED tests/test_export.py::test_quotes\n", encoding="utf-8")
    send(builder, "build_gate_retry", SYSTEM_BUILD, "The quoting test fails; see failing-test.log in the handoff.",
         phase="build", session_id="sess-build", send_kind="gate_retry", previous_envelope=envelope,
         envelope_in_message=False, context_roots=[handoff],
         reads=(("cat", {"path": "failing-test.log"}), ("run_tests", {"command": "pytest -q"})))
    for n in range(extra_rounds):
        (handoff / "README.md").write_text(
            f"# Handoff, round {n + 2}\n\n" + "Next fix attempt.\n" * (50 + n) , encoding="utf-8")
        (handoff / f"round-{n}.log").write_bytes(os.urandom(2048).hex().encode())
        model.replies.insert(0, json.dumps({"status": "needs_fix", "round": n}))
        send(builder, f"build_round_{n}", SYSTEM_BUILD, f"Round {n + 2}: tests still fail.", phase="build",
             session_id="sess-build", send_kind="gate_retry", previous_envelope=envelope,
             envelope_in_message=False, context_roots=[handoff], interrupted=(n == 0))
    send(builder, "review_opted_out", "You are the reviewer.", "Review the change. (customer data inside)",
         phase="review", session_id="sess-review", context_roots=[handoff],
         admission=AttemptAdmission(content_opt_out=True))
    _foreign_genai_span(provider, request.text)
    for obs in (planner, builder):
        obs.flush(10)
        if obs.retention_gate is not None:
            obs.retention_gate.wait(30)
    provider.force_flush()
    provider.shutdown()
    return DemoPaths(out, db_path, store_path, ids)


def _model_step(provider: TracerProvider, model: FakeModel, payload: bytes, input_tokens: int) -> str:
    """The model call as a GenAI chat span nested under the attempt (one of the attempt's steps)."""
    tracer = provider.get_tracer("demo-agent-framework", "1.0")
    attrs = {names.GEN_AI_OPERATION_NAME: "chat", names.GEN_AI_PROVIDER_NAME: "fake",
             names.GEN_AI_REQUEST_MODEL: "fake-model-1"}
    with tracer.start_as_current_span("chat fake-model-1", attributes=attrs) as span:
        reply = model.complete(payload)
        span.set_attribute(names.GEN_AI_RESPONSE_MODEL, "fake-model-1-2026")
        span.set_attribute(names.GEN_AI_USAGE_INPUT_TOKENS, input_tokens)
        span.set_attribute(names.GEN_AI_USAGE_OUTPUT_TOKENS, len(reply) // 4)
    return reply


def _tool_step(provider: TracerProvider, tool: str, args: dict[str, str]) -> None:
    """A tool call as a GenAI execute_tool span nested under the attempt, arguments included."""
    tracer = provider.get_tracer("demo-agent-framework", "1.0")
    attrs = {names.GEN_AI_OPERATION_NAME: "execute_tool", names.GEN_AI_TOOL_NAME: tool,
             names.GEN_AI_TOOL_CALL_ID: f"call-{tool}-{time.monotonic_ns() % 10_000}",
             names.GEN_AI_TOOL_CALL_ARGUMENTS: json.dumps(args)}
    with tracer.start_as_current_span(f"execute_tool {tool}", attributes=attrs):
        time.sleep(0.01)


def _foreign_genai_span(provider: TracerProvider, task: str) -> None:
    """A plain GenAI chat span from an app that knows nothing of otel_inputs (a legacy attempt)."""
    tracer = provider.get_tracer("some-other-genai-app", "1.0")
    user = _render("## Review the change described in ### prompt", task, "### review checklist",
                   "- tests pass\n- no secrets")
    attrs = {
        names.GEN_AI_OPERATION_NAME: "chat",
        names.GEN_AI_PROVIDER_NAME: "fake",
        names.GEN_AI_REQUEST_MODEL: "fake-model-1",
        names.GEN_AI_INPUT_MESSAGES: json.dumps([{"role": "user", "parts": [{"type": "text", "content": user}]}]),
    }
    with tracer.start_as_current_span("chat fake-model-1", attributes=attrs):
        time.sleep(0.05)
