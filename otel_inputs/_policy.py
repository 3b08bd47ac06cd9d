"""Admission: whether an attempt's content may be captured, decided before any content is read.

One switch, ``OTEL_INPUTS_CAPTURE``:

* ``content`` (the default): snapshot declared inputs into the local artifact store and record the
  task text on the span.  This is the default because answering "what did this attempt have?" is
  the reason to install otel-inputs, and snapshot bytes never leave the machine: they go to a local
  store, not over the wire.
* ``metadata_only``: record items (kinds, paths, sizes from ``lstat``, counts) with no bytes read and
  no content attributes.
* ``off``: record the decision and nothing else.

The exact messages (``gen_ai.system_instructions`` / ``gen_ai.input.messages``) travel to whatever
backend the telemetry goes to, so where they go follows the OpenTelemetry switch
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` (:class:`MessageCapture`; default
``NO_CONTENT``, as OpenTelemetry specifies).  Admission still comes first: a switch that allows
content never carries it for an attempt whose capture was not admitted.
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum

from otel_inputs import names
from otel_inputs.types import CaptureDecision, GapReason


class CaptureMode(str, Enum):
    CONTENT = "content"
    METADATA_ONLY = "metadata_only"
    OFF = "off"


_log = logging.getLogger("otel_inputs")


class MessageCapture(str, Enum):
    """Where the exact messages go: OpenTelemetry's GenAI content-capturing modes."""

    NO_CONTENT = "NO_CONTENT"
    SPAN_ONLY = "SPAN_ONLY"
    EVENT_ONLY = "EVENT_ONLY"
    SPAN_AND_EVENT = "SPAN_AND_EVENT"

    @property
    def on_span(self) -> bool:
        return self in (MessageCapture.SPAN_ONLY, MessageCapture.SPAN_AND_EVENT)

    @property
    def on_event(self) -> bool:
        return self in (MessageCapture.EVENT_ONLY, MessageCapture.SPAN_AND_EVENT)

    @classmethod
    def parse(cls, raw: MessageCapture | bool | str | None) -> MessageCapture:
        """Read a switch value: the four modes in any case; ``true``/``false`` as legacy aliases.

        ``true`` keeps its earlier otel-inputs meaning, content on the span (``SPAN_ONLY``); the
        OpenTelemetry GenAI utilities no longer accept it.  Anything else is ``NO_CONTENT`` with a
        warning: a misspelt switch must not send content anywhere.
        """
        if isinstance(raw, cls):
            return raw
        if isinstance(raw, bool):
            return cls.SPAN_ONLY if raw else cls.NO_CONTENT
        value = (raw or "").strip()
        if not value:
            return cls.NO_CONTENT
        lowered = value.lower()
        if lowered in _LEGACY_TRUE:
            return cls.SPAN_ONLY
        if lowered in _LEGACY_FALSE:
            return cls.NO_CONTENT
        try:
            return cls(value.upper())
        except ValueError:
            _log.warning("otel_inputs: %s=%r is not one of %s; message content is not captured",
                         names.ENV_GENAI_CAPTURE_CONTENT, value, ", ".join(m.value for m in cls))
            return cls.NO_CONTENT


_LEGACY_TRUE = {"1", "true", "yes", "on"}
_LEGACY_FALSE = {"0", "false", "no", "off"}


@dataclass(frozen=True)
class CapturePolicy:
    """Process-wide capture settings; read from the environment by :meth:`from_env`."""

    mode: CaptureMode = CaptureMode.CONTENT
    # A MessageCapture; True/False and switch strings are accepted and normalised.
    message_content: MessageCapture = MessageCapture.NO_CONTENT
    min_free_bytes: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "message_content", MessageCapture.parse(self.message_content))

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> CapturePolicy:
        env = os.environ if env is None else env
        raw = env.get(names.ENV_CAPTURE, CaptureMode.CONTENT.value).strip().lower()
        try:
            mode = CaptureMode(raw)
        except ValueError:
            # An unknown value must not silently capture content the user tried to restrict.
            mode = CaptureMode.METADATA_ONLY
        return cls(mode=mode, message_content=MessageCapture.parse(env.get(names.ENV_GENAI_CAPTURE_CONTENT)))


@dataclass(frozen=True)
class AttemptAdmission:
    """What the runtime knows about this attempt's run before capture: consent and scope."""

    temporary_run: bool = False
    content_opt_out: bool = False
    expires_at: float | None = None  # wall-clock seconds; capture admitted only before this


@dataclass(frozen=True)
class AdmissionDecision:
    decision: CaptureDecision
    gap_reason: GapReason | None = None

    @property
    def reads_content(self) -> bool:
        return self.decision is CaptureDecision.ADMITTED

    @property
    def lists_items(self) -> bool:
        return self.decision is not CaptureDecision.SUPPRESSED


def admit(
    policy: CapturePolicy,
    admission: AttemptAdmission,
    *,
    sampled: bool,
    store_root: str | os.PathLike[str] | None,
    now: Callable[[], float] = time.time,
    free_bytes: Callable[[str], int] | None = None,
) -> AdmissionDecision:
    """Decide capture for one attempt from policy, consent, sampling and capacity, reading no content."""
    if not sampled:
        return AdmissionDecision(CaptureDecision.SUPPRESSED, GapReason.SAMPLED_OUT)
    if policy.mode is CaptureMode.OFF:
        return AdmissionDecision(CaptureDecision.SUPPRESSED, GapReason.POLICY_OPT_OUT)
    if admission.temporary_run:
        return AdmissionDecision(CaptureDecision.SUPPRESSED, GapReason.TEMPORARY_RUN)
    if admission.content_opt_out:
        return AdmissionDecision(CaptureDecision.SUPPRESSED, GapReason.POLICY_OPT_OUT)
    if admission.expires_at is not None and now() >= admission.expires_at:
        return AdmissionDecision(CaptureDecision.SUPPRESSED, GapReason.EXPIRED)
    if policy.mode is CaptureMode.METADATA_ONLY:
        return AdmissionDecision(CaptureDecision.METADATA_ONLY, GapReason.POLICY_OPT_OUT)
    if store_root is None:
        return AdmissionDecision(CaptureDecision.METADATA_ONLY, GapReason.STORE_UNAVAILABLE)
    if policy.min_free_bytes:
        measure = free_bytes or (lambda p: shutil.disk_usage(p).free)
        try:
            free = measure(os.fspath(store_root))
        except OSError:
            return AdmissionDecision(CaptureDecision.METADATA_ONLY, GapReason.STORE_UNAVAILABLE)
        if free < policy.min_free_bytes:
            return AdmissionDecision(CaptureDecision.METADATA_ONLY, GapReason.CAPACITY_EXCEEDED)
    return AdmissionDecision(CaptureDecision.ADMITTED)
