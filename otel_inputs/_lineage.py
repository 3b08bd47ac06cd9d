"""Session lineage: turn order, previous turn and retry-of, per reused model session."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from otel_inputs.types import Lineage, SendKind


@dataclass
class _SessionState:
    turns: int = 0
    last_attempt_id: str | None = None


@dataclass
class SessionTracker:
    """Assigns lineage to attempts; attempts without a session id are never grouped."""

    _sessions: dict[str, _SessionState] = field(default_factory=dict)
    _span_contexts: dict[str, Any] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    max_remembered_spans: int = 10_000

    def next_attempt(
        self,
        attempt_id: str,
        *,
        session_id: str | None,
        send_kind: SendKind | str = SendKind.INITIAL,
        retry_of_attempt_id: str | None = None,
    ) -> Lineage:
        """Lineage of a new attempt; a retry without an explicit target retries the previous turn."""
        kind = SendKind(send_kind)
        if not kind.is_retry and retry_of_attempt_id is not None:
            raise ValueError("retry_of_attempt_id is only meaningful on a parse_retry or gate_retry")
        if session_id is None:
            return Lineage(attempt_id, None, kind, 1, None, retry_of_attempt_id if kind.is_retry else None)
        with self._lock:
            state = self._sessions.setdefault(session_id, _SessionState())
            previous = state.last_attempt_id
            state.turns += 1
            state.last_attempt_id = attempt_id
            turn = state.turns
        retry_of = None
        if kind.is_retry:
            retry_of = retry_of_attempt_id if retry_of_attempt_id is not None else previous
        return Lineage(attempt_id, session_id, kind, turn, previous, retry_of)

    def remember_span(self, attempt_id: str, span_context: Any) -> None:
        with self._lock:
            if len(self._span_contexts) >= self.max_remembered_spans:
                self._span_contexts.pop(next(iter(self._span_contexts)))
            self._span_contexts[attempt_id] = span_context

    def span_context(self, attempt_id: str | None) -> Any:
        if attempt_id is None:
            return None
        with self._lock:
            return self._span_contexts.get(attempt_id)
