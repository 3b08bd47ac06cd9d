"""The records the viewer reads: one frozen dataclass per row or page the queries return.

:mod:`otel_inputs.viewer._queries` fills them; the page, the bundle and the access layer only read them.
A new viewer section is one record here, one query there and one entry in the section list
(:data:`otel_inputs.viewer._panel.SECTIONS`; the recipe is in that module's docstring).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from otel_inputs.viewer._dispatch import Dispatch

# source_format of a coding agent's turn -> the runtime's name (exporter/_encodings/coding_agents.py)
CODING_RUNTIMES = {"claude_code": "Claude Code", "codex": "Codex", "gemini_cli": "Gemini CLI"}


@dataclass(frozen=True)
class AttemptRow:
    """One row of ``agent_attempts`` with its timestamps as epoch nanoseconds (the store's catalog entry is
    :class:`otel_inputs.store.AttemptRecord`, another thing)."""

    attempt_id: str
    run_id: str | None = None
    session_id: str | None = None
    phase: str | None = None
    agent_name: str | None = None
    provider_name: str | None = None
    request_model: str | None = None
    task_prompt: str | None = None
    task_source_kind: str | None = None
    task_source_path: str | None = None
    task_size_bytes: int | None = None
    task_sha256: str | None = None
    send_kind: str | None = None
    turn_index: int | None = None
    previous_turn_attempt_id: str | None = None
    retry_of_attempt_id: str | None = None
    system_prompt: str | None = None
    user_prompt: str | None = None
    input_packet_version: int | None = None
    input_coverage: str = "not_recorded"
    coverage_reason: str | None = None
    declared_input_count: int | None = None
    captured_input_count: int | None = None
    omitted_input_count: int | None = None
    item_count: int | None = None
    capture_decision: str | None = None
    capture_gap_reason: str | None = None
    started_ns: int | None = None
    ended_ns: int | None = None
    status: str | None = None
    status_message: str | None = None
    trace_id: str | None = None
    span_id: str | None = None
    service_name: str | None = None
    source_format: str | None = None
    dropped_events_count: int | None = None
    dropped_attributes_count: int | None = None

    @property
    def is_legacy(self) -> bool:
        return self.input_packet_version is None

    @property
    def coding_runtime(self) -> str | None:
        """The coding agent whose own telemetry this turn is (docs/coding-agents.md), else ``None``."""
        return CODING_RUNTIMES.get(self.source_format or "")


@dataclass(frozen=True)
class InputRecord:
    """One row of ``agent_attempt_inputs`` plus the store's later view from ``agent_artifacts``."""

    input_id: str
    attempt_id: str
    seq: int
    label: str | None = None
    source_kind: str | None = None
    delivery_mode: str | None = None
    source_path: str | None = None
    snapshot_ref: str | None = None
    media_type: str | None = None
    preview_kind: str | None = None
    size_bytes: int | None = None
    sha256: str | None = None
    capture_status: str | None = None
    artifact_status: str | None = None
    detail: str | None = None
    captured_ns: int | None = None
    row_problem: str | None = None
    loaded: str | None = None
    """A coding agent's instruction file: the runtime's own report of loading it (docs/coding-agents.md)."""
    loaded_detail: str | None = None
    delivered: str | None = None
    """A coding agent's instruction file: its bytes found in the recorded request."""
    delivered_detail: str | None = None
    capture_attempt_id: str | None = None
    """The store attempt holding the snapshot when it is not this attempt's own (a coding agent's hook)."""
    store_artifact_status: str | None = None
    store_status_reason: str | None = None
    placement: str | None = None
    """Where the bytes are now (local copy, bucket), in words; set from the store by ``overlay_store``."""

    @property
    def current_artifact_status(self) -> str | None:
        """The store is the authority after capture; the event's value is as of capture."""
        return self.store_artifact_status or self.artifact_status


@dataclass(frozen=True)
class PartRecord:
    """One ``agent_exchange_parts`` row (as recorded on the span) plus the store receipt read later."""

    attempt_id: str
    part_name: str | None = None
    capture: str | None = None
    reason: str | None = None
    dispatch: str | None = None
    ref: str | None = None
    sha256: str | None = None
    size_bytes: int | None = None
    persistence: str | None = None
    detail: str | None = None
    recorded_ns: int | None = None
    row_problem: str | None = None
    receipt: dict[str, Any] | None = field(default=None, compare=False)
    receipt_outcome: str | None = None  # why no receipt could be read ("not_found", ...), None if unread


@dataclass(frozen=True)
class TurnRef:
    """A same-run, same-session attempt, enough to order turns and link to them."""

    attempt_id: str
    started_ns: int | None
    ended_ns: int | None
    phase: str | None
    send_kind: str | None
    turn_index: int | None
    is_legacy: bool
    user_prompt: str | None = None
    retry_of_attempt_id: str | None = None
    status: str | None = None
    trace_id: str | None = None


@dataclass(frozen=True)
class StepRecord:
    """One ``agent_attempt_steps`` row (contract C1): a model call, tool call or inner agent span."""

    attempt_id: str
    span_id: str
    seq: int | None = None
    step_kind: str | None = None
    operation_name: str | None = None
    span_name: str | None = None
    provider_name: str | None = None
    request_model: str | None = None
    response_model: str | None = None
    started_ns: int | None = None
    ended_ns: int | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    tool_name: str | None = None
    tool_call_id: str | None = None
    tool_arguments: str | None = None
    """Content: the tool call's JSON arguments, present only when the span carried them."""
    status: str | None = None
    auxiliary: str | None = None
    """A coding agent's call that is not the turn's own (session title, model routing): why."""
    request_record: str | None = None
    """A coding agent's call: how its request was recorded, or that it was not."""
    arguments_from: str | None = None
    """The model step whose tool call gave the arguments, when the tool span carried none (ADK)."""


@dataclass(frozen=True)
class MessagesRecord:
    """The attempt's exact messages from ``agent_attempt_messages`` (contract C2)."""

    attempt_id: str
    system_prompt: str | None = None
    user_prompt: str | None = None
    input_messages_json: str | None = None
    messages_source: str | None = None
    messages_note: str | None = None


@dataclass(frozen=True)
class RetryMember:
    """One physical attempt of a logical operation (an initial send and its retries)."""

    attempt_id: str
    retry_of_attempt_id: str | None
    started_ns: int | None
    send_kind: str | None
    status: str | None
    is_legacy: bool


@dataclass(frozen=True)
class AttemptBundle:
    """Everything one attempt page needs, read in one refresh."""

    attempt: AttemptRow
    inputs: tuple[InputRecord, ...]
    session_turns: tuple[TurnRef, ...]
    previous_turn_id: str | None
    previous_inputs: tuple[InputRecord, ...] | None
    recovery_prompts: dict[str, str] = field(default_factory=dict)
    parts: tuple[PartRecord, ...] = ()
    steps: tuple[StepRecord, ...] | None = None
    """``None`` when the database has no steps table (steps not recorded), never "no steps"."""
    messages: MessagesRecord | None = None
    """The C2 row when the database has one for this attempt; else the attempt row's own messages."""
    operation: tuple[RetryMember, ...] = ()
    """The physical attempts of this attempt's logical operation, in time order (itself included)."""
    withheld: Any = None  # set by otel_inputs.viewer._access.Access.gate: what this viewer may not see
    dispatch: Dispatch | None = None
    """This dispatch's new user message, told apart from the inherited conversation (viewer/_dispatch.py)."""
    inferred_turn_index: int | None = None
    """The turn in its session from the order of its recorded attempts, when the attempt recorded none."""


@dataclass(frozen=True)
class RunSummary:
    run_id: str | None
    attempts: int
    sessions: int
    first_ns: int | None
    last_ns: int | None
    phases: str
    complete: int
    partial: int
    not_recorded: int
    session_key: str | None = None
    """Without a run id, the attempts are grouped by their session id: this one (``None``: no session either)."""

    @property
    def key(self) -> str | None:
        """What the run pages are read by: the run id, or a :class:`SessionRun` for a session without one."""
        return SessionRun(self.session_key) if self.run_id is None and self.session_key is not None else self.run_id

    @property
    def label(self) -> str:
        """How the run is named on the page: its id, else the session that groups it, else "(no run id)"."""
        if self.run_id is not None:
            return self.run_id
        return f"(no run id) session {self.session_key}" if self.session_key is not None else "(no run id)"


class SessionRun(str):
    """The run key of attempts that carry a session (or conversation) id but no run id, as frameworks on
    their own telemetry send: they are grouped by the session (docs/encodings.md)."""


@dataclass(frozen=True)
class ServiceRecords:
    """A service whose telemetry landed while no attempt was derived from it (docs/encodings.md)."""

    service_name: str | None
    spans: int
    log_records: int


@dataclass(frozen=True)
class AttemptFilters:
    """Filters of a run's attempt list; ``None`` means any, :data:`otel_inputs.viewer._queries.NULL_VALUE` means not recorded."""

    phase: str | None = None
    agent: str | None = None
    send_kind: str | None = None
    coverage: str | None = None
    status: str | None = None
    newest_first: bool = False


@dataclass(frozen=True)
class AttemptListRow:
    attempt_id: str
    started_ns: int | None
    ended_ns: int | None
    phase: str | None
    agent_name: str | None
    send_kind: str | None
    turn_index: int | None
    session_id: str | None
    input_coverage: str
    item_count: int | None
    status: str | None
    is_legacy: bool


@dataclass(frozen=True)
class AttemptPage:
    rows: tuple[AttemptListRow, ...]
    total: int
    offset: int
    limit: int


@dataclass(frozen=True)
class RunFacets:
    phases: tuple[str | None, ...]
    agents: tuple[str | None, ...]
    send_kinds: tuple[str | None, ...]
    coverages: tuple[str | None, ...]
    statuses: tuple[str | None, ...]


@dataclass(frozen=True)
class HealthRow:
    source: str
    metric: str
    value: int
    updated_ns: int | None


@dataclass(frozen=True)
class ElsewhereRow:
    """An input of another attempt that had the same SHA-256 or the same path."""

    attempt_id: str
    run_id: str | None
    phase: str | None
    started_ns: int | None
    seq: int
    label: str | None
    source_path: str | None
    sha256: str | None
    input_id: str | None = None  # lets the access layer tell which input of that attempt was purged


@dataclass(frozen=True)
class Elsewhere:
    rows: tuple[ElsewhereRow, ...]
    total: int


@dataclass(frozen=True)
class TaskRun:
    """A run that used a task SHA-256: its first attempt with that task, and how many it had."""

    run_id: str | None
    attempts: int
    first_attempt_id: str
    first_started_ns: int | None
