"""The store's change-listener seam: after each catalog transaction that changes what an item's
bytes may be used for, the store tells its listeners what changed (docs/store.md, "Listening to
changes").  The bucket uploader (:mod:`otel_inputs.store.bucket`) subscribes here; the core knows
nothing of it.  A listener runs on the thread that made the change (the agent's, for a capture),
after the commit, so it must not block; its exceptions are logged and never reach the caller.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import Enum
from typing import Protocol

_log = logging.getLogger(__name__)


class ItemState(Enum):
    """What an item's bytes are now, as its store records it."""

    CAPTURED = "captured"  # its bytes are stored and may be read (subject to the reader's checks)
    NOT_CAPTURED = "not_captured"  # recorded without bytes (a gap); ``reason`` says why
    EVICTED = "evicted"  # retention took its bytes (``reason``: the limit)
    PURGED = "purged"
    REVOKED = "revoked"  # its source path (or a folder above it) was revoked
    DELETED = "deleted"  # its attempt's record went with its run (``store delete-run``)
    UPLOADED = "uploaded"  # an object's bucket copy is verified (object-level: no attempt)
    UPLOAD_FAILED = "upload_failed"  # an object's upload failed or was skipped (``reason``)


@dataclass(frozen=True, slots=True)
class ItemChange:
    """One item's (or, with ``attempt_id`` empty, one object's) new state, stamped with the catalog's
    change number ``seq``: for one item, the change with the highest ``seq`` is its current state."""

    attempt_id: str
    item: str  # the input id, or "part:<name>" for an exchange part; "" for an object-level change
    sha256: str | None
    state: ItemState
    reason: str | None
    seq: int
    at_ns: int
    run_id: str | None = None


@dataclass(frozen=True, slots=True)
class StoreChange:
    """What one committed transaction changed."""

    items: tuple[ItemChange, ...] = ()
    new_objects: tuple[str, ...] = ()  # objects this change stored for the first time
    freed_objects: tuple[str, ...] = ()  # objects this change deleted locally
    removal: bool = False  # a removal pass ran: copies of bytes no available item names may go too


class StoreListener(Protocol):
    def store_changed(self, change: StoreChange) -> None: ...


def notify(listeners: Iterable[StoreListener | Callable[[StoreChange], None]], change: StoreChange) -> None:
    """Tell every listener; one that raises is logged and the others still hear."""
    for listener in list(listeners):
        try:
            call = getattr(listener, "store_changed", listener)
            call(change)
        except Exception as exc:  # noqa: BLE001 - a listener never fails the change it hears about
            _log.warning("otel_inputs: store listener %r failed: %s", listener, exc)
