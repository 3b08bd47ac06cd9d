"""The ONE attempt panel model, shared by every surface that shows an attempt.

:func:`build_panel` turns an :class:`~otel_inputs.viewer._records.AttemptBundle` into a :class:`PanelModel`
whose sections are those of :data:`SECTIONS`, in its order: Task instructions (open), This dispatch,
Inherited context, Files available, Attachments delivered, Exact model messages, then the steps under
their own heading.  Streamlit only draws it (``_draw.py``); this module never imports Streamlit.
Every input item appears in exactly one group; groups keep ``seq`` order; unknown reads "unknown".

To add a section (docs/architecture.md, "Where each concern lives"):

1. its record: a frozen dataclass for its model, here, with a ``title: str = ""`` field (its spec's title
   is set on it); if it shows data the panel does not read yet, a field for it on
   :class:`~otel_inputs.viewer._records.AttemptBundle` (and a record for the rows in ``_records.py``), which
   :meth:`~otel_inputs.viewer._access.Access.gate` must withhold where it carries content (docs/access.md);
2. its query: a function in ``_queries.py`` that ``load_attempt`` calls to fill that field;
3. one entry in :data:`SECTIONS`, at the place it is drawn: its name, its title and its build function
   ``(bundle, PanelContext) -> model | None`` (``None``: nothing to show, the section is left out and the
   numbers close up).  Its drawing is the function in ``_draw.py`` registered under the same name with
   ``@draws(name)``, which gets the model and the panel's ``DrawContext``; ``tests/viewer/test_sections.py``
   fails while a section has no drawing or a drawing no section.

Its model is then ``p.<name>``, its heading "<n>. <title>" (numbered among the sections shown), and any item
tables it has (``groups``) count among the panel's items (:meth:`PanelModel.all_items`).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from otel_inputs import names
from otel_inputs.types import (
    Bound,
    CaptureDecision,
    CaptureStatus,
    Coverage,
    DeliveryMode,
    SendKind,
    SourceKind,
    TaskSourceKind,
)
from otel_inputs.viewer._access import Withheld, withheld_of
from otel_inputs.viewer._changes import ChangesModel, compute_changes
from otel_inputs.viewer._format import (
    NOT_RECORDED,
    UNKNOWN,
    BadgeColor,
    count_text,
    duration_text,
    reason_text,
    size_text,
    status_text,
    status_word,
    time_text,
    value_text,
)
from otel_inputs.viewer._legacy import legacy_task
from otel_inputs.viewer._lineage import PriorTurns, prior_turns
from otel_inputs.viewer._evidence import NO_BYTES, PURGED
from otel_inputs.viewer._previews import has_preview, unavailable_reason
from otel_inputs.viewer._records import AttemptBundle, AttemptRow, InputRecord, PartRecord
from otel_inputs.viewer._reads import ReadTools, find_reads, load_read_tools
from otel_inputs.viewer._retries import OperationLink, operation_summary
from otel_inputs.viewer._steps import MESSAGE_SOURCE_TEXT, StepsSection, exact_messages, steps_section

SEND_KIND_TEXT = {k.value: status_word(k.value) for k in SendKind}  # "initial request", "parse retry", "check retry"
UNKNOWN_DELIVERY_TITLE = "Delivery mode not recorded"
INSTRUCTION_GROUP = "instruction_file"
INSTRUCTION_TITLE = ("Instruction files: loaded (the runtime's own report) and delivered (their bytes in the recorded "
                     "request)")
NOT_CONSULTED = "not known: the store was not consulted"
PARTS_NOT_RECORDED = "Exchange parts were not recorded for this attempt."
PART_TITLES = {"logical_request": "Logical request", "observable_output": "Observable output"}
DISPATCH_TEXT = {v: status_word(v) for v in ("dispatched", "not_dispatched")}  # anything else: unknown
OPAQUE_HISTORY_NOTE = (
    "The provider's session history cannot be enumerated; the earlier turns below are what this "
    "session recorded before this dispatch, so the model may also have seen content not listed here."
)


@dataclass(frozen=True)
class ItemRow:
    input_id: str
    seq: int
    label: str
    source_kind: str
    delivery_mode: str | None
    delivery_label: str
    source_path: str | None
    media_type: str
    size: str
    sha256: str
    capture_status: str
    artifact_status: str
    unavailable: str | None
    detail: str | None
    previewable: bool
    change: str | None = None
    read: str | None = None
    """"read by <tool> at <time>", "no recorded read", "reads not recorded"; ``None`` if not a path reference."""
    placement: str = NOT_CONSULTED
    """Where the bytes are now: local copy, bucket, an upload queued or failed (``overlay_store``)."""
    record: InputRecord | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class ItemGroup:
    delivery_mode: str | None
    title: str
    items: tuple[ItemRow, ...]


@dataclass(frozen=True)
class TaskSection:
    text: str | None
    derived: bool
    notes: tuple[str, ...]
    provenance: tuple[tuple[str, str], ...]
    title: str = ""  # its SectionSpec's, set by build_panel
    expanded: bool = True


@dataclass(frozen=True)
class CoverageModel:
    coverage: str
    declared: str
    captured: str
    omitted: str
    recorded_events: str
    received_events: int
    decision: str
    gap_reason: str | None
    notes: tuple[str, ...]
    summary: str = ""
    """The counts in a reviewer's words: "9 inputs declared, 7 captured, 2 left out (...)"; gaps said as gaps."""


@dataclass(frozen=True)
class PartRow:
    """One exchange part as shown: capture outcome, dispatch, persistence (store receipt first)."""

    key: str
    title: str
    capture: str
    dispatch: str
    persistence: str
    size: str
    sha256: str
    detail: str | None
    content_offered: bool
    record: PartRecord | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class PartsModel:
    rows: tuple[PartRow, ...]
    notes: tuple[str, ...]


@dataclass(frozen=True)
class DispatchSection:
    send_kind: str
    turn_index: str
    retry_of: str | None
    previous_turn: str | None
    added_summary: str
    coverage: CoverageModel
    groups: tuple[ItemGroup, ...]
    current_message: str | None
    notes: tuple[str, ...]
    parts: PartsModel = PartsModel((), (PARTS_NOT_RECORDED,))
    title: str = ""  # its SectionSpec's, set by build_panel


@dataclass(frozen=True)
class TurnLink:
    attempt_id: str
    started: str
    send_kind: str
    phase: str
    turn_index: str


@dataclass(frozen=True)
class InheritedSection:
    turns: tuple[TurnLink, ...]
    notes: tuple[str, ...]
    groups: tuple[ItemGroup, ...]
    title: str = ""  # its SectionSpec's, set by build_panel


@dataclass(frozen=True)
class FilesSection:
    groups: tuple[ItemGroup, ...]
    changes: ChangesModel
    notes: tuple[str, ...]
    title: str = ""  # its SectionSpec's, set by build_panel


@dataclass(frozen=True)
class AttachmentsSection:
    groups: tuple[ItemGroup, ...]
    notes: tuple[str, ...]
    title: str = ""  # its SectionSpec's, set by build_panel


@dataclass(frozen=True)
class MessagesSection:
    system: str | None
    user: str | None
    notes: tuple[str, ...]
    withheld: str | None = None  # why the messages are not shown to this viewer (purge, revocation)
    title: str = ""  # its SectionSpec's, set by build_panel
    source: str = "from the attempt span"
    """Where the messages were taken from ("taken from the first model call", ...)."""


COVERAGE_BADGES: dict[str, tuple[str, str, BadgeColor]] = {
    Coverage.COMPLETE.value: ("Complete", ":material/check_circle:", "green"),
    Coverage.PARTIAL.value: ("Partial", ":material/warning:", "orange"),
    Coverage.NOT_RECORDED.value: ("Not recorded", ":material/help:", "gray"),
}


@dataclass(frozen=True)
class HeaderModel:
    """The attempt's header: a coverage badge (icon + word + colour), one line of facts, lineage links."""

    badge_word: str
    badge_icon: str
    badge_color: BadgeColor
    facts_line: str
    lineage: tuple[tuple[str, str], ...]
    """(link text, attempt id): the previous turn and the attempt this one retries."""
    operation_text: str
    operation: tuple[OperationLink, ...]


@dataclass(frozen=True)
class PanelContext:
    """What the sections' builds share, worked out once per panel from the bundle; a build reads what it needs."""

    prior: PriorTurns
    """The earlier turns of the attempt's session, as far as they can be ordered."""
    changes: ChangesModel
    """What changed since the previous turn."""
    by_mode: dict[str | None, ItemGroup]
    """Every input, in the item table of its delivery mode (with its change mark and its "was it read?")."""
    coverage: CoverageModel
    withheld: Withheld
    """What this viewer may not see of the attempt (nothing for a bundle the access layer did not gate)."""


@dataclass(frozen=True)
class SectionSpec:
    """One section of the attempt panel: its name, its title and how its model is built (see the module docstring)."""

    model: str
    """Its name: the panel attribute its built model is read by (``p.task``) and the key its drawing is
    registered under (``@draws("task")`` in ``_draw.py``)."""
    title: str
    build: Callable[[AttemptBundle, PanelContext], Any]
    """Its model (a frozen dataclass with a ``title`` field) from the bundle; ``None`` leaves the section out
    (nothing recorded to show, as the steps of a database without a steps table)."""
    numbered: bool = True
    """Drawn under "<n>. <title>", n its place among the numbered sections shown; else under its title alone."""


@dataclass(frozen=True)
class PanelModel:
    attempt_id: str
    facts: tuple[tuple[str, str], ...]
    built: tuple[tuple[SectionSpec, Any], ...]
    """Each section's spec and its built model (``None``: left out), in the order drawn."""
    is_legacy: bool
    header: HeaderModel | None = None
    read_tools_problem: str | None = None
    record: AttemptRow | None = field(default=None, compare=False, repr=False)

    def __getattr__(self, name: str) -> Any:
        """``p.task``, ``p.dispatch``, …: the built model of the section of that name (``None``: left out)."""
        if not name.startswith("_"):
            for spec, model in self.__dict__.get("built", ()):
                if spec.model == name:
                    return model
        raise AttributeError(f"{type(self).__name__!r} has no attribute or section {name!r}")

    @property
    def sections(self) -> tuple[Any, ...]:
        """The numbered sections' models, in order."""
        return tuple(model for spec, model in self.built if spec.numbered and model is not None)

    def all_items(self) -> list[ItemRow]:
        """Every input row of every section's item tables (a section model's ``groups``), in order."""
        out: list[ItemRow] = []
        for _, model in self.built:
            for group in getattr(model, "groups", ()):
                out.extend(group.items)
        return out


# --------------------------------------------------------------------------------------------
def artifact_text(item: InputRecord) -> str:
    """The current artifact status (the store's when it has one) with its reason; "purged" for a purge."""
    status = item.current_artifact_status
    if status is None:
        return UNKNOWN
    reason = item.store_status_reason if item.store_artifact_status else None
    if reason == PURGED:
        text = PURGED
    elif reason and status != "available":
        text = f"{status_word(status)} ({reason_text(reason)})"
    else:
        text = status_word(status)
    if item.store_artifact_status and item.artifact_status and item.store_artifact_status != item.artifact_status:
        text += f" (store; at capture: {status_word(item.artifact_status)})"
    return text


BOUNDS = frozenset(b.value for b in Bound)
_TRIPPED = re.compile(r"^(?:bound )?([a-z_]+)(?: tripped(?: \((.*)\))?)?$")


def tripped_bound(detail: str | None) -> tuple[str | None, str | None]:
    """(bound, what it allows) of a capture detail naming a tripped bound — ``"bound file_bytes tripped
    (at most 10485760 bytes per file)"`` or just ``"file_bytes"`` — else ``(None, detail)``."""
    m = _TRIPPED.match(detail or "")
    if m is None or m.group(1) not in BOUNDS:
        return None, detail
    return m.group(1), m.group(2)


def capture_text(status: str | None, detail: str | None) -> str:
    """An input's capture status in words; over a limit names the bound when the detail records it."""
    bound, _ = tripped_bound(detail)
    if status == CaptureStatus.LIMIT_EXCEEDED.value and bound is not None:
        return status_word(bound)
    return status_word(status, missing=UNKNOWN)


def common_placement(items: list[ItemRow] | tuple[ItemRow, ...]) -> str | None:
    """The one place every input's bytes are, when they all agree (said once above the tables instead of
    a *bytes* column), else ``None``.  Inputs without a snapshot ("no bytes captured", which their
    artifact status already says) do not count against agreement."""
    with_bytes = {r.placement for r in items if r.placement != NO_BYTES}
    if len(with_bytes) == 1:
        return with_bytes.pop()
    if not with_bytes and items:
        return NO_BYTES
    return None


def _part_persistence(p: PartRecord) -> str:
    at_submit = status_word(p.persistence)
    if p.receipt is not None:
        stored = status_word(p.receipt.get("persistence"), missing=UNKNOWN)
        why = p.receipt.get("persistence_reason") or p.receipt.get("persistence_detail")
        text = f"{stored} (the store's receipt says" + (f": {reason_text(why)}" if why else " so") + ")"
        if p.receipt_outcome == "retention_expired":
            text += f"; attempt {PURGED}"
        # queued at submit, then settled, is the normal course; any other disagreement is said
        if p.persistence and p.persistence != "queued" and at_submit != stored:
            text += f"; the span recorded {at_submit} at submit"
        return text
    if p.receipt_outcome is None:
        return f"{at_submit} (as recorded at submit; store receipt not consulted)"
    if p.persistence == "queued":
        return f"queued at submit, not confirmed durable: no store receipt ({p.receipt_outcome})"
    if p.persistence == "not_queued":
        return "not queued (nothing was handed to the store)"
    return f"{at_submit} (as recorded at submit; no store receipt: {p.receipt_outcome})"


def part_row(p: PartRecord, index: int, withheld: str | None = None) -> PartRow:
    capture = status_word(p.capture, missing=UNKNOWN)
    if p.capture not in (None, "captured"):
        capture += f" ({reason_text(p.reason) if p.reason else 'reason not recorded'})"
    dispatch = DISPATCH_TEXT.get(p.dispatch or "") or DISPATCH_TEXT.get(
        (p.receipt or {}).get("dispatch") or "", UNKNOWN)  # unknown never reads as not dispatched
    return PartRow(
        key=f"{p.part_name or 'part'}:{index}",
        title=PART_TITLES.get(p.part_name or "", f"Part {value_text(p.part_name, missing=UNKNOWN)}"),
        capture=capture,
        dispatch=dispatch,
        persistence=_part_persistence(p),
        size=size_text(p.size_bytes),
        sha256=value_text(p.sha256, missing=UNKNOWN),
        detail=withheld or p.detail or p.row_problem,
        content_offered=p.capture in ("captured", "truncated") and withheld is None,
        record=p,
    )


def parts_model(parts: tuple[PartRecord, ...], withheld: str | None = None) -> PartsModel:
    if not parts:
        return PartsModel((), (PARTS_NOT_RECORDED,))
    notes: list[str] = []
    present = {p.part_name for p in parts}
    for name, title in PART_TITLES.items():
        if name not in present:
            notes.append(f"{title}: not recorded for this attempt (unknown, not empty).")
    return PartsModel(tuple(part_row(p, i, withheld) for i, p in enumerate(parts)), tuple(notes))


def item_row(item: InputRecord, change: str | None = None, read: str | None = None) -> ItemRow:
    mode = item.delivery_mode
    label = item.label if item.label not in (None, "") else f"(no label; input {item.input_id})"
    return ItemRow(
        input_id=item.input_id,
        seq=item.seq,
        label=label,
        source_kind=status_word(item.source_kind),
        delivery_mode=mode,
        delivery_label=names.DELIVERY_LABELS.get(mode or "", UNKNOWN_DELIVERY_TITLE),
        source_path=item.source_path,
        media_type=value_text(item.media_type, missing=UNKNOWN),
        size=size_text(item.size_bytes),
        sha256=value_text(item.sha256, missing=UNKNOWN),
        capture_status=capture_text(item.capture_status, item.detail),
        artifact_status=artifact_text(item),
        unavailable=unavailable_reason(item),
        detail=tripped_bound(item.detail)[1] or item.row_problem,  # a tripped bound is named in the capture words
        previewable=has_preview(item),
        change=change,
        read=read,
        placement=item.placement or NOT_CONSULTED,
        record=item,
    )


def group_items(items: tuple[InputRecord, ...], changes: dict[str, str] | None = None,
                reads: dict[str, str] | None = None) -> dict[str | None, ItemGroup]:
    """Items grouped by delivery mode (known modes, then unrecorded), ``seq`` order kept inside."""
    changes = changes or {}
    reads = reads or {}
    known = {m.value for m in DeliveryMode}
    buckets: dict[str | None, list[ItemRow]] = {}
    for item in sorted(items, key=lambda i: (i.seq, i.input_id)):
        mode = item.delivery_mode if item.delivery_mode in known else None
        if item.source_kind == SourceKind.INSTRUCTION_FILE.value:
            mode = INSTRUCTION_GROUP  # a coding agent's instruction files: one table, declared versus delivered
        buckets.setdefault(mode, []).append(item_row(item, changes.get(item.input_id), reads.get(item.input_id)))
    return {
        mode: ItemGroup(mode, INSTRUCTION_TITLE if mode == INSTRUCTION_GROUP
                        else names.DELIVERY_LABELS[mode] if mode else UNKNOWN_DELIVERY_TITLE, tuple(rows))
        for mode, rows in buckets.items()
    }


def _groups(by_mode: dict[str | None, ItemGroup], *modes: str | None) -> tuple[ItemGroup, ...]:
    return tuple(by_mode[m] for m in modes if m in by_mode)


def coverage_model(attempt: AttemptRow, inputs: tuple[InputRecord, ...]) -> CoverageModel:
    notes: list[str] = []
    coverage = attempt.input_coverage or Coverage.NOT_RECORDED.value
    received = len(inputs)
    if attempt.coding_runtime is not None:
        # A coding agent's turn: the instruction-file list is the otel-inputs hook's, its coverage as settled.
        notes.append(f"Instruction files of a {attempt.coding_runtime} turn: present at dispatch as the otel-inputs hook "
                     "listed them; loaded and delivered as the runtime's own telemetry says.")
        if attempt.coverage_reason:
            notes.append(attempt.coverage_reason)
    elif attempt.is_legacy:
        notes.append(names.SENTENCE_NO_PACKET)
        coverage = Coverage.NOT_RECORDED.value
    else:
        if attempt.item_count is not None and received < attempt.item_count:
            coverage = Coverage.PARTIAL.value
            notes.append(
                f"Only {received} of {attempt.item_count} input events reached the database "
                "(span event limit or dropped events), so the list below is partial."
            )
        if attempt.dropped_events_count:
            notes.append(f"The span dropped {attempt.dropped_events_count} event(s) before export.")
        if attempt.capture_decision == CaptureDecision.SUPPRESSED.value:
            notes.append(
                "Content capture was suppressed before any content was read "
                f"({reason_text(attempt.capture_gap_reason)}); this is a recorded gap, not an empty packet."
            )
        elif attempt.capture_decision == CaptureDecision.METADATA_ONLY.value:
            notes.append(
                f"Only metadata was captured ({reason_text(attempt.capture_gap_reason)}); no file bytes were kept."
            )
        if coverage == Coverage.PARTIAL.value:
            why = attempt.coverage_reason or attempt.capture_gap_reason
            notes.append(f"The packet is partial: {reason_text(why) if why else 'reason not recorded'}.")
        if received == 0 and coverage == Coverage.COMPLETE.value:
            notes.append(names.SENTENCE_EMPTY_PACKET)
    return CoverageModel(
        coverage=status_word(coverage),
        declared=count_text(attempt.declared_input_count),
        captured=count_text(attempt.captured_input_count),
        omitted=count_text(attempt.omitted_input_count),
        recorded_events=count_text(attempt.item_count),
        received_events=received,
        decision=value_text(attempt.capture_decision),
        gap_reason=attempt.capture_gap_reason,
        notes=tuple(notes),
        summary=coverage_summary(attempt, inputs),
    )


def _counted(n: int | None, what: str) -> str:
    return f"{what}: unknown" if n is None else f"{n} {what}"


def coverage_summary(attempt: AttemptRow, inputs: tuple[InputRecord, ...]) -> str:
    """The packet's counts as a reviewer says them, e.g. "9 inputs declared, 7 captured, 2 left out
    (1 over the file size limit, 1 unreadable)"; a count not recorded reads "unknown", and how many input
    records arrived is said only where it is not the number the span announced."""
    if attempt.is_legacy:
        return "Inputs were not accounted for on this attempt (no input packet was recorded)."
    why: dict[str, int] = {}
    for i in inputs:
        if i.capture_status not in (CaptureStatus.CAPTURED.value, CaptureStatus.NOT_APPLICABLE.value):
            word = capture_text(i.capture_status, i.detail)
            why[word] = why.get(word, 0) + 1
    declared = attempt.declared_input_count
    text = (f"{_counted(declared, 'input declared' if declared == 1 else 'inputs declared')}, "
            f"{_counted(attempt.captured_input_count, 'captured')}, {_counted(attempt.omitted_input_count, 'left out')}")
    if why:
        text += " (" + ", ".join(f"{n} {w}" for w, n in why.items()) + ")"
    if attempt.item_count is None:
        text += f"; how many input records the span sent was not recorded ({len(inputs)} arrived)"
    elif attempt.item_count != len(inputs):
        text += f"; {len(inputs)} of the {attempt.item_count} input records the span sent arrived"
    if attempt.capture_decision != CaptureDecision.ADMITTED.value:
        text += f"; content capture: {status_word(attempt.capture_decision)}"
    return text + "."


def _recorded_messages(bundle: AttemptBundle) -> tuple[AttemptRow, str | None]:
    """The attempt with the exact messages section 6 shows (the C2 row: the attempt span, its log event or
    its first model step), and where they came from when not from the attempt span itself."""
    a, m = bundle.attempt, bundle.messages
    if m is None or a.user_prompt is not None or m.user_prompt is None:
        return a, None
    source = MESSAGE_SOURCE_TEXT.get(m.messages_source or "", value_text(m.messages_source))
    return dataclasses.replace(a, user_prompt=m.user_prompt), f"The exact user message is {source} (section 6)."


def _task_section(bundle: AttemptBundle, ctx: PanelContext) -> TaskSection:
    a = bundle.attempt
    notes: list[str]
    provenance: list[tuple[str, str]]
    if a.is_legacy:
        shown, source = _recorded_messages(bundle)
        lt = legacy_task(shown, ctx.prior, bundle.recovery_prompts)
        notes = [names.SENTENCE_LEGACY_TASK, lt.note] + [n for n in (source, ctx.withheld.task) if n]
        provenance = [("Source", "derived from the exact user message" if lt.derived else "the exact user message")]
        if lt.template:
            provenance.append(("Known template", lt.template))
        if lt.source_attempt_id:
            provenance.append(("Recovered from attempt", lt.source_attempt_id))
        return TaskSection(lt.text, lt.derived, tuple(notes), tuple(provenance))
    provenance = []
    if a.task_source_kind == TaskSourceKind.PROMPT_FILE.value:
        provenance.append(("Source", "prompt file"))
        provenance.append(("Prompt file path", value_text(a.task_source_path)))
    elif a.task_source_kind == TaskSourceKind.INLINE_TEXT.value:
        provenance.append(("Source", "inline text"))
    else:
        provenance.append(("Source", value_text(a.task_source_kind)))
    provenance.append(("Size", size_text(a.task_size_bytes)))
    provenance.append(("SHA-256", value_text(a.task_sha256, missing=UNKNOWN)))
    notes = []
    if a.task_prompt is None and ctx.withheld.task:
        notes.append(ctx.withheld.task)
    elif a.task_prompt is None:
        notes.append(
            "The task text was not captured for this attempt "
            f"(capture decision: {value_text(a.capture_decision)}; reason: {reason_text(a.capture_gap_reason)}). "
            "Its provenance and identity are below."
        )
    return TaskSection(a.task_prompt, False, tuple(notes), tuple(provenance))


def _dispatch_section(bundle: AttemptBundle, ctx: PanelContext) -> DispatchSection:
    a, by_mode, cov = bundle.attempt, ctx.by_mode, ctx.coverage
    notes: list[str] = []
    if a.is_legacy:
        send_kind = NOT_RECORDED
        if ctx.prior.turns:
            notes.append(
                "A later turn in a reused session; whether it was a parse or a check correction was not recorded."
            )
        added = "What was added on this send was not recorded; the exact current message is below."
    else:
        send_kind = SEND_KIND_TEXT.get(a.send_kind or "", value_text(a.send_kind))
        counts = {m: len(by_mode[m].items) if m in by_mode else 0 for m in names.DELIVERY_LABELS}
        parts = [f"{counts[m]} {names.DELIVERY_LABELS[m].lower()}" for m in ("inline", "path_reference", "provider_attachment")]
        added = "Added on this send: " + ", ".join(parts) + "."
        if cov.coverage != Coverage.COMPLETE.value:
            added += f" Coverage is {cov.coverage}, so the counts may be incomplete."
    current = a.user_prompt
    if bundle.dispatch is not None and (bundle.dispatch.user_prompt is not None or current is None):
        current = bundle.dispatch.user_prompt
        notes.extend(n for n in (bundle.dispatch.note,) if n)
    if current is not None and a.user_prompt is None:
        notes.extend(n for n in (_recorded_messages(bundle)[1],) if n)
    turn = count_text(a.turn_index)
    if a.turn_index is None and bundle.inferred_turn_index is not None:
        turn = f"{bundle.inferred_turn_index} (from the order of the session's recorded attempts; not recorded)"
    return DispatchSection(
        send_kind=send_kind,
        turn_index=turn,
        retry_of=a.retry_of_attempt_id,
        previous_turn=bundle.previous_turn_id,
        added_summary=added,
        coverage=cov,
        groups=_groups(by_mode, DeliveryMode.INLINE.value),
        current_message=current,
        notes=tuple(notes),
        parts=parts_model(bundle.parts, ctx.withheld.parts),
    )


def _inherited_section(bundle: AttemptBundle, ctx: PanelContext) -> InheritedSection:
    a, prior = bundle.attempt, ctx.prior
    notes: list[str] = []
    links = tuple(
        TurnLink(
            t.attempt_id, time_text(t.started_ns),
            NOT_RECORDED if t.is_legacy else SEND_KIND_TEXT.get(t.send_kind or "", value_text(t.send_kind)),
            value_text(t.phase), count_text(t.turn_index),
        )
        for t in prior.turns
    )
    if a.session_id is None:
        notes.append(
            "No model session id was recorded for this attempt, so no earlier turns are grouped with it; "
            "whether it inherited context is unknown."
            if a.is_legacy or a.turn_index != 1
            else "First turn with no reused model session: nothing was inherited."
        )
    elif prior.ambiguous:
        notes.append(f"Inherited context cannot be ordered: {prior.reason}. No earlier turn is assumed.")
    if links:
        notes.append(OPAQUE_HISTORY_NOTE)
    elif a.session_id is not None and not prior.ambiguous:
        if a.turn_index in (None, 1) or a.is_legacy:
            notes.append("No earlier turn of this session was recorded: this is its first recorded turn.")
        else:
            notes.append(
                f"This is turn {a.turn_index}, but no earlier turn of its session was recorded in this database."
            )
    return InheritedSection(links, tuple(notes), _groups(ctx.by_mode, DeliveryMode.SESSION_HISTORY.value))


def _files_section(bundle: AttemptBundle, ctx: PanelContext) -> FilesSection:
    a, cov = bundle.attempt, ctx.coverage
    notes: list[str] = []
    if a.coding_runtime is not None:
        # A coding agent's turn: its instruction files come from the otel-inputs hook and the runtime's report.
        if a.coverage_reason:
            notes.append(a.coverage_reason)
    elif a.is_legacy:
        notes.append(names.SENTENCE_NO_PACKET)
    elif not bundle.inputs and cov.coverage == Coverage.COMPLETE.value:
        notes.append(names.SENTENCE_EMPTY_PACKET)
    groups = _groups(ctx.by_mode, INSTRUCTION_GROUP, DeliveryMode.PATH_REFERENCE.value, None)
    if not a.is_legacy and not groups and bundle.inputs:
        notes.append("No files were made available by path on this dispatch.")
    if not a.is_legacy and not bundle.inputs and cov.coverage != Coverage.COMPLETE.value:
        notes.append(f"No items were recorded and coverage is {cov.coverage}: files may have been available but were not accounted for.")
    return FilesSection(groups, ctx.changes, tuple(notes))


def _attachments_section(bundle: AttemptBundle, ctx: PanelContext) -> AttachmentsSection:
    a = bundle.attempt
    groups = _groups(ctx.by_mode, DeliveryMode.PROVIDER_ATTACHMENT.value)
    if a.is_legacy:
        notes: tuple[str, ...] = ("Attachment state: not recorded.",)
    elif not groups:
        notes = ("No provider attachments were recorded on this dispatch.",)
    else:
        notes = ()
    return AttachmentsSection(groups, notes)


def _messages_section(bundle: AttemptBundle, ctx: PanelContext) -> MessagesSection:
    a = bundle.attempt
    msgs = exact_messages(a, bundle.messages)
    notes: tuple[str, ...] = (msgs.note,) if msgs.note else ()
    if ctx.withheld.messages:
        notes = (ctx.withheld.messages,)
    elif msgs.system is None and msgs.user is None:
        notes += (
            "The exact messages were not captured "
            f"({reason_text(a.capture_gap_reason) if a.capture_gap_reason else 'not recorded'}).",
        )
    return MessagesSection(msgs.system, msgs.user, notes, source=msgs.source, withheld=ctx.withheld.messages)


def _steps_section(bundle: AttemptBundle, ctx: PanelContext) -> StepsSection:
    return steps_section(bundle.steps, ctx.withheld.tool_arguments)


SECTIONS: tuple[SectionSpec, ...] = (
    SectionSpec("task", "Task instructions", _task_section),
    SectionSpec("dispatch", "This dispatch", _dispatch_section),
    SectionSpec("inherited", "Inherited context", _inherited_section),
    SectionSpec("files", "Files available", _files_section),
    SectionSpec("attachments", "Attachments delivered", _attachments_section),
    SectionSpec("messages", "Exact model messages", _messages_section),
    SectionSpec("steps", "Steps the agent took", _steps_section, numbered=False),  # after the numbered ones
)
"""The attempt panel's sections in the order drawn: the one list a new section is added to."""

SECTION_TITLES = tuple(s.title for s in SECTIONS if s.numbered)
"""The numbered sections' titles, in order."""


def header_model(bundle: AttemptBundle, cov: CoverageModel) -> HeaderModel:
    a = bundle.attempt
    word, icon, color = COVERAGE_BADGES.get(cov.coverage.replace(" ", "_"), COVERAGE_BADGES[Coverage.NOT_RECORDED.value])
    kind = NOT_RECORDED if a.is_legacy else SEND_KIND_TEXT.get(a.send_kind or "", value_text(a.send_kind))
    facts = [
        f"Attempt {a.attempt_id}", f"run {value_text(a.run_id)}", f"{value_text(a.phase)} phase", f"agent {value_text(a.agent_name)}", f"model {value_text(a.request_model)}",
        kind, f"turn {count_text(a.turn_index)}", time_text(a.started_ns), duration_text(a.started_ns, a.ended_ns),
        status_text(a.status, a.status_message), f"{len(bundle.inputs)} item(s)",
    ]
    lineage: list[tuple[str, str]] = []
    if bundle.previous_turn_id:
        lineage.append((f"Previous turn: {bundle.previous_turn_id}", bundle.previous_turn_id))
    if a.retry_of_attempt_id:
        lineage.append((f"Retry of: {a.retry_of_attempt_id}", a.retry_of_attempt_id))
    op_text, op_links = operation_summary(a.attempt_id, bundle.operation)
    return HeaderModel(word, icon, color, " · ".join(facts), tuple(lineage), op_text, op_links)


def build_panel(bundle: AttemptBundle, read_tools: ReadTools | None = None,
                sections: tuple[SectionSpec, ...] = SECTIONS) -> PanelModel:
    """The attempt panel, every section of ``sections`` built in order from recorded data only."""
    a = bundle.attempt
    read_tools = read_tools or load_read_tools()
    withheld = withheld_of(bundle)
    prev_ref = next((t for t in bundle.session_turns if t.attempt_id == bundle.previous_turn_id), None)
    changes = compute_changes(
        bundle.inputs, bundle.previous_inputs, bundle.previous_turn_id,
        previous_has_packet=prev_ref is None or not prev_ref.is_legacy,
    )
    marks = {r.current.input_id: r.mark for r in changes.rows if r.current is not None}
    reads = {}
    for item in bundle.inputs:
        finding = find_reads(item, bundle.steps, read_tools)
        if finding is not None:
            reads[item.input_id] = withheld.read_text(item.input_id) or finding.text
    cov = coverage_model(a, bundle.inputs)
    ctx = PanelContext(prior_turns(a, bundle.session_turns), changes, group_items(bundle.inputs, marks, reads), cov,
                       withheld)
    built = []
    for spec in sections:
        model = spec.build(bundle, ctx)
        built.append((spec, None if model is None else dataclasses.replace(model, title=spec.title)))
    facts = (
        ("Attempt", a.attempt_id),
        ("Run", value_text(a.run_id)),
        ("Phase", value_text(a.phase)),
        ("Agent", value_text(a.agent_name)),
        ("Model", value_text(a.request_model)),
        ("Session", value_text(a.session_id)),
        ("Started", time_text(a.started_ns)),
        ("Duration", duration_text(a.started_ns, a.ended_ns)),
        ("Status", status_text(a.status, a.status_message)),
        ("Recorded as", f"a {a.coding_runtime} turn, from its own telemetry and the otel-inputs hook"
         if a.coding_runtime else "legacy (no input packet)" if a.is_legacy else f"input packet v{a.input_packet_version}"),
    )
    return PanelModel(
        attempt_id=a.attempt_id,
        facts=facts,
        built=tuple(built),
        is_legacy=a.is_legacy,
        header=header_model(bundle, cov),
        read_tools_problem=read_tools.problem,
        record=a,
    )
