"""The store's change-listener seam (docs/store.md, "Listening to changes"): after each commit that changes
what an item's bytes may be used for, every listener is told, on the changing thread; the bucket
(:mod:`otel_inputs.store.bucket`) and the store facts subscribe here, and the core knows nothing of them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

from otel_inputs.types import ItemState

_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ItemChange:
    """One item's whole state after a change, stamped with the catalog's change number ``seq``: for
    one item, the change with the highest ``seq`` is its state now (docs/store.md).

    ``item`` is the input id, ``part:<name>`` for an exchange part, ``""`` for the attempt itself,
    and, with ``attempt_id`` empty, the SHA-256 of an object (its upload state)."""

    attempt_id: str
    item: str
    sha256: str | None
    state: ItemState
    reason: str | None
    seq: int
    at_ns: int
    run_id: str | None = None
    revoked_at_ns: int | None = None  # when its source path (or a folder above it) was revoked


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
            getattr(listener, "store_changed", listener)(change)
        except Exception as exc:  # noqa: BLE001 - a listener never fails the change it hears about
            _log.warning("otel_inputs: store listener %r failed: %s", listener, exc)
