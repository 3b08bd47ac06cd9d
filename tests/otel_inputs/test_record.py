from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF

from oi_fixtures import TINY, make_context_dir
from tmpfs import mount_tmpfs, unmount
from otel_inputs import AttemptAdmission, CaptureLimits, CaptureMode, CapturePolicy, names, resolve_request
from otel_inputs.testing import RecordingHarness

INPUT_KEYS = set(names.INPUT_EVENT_ATTRIBUTES)


def fake_request_bytes(system: str, user: str) -> bytes:
    return json.dumps({"model": "fake-1", "messages": [{"role": "system", "content": system},
                                                       {"role": "user", "content": user}]}).encode()


def test_initial_send_with_prompt_file(harness: RecordingHarness, prompt_file: Path) -> None:
    """An initial send records GenAI + our attributes, task provenance and one inline prompt_file event."""
    obs = harness.observer(agent_name="coder", provider_name="fake", request_model="fake-1")
    req = resolve_request(str(prompt_file))
    with obs.attempt(run_id="run-1", request=req, phase="build", session_id="sess-1",
                     system_message="You are a coder.", user_message=req.text) as rec:
        pass
    span = harness.span_for(rec.attempt_id)
    a = span.attributes
    assert span.name == "invoke_agent coder"
    assert a[names.GEN_AI_OPERATION_NAME] == "invoke_agent"
    # INTERNAL agent span: the GenAI conventions dropped gen_ai.provider.name there.
    assert names.GEN_AI_PROVIDER_NAME not in a
    assert a[names.PROVIDER_NAME] == "fake" and a[names.GEN_AI_REQUEST_MODEL] == "fake-1"
    assert a[names.GEN_AI_CONVERSATION_ID] == "sess-1" and a[names.RUN_ID] == "run-1"
    assert a[names.PHASE] == "build" and a[names.SEND_KIND] == "initial" and a[names.TURN_INDEX] == 1
    assert names.PREVIOUS_TURN_ATTEMPT_ID not in a and names.RETRY_OF_ATTEMPT_ID not in a
    assert a[names.TASK_PROMPT] == prompt_file.read_text()
    assert a[names.TASK_SOURCE_KIND] == "prompt_file" and a[names.TASK_SOURCE_PATH] == str(prompt_file)
    assert a[names.TASK_SHA256] == hashlib.sha256(prompt_file.read_bytes()).hexdigest()
    assert a[names.TASK_SIZE_BYTES] == len(prompt_file.read_bytes())
    assert a[names.PACKET_VERSION_ATTR] == 1 and a[names.PACKET_COVERAGE] == "complete"
    assert (a[names.PACKET_DECLARED_COUNT], a[names.PACKET_CAPTURED_COUNT], a[names.PACKET_OMITTED_COUNT]) == (1, 1, 0)
    assert a[names.PACKET_ITEM_COUNT] == 1 and a[names.CAPTURE_DECISION] == "admitted"
    assert json.loads(a[names.GEN_AI_SYSTEM_INSTRUCTIONS]) == [{"type": "text", "content": "You are a coder."}]
    assert json.loads(a[names.GEN_AI_INPUT_MESSAGES])[0]["parts"][0]["content"] == req.text
    [event] = harness.inputs(span)
    assert set(event) <= INPUT_KEYS
    assert event[names.INPUT_SOURCE_KIND] == "prompt_file" and event[names.INPUT_DELIVERY_MODE] == "inline"
    assert event[names.INPUT_SEQ] == 0 and event[names.INPUT_CAPTURE_STATUS] == "captured"
    assert event[names.INPUT_ARTIFACT_STATUS] == "available"
    assert event[names.INPUT_SNAPSHOT_REF] == "sha256:" + a[names.TASK_SHA256]
    assert "/" not in event[names.INPUT_ID]


def test_parse_retry_in_same_session_links_and_inherits(harness: RecordingHarness, prompt_file: Path) -> None:
    """A parse retry is turn 2, names previous turn and retry-of, links both, and the task is session history."""
    obs = harness.observer(agent_name="coder")
    req = resolve_request(str(prompt_file))
    with obs.attempt(run_id="r", request=req, phase="build", session_id="s") as first:
        pass
    with obs.attempt(run_id="r", request=req, phase="build", session_id="s", send_kind="parse_retry",
                     user_message="Your reply was not valid JSON.") as retry:
        pass
    span = harness.span_for(retry.attempt_id)
    a = span.attributes
    assert a[names.SEND_KIND] == "parse_retry" and a[names.TURN_INDEX] == 2
    assert a[names.PREVIOUS_TURN_ATTEMPT_ID] == first.attempt_id == a[names.RETRY_OF_ATTEMPT_ID]
    first_ctx = harness.span_for(first.attempt_id).context
    kinds = sorted(dict(link.attributes)[names.LINK_KIND] for link in span.links)
    assert kinds == ["previous_turn", "retry_of"]
    assert all(link.context.span_id == first_ctx.span_id for link in span.links)
    [event] = harness.inputs(span)
    assert event[names.INPUT_DELIVERY_MODE] == "session_history"


def test_later_phase_with_envelope_and_context_dir(harness: RecordingHarness, tmp_path: Path) -> None:
    """A later phase records the inline envelope and each context entry: text and PNG captured, symlink and FIFO unavailable."""
    ctx = make_context_dir(tmp_path / "handoff")
    obs = harness.observer(agent_name="reviewer")
    with obs.attempt(run_id="r", request=resolve_request("Review the change."), phase="review", session_id="s2",
                     previous_envelope={"status": "done", "files": ["a.py"]}, context_roots=[ctx]) as rec:
        pass
    span = harness.span_for(rec.attempt_id)
    events = harness.inputs(span)
    got = [(e[names.INPUT_LABEL], e[names.INPUT_SOURCE_KIND], e[names.INPUT_DELIVERY_MODE],
            e[names.INPUT_CAPTURE_STATUS], e.get(names.INPUT_MEDIA_TYPE)) for e in events]
    assert got == [
        ("previous envelope", "previous_envelope", "inline", "captured", "application/json"),
        ("img/diagram.png", "context_handoff", "path_reference", "captured", "image/png"),
        ("link-to-outside", "context_handoff", "path_reference", "unreadable", None),
        ("notes.md", "context_handoff", "path_reference", "captured", "text/plain; charset=utf-8"),
        ("pipe", "context_handoff", "path_reference", "unreadable", None),
    ]
    assert [e[names.INPUT_SEQ] for e in events] == list(range(5))
    assert span.attributes[names.TASK_SOURCE_KIND] == "inline_text"
    assert span.attributes[names.PACKET_ITEM_COUNT] == 5 and span.attributes[names.PACKET_OMITTED_COUNT] == 2
    for e in events:
        assert e[names.INPUT_PREVIEW_KIND] in ("text", "image", "none")
        if e[names.INPUT_CAPTURE_STATUS] == "captured":
            snap = harness.store.read_input(rec.attempt_id, e[names.INPUT_ID])
            assert hashlib.sha256(snap.data).hexdigest() == e[names.INPUT_SHA256]


def test_opted_out_attempt_records_gap_and_no_content(harness: RecordingHarness, tmp_path: Path, prompt_file: Path) -> None:
    """A content opt-out records the suppressed decision and reason, no task text, no items, no stored bytes."""
    ctx = make_context_dir(tmp_path / "c")
    obs = harness.observer()
    with obs.attempt(run_id="r", request=resolve_request(str(prompt_file)), context_roots=[ctx],
                     user_message="secret", admission=AttemptAdmission(content_opt_out=True)) as rec:
        pass
    a = harness.span_for(rec.attempt_id).attributes
    assert a[names.CAPTURE_DECISION] == "suppressed" and a[names.CAPTURE_GAP_REASON] == "policy_opt_out"
    assert a[names.PACKET_COVERAGE] == "partial" and a[names.PACKET_ITEM_COUNT] == 0
    for absent in (names.TASK_PROMPT, names.TASK_SHA256, names.GEN_AI_INPUT_MESSAGES,
                   names.PACKET_DECLARED_COUNT, names.PACKET_OMITTED_COUNT):
        assert absent not in a
    assert harness.inputs(harness.span_for(rec.attempt_id)) == []
    assert not any(harness.store.objects_dir.iterdir())


def test_temporary_run_and_metadata_only_modes(tmp_path: Path, context_dir: Path) -> None:
    """A temporary run is suppressed; metadata_only lists items without bytes or content attributes."""
    with RecordingHarness(tmp_path / "s1") as h:
        with h.observer().attempt(run_id="r", request=resolve_request("t"),
                                  admission=AttemptAdmission(temporary_run=True)) as rec:
            pass
        assert h.span_for(rec.attempt_id).attributes[names.CAPTURE_GAP_REASON] == "temporary_run"
    with RecordingHarness(tmp_path / "s2") as h:
        obs = h.observer(policy=CapturePolicy(mode=CaptureMode.METADATA_ONLY, message_content=True))
        with obs.attempt(run_id="r", request=resolve_request("t"), context_roots=[context_dir],
                         user_message="hello") as rec:
            pass
        span = h.span_for(rec.attempt_id)
        assert span.attributes[names.CAPTURE_DECISION] == "metadata_only"
        assert names.TASK_PROMPT not in span.attributes and names.GEN_AI_INPUT_MESSAGES not in span.attributes
        events = h.inputs(span)
        assert len(events) == 4 and all(names.INPUT_SHA256 not in e for e in events)
        assert not any(h.store.objects_dir.iterdir())


def test_message_content_off_by_default(tmp_path: Path) -> None:
    """Without OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT, gen_ai message attributes are absent."""
    with RecordingHarness(tmp_path / "s") as h:
        with h.observer(policy=CapturePolicy()).attempt(run_id="r", request=resolve_request("t"),
                                                        system_message="sys", user_message="u") as rec:
            pass
        a = h.span_for(rec.attempt_id).attributes
        assert names.GEN_AI_INPUT_MESSAGES not in a and names.GEN_AI_SYSTEM_INSTRUCTIONS not in a
        assert a[names.TASK_PROMPT] == "t"


def test_unsampled_attempt_captures_nothing(tmp_path: Path, context_dir: Path) -> None:
    """An attempt whose span is not sampled copies nothing into the store: no hidden copy."""
    with RecordingHarness(tmp_path / "s", sampler=ALWAYS_OFF) as h:
        with h.observer().attempt(run_id="r", request=resolve_request("t"), context_roots=[context_dir]) as rec:
            assert rec.decision.gap_reason.value == "sampled_out"
        assert h.spans() == ()
        assert not any(h.store.objects_dir.iterdir()) and h.store.attempts() == []


@pytest.mark.parametrize("bound,limits,setup", [
    ("file_count", CaptureLimits(max_files=3), lambda r: [(r / f"f{i}").write_text("x") for i in range(5)]),
    ("depth", CaptureLimits(max_depth=1), lambda r: ((r / "a" / "b").mkdir(parents=True), (r / "a" / "b" / "f").write_text("x"))),
    ("total_bytes", TINY, lambda r: [(r / f"f{i}").write_bytes(bytes([i]) * 1000) for i in range(6)]),
    ("file_bytes", TINY, lambda r: (r / "big").write_bytes(b"x" * 2000)),
])
def test_each_bound_on_the_span(tmp_path: Path, bound: str, limits: CaptureLimits, setup) -> None:
    """Each tripped bound shows on the span: a sentinel naming it (or a limit_exceeded item) and honest counts."""
    root = tmp_path / "ctx"
    root.mkdir()
    setup(root)
    with RecordingHarness(tmp_path / "s") as h:
        with h.observer(limits=limits).attempt(run_id="r", request=resolve_request("t"), context_roots=[root]) as rec:
            pass
        span = h.span_for(rec.attempt_id)
        events = h.inputs(span)
        a = span.attributes
        if bound == "file_bytes":
            assert events[0][names.INPUT_CAPTURE_STATUS] == "limit_exceeded" and bound in events[0][names.INPUT_DETAIL]
            assert a[names.PACKET_COVERAGE] == "complete"
        else:
            assert events[-1][names.INPUT_CAPTURE_STATUS] == "enumeration_incomplete"
            assert bound in events[-1][names.INPUT_DETAIL]
            assert a[names.PACKET_COVERAGE] == "partial" and a[names.CAPTURE_GAP_REASON] == "limit_exceeded"
            assert names.PACKET_DECLARED_COUNT not in a and names.PACKET_OMITTED_COUNT not in a
        assert a[names.PACKET_ITEM_COUNT] == len(events)


def _agent_call(obs, request_bytes: bytes, **kw) -> bytes:
    """A fake runtime: the bytes it would send are built before observation and sent unchanged."""
    with obs.attempt(**kw):
        return request_bytes


def test_request_bytes_unchanged_even_when_store_fails(tmp_path: Path, context_dir: Path) -> None:
    """Observation failure (store unusable) is a recorded gap and the request bytes are byte-identical."""
    request = fake_request_bytes("sys", "do it")
    copy = bytes(request)
    bad_root = tmp_path / "not-a-dir"
    bad_root.write_text("x")
    with RecordingHarness(tmp_path / "s") as h:
        from otel_inputs import AgentObserver

        obs = AgentObserver(tracer_provider=h.provider, store=bad_root)
        sent = _agent_call(obs, request, run_id="r", request=resolve_request("do it"), context_roots=[context_dir])
        assert sent == copy
        [span] = h.attempt_spans()
        assert span.attributes[names.CAPTURE_GAP_REASON] == "store_unavailable"
        assert span.attributes[names.PACKET_COVERAGE] == "partial"


@pytest.fixture
def read_only_store(tmp_path: Path):
    src = tmp_path / "rw"
    src.mkdir()
    from otel_inputs import ArtifactStore

    ArtifactStore(src)
    ro = tmp_path / "ro"
    ro.mkdir()
    ok = subprocess.run(["mount", "--bind", str(src), str(ro)], capture_output=True).returncode == 0
    if ok:
        ok = subprocess.run(["mount", "-o", "remount,bind,ro", str(ro)], capture_output=True).returncode == 0
        if not ok:
            subprocess.run(["umount", str(ro)])
    if not ok:
        pytest.skip("cannot make a read-only bind mount here (needs root and mount permission)")
    try:
        yield ro
    finally:
        subprocess.run(["umount", str(ro)])


def test_request_bytes_unchanged_with_read_only_store(tmp_path: Path, context_dir: Path, read_only_store: Path) -> None:
    """With the store on a read-only filesystem the call proceeds with identical bytes and the gap is recorded."""
    request = fake_request_bytes("sys", "do it")
    with RecordingHarness(tmp_path / "s") as h:
        from otel_inputs import AgentObserver

        obs = AgentObserver(tracer_provider=h.provider, store=read_only_store)
        sent = _agent_call(obs, request, run_id="r", request=resolve_request("do it"), context_roots=[context_dir])
        assert sent == fake_request_bytes("sys", "do it")
        [span] = h.attempt_spans()
        assert span.attributes[names.CAPTURE_GAP_REASON] == "store_unavailable"
        events = h.inputs(span)
        assert len(events) == 4 and all(e[names.INPUT_ARTIFACT_STATUS] == "never_captured" for e in events)


def test_agent_exception_propagates_and_marks_span(harness: RecordingHarness) -> None:
    """An exception from the agent call is re-raised unchanged and the span ends with error status."""
    with pytest.raises(RuntimeError, match="provider down"):
        with harness.observer().attempt(run_id="r", request=resolve_request("t")):
            raise RuntimeError("provider down")
    [span] = harness.attempt_spans()
    assert span.status.status_code.name == "ERROR"


def test_otel_inputs_imports_the_api_only() -> None:
    """Importing otel_inputs (not .testing) loads no OpenTelemetry SDK module."""
    code = "import sys, otel_inputs; print(any(m.startswith('opentelemetry.sdk') for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_names_are_spelled_only_in_the_registry() -> None:
    """No module other than otel_inputs/names.py spells an otel_inputs.* wire name as a string literal."""
    import re

    root = Path(__file__).parents[2]
    pattern = re.compile(r"""["']otel_inputs\.(input|packet|task|capture|run|attempt|part|link|phase|send_kind|turn_index|previous_turn|retry_of|exchange_part)""")
    offenders = []
    for pkg in ("otel_inputs", "exporter", "viewer"):
        for f in (root / pkg).rglob("*.py"):
            if f.name == "names.py":
                continue
            if pattern.search(f.read_text(encoding="utf-8")):
                offenders.append(str(f.relative_to(root)))
    assert offenders == []


def test_exchange_parts_are_recorded_independently(harness: RecordingHarness) -> None:
    """The logical request and the observable output are separate parts with independent outcomes; unknown dispatch stays unknown."""
    from otel_inputs.store import AccessPolicy, EvidenceReader

    obs = harness.observer()
    with obs.attempt(run_id="r", request=resolve_request("t")) as rec:
        req = rec.record_request(route="chat", model="m", messages=[{"role": "user", "content": "hi"}],
                                 dispatch="dispatched")
        out = rec.record_output(text="x" * (300 * 1024))  # over the 256 KiB part limit
    assert obs.flush(10)
    span = harness.span_for(rec.attempt_id)
    parts = {dict(e.attributes)[names.PART_NAME]: dict(e.attributes)
             for e in span.events if e.name == names.EXCHANGE_PART_EVENT}
    assert parts["logical_request"][names.PART_CAPTURE] == "captured"
    assert parts["logical_request"][names.PART_DISPATCH] == "dispatched"
    assert parts["observable_output"][names.PART_CAPTURE] == "truncated"
    assert parts["observable_output"][names.PART_DISPATCH] == "unknown"
    reader = EvidenceReader(harness.store, policy=AccessPolicy())
    got = reader.read_part("me", rec.attempt_id, "logical_request")
    assert got.ok and json.loads(got.snapshot.data)["messages"][0]["content"] == "hi"
    assert req.sha256 == hashlib.sha256(got.snapshot.data).hexdigest()
    assert out.part.value == "observable_output"


def test_suppressed_attempt_captures_no_part_content(harness: RecordingHarness) -> None:
    """With content opted out, parts are not_captured with the admission reason and nothing is written."""
    obs = harness.observer()
    with obs.attempt(run_id="r", request=resolve_request("t"), admission=AttemptAdmission(content_opt_out=True)) as rec:
        receipt = rec.record_request(route="chat", model="m", messages=[{"role": "user", "content": "secret"}])
    assert receipt.capture.value == "not_captured"
    assert not (harness.store.root / "parts").exists() or not any((harness.store.root / "parts").rglob("*.bin"))


@pytest.fixture
def tiny_filesystem(tmp_path: Path):
    mnt = tmp_path / "tiny"
    mount_tmpfs(mnt, "256k")
    try:
        yield mnt
    finally:
        unmount(mnt)


def test_full_disk_is_a_store_gap_and_the_call_proceeds(tmp_path: Path, tiny_filesystem: Path) -> None:
    """A store on a full filesystem records store_unavailable gaps; request bytes are unchanged and nothing half-written stays."""
    ctx = tmp_path / "ctx"
    ctx.mkdir()
    (ctx / "big.bin").write_bytes(os.urandom(1024 * 1024))  # larger than the whole filesystem
    (ctx / "small.txt").write_text("small")
    request = fake_request_bytes("sys", "go")
    with RecordingHarness(tmp_path / "s") as h:
        from otel_inputs import AgentObserver

        obs = AgentObserver(tracer_provider=h.provider, store=tiny_filesystem / "store")
        sent = _agent_call(obs, request, run_id="r", request=resolve_request("go"), context_roots=[ctx])
        assert sent == fake_request_bytes("sys", "go")
        [span] = h.attempt_spans()
        assert span.attributes[names.CAPTURE_GAP_REASON] == "store_unavailable"
        events = h.inputs(span)
        assert {e[names.INPUT_LABEL] for e in events} == {"big.bin", "small.txt"}
        assert all(e[names.INPUT_ARTIFACT_STATUS] == "never_captured" for e in events)
        assert all(names.INPUT_DETAIL in e for e in events)
    staging = tiny_filesystem / "store" / "staging"
    assert not any(staging.iterdir())
