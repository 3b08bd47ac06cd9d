from __future__ import annotations

from otel_inputs import AttemptAdmission, CaptureMode, CapturePolicy, admit
from otel_inputs.types import CaptureDecision, GapReason
from otel_inputs._policy import MessageCapture


def test_default_policy_captures_content_but_not_genai_messages() -> None:
    """With no environment the mode is content and gen_ai message content stays off."""
    p = CapturePolicy.from_env({})
    assert p.mode is CaptureMode.CONTENT and p.message_content is MessageCapture.NO_CONTENT


def test_env_switches_are_read() -> None:
    """OTEL_INPUTS_CAPTURE and OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT are respected."""
    p = CapturePolicy.from_env(
        {"OTEL_INPUTS_CAPTURE": "metadata_only", "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"}
    )
    assert p.mode is CaptureMode.METADATA_ONLY and p.message_content is MessageCapture.SPAN_ONLY


def test_unknown_mode_falls_back_to_metadata_only() -> None:
    """A misspelt capture mode never silently captures content."""
    assert CapturePolicy.from_env({"OTEL_INPUTS_CAPTURE": "of"}).mode is CaptureMode.METADATA_ONLY


def test_each_suppression_reason(tmp_path) -> None:
    """Sampling, off, temporary run, opt-out and expiry each suppress with their own reason."""
    content = CapturePolicy()
    cases = [
        (content, AttemptAdmission(), False, GapReason.SAMPLED_OUT),
        (CapturePolicy(mode=CaptureMode.OFF), AttemptAdmission(), True, GapReason.POLICY_OPT_OUT),
        (content, AttemptAdmission(temporary_run=True), True, GapReason.TEMPORARY_RUN),
        (content, AttemptAdmission(content_opt_out=True), True, GapReason.POLICY_OPT_OUT),
        (content, AttemptAdmission(expires_at=10.0), True, GapReason.EXPIRED),
    ]
    for policy, adm, sampled, reason in cases:
        d = admit(policy, adm, sampled=sampled, store_root=tmp_path, now=lambda: 20.0)
        assert d.decision is CaptureDecision.SUPPRESSED and d.gap_reason is reason


def test_capacity_floor_downgrades_to_metadata_only(tmp_path) -> None:
    """Below the free-space floor, capture is metadata-only with capacity_exceeded."""
    d = admit(CapturePolicy(min_free_bytes=10**6), AttemptAdmission(), sampled=True,
              store_root=tmp_path, free_bytes=lambda _p: 10)
    assert d.decision is CaptureDecision.METADATA_ONLY and d.gap_reason is GapReason.CAPACITY_EXCEEDED


def test_admitted_when_nothing_objects(tmp_path) -> None:
    """An ordinary sampled attempt with a store is admitted."""
    d = admit(CapturePolicy(), AttemptAdmission(), sampled=True, store_root=tmp_path)
    assert d.decision is CaptureDecision.ADMITTED and d.gap_reason is None
