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
