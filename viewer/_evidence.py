"""Readback discipline for the viewer: who is looking, and what the store says now.

Every byte the viewer shows (input previews, diffs, exchange parts) is read through
:class:`otel_inputs.EvidenceReader` with the viewer's identity, so permission, retention, digest
and source revocation are re-checked on every read.  Identity is :func:`viewer_identity`, the one
function every entry point uses: Streamlit's logged-in user when login is configured (and
:data:`SIGNED_OUT`, who sees no content anywhere, when nobody is logged in), the OS user only when
login is not configured; the access policy comes from ``OTEL_INPUTS_ACCESS_POLICY``.

The store's catalog is the one authority on an item's current status (eviction and purge change it
after capture), so :func:`overlay_store` asks the store at render time and puts its status over
the DuckDB row's as-of-capture value; rows are never hidden, and hash, size and provenance stay as
recorded.  It also says where each input's bytes are now (:func:`placement_text`: a local copy,
the bucket, an upload queued or failed), from the same store; only an upload the catalog records
as done counts as in the bucket.
"""

from __future__ import annotations

import dataclasses
import getpass
import os
import sys
from dataclasses import dataclass
from typing import Any

from otel_inputs.store import (
    AccessPolicy,
    ArtifactStore,
    EvidenceReader,
    PolicyError,
    ReadbackError,
    ReadResult,
    RetentionPolicy,
)
from otel_inputs.store.bucket import Placement, RemoteState, bucket_of, item_placements
from otel_inputs.types import PartName, ReadbackOutcome
from otel_inputs.viewer._format import reason_text
from otel_inputs.viewer._records import AttemptBundle, InputRecord, PartRecord

PURGED = "purged"
NO_STORE = "no artifact store configured"
NO_BYTES = "no bytes captured"
GAP = "a gap"


def streamlit_run() -> Any:
    """The ``streamlit`` module when this code runs inside a Streamlit script run (the viewer, AppTest),
    else ``None``.

    Outside one (``otel-inputs bundle``, benchmarks, plain tests) Streamlit is neither imported nor
    asked: it has no user there (asking prints "missing ScriptRunContext" and "st.user will return an
    empty dictionary" warnings) and its secrets would be a stray ``.streamlit/secrets.toml``, which
    ``otel-inputs view`` never lets configure login either.  The app imports Streamlit first, so a
    process that has not imported it is not in a script run."""
    if "streamlit" not in sys.modules:
        return None
    try:
        from streamlit.runtime.scriptrunner import get_script_run_ctx

        if get_script_run_ctx(suppress_warning=True) is None:
            return None
        import streamlit as st
    except Exception:  # noqa: BLE001 - a Streamlit without these names: treated as no script run
        return None
    return st


def streamlit_user() -> str | None:
    """The logged-in Streamlit user's email (or name) when login is configured, else ``None``.

    Guarded: outside a script run (:func:`streamlit_run`), Streamlit versions without ``st.user``, or
    without ``is_logged_in`` (login not configured) all read as "no logged-in user".
    """
    st = streamlit_run()
    if st is None:
        return None
    try:
        user = getattr(st, "user", None)
        if user is None or not bool(getattr(user, "is_logged_in", False)):
            return None
        for key in ("email", "name"):
            value = user.get(key) if hasattr(user, "get") else getattr(user, key, None)
            if isinstance(value, str) and value.strip():
                return value.strip()
    except Exception:  # noqa: BLE001 - identity falls back to the OS user, never to "anyone"
        return None
    return None


def os_user() -> str:
    """The OS user running the viewer (the identity when no login is configured)."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return f"uid:{os.getuid()}"


SIGNED_OUT = "(not logged in)"  # the identity of a reader when login is configured and nobody is logged in
NO_LOGIN = "Log in to see recorded attempts."


def auth_configured() -> bool:
    """Whether ``[auth]`` is in Streamlit's secrets (written by ``otel-inputs view --auth-*``); never
    outside a Streamlit script run (:func:`streamlit_run`), where no one can log in."""
    st = streamlit_run()
    if st is None:
        return False
    try:
        return "auth" in st.secrets
    except Exception:  # noqa: BLE001 - no secrets file: login is not configured
        return False


def viewer_identity() -> str:
    """Who is looking: the login (e-mail, else name, else subject) when ``[auth]`` is configured, and
    :data:`SIGNED_OUT` when nobody is logged in; the OS user only when login is not configured.

    With login configured the OS user is never used: the server's account is not the reader's.  The
    one identity function: every default (:func:`open_evidence`, :func:`~otel_inputs.viewer._fleet.host_decisions`,
    ``current_access``) and the app use it."""
    user = streamlit_user()
    if user:
        return user
    if auth_configured():
        st = streamlit_run()
        try:
            sub = st.user.get("sub") if bool(getattr(st.user, "is_logged_in", False)) else None
        except Exception:  # noqa: BLE001 - no user object outside a script run: nobody is logged in
            sub = None
        return f"oidc-sub:{sub}" if isinstance(sub, str) and sub else SIGNED_OUT
    return os_user()


def signed_out_refusal(who: str) -> Evidence | None:
    """The refusal every reader gives a signed-out viewer (no store, policy or catalog is asked)."""
    return Evidence(None, who, NO_LOGIN, "permission_denied") if who == SIGNED_OUT else None


@dataclass(frozen=True)
class Evidence:
    """One refresh's reader and identity; ``reader`` is ``None`` when nothing can be read (``problem``).

    On a fleet viewer the reader is a ``FleetReader`` (viewer/_fleet.py) and ``facts`` the recording
    host's store facts it decides from."""

    reader: Any
    viewer: str
    problem: str | None = None
    problem_outcome: str = "source_unavailable"
    facts: Any = None

    @property
    def store(self) -> ArtifactStore | None:
        return self.reader.store if self.reader is not None else None


def open_evidence(store_root: str | os.PathLike[str] | None, viewer: str | None = None) -> Evidence:
    """The reader for this refresh: the store at ``store_root`` and the policy of the environment."""
    who = viewer or viewer_identity()
    if (refused := signed_out_refusal(who)) is not None:
        return refused
    if not store_root:
        return Evidence(None, who, NO_STORE, "not_found")
    root = os.fspath(store_root)
    store = ArtifactStore(root, create=False)
    if not store.holds_records():
        return Evidence(None, who, f"artifact store not found at {root}", "not_found")
    try:
        policy = AccessPolicy.load()
    except PolicyError as exc:
        # An unusable policy refuses every read until it is fixed (never "allow by default").
        return Evidence(None, who, str(exc), "permission_denied")
    return Evidence(EvidenceReader(store, policy=policy), who)


def as_evidence(source: Evidence | str | os.PathLike[str] | None) -> Evidence:
    """Accept an :class:`Evidence` or a store path (reads then use the environment's policy)."""
    return source if isinstance(source, Evidence) else open_evidence(source)


def read_input(ev: Evidence, item: InputRecord, max_bytes: int | None) -> ReadResult:
    """An input's bytes through the reader (permission, retention, digest, revocation re-checked)."""
    if ev.reader is None:
        return ReadResult(ReadbackOutcome(ev.problem_outcome), ev.problem or NO_STORE)
    # A coding agent's instruction file is held by its hook's store attempt, not by the turn's id.
    store_attempt = item.capture_attempt_id or item.attempt_id
    return ev.reader.read(ev.viewer, store_attempt, item.input_id, max_bytes=max_bytes)


def read_part(ev: Evidence, part: PartRecord) -> ReadResult:
    """An exchange part's bytes through the reader; a part that was not captured is ``not_found``."""
    if ev.reader is None:
        return ReadResult(ReadbackOutcome(ev.problem_outcome), ev.problem or NO_STORE)
    if part.part_name not in {p.value for p in PartName}:
        return ReadResult(ReadbackOutcome.NOT_FOUND, "unknown part name")
    return ev.reader.read_part(ev.viewer, part.attempt_id, part.part_name)


# -- store-authoritative status -----------------------------------------------------------------
def placement_text(place: Placement | None, *, bucket: bool) -> str:
    """Where an input's bytes are, in owner words: a local copy, the bucket (only once an upload is
    recorded done: queued is never stored), and a failed or missing upload said to be a gap."""
    if place is None:
        return "not known: the store has no record of these bytes"
    if place.in_bucket:
        return "local copy; in the bucket (uploaded)" if place.local else "in the bucket (uploaded); no local copy"
    if not place.local:  # evicted or purged (the artifact status says which), or lost
        failed = f" (upload failed: {reason_text(place.reason)})" if place.remote is RemoteState.FAILED else ""
        return f"no copy: not on disk and not in the bucket{failed}"
    if place.remote is RemoteState.FAILED:
        remote = f"upload failed: {reason_text(place.reason)} — {GAP}"
    elif place.remote is RemoteState.QUEUED:
        remote = "upload queued — not yet in the bucket"
    elif place.remote is RemoteState.DELETING:
        remote = "bucket copy being deleted — not in the bucket"
    elif bucket:
        remote = f"no upload recorded — not in the bucket, {GAP}"
    else:
        remote = "bucket not configured"
    return f"local copy; {remote}"


def _placements(store: ArtifactStore, attempt_id: str,
                inputs: tuple[InputRecord, ...]) -> tuple[dict[str, str], str | None]:
    """{input id: placement text} for the attempt's inputs from the store's catalog now, and a
    sentence when some inputs kept on disk are not in the bucket (an upload gap)."""
    try:
        places = item_placements(store, attempt_id)
        bucket = bucket_of(store) is not None
    except Exception as exc:  # noqa: BLE001 - a catalog that cannot be read now: said, never blank
        why = f"not known: the store's catalog could not be read ({type(exc).__name__})"
        return {i.input_id: why for i in inputs}, None
    texts = {i.input_id: NO_BYTES if not i.sha256 else placement_text(places.get(i.input_id), bucket=bucket)
             for i in inputs}
    if not bucket:
        return texts, None
    # Bytes kept on disk but not in the bucket are the gap; bytes gone from both are retention's
    # (or a loss), which the artifact status says.
    shown = [places[i.input_id] for i in inputs if i.sha256 and i.input_id in places and places[i.input_id].local]
    gaps = {"upload(s) failed": sum(1 for p in shown if p.remote is RemoteState.FAILED),
            "upload(s) queued": sum(1 for p in shown if p.remote is RemoteState.QUEUED),
            "not uploaded": sum(1 for p in shown if p.remote in (None, RemoteState.DELETING))}
    if not any(gaps.values()):
        return texts, None
    counts = ", ".join(f"{n} {what}" for what, n in gaps.items() if n)
    return texts, (f"{sum(gaps.values())} of {len(shown)} input(s) kept on disk are not in the bucket ({counts}): "
                   "their bytes are on the recording host only; otel-inputs store upload retries failed uploads.")


def _overlay_inputs(ev: Evidence, attempt_id: str, run_id: str | None,
                    inputs: tuple[InputRecord, ...]) -> tuple[tuple[InputRecord, ...], tuple[str, ...]]:
    """Inputs with the store's current status and placement, and notes: the store could not be
    consulted, or some bytes are not in the bucket."""
    reader = ev.reader
    if not inputs:
        return inputs, ()
    if reader is None:
        return tuple(dataclasses.replace(i, placement=f"not known: {ev.problem or NO_STORE}") for i in inputs), ()
    listed = reader.list_items(ev.viewer, attempt_id)  # permission-checked metadata, no bindings
    if isinstance(listed, ReadResult):
        why = ("the store has no record of this attempt" if listed.outcome == "not_found"
               else f"the store was not consulted ({listed.outcome})")
        inputs = tuple(dataclasses.replace(i, placement=f"not known: {why}") for i in inputs)
        if listed.outcome == "not_found":
            return inputs, ()  # no catalog record: the landed rows are all there is
        return inputs, (f"The store's current status was not consulted ({listed.outcome}: {listed.message}); "
                        "statuses below are as landed in the database.",)
    by_id = {i.input_id: i for i in listed}  # purges are already applied by the catalog
    if reader.store is None:  # a fleet viewer: the host's upload facts say where the bytes are
        placed, gap = reader.placements(attempt_id, inputs), None
        placed = {i.input_id: placed.get(i.input_id, NO_BYTES) for i in inputs}
    else:
        placed, gap = _placements(reader.store, attempt_id, inputs)
    out = []
    for item in inputs:
        status, reason = item.store_artifact_status, item.store_status_reason
        found = by_id.get(item.input_id)
        if found is not None:
            status, reason = found.artifact_status or status, found.status_reason
        out.append(dataclasses.replace(item, store_artifact_status=status, store_status_reason=reason,
                                       placement=placed[item.input_id]))
    return tuple(out), (gap,) if gap else ()


def _receipt(ev: Evidence, part: PartRecord, run_id: str | None) -> PartRecord:
    reader = ev.reader
    if reader is None or part.part_name not in {p.value for p in PartName}:
        return dataclasses.replace(part, receipt_outcome=ev.problem_outcome if reader is None else "not_found")
    if not reader.policy.allows(ev.viewer, run_id):
        return dataclasses.replace(part, receipt_outcome="permission_denied")
    try:
        body = reader.part_receipt(ev.viewer, part.attempt_id, part.part_name)
    except Exception:  # noqa: BLE001 - a broken receipt is not an authority
        return dataclasses.replace(part, receipt_outcome="not_found")
    if isinstance(body, ReadResult):
        if body.outcome == "retention_expired" and reader.store is not None:  # purged: the receipt stays visible
            try:
                return dataclasses.replace(part, receipt=reader.store.part_receipt(part.attempt_id, part.part_name),
                                           receipt_outcome="retention_expired")
            except ReadbackError:
                pass
        return dataclasses.replace(part, receipt_outcome=body.outcome.value)
    return dataclasses.replace(part, receipt=body)


def overlay_store(bundle: AttemptBundle, ev: Evidence) -> tuple[AttemptBundle, tuple[str, ...]]:
    """The bundle with the store's current input status and part receipts, plus owner notes."""
    a = bundle.attempt
    notes: list[str] = []
    # Inputs held by another store attempt (a coding agent's hook capture) are asked of that attempt.
    by_store: dict[str, list[int]] = {}
    for i, item in enumerate(bundle.inputs):
        by_store.setdefault(item.capture_attempt_id or a.attempt_id, []).append(i)
    overlaid: list[InputRecord] = list(bundle.inputs)
    for store_attempt, places in by_store.items():
        got, found = _overlay_inputs(ev, store_attempt, a.run_id, tuple(bundle.inputs[i] for i in places))
        for i, item in zip(places, got):
            overlaid[i] = item
        notes.extend(n for n in found if n not in notes)
    inputs = tuple(overlaid)
    previous = bundle.previous_inputs
    if previous and bundle.previous_turn_id:
        previous, _ = _overlay_inputs(ev, bundle.previous_turn_id, a.run_id, previous)
    parts = tuple(_receipt(ev, p, a.run_id) for p in bundle.parts)
    return dataclasses.replace(bundle, inputs=inputs, previous_inputs=previous, parts=parts), tuple(notes)


# -- the store usage picture ---------------------------------------------------------------------
@dataclass(frozen=True)
class BudgetUsage:
    used_bytes: int
    budget_bytes: int | None
    policy_text: str
    problem: str | None = None

    @property
    def fraction(self) -> float | None:
        if not self.budget_bytes:
            return None
        return self.used_bytes / self.budget_bytes


def budget_usage(used_bytes: int, env: dict[str, str] | None = None) -> BudgetUsage:
    """Store usage against the retention budget of the environment (``OTEL_INPUTS_STORE_BUDGET``)."""
    try:
        policy = RetentionPolicy.from_env(env)
    except ValueError as exc:
        return BudgetUsage(used_bytes, None, "unusable", f"retention settings are unusable: {exc}")
    return BudgetUsage(used_bytes, policy.budget_bytes, policy.describe())

