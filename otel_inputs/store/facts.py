"""Store facts: every change of an item's state in a store, also emitted as an OpenTelemetry log record
(docs/wire.md, "The store fact"), so that past one machine ClickHouse folds each host's catalog state
from the telemetry it already receives and a fleet viewer decides from it (docs/fleet.md).

:class:`StoreFacts` subscribes to the store's change listeners (docs/store.md, "Listening to
changes") and emits through the logs API, so the facts take the same exporters and pipelines as the
spans.  A fact carries ids, the state, a reason kind, times and the catalog's change number, never
content.  :func:`resend_facts` emits the state now of everything a store holds (a host's first
facts, or after facts were lost on the way).
"""

from __future__ import annotations

import json
import logging
import threading
from typing import Any

from opentelemetry import _logs

from otel_inputs import names
from otel_inputs.store._catalog import Role, item_changes
from otel_inputs.store._changes import ItemChange, StoreChange
from otel_inputs.store._store import ArtifactStore
from otel_inputs.types import ItemState

_log = logging.getLogger(__name__)
SCOPE = "otel_inputs.store"
META_BOOTSTRAPPED = "facts_resent_at_seq"  # set once the state of everything held was emitted


def fact_attributes(store_id: str, change: ItemChange) -> dict[str, Any]:
    """The log attributes of one fact (absent means unknown, never empty)."""
    attrs: dict[str, Any] = {names.STORE_ID: store_id, names.ATTEMPT_ID: change.attempt_id,
                             names.STORE_ITEM_KEY: change.item, names.STORE_STATE: change.state.value,
                             names.STORE_SEQ: change.seq}
    # The digest only where a reader needs it, a captured item's (an object's is its key): it is the
    # largest part of a fact (docs/performance.md, "Fleet").
    digest = change.sha256 if change.state is ItemState.CAPTURED and change.attempt_id else None
    for key, value in ((names.RUN_ID, change.run_id), (names.STORE_ITEM_SHA256, digest),
                       (names.STORE_REASON, change.reason), (names.STORE_REVOKED_AT, change.revoked_at_ns)):
        if value is not None:
            attrs[key] = value
    return attrs


class StoreFacts:
    """Emits each change the store reports as one log record per item (on the changing thread: an emit
    is a queue put for the SDK's batch processor)."""

    def __init__(self, store: ArtifactStore, logger: _logs.Logger) -> None:
        self.store_id = store.catalog.store_id()
        self.logger = logger

    def store_changed(self, change: StoreChange) -> None:
        for item in change.items:
            self.logger.emit(timestamp=item.at_ns, severity_number=_logs.SeverityNumber.INFO,
                             event_name=names.STORE_FACT_EVENT, attributes=fact_attributes(self.store_id, item))


def attach_facts(store: ArtifactStore, logger: _logs.Logger | None = None, *, bootstrap: bool = True) -> StoreFacts:
    """Subscribe ``store``'s facts to ``logger`` (default: the global logger provider's); the one already
    attached if there is one.  ``bootstrap``: if this store never emitted the state of everything it
    holds, do so once, in the background."""
    found = next((x for x in store.listeners if isinstance(x, StoreFacts)), None)
    if found is not None:
        return found
    facts = StoreFacts(store, logger or _logs.get_logger(SCOPE))
    store.listeners.append(facts)
    if bootstrap and not _bootstrapped(store):
        threading.Thread(target=_bootstrap, args=(store, facts.logger), name="otel-inputs-facts", daemon=True).start()
    return facts


def _bootstrapped(store: ArtifactStore) -> bool:
    with store.catalog.read() as con:
        return con.execute("SELECT 1 FROM meta WHERE key = ?", [META_BOOTSTRAPPED]).fetchone() is not None


def _bootstrap(store: ArtifactStore, logger: _logs.Logger) -> None:
    try:
        resend_facts(store, logger)
    except Exception as exc:  # noqa: BLE001 - a background chore never reaches the agent
        _log.warning("otel_inputs: the store's first facts were not sent (otel-inputs store facts resends): %s", exc)


def resend_facts(store: ArtifactStore, logger: _logs.Logger | None = None) -> int:
    """Emit the state now of every attempt, item, part and uploaded object of ``store`` under a fresh
    change number (so it supersedes every earlier fact); returns how many facts were emitted."""
    facts = StoreFacts(store, logger or _logs.get_logger(SCOPE))
    with store.catalog.write(Role.MAINT) as con:  # a number above every fact before; the state is read after it
        seq = store.catalog.next_seq(con)
        con.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", [META_BOOTSTRAPPED, json.dumps(seq)])
    with store.catalog.read() as con:  # one snapshot, without holding the write lock agents commit under
        changes = item_changes(con, "1 = 1", [], seq)
        for digest, state, why, at in con.execute(
                "SELECT sha256, state, reason, updated_at_ns FROM remote_objects WHERE state IN ('uploaded', 'failed')"):
            up = state == "uploaded"
            changes.append(ItemChange("", digest, digest, ItemState.UPLOADED if up else ItemState.UPLOAD_FAILED,
                                      None if up else str(why or "").split(":", 1)[0] or None, seq, at))
    facts.store_changed(StoreChange(tuple(changes)))
    return len(changes)
