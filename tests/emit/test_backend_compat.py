"""Opt-in attributes for existing backends: Phoenix (OpenInference) and Langfuse see the task."""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from otel_inputs import AgentObserver, CaptureMode, CapturePolicy, ProviderAttachment, names, resolve_request
from otel_inputs.testing import RecordingHarness

TASK = "Fix the flaky test in tests/test_io.py."


def record(tmp_path: Path, compat: str | None, policy: CapturePolicy, env: dict[str, str] | None = None):
    old = {k: os.environ.get(k) for k in (env or {})}
    os.environ.update(env or {})
    try:
        with RecordingHarness(tmp_path / "store") as h:
            obs = h.observer(policy=policy, agent_name="coder", backend_compat=compat)
            with obs.attempt(run_id="r", request=resolve_request(TASK),
                             attachments=[ProviderAttachment("notes.txt", b"hello")]) as rec:
                rec.record_output(text="Fixed: the test no longer races.")
            return h.span_for(rec.attempt_id).attributes
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def test_compat_is_off_by_default(tmp_path: Path) -> None:
    """Without OTEL_INPUTS_BACKEND_COMPAT no foreign name is written."""
    a = record(tmp_path, None, CapturePolicy(message_content="SPAN_ONLY"))
    foreign = {names.OPENINFERENCE_SPAN_KIND, names.OPENINFERENCE_INPUT_VALUE, names.OPENINFERENCE_OUTPUT_VALUE,
               names.OPENINFERENCE_METADATA, names.LANGFUSE_OBSERVATION_TYPE, names.LANGFUSE_OBSERVATION_INPUT}
    assert not foreign & set(a)


def test_phoenix_compat_shows_task_as_input_and_a_readable_summary(tmp_path: Path) -> None:
    """phoenix: AGENT kind, the task as input.value (text/plain), the output as output.value, the packet as JSON metadata."""
    a = record(tmp_path, "phoenix", CapturePolicy(message_content="SPAN_ONLY"))
    assert a[names.OPENINFERENCE_SPAN_KIND] == "AGENT"
    assert a[names.OPENINFERENCE_INPUT_VALUE] == TASK and a[names.OPENINFERENCE_INPUT_MIME_TYPE] == "text/plain"
    assert a[names.OPENINFERENCE_OUTPUT_VALUE] == "Fixed: the test no longer races."
    summary = json.loads(a[names.OPENINFERENCE_METADATA])["otel_inputs"]
    assert summary["coverage"] == a[names.PACKET_COVERAGE] and summary["captured"] == 1
    (item,) = summary["inputs"]
    assert item == {"seq": 0, "label": "notes.txt", "source": "explicit_attachment",
                    "delivery": "provider_attachment", "status": "captured", "bytes": 5}


def test_langfuse_compat_from_the_environment(tmp_path: Path) -> None:
    """OTEL_INPUTS_BACKEND_COMPAT=langfuse,phoenix writes Langfuse's observation type, input, output and metadata too."""
    a = record(tmp_path, None, CapturePolicy(message_content="SPAN_ONLY"),
               env={names.ENV_BACKEND_COMPAT: " Langfuse , phoenix"})
    assert a[names.LANGFUSE_OBSERVATION_TYPE] == "agent"
    assert a[names.LANGFUSE_OBSERVATION_INPUT] == TASK
    assert a[names.LANGFUSE_OBSERVATION_OUTPUT] == "Fixed: the test no longer races."
    assert json.loads(a[f"{names.LANGFUSE_OBSERVATION_METADATA}.otel_inputs_packet"])["captured"] == 1
    assert a[names.OPENINFERENCE_SPAN_KIND] == "AGENT"


def test_compat_content_obeys_the_capture_policy(tmp_path: Path) -> None:
    """Under metadata_only neither task nor output nor labels reach the compat names; the kind and counts still do."""
    a = record(tmp_path, "phoenix,langfuse", CapturePolicy(mode=CaptureMode.METADATA_ONLY, message_content="SPAN_ONLY"))
    for key in (names.OPENINFERENCE_INPUT_VALUE, names.OPENINFERENCE_OUTPUT_VALUE, names.LANGFUSE_OBSERVATION_INPUT,
                names.LANGFUSE_OBSERVATION_OUTPUT):
        assert key not in a, key
    summary = json.loads(a[names.OPENINFERENCE_METADATA])["otel_inputs"]
    assert summary["decision"] == "metadata_only" and "label" not in summary["inputs"][0]
    assert a[names.OPENINFERENCE_SPAN_KIND] == "AGENT"


def test_output_needs_content_on_spans(tmp_path: Path) -> None:
    """With the message switch at EVENT_ONLY the task is still the input, but the output text stays off the span."""
    a = record(tmp_path, "phoenix", CapturePolicy(message_content="EVENT_ONLY"))
    assert a[names.OPENINFERENCE_INPUT_VALUE] == TASK
    assert names.OPENINFERENCE_OUTPUT_VALUE not in a


def test_unknown_backend_is_warned_about(caplog: pytest.LogCaptureFixture) -> None:
    """An unknown backend name in the setting is ignored with a warning."""
    with caplog.at_level(logging.WARNING, logger="otel_inputs"):
        obs = AgentObserver(backend_compat="phoenix,datadog")
    assert {b.value for b in obs.backends} == {"phoenix"} and "datadog" in caplog.text


# --- a real Phoenix server ------------------------------------------------------------------------

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.phoenix
@pytest.mark.timeout(180)
@pytest.mark.skipif(importlib.util.find_spec("phoenix") is None,
                    reason="arize-phoenix is not installed (pip install arize-phoenix; not in the dev extra)")
def test_real_phoenix_server_shows_the_task_as_input(tmp_path: Path) -> None:
    """A real Phoenix server on loopback receives the attempt as an AGENT span whose input is the task and whose metadata is the packet."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    port, grpc_port = free_port(), free_port()
    env = {**os.environ, "PHOENIX_HOST": "127.0.0.1", "PHOENIX_PORT": str(port), "PHOENIX_GRPC_PORT": str(grpc_port),
           "PHOENIX_WORKING_DIR": str(tmp_path / "phoenix"), "PHOENIX_TELEMETRY_ENABLED": "false"}
    log = open(tmp_path / "phoenix.log", "wb")
    server = subprocess.Popen([sys.executable, "-m", "phoenix.server.main", "serve"], env=env, stdout=log,
                              stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            assert server.poll() is None, (tmp_path / "phoenix.log").read_text(errors="replace")[-2000:]
            try:
                if urllib.request.urlopen(f"{base}/healthz", timeout=2).status == 200:
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline, "Phoenix did not come up within 120 s"
            time.sleep(0.5)
        provider = TracerProvider(resource=Resource.create({"openinference.project.name": "otel-inputs"}))
        provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"{base}/v1/traces")))
        obs = AgentObserver(tracer_provider=provider, store=tmp_path / "store", agent_name="coder",
                            policy=CapturePolicy(message_content="SPAN_ONLY"), backend_compat="phoenix")
        with obs.attempt(run_id="r", request=resolve_request(TASK), session_id="sess-px",
                         attachments=[ProviderAttachment("notes.txt", b"hello")]) as rec:
            rec.record_output(text="Fixed.")
        provider.shutdown()
        spans: list = []
        for _ in range(40):  # Phoenix inserts asynchronously (the project appears with its first span)
            try:
                with urllib.request.urlopen(f"{base}/v1/projects/otel-inputs/spans?limit=10", timeout=5) as r:
                    spans = json.load(r)["data"]
            except urllib.error.HTTPError as exc:
                if exc.code != 404:
                    raise
            if spans:
                break
            time.sleep(0.5)
        (span,) = spans
        attrs = span["attributes"]
        assert span["span_kind"] == "AGENT" and span["name"] == "invoke_agent coder"
        assert attrs["input.value"] == TASK and attrs["input.mime_type"] == "text/plain"
        assert attrs["output.value"] == "Fixed."
        assert attrs["metadata.otel_inputs.coverage"] == "complete"
        assert attrs["metadata.otel_inputs.inputs.0.label"] == "notes.txt"  # Phoenix flattens the JSON metadata
        assert attrs["metadata.otel_inputs.inputs.0.status"] == "captured"
        assert attrs[names.ATTEMPT_ID] == rec.attempt_id
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(timeout=10)
        log.close()
