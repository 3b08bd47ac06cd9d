"""The one place that decides what a viewer may see (seed 001 §5: readback re-checks every time).

DuckDB holds content too: the task text, the exact system and user messages, input labels and
source paths, tool arguments.  The store's checks (permission, purge, revocation) guard only the
bytes it holds, so every record the viewer builds from DuckDB rows passes through
:meth:`Access.gate` before any page, table, chart or bundle uses it.  The decision is taken at
render time from the store's public face, never cached across refreshes:

* **permission** — :class:`otel_inputs.AccessPolicy` (``OTEL_INPUTS_ACCESS_POLICY``).  A viewer
  the policy denies for a run sees nothing of it: the run is not listed, its attempts do not
  open, no bundle is written.  An unusable policy file denies everything until it is fixed.
* **purge** — :func:`otel_inputs.purge_state` (the tombstones).  A purged attempt keeps its
  hashes, sizes and counts; its task text, messages, tool arguments, exchange-part content and
  (by default) its input labels and paths are withheld, and the page says when it was purged.
* **revocation** — :class:`otel_inputs.RevocationList`.  A revoked input's label and path are
  withheld; a revoked prompt file hides the task text; a revoked or purged item that was sent
  inline hides the exact messages too (they carry its content).

Identity is Streamlit's logged-in user when ``[auth]`` is configured (``st.login``, OIDC), else the
OS user (:func:`otel_inputs.viewer._evidence.viewer_identity`, the one identity function).  With
``[auth]`` configured and nobody logged in, :func:`login_gate` shows only a login button, and the
signed-out identity is allowed no run whatever the policy says, so no other entry point (a
bundle, a preview) shows content either.

The policy file may say whether labels and paths of purged or revoked items stay visible::

    {"default": "deny", "viewers": {...},
     "withheld": {"labels": "hide", "paths": "hide"}}      # "show" keeps them; "hide" is the default
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from otel_inputs.store import (
    AccessPolicy,
    ArtifactStore,
    PolicyError,
    PurgeState,
    RevocationList,
    purge_state,
)
from otel_inputs import names
from otel_inputs.viewer._evidence import NO_LOGIN, SIGNED_OUT, auth_configured, viewer_identity
from otel_inputs.viewer._format import time_text
from otel_inputs.viewer._records import AttemptBundle, AttemptRow, InputRecord

T = TypeVar("T")

PURGED = "purged"

# Delivery modes whose content is part of the exact messages sent (so withholding the item
# withholds the messages); path references and session history are not embedded by this tool.
EMBEDDED_MODES = frozenset({"inline", "provider_attachment"})


@dataclass(frozen=True)
class Withheld:
    """What is withheld from one attempt for this viewer, each with the sentence the page shows."""

    denied: str | None = None
    task: str | None = None
    messages: str | None = None
    parts: str | None = None
    items: Mapping[str, str] = field(default_factory=dict)  # input_id -> why
    purged_at_ns: int | None = None
    tool_arguments: str | None = None  # tool calls may name or carry any withheld input

    @property
    def anything(self) -> bool:
        return bool(self.denied or self.task or self.messages or self.parts or self.items or self.tool_arguments)

    def read_text(self, input_id: str) -> str | None:
        """What "was it read?" says for a withheld item (its path and the tool arguments are withheld)."""
        why = self.items.get(input_id)
        return f"withheld ({why})" if why else None


NOTHING = Withheld()


def _when(ns: int | None) -> str:
    return f"at {time_text(ns)}" if ns else "(time not recorded)"


def _load_display_rules(path: str | None) -> tuple[bool, bool]:
    """``(show_labels, show_paths)`` of withheld items from the policy's optional ``withheld`` key."""
    if not path:
        return False, False
    try:
        body = json.loads(Path(path).read_text(encoding="utf-8"))
        rules = body.get("withheld") or {}
        labels, paths = rules.get("labels", "hide"), rules.get("paths", "hide")
    except (OSError, ValueError, AttributeError) as exc:
        raise PolicyError(f"access policy {path} is unusable: {exc}") from exc
    for value in (labels, paths):
        if value not in ("show", "hide"):
            raise PolicyError(f"access policy {path}: 'withheld' values must be 'show' or 'hide'")
    return labels == "show", paths == "show"


@dataclass(frozen=True)
class Access:
    """This refresh's decisions for one viewer; build a new one per refresh (:func:`current_access`)."""

    viewer: str
    policy: AccessPolicy | None
    store: ArtifactStore | None = None
    revocations: RevocationList | None = None
    problem: str | None = None  # why everything is denied (unusable policy) or revocations unknown
    show_labels: bool = False
    show_paths: bool = False
    revocations_problem: str | None = None

    # -- permission ---------------------------------------------------------------------------
    def run_allowed(self, run_id: str | None) -> bool:
        return self.policy is not None and self.viewer != SIGNED_OUT and self.policy.allows(self.viewer, run_id)

    @property
    def sees_all(self) -> bool:
        """Whether every run is visible to this viewer, so totals over all runs may be shown as they are."""
        return (self.policy is not None and self.viewer != SIGNED_OUT and self.viewer not in self.policy.viewers
                and self.policy.default_allow)  # fmt: skip

    def denial(self) -> str:
        """The sentence a denied viewer reads (it names no run, attempt or content)."""
        if self.viewer == SIGNED_OUT:
            return f"permission_denied: {NO_LOGIN}"
        if self.policy is None:
            return f"permission_denied: nothing is shown until the access policy is fixed ({self.problem})."
        return f"permission_denied: the access policy does not let {self.viewer} see this run or its attempts."

    def visible(self, rows: Iterable[T], run_of: Callable[[T], str | None] = lambda r: r.run_id) -> list[T]:  # type: ignore[attr-defined]
        """Only the rows whose run this viewer may see (run lists, where-else, any cross-run table)."""
        return [r for r in rows if self.run_allowed(run_of(r))]

    def visible_pages(self, fetch: Callable[[int, int], Iterable[T]], limit: int, *,
                      run_of: Callable[[T], str | None] = lambda r: r.run_id,  # type: ignore[attr-defined]
                      max_pages: int = 50) -> tuple[list[T], bool]:
        """Up to ``limit`` visible rows from ``fetch(limit, offset)`` pages; ``True`` if rows were hidden."""
        out: list[T] = []
        hidden = False
        offset = 0
        for _ in range(max_pages):  # bounded: a viewer allowed nothing must not scan forever
            page = list(fetch(limit, offset))
            allowed = self.visible(page, run_of)
            hidden = hidden or len(allowed) < len(page)
            out.extend(allowed)
            if len(page) < limit or len(out) >= limit:
                break
            offset += limit
        return out[:limit], hidden

    def gate_foreign(self, rows: Iterable[T]) -> tuple[list[T], int]:
        """Rows about other attempts' inputs (where-else, drift) as this viewer may see them.

        Each row needs ``attempt_id`` and ``run_id`` and may have ``input_id``/``seq``, ``label``,
        ``source_path`` and ``sha256``.  Rows of denied runs are dropped (their number is returned,
        so a total can say some were hidden); a purged or revoked input keeps its row with label and
        path withheld, exactly as its own attempt page would show it.
        """
        out: list[T] = []
        hidden = 0
        purges: dict[str, PurgeState] = {}
        for row in rows:
            if not self.run_allowed(getattr(row, "run_id", None)):
                hidden += 1
                continue
            attempt_id = getattr(row, "attempt_id", "")
            ps = purges.setdefault(attempt_id, self._purge(attempt_id))
            input_id = getattr(row, "input_id", None)
            if ps.attempt_purged:
                purged, at = True, ps.attempt_purged_at_ns
            elif input_id is not None:
                at = ps.inputs_purged_at_ns.get(input_id)
                purged = at is not None
            else:  # a row without its input id: if any input of that attempt was purged, withhold (fail closed)
                purged = bool(ps.inputs_purged_at_ns)
                at = min(ps.inputs_purged_at_ns.values()) if purged else None
            why = (f"{PURGED} {_when(at)}" if purged
                   else self._revoked_item(attempt_id, input_id, getattr(row, "sha256", None),
                                           getattr(row, "source_path", None)))
            if why:
                changes = {}
                if not self.show_labels and getattr(row, "label", None) is not None:
                    changes["label"] = f"(label withheld: {why})"
                if not self.show_paths and getattr(row, "source_path", None) is not None:
                    changes["source_path"] = f"(path withheld: {why})"
                row = dataclasses.replace(row, **changes) if changes else row  # type: ignore[type-var]
            out.append(row)
        return out, hidden

    # -- purge and revocation -----------------------------------------------------------------
    def _purge(self, attempt_id: str) -> PurgeState:
        if self.store is None:
            return PurgeState()
        return purge_state(self.store, attempt_id)

    def _revoked(self, sha256: str | None, path: str | None) -> str | None:
        if self.revocations_problem:
            return f"unknown whether revoked: the revocation list cannot be read ({self.revocations_problem})"
        if self.revocations is None or (sha256 is None and path is None):
            return None
        hit = self.revocations.match({"sha256": sha256, "source_path": path})
        if hit is None:
            return None
        why = f"; reason: {hit.reason}" if hit.reason else ""
        return f"source revoked {_when(hit.revoked_at_ns)}{why}"

    def _revoked_item(self, attempt_id: str, input_id: str | None, sha256: str | None, path: str | None) -> str | None:
        """Why one input of an attempt counts as revoked (a fleet viewer decides by its host's facts)."""
        return self._revoked(sha256, path)

    def _revoked_task(self, attempt: AttemptRow, inputs: tuple[InputRecord, ...]) -> str | None:
        """Why the task's prompt file counts as revoked when no input of the attempt says so."""
        return self._revoked(attempt.task_sha256,
                             attempt.task_source_path if attempt.task_source_kind == "prompt_file" else None)

    def _item_reason(self, item: InputRecord, ps: PurgeState) -> str | None:
        at = ps.input_purged_at_ns(item.input_id)
        if at is not None or item.store_status_reason == PURGED:
            return f"{PURGED} {_when(at)}"
        return self._revoked_item(item.attempt_id, item.input_id, item.sha256, item.source_path)

    def decide(self, attempt: AttemptRow, inputs: Iterable[InputRecord]) -> Withheld:
        """What of ``attempt`` (and its ``inputs``) this viewer may not see, and why."""
        if not self.run_allowed(attempt.run_id):
            return Withheld(denied=self.denial())
        ps = self._purge(attempt.attempt_id)
        inputs = tuple(inputs)
        items = {i.input_id: r for i in inputs if (r := self._item_reason(i, ps)) is not None}
        if ps.attempt_purged:
            why = f"this attempt was {PURGED} {_when(ps.attempt_purged_at_ns)}"
            return Withheld(task=f"The task text is withheld: {why}. Its size and SHA-256 are as recorded.",
                            messages=f"The exact messages are withheld: {why}.",
                            parts=f"content withheld: {why}",
                            items={i.input_id: items.get(i.input_id, f"{PURGED} {_when(ps.attempt_purged_at_ns)}")
                                   for i in inputs},
                            purged_at_ns=ps.attempt_purged_at_ns,
                            tool_arguments=f"Tool arguments are withheld: {why}.")
        # The task is withheld when its prompt file (as an item, or by its own path/digest) is.
        task_items = [i for i in inputs if i.input_id in items and (
            i.source_kind == "prompt_file"
            or (attempt.task_source_path and i.source_path == attempt.task_source_path)
            or (attempt.task_sha256 and i.sha256 == attempt.task_sha256))]
        task_why = items[task_items[0].input_id] if task_items else self._revoked_task(attempt, inputs)
        task = (f"The task text is withheld: its prompt file was {task_why}. Its size and SHA-256 are as recorded."
                if task_why else None)
        # The exact messages (and the parts and tool arguments that repeat them) carry the task and
        # every inline item, so they are withheld with any of those.
        embedded = [i for i in inputs if i.input_id in items and i.delivery_mode in EMBEDDED_MODES]
        carried = (f"they carry the task, whose prompt file was {task_why}" if task_why else
                   f"they carry input #{embedded[0].seq}, which was {items[embedded[0].input_id]}" if embedded else None)
        first = min((i for i in inputs if i.input_id in items), key=lambda i: i.seq, default=None)
        tool_args = (f"Tool arguments are withheld: they may name or carry input #{first.seq}, "
                     f"which was {items[first.input_id]}." if first is not None else None)
        if carried is None:
            return Withheld(items=items, tool_arguments=tool_args)
        if attempt.is_legacy and task is None:
            task = "The task text is withheld: it is derived from the exact messages, which are withheld."
        return Withheld(task=task, messages=f"The exact messages are withheld: {carried}.",
                        parts=f"content withheld: {carried}", items=items,
                        tool_arguments=tool_args or f"Tool arguments are withheld: {carried}.")

    # -- applying a decision to the records built from DuckDB rows ----------------------------
    def _item(self, item: InputRecord, why: str) -> InputRecord:
        changes: dict[str, Any] = {}
        if not self.show_labels and item.label is not None:
            changes["label"] = f"(label withheld: {why})"
        if not self.show_paths and item.source_path is not None:
            changes["source_path"] = f"(path withheld: {why})"
        if why.startswith(PURGED):
            changes["store_artifact_status"] = "evicted"
            changes["store_status_reason"] = PURGED
        return dataclasses.replace(item, **changes)

    def gate_inputs(self, inputs: tuple[InputRecord, ...], w: Withheld) -> tuple[InputRecord, ...]:
        return tuple(self._item(i, w.items[i.input_id]) if i.input_id in w.items else i for i in inputs)

    def gate_attempt(self, a: AttemptRow, w: Withheld) -> AttemptRow:
        changes: dict[str, Any] = {}
        if w.task:
            changes["task_prompt"] = None
            if not self.show_paths and a.task_source_path is not None:
                changes["task_source_path"] = "(path withheld)"
        if w.messages:
            changes["system_prompt"] = None
            changes["user_prompt"] = None
        return dataclasses.replace(a, **changes) if changes else a

    def gate(self, bundle: AttemptBundle) -> AttemptBundle:
        """The bundle as this viewer may see it; ``bundle.withheld`` says what was withheld and why."""
        a = bundle.attempt
        w = self.decide(a, bundle.inputs)
        if w.denied:
            # Nothing of a denied attempt survives, so no surface can show it by accident.
            return AttemptBundle(attempt=AttemptRow(a.attempt_id), inputs=(), session_turns=(),
                                 previous_turn_id=None, previous_inputs=None, withheld=w)
        previous = bundle.previous_inputs
        if previous and bundle.previous_turn_id:
            prev_w = self.decide(dataclasses.replace(a, attempt_id=bundle.previous_turn_id), previous)
            previous = self.gate_inputs(previous, prev_w)
        prompts = {k: v for k, v in bundle.recovery_prompts.items() if not self._purge(k).attempt_purged}
        extra = {f.name: _null_content(getattr(bundle, f.name), w) for f in dataclasses.fields(bundle)
                 if f.name not in _GATED_BUNDLE_FIELDS}
        return dataclasses.replace(
            bundle, **extra, attempt=self.gate_attempt(a, w), inputs=self.gate_inputs(bundle.inputs, w),
            previous_inputs=previous, recovery_prompts=prompts, withheld=w)


# Bundle fields gate() handles by name; any other field holding records (steps, messages, ...)
# has its content-named fields nulled when the messages or parts are withheld.
_GATED_BUNDLE_FIELDS = frozenset({"attempt", "inputs", "previous_inputs", "recovery_prompts", "withheld",
                                  "session_turns", "previous_turn_id"})
MESSAGE_FIELDS = frozenset({"system_prompt", "user_prompt", "input_messages_json"})
TOOL_FIELDS = frozenset({"tool_arguments"})


def _null_content(value: Any, w: Withheld) -> Any:
    """``value`` with every content-named field of its dataclass records set to ``None`` when withheld."""
    wanted = (MESSAGE_FIELDS if w.messages else frozenset()) | (TOOL_FIELDS if w.tool_arguments else frozenset())
    if not wanted:
        return value

    def one(record: Any) -> Any:
        if not dataclasses.is_dataclass(record) or isinstance(record, type):
            return record
        names_ = {f.name for f in dataclasses.fields(record)} & wanted
        return dataclasses.replace(record, **{n: None for n in names_}) if names_ else record

    if isinstance(value, tuple):
        return tuple(one(v) for v in value)
    return one(value)


def withheld_of(bundle: AttemptBundle) -> Withheld:
    """What the page must say was withheld (nothing for a bundle that was not gated)."""
    w = getattr(bundle, "withheld", None)
    return w if isinstance(w, Withheld) else NOTHING


def page_access() -> Access:
    """The decisions for the page being drawn (the app's configured store, the page's viewer)."""
    return current_access(os.environ.get(names.ENV_STORE))


def current_access(store_root: str | os.PathLike[str] | ArtifactStore | None, viewer: str | None = None,
                   unknown: str | None = None) -> Access:
    """The decisions for this refresh: identity, the environment's policy, the store's purges and revocations.

    ``store_root`` may be a store already open; ``unknown`` says why the store that recorded the
    attempt cannot be asked, which withholds what a revocation could cover (fail closed), as an
    unreadable revocation list does.
    """
    who = viewer or viewer_identity()
    path = os.environ.get(names.ENV_ACCESS_POLICY)
    try:
        policy = AccessPolicy.load(path) if path else AccessPolicy()
        show_labels, show_paths = _load_display_rules(path)
    except PolicyError as exc:
        return Access(who, None, problem=str(exc))
    store = store_root if isinstance(store_root, ArtifactStore) else None
    if store is None and store_root:
        root = os.fspath(store_root)  # type: ignore[arg-type]
        store = ArtifactStore(root, create=False)
        if not store.holds_records():
            store = None
    revocations, rev_problem = None, unknown
    if store is not None:  # without a store there are no purges or revocations to consult
        try:
            revocations = RevocationList.load(store)
        except PolicyError as exc:
            rev_problem = str(exc)  # unknown revocations withhold content (fail closed), never show it
    return Access(who, policy, store, revocations, None, show_labels, show_paths, rev_problem)


# -- the same decision over raw DuckDB rows (evidence bundles) -----------------------------------
# Which column of which table carries which kind of content; the one list bundles withhold by.
CONTENT_COLUMNS: dict[str, dict[str, str]] = {
    # The attempt span's row also carries its messages as JSON, those of its first model step, and
    # its own tool arguments (migration 11): each withheld with the messages / tool arguments.
    "agent_attempts": {"task_prompt": "task", "task_source_path": "task_path",
                       "system_prompt": "messages", "user_prompt": "messages", "input_messages_json": "messages",
                       "step_system_prompt": "messages", "step_user_prompt": "messages",
                       "step_input_messages_json": "messages", "tool_arguments": "tool_arguments"},
    "agent_attempt_inputs": {"label": "label", "source_path": "path"},
    "agent_artifacts": {"label": "label", "source_path": "path"},
    "agent_attempt_messages": {"system_prompt": "messages", "user_prompt": "messages",
                               "input_messages_json": "messages"},
    "agent_attempt_steps": {"tool_arguments": "tool_arguments"},
}


def gate_row(access: Access, table: str, row: dict[str, Any], w: Withheld) -> tuple[dict[str, Any], list[str]]:
    """``row`` with the content ``w`` withholds set to null, and the sentences saying why."""
    rules = CONTENT_COLUMNS.get(table, {})
    out, why = dict(row), []
    item_why = w.items.get(row.get("input_id") or "") if "input_id" in row else None
    for column, kind in rules.items():
        if out.get(column) is None:
            continue
        reason = {
            "task": w.task, "messages": w.messages, "parts": w.parts, "tool_arguments": w.tool_arguments,
            "task_path": w.task if not access.show_paths else None,
            "label": item_why if not access.show_labels else None,
            "path": item_why if not access.show_paths else None,
        }[kind]
        if reason:
            out[column] = None
            why.append(f"{table}.{column}: {reason}")
    return out, why


# -- identity: Streamlit's own authentication ---------------------------------------------------
def login_gate() -> bool:
    """``True`` when the page may render; with login configured and nobody logged in, a login button only."""
    if not auth_configured():
        return True
    import streamlit as st  # here, not at the top: `otel-inputs bundle` imports this module and never Streamlit

    if bool(getattr(st.user, "is_logged_in", False)):
        return True
    st.title("otel-inputs")
    st.text(NO_LOGIN)
    if st.button("Log in", key="login", type="primary"):
        st.login()
    return False


def logout_button() -> None:
    """A logout control in the sidebar when someone is logged in through ``st.login``."""
    import streamlit as st  # here, not at the top: `otel-inputs bundle` imports this module and never Streamlit

    if auth_configured() and bool(getattr(st.user, "is_logged_in", False)):
        if st.button("Log out", key="logout"):
            st.logout()
