"""The artifact store's errors (their own module, so every store module can raise them without an import loop)."""

from __future__ import annotations

from otel_inputs.types import ReadbackOutcome


class StoreError(Exception):
    """Base class of artifact-store failures."""


class StoreCleanupError(StoreError):
    """Cleanup of a failed capture itself failed; ``orphan_path`` names what was left behind."""

    def __init__(self, orphan_path: str, cause: BaseException) -> None:
        super().__init__(f"could not remove orphan capture staging {orphan_path}: {cause}")
        self.orphan_path = orphan_path


class StoreWriteError(StoreError):
    """The store could not accept bytes (read-only, full, vanished): a store gap, not a source problem."""


class StoreBusyError(StoreWriteError):
    """The catalog stayed locked past the agent's bounded wait: a ``store_busy`` gap, never a block."""


class ReadbackError(StoreError):
    """A snapshot cannot be returned; ``outcome`` is the owner-facing refusal reason."""

    def __init__(self, outcome: ReadbackOutcome | str, message: str) -> None:
        super().__init__(message)
        self.outcome = ReadbackOutcome(outcome)


_REASON_MAX = 200


class IntegrityError(OSError):
    """The bucket holds something other than the bytes just uploaded."""


def _reason(exc: BaseException) -> str:
    """One line saying why a bucket call failed: the kind (refused, timeout, …) and the message."""
    if isinstance(exc, PermissionError):
        kind = "refused"
    elif isinstance(exc, IntegrityError):
        kind = "integrity"
    elif isinstance(exc, TimeoutError) or "timeout" in type(exc).__name__.lower() or "timed out" in str(exc).lower():
        kind = "timeout"
        exc = exc if str(exc) else TimeoutError("no answer from the bucket in time")
    else:
        kind = type(exc).__name__
    text = " ".join(str(exc).split()) or type(exc).__name__
    return f"{kind}: {text}"[:_REASON_MAX]
