"""A fleet viewer's decisions (docs/fleet.md, "5. The viewer"): an attempt recorded on another host is
decided from that host's store facts, folded in ClickHouse (``clickhouse/store_state.sql``), and from
the bytes in its bucket, and nothing else: no host's store and no copy of its catalog.

The reader checks in the order of the host's own :class:`otel_inputs.store.EvidenceReader`:
the attempt's record, permission, retention, revocation, then the bytes (SHA-256).  A fact that has
not arrived means *not vouched for*: the read is refused, saying so, and what a revocation could
cover is withheld (fail closed).  Facts are applied only to attempts whose spans came from the host
that sent them and name the same store id.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from otel_inputs import names
from otel_inputs.store import AccessPolicy, CatalogItem, PolicyError, PurgeState, ReadResult, RevocationList, \
    VerifiedSnapshot
from otel_inputs.store.bucket import RemoteObjects, under_roots
from otel_inputs.types import ItemState, ReadbackOutcome
from otel_inputs.viewer._access import Access, current_access
from otel_inputs.viewer._backend import Backend
from otel_inputs.viewer._evidence import Evidence, signed_out_refusal, viewer_identity
from otel_inputs.viewer._format import time_text
from otel_inputs.viewer._records import AttemptRow, InputRecord

DECIDED = "Previews and statuses decided from the store facts of"  # the page's line on a fleet viewer
_STATUS = {ItemState.CAPTURED.value: "available", ItemState.EVICTED.value: "evicted",
           ItemState.PURGED.value: "evicted", ItemState.NOT_CAPTURED.value: "never_captured"}


@dataclass(frozen=True)
class StoreRef:
    """Which store recorded an attempt, from its span: the sending host, the store id, the bucket location."""

    host: str
    store_id: str | None
    location: str | None


@dataclass(frozen=True)
class Fact:
    """One item's folded state: the fact with the highest change number received from its host."""

    state: str
    reason: str | None
    sha256: str | None
    run_id: str | None
    revoked_at_ns: int | None
    at_ns: int
    seq: int


@dataclass(frozen=True)
class HostFacts:
    """The facts of one host's store about some attempts (and their objects), and how current they are."""

    ref: StoreRef
    facts: Mapping[tuple[str, str], Fact] = field(default_factory=dict)  # (attempt id, item key) -> fact
    received_at_ns: int | None = None  # the latest fact received from this host's store

    def fact(self, attempt_id: str, item: str) -> Fact | None:
        return self.facts.get((attempt_id, item))

    def currency(self) -> str:
        """How current these facts are, in words."""
        if self.received_at_ns is None:
            return f"no store fact has been received from {self.ref.host}"
        return f"the latest received from {self.ref.host} at {time_text(self.received_at_ns)}"

    def describe(self) -> str:
        return f"{self.ref.host} (store {(self.ref.store_id or '?')[:8]}…), {self.currency()}"

    def unvouched(self, what: str) -> str:
        return f"not vouched for: no store fact about {what} has been received ({self.currency()})"


def _host(resource: Mapping[str, Any] | None) -> str:
    resource = resource or {}
    return str(resource.get("host.name") or resource.get("service.instance.id") or "")


def store_refs(db: Backend, attempt_ids: Iterable[str],
               spans: Mapping[str, tuple[str, str]] | None = None) -> dict[str, StoreRef | None]:
    """Each attempt's :class:`StoreRef`, from its span's resource and attributes (``None``: no span).
    ``spans``: the attempts' (trace id, span id) when the caller has them (one query fewer)."""
    ids = sorted(set(attempt_ids))
    if not ids or not db.has("otel_traces"):
        return {i: None for i in ids}
    keys = ([(a, *spans[a]) for a in ids if a in spans] if spans is not None else db.rows(
        f"SELECT attempt_id, trace_id, span_id FROM agent_attempts WHERE {db.in_list('attempt_id')}", [ids]))
    pairs = {(t, s) for _, t, s in keys if t and s}
    found: dict[tuple[str, str], StoreRef] = {}
    if pairs:
        for t, s, host, instance, store_id, location in db.rows(
                f'SELECT "TraceId", "SpanId", "ResourceAttributes"[?], "ResourceAttributes"[?], "SpanAttributes"[?], '
                f'"SpanAttributes"[?] FROM otel_traces WHERE {db.in_list(chr(34) + "TraceId" + chr(34))} AND '
                f'{db.in_list(chr(34) + "SpanId" + chr(34))}',
                ["host.name", "service.instance.id", names.STORE_ID, names.STORE_OBJECTS_URL,
                 sorted({t for t, _ in pairs}), sorted({s for _, s in pairs})]):
            found[(t, s)] = StoreRef(_host({"host.name": host, "service.instance.id": instance}),
                                     store_id or None, location or None)  # ClickHouse reads an absent key as ''
    return {a: found.get((t, s)) for a, t, s in keys} | {i: None for i in ids if i not in {k[0] for k in keys}}


_FACTS = ("SELECT attempt_id, item_key, argMax(state, seq), argMax(reason, seq), argMax(lower(hex(sha256)), seq), "
          "argMax(run_id, seq), argMax(toUnixTimestamp64Nano(revoked_at), seq), argMax(toUnixTimestamp64Nano(at), seq), "
          "max(seq) FROM otel_inputs_store_state WHERE host = ? AND store_id = ? AND ({attempts} OR "
          "(attempt_id = '' AND {objects})) GROUP BY attempt_id, item_key "
          "UNION ALL SELECT '', '', '', '', '', '', 0, toUnixTimestamp64Nano(max(received_at)), 0 "
          "FROM otel_inputs_store_hosts WHERE host = ? AND store_id = ?")
_NO_SHA = "0" * 64


def load_host_facts(db: Backend, ref: StoreRef, attempt_ids: Iterable[str], digests: Iterable[str] = ()) -> HostFacts:
    """The folded facts of ``ref``'s store about ``attempt_ids`` (and the upload state of ``digests``), in
    one query, with the time the latest fact from that store was received."""
    if not ref.store_id or not db.has("otel_inputs_store_state"):
        return HostFacts(ref)
    ids, objs = sorted(set(attempt_ids)), sorted(set(d for d in digests if d))
    sql = _FACTS.format(attempts=db.in_list("attempt_id") if ids else "false",
                        objects=db.in_list("item_key") if objs else "false")
    params: list[Any] = [ref.host, ref.store_id] + ([ids] if ids else []) + ([objs] if objs else []) + [ref.host,
                                                                                                          ref.store_id]
    facts: dict[tuple[str, str], Fact] = {}
    received = None
    for attempt, item, state, reason, sha, run, revoked, at, seq in db.rows(sql, params):
        if not state:  # the host row: when its latest fact arrived (0: never)
            received = int(at) or None
            continue
        facts[(attempt, item)] = Fact(state, reason or None, sha if sha and sha != _NO_SHA else None, run or None,
                                      int(revoked) or None, int(at), int(seq))
    return HostFacts(ref, facts, received)


_remotes: dict[str, RemoteObjects] = {}


class FleetReader:
    """The reads of one host's attempts on a fleet viewer, decided as that host's reader decides them."""

    store = None  # no host store: everything comes from the facts and the bucket

    def __init__(self, facts: HostFacts, roots: tuple[str, ...], policy: AccessPolicy,
                 revocations: RevocationList | None = None) -> None:
        self.facts = facts
        self.roots = roots
        self.policy = policy
        self.revocations = revocations or RevocationList()  # the viewer's own list (OTEL_INPUTS_REVOCATIONS)

    # -- the host reader's checks, in its order ---------------------------------------------------
    def _attempt(self, viewer: str, attempt_id: str) -> Fact | ReadResult:
        fact = self.facts.fact(attempt_id, "")
        if fact is None:
            return ReadResult(ReadbackOutcome.NOT_FOUND, self.facts.unvouched("this attempt"))
        if fact.state == ItemState.DELETED.value:
            return ReadResult(ReadbackOutcome.NOT_FOUND, "no committed record for this attempt")
        if not self.policy.allows(viewer, fact.run_id):
            return ReadResult(ReadbackOutcome.PERMISSION_DENIED, f"{viewer} may not read run {fact.run_id!r}")
        return fact

    def _item(self, viewer: str, attempt_id: str, item: str, what: str) -> Fact | ReadResult:
        attempt = self._attempt(viewer, attempt_id)
        if isinstance(attempt, ReadResult):
            return attempt
        fact = self.facts.fact(attempt_id, item)
        if fact is None:
            return ReadResult(ReadbackOutcome.NOT_FOUND, self.facts.unvouched(what))
        return fact

    @staticmethod
    def _retained(fact: Fact) -> ReadResult | None:
        """The host's retention check (``check_retained``) on the folded state."""
        if fact.state in (ItemState.PURGED.value, ItemState.DELETED.value):
            return ReadResult(ReadbackOutcome.RETENTION_EXPIRED, "snapshot purged")
        if fact.state == ItemState.EVICTED.value:
            return ReadResult(ReadbackOutcome.RETENTION_EXPIRED, f"snapshot evicted ({fact.reason or 'evicted'})")
        if fact.state != ItemState.CAPTURED.value:
            return ReadResult(ReadbackOutcome.NOT_FOUND, "no snapshot was captured for this input")
        return None

    def _bytes(self, attempt_id: str, item: str, digest: str | None, max_bytes: int | None) -> ReadResult:
        location = self.facts.ref.location
        if not location:
            return ReadResult(ReadbackOutcome.NOT_FOUND, "the recording host has no bucket: its bytes are on that host only")
        if not under_roots(location, self.roots):
            return ReadResult(ReadbackOutcome.PERMISSION_DENIED, f"the attempt's store location {location!r} is not "
                              "under this viewer's objects roots; nothing is fetched")
        if not digest:
            return ReadResult(ReadbackOutcome.INTEGRITY_MISMATCH, "recorded digest is malformed")
        try:
            remote = _remotes.get(location) or _remotes.setdefault(location, RemoteObjects(location))
            data = remote.open(digest, None if max_bytes is None else max_bytes + 1)
        except FileNotFoundError:
            return ReadResult(ReadbackOutcome.NOT_FOUND, "snapshot bytes are not in the host's bucket")
        except Exception as exc:  # noqa: BLE001 - an unreachable bucket is a refusal, never a crash
            return ReadResult(ReadbackOutcome.NOT_FOUND, f"the host's bucket cannot be read ({type(exc).__name__})")
        if max_bytes is not None and len(data) > max_bytes:
            return ReadResult(ReadbackOutcome.TOO_LARGE, f"snapshot is over the {max_bytes} byte limit")
        if hashlib.sha256(data).hexdigest() != digest:
            return ReadResult(ReadbackOutcome.INTEGRITY_MISMATCH, "snapshot bytes do not match the recorded SHA-256")
        return ReadResult(ReadbackOutcome.OK, "verified", VerifiedSnapshot(attempt_id, item, data, digest))

    # -- what EvidenceReader offers the viewer -------------------------------------------------------
    def read(self, viewer: str, attempt_id: str, input_id: str, *, max_bytes: int | None = None) -> ReadResult:
        fact = self._item(viewer, attempt_id, input_id, "this input")
        if isinstance(fact, ReadResult):
            return fact
        refused = self._retained(fact)
        if refused is not None:
            return refused
        if fact.revoked_at_ns or self.revocations.match({"sha256": fact.sha256, "source_path": None}):
            return ReadResult(ReadbackOutcome.SOURCE_UNAVAILABLE, "the source of this input has been revoked")
        return self._bytes(attempt_id, input_id, fact.sha256, max_bytes)

    def list_items(self, viewer: str, attempt_id: str) -> tuple[CatalogItem, ...] | ReadResult:
        """The attempt's items with their status now, as the host's reader lists them (no bindings)."""
        attempt = self._attempt(viewer, attempt_id)
        if isinstance(attempt, ReadResult):
            return attempt
        return tuple(CatalogItem(attempt_id, item, None, artifact_status=_STATUS.get(f.state, "never_captured"),
                                 status_reason="purged" if f.state == ItemState.PURGED.value else f.reason)
                     for (a, item), f in self.facts.facts.items() if a == attempt_id and item and
                     not item.startswith("part:"))

    def part_receipt(self, viewer: str, attempt_id: str, part: str) -> dict[str, Any] | ReadResult:
        fact = self._item(viewer, attempt_id, f"part:{part}", "this part")
        if isinstance(fact, ReadResult):
            return fact
        if fact.state in (ItemState.PURGED.value, ItemState.DELETED.value):
            return ReadResult(ReadbackOutcome.RETENTION_EXPIRED, "attempt purged")
        stored = fact.state == ItemState.CAPTURED.value
        receipt = {"attemptId": attempt_id, "part": part, "runId": fact.run_id,
                   "persistence": "stored" if stored else "failed"}
        return receipt | ({"sha256": fact.sha256} if stored else {"persistence_reason": fact.reason})

    def read_part(self, viewer: str, attempt_id: str, part: str) -> ReadResult:
        receipt = self.part_receipt(viewer, attempt_id, part)
        if isinstance(receipt, ReadResult):
            return receipt
        if receipt["persistence"] != "stored":
            return ReadResult(ReadbackOutcome.NOT_FOUND, "part was not stored (persistence 'failed')")
        return self._bytes(attempt_id, part, receipt.get("sha256"), None)

    def placements(self, attempt_id: str, inputs: Iterable[InputRecord]) -> dict[str, str]:
        """Where each input's bytes are, as far as the host's facts say (the bucket copy's upload state)."""
        out = {}
        for item in inputs:
            if not item.sha256:
                continue
            upload = self.facts.fact("", item.sha256)
            if upload is None:
                out[item.input_id] = "not known: no upload fact received from the recording host"
            elif upload.state == ItemState.UPLOADED.value:
                out[item.input_id] = "in the bucket (uploaded)"
            else:
                out[item.input_id] = f"not in the bucket: upload failed ({upload.reason or 'unknown'}) — a gap"
        return out


@dataclass(frozen=True)
class FleetAccess(Access):
    """:class:`Access` whose purges and revocations are the recording host's, from its facts."""

    facts: HostFacts | None = None

    def _purge(self, attempt_id: str) -> PurgeState:
        facts = self.facts
        if facts is None:
            return PurgeState()
        whole = facts.fact(attempt_id, "")
        if whole is not None and whole.state in (ItemState.PURGED.value, ItemState.DELETED.value):
            return PurgeState(whole.at_ns)
        return PurgeState(None, {item: f.at_ns for (a, item), f in facts.facts.items()
                                 if a == attempt_id and item and f.state == ItemState.PURGED.value})

    def _revoked_item(self, attempt_id: str, input_id: str | None, sha256: str | None, path: str | None) -> str | None:
        own = self._revoked(sha256, path)  # the viewer's own revocation list, or why it cannot be read
        if own or self.facts is None or input_id is None:
            return own
        fact = self.facts.fact(attempt_id, input_id)
        if fact is None:
            return f"unknown whether revoked: {self.facts.unvouched('this input')}"
        if fact.revoked_at_ns:
            return f"source revoked at {time_text(fact.revoked_at_ns)}"
        return None

    def _revoked_task(self, attempt: AttemptRow, inputs: tuple[InputRecord, ...]) -> str | None:
        own = super()._revoked_task(attempt, inputs)
        if own or attempt.task_source_kind != "prompt_file" or any(i.source_kind == "prompt_file" for i in inputs):
            return own
        return "unknown whether revoked: the host's facts name no prompt-file item for this task"  # fail closed


def fleet_roots(env: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The fleet viewer's objects roots (``OTEL_INPUTS_OBJECTS_ROOTS``, comma-separated); empty: not a fleet viewer."""
    raw = (os.environ if env is None else env).get(names.ENV_OBJECTS_ROOTS, "")
    return tuple(r.strip() for r in raw.split(",") if r.strip())


def _policy_and_revocations() -> tuple[AccessPolicy, RevocationList] | str:
    try:
        return AccessPolicy.load(), RevocationList.load(None)
    except PolicyError as exc:
        return str(exc)


def host_decisions(facts: HostFacts | None, roots: tuple[str, ...], viewer: str, why: str | None = None
                   ) -> tuple[Evidence, Access]:
    """The reader and the access decisions for attempts of one host (``facts``), or, without facts, a
    reader that refuses with ``why`` and decisions that withhold what a revocation could cover."""
    base = current_access(None, viewer, unknown=why)
    if (refused := signed_out_refusal(viewer)) is not None:
        return refused, base
    if facts is None:
        return Evidence(None, viewer, why or "not vouched for", "not_found"), base
    loaded = _policy_and_revocations()
    if isinstance(loaded, str):
        return Evidence(None, viewer, loaded, "permission_denied"), base
    policy, revocations = loaded
    access = FleetAccess(**{**{f.name: getattr(base, f.name) for f in dataclasses.fields(Access)},
                            "revocations": revocations}, facts=facts)
    return Evidence(FleetReader(facts, roots, policy, revocations), viewer, facts=facts), access


def fleet_decisions(db: Backend, attempt: AttemptRow, roots: tuple[str, ...], viewer: str | None = None,
                    previous: str | None = None, inputs: Iterable[InputRecord] | None = None) -> tuple[Evidence, Access]:
    """The reader and decisions for one attempt's page (and its previous turn's inputs) on a fleet viewer:
    two queries, the attempt span's store and that store's facts (``inputs``: the page's, for the
    upload state of their bytes; read here when not given)."""
    who = viewer or viewer_identity()
    ids = [attempt.attempt_id] + ([previous] if previous else [])
    spans = {attempt.attempt_id: (attempt.trace_id, attempt.span_id)} if attempt.trace_id and attempt.span_id else None
    ref = store_refs(db, [attempt.attempt_id], spans).get(attempt.attempt_id)
    if ref is None or not ref.store_id:
        why = "not vouched for: the attempt's span names no artifact store (no store facts can decide it)"
        return host_decisions(None, roots, who, why)
    digests = ([i.sha256 for i in inputs if i.sha256] if inputs is not None else
               [r[0] for r in db.rows("SELECT DISTINCT sha256 FROM agent_attempt_inputs WHERE "
                                      f"{db.in_list('attempt_id')} AND sha256 IS NOT NULL", [ids])])
    return host_decisions(load_host_facts(db, ref, ids, digests), roots, who)


def gate_foreign_rows(db: Backend, rows: Iterable[Any], access: Access) -> tuple[list[Any], int]:
    """Other attempts' rows (where else, task drift), each decided by its own host's facts (one query per host)."""
    rows = list(rows)
    refs = store_refs(db, (r.attempt_id for r in rows))
    roots = fleet_roots()
    deciders: dict[StoreRef | None, Access] = {}
    for ref in set(refs.values()):
        if ref is None or not ref.store_id:
            why = "not vouched for: the attempt's span names no artifact store"
            deciders[ref] = host_decisions(None, roots, access.viewer, why)[1]
        else:
            ids = {a for a, r in refs.items() if r == ref}
            deciders[ref] = host_decisions(load_host_facts(db, ref, ids), roots, access.viewer)[1]
    visible: list[Any] = []
    hidden = 0
    for row in rows:
        kept, dropped = deciders[refs.get(row.attempt_id)].gate_foreign([row])
        visible += kept
        hidden += dropped
    return visible, hidden
