"""Test doubles for users of otel-inputs: an in-memory span recorder and a temporary store.

This module needs ``opentelemetry-sdk`` (a test dependency), unlike the rest of ``otel_inputs``.
Use it to test your own instrumentation without mocks::

    from otel_inputs.testing import RecordingHarness

    def test_my_agent(tmp_path):
        with RecordingHarness(tmp_path / "store") as h:
            run_my_agent(observer=h.observer())
            [span] = h.attempt_spans()
            assert h.inputs(span)[0][names.INPUT_DELIVERY_MODE] == "inline"
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_inputs import names
from otel_inputs._policy import CapturePolicy, MessageCapture
from otel_inputs._record import AgentObserver
from otel_inputs.store import ArtifactStore

__all__ = ["RecordingHarness", "temp_store"]


@contextmanager
def temp_store() -> Iterator[ArtifactStore]:
    """A fresh artifact store in a temporary directory, removed afterwards."""
    root = tempfile.mkdtemp(prefix="otel-inputs-store-")
    try:
        yield ArtifactStore(root)
    finally:
        shutil.rmtree(root, ignore_errors=True)


class RecordingHarness:
    """A tracer provider with an in-memory exporter and a real store, for instrumentation tests."""

    def __init__(self, store_root: str | os.PathLike[str] | None = None, *, sampler: Any = None) -> None:
        self._owned = store_root is None
        self.store_root = Path(store_root or tempfile.mkdtemp(prefix="otel-inputs-store-"))
        self.store = ArtifactStore(self.store_root)
        self.exporter = InMemorySpanExporter()
        kwargs = {"sampler": sampler} if sampler is not None else {}
        self.provider = TracerProvider(**kwargs)
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))

    def __enter__(self) -> RecordingHarness:
        return self

    def __exit__(self, *exc: object) -> None:
        self.provider.shutdown()
        if self._owned:
            shutil.rmtree(self.store_root, ignore_errors=True)

    def observer(self, *, policy: CapturePolicy | None = None, **kwargs: Any) -> AgentObserver:
        policy = policy or CapturePolicy(message_content=MessageCapture.SPAN_ONLY)
        return AgentObserver(tracer_provider=self.provider, store=self.store, policy=policy, **kwargs)

    def spans(self) -> tuple[ReadableSpan, ...]:
        return tuple(self.exporter.get_finished_spans())

    def attempt_spans(self) -> list[ReadableSpan]:
        return [s for s in self.spans() if (s.attributes or {}).get(names.ATTEMPT_ID) is not None]

    def span_for(self, attempt_id: str) -> ReadableSpan:
        for s in self.attempt_spans():
            if (s.attributes or {}).get(names.ATTEMPT_ID) == attempt_id:
                return s
        raise KeyError(attempt_id)

    @staticmethod
    def inputs(span: ReadableSpan) -> list[dict[str, Any]]:
        """The span's ``otel_inputs.input`` events as attribute dicts, in ``seq`` order."""
        events = [dict(e.attributes or {}) for e in span.events if e.name == names.INPUT_EVENT]
        return sorted(events, key=lambda a: a.get(names.INPUT_SEQ, -1))
