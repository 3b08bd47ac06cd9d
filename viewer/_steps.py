"""The attempt's steps (contract C1) and exact messages (C2) as the panel shows them.

Steps are the model calls, tool calls and inner agent spans nested under the attempt, in time
order.  A database without the steps table, or an attempt with no step rows, says the steps
were not recorded; it never says "no steps".  Tool arguments are content: they reach the row's
``arguments`` field only when the span carried them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from otel_inputs.viewer._format import (
    NOT_RECORDED,
    UNKNOWN,
    clock_text,
    ms_text,
    status_text,
    tokens_text,
    value_text,
)
from otel_inputs.viewer._records import AttemptRow, MessagesRecord, StepRecord

STEP_KIND_TEXT = {"model_call": "model call", "tool_call": "tool call", "agent": "agent", "other": "other"}
STEPS_TABLE_MISSING = "Steps were not recorded: this database has no steps table (recorded before steps existed)."
STEPS_NONE = "Steps were not recorded for this attempt (no model or tool spans nested under it reached the database)."

MESSAGE_SOURCE_TEXT = {
    "attempt_span": "from the attempt span",
    "log_event": "from the GenAI log event",
    "model_step": "taken from the first model call",
}


@dataclass(frozen=True)
class StepRow:
    seq: str
    kind: str
    name: str
    model: str
    started: str
    duration: str
    tokens: str
    tool_name: str | None
    arguments: str | None
    """Content-bearing: the tool call's arguments as recorded (``None`` when not carried)."""
    status: str
    record: StepRecord | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class StepsSection:
    recorded: bool
    rows: tuple[StepRow, ...]
    summary: str
    notes: tuple[str, ...]
    title: str = ""  # its SectionSpec's (otel_inputs.viewer._panel.SECTIONS), set by build_panel


def step_row(s: StepRecord) -> StepRow:
    kind = STEP_KIND_TEXT.get(s.step_kind or "", value_text(s.step_kind))
    model = s.response_model or s.request_model
    if s.step_kind == "tool_call":
        name = value_text(s.tool_name, missing=value_text(s.span_name))
    else:
        name = value_text(s.span_name, missing=value_text(s.operation_name))
    if s.auxiliary:
        name = f"{name} (auxiliary: {s.auxiliary})"
    return StepRow(
        seq=value_text(s.seq, missing=UNKNOWN),
        kind=kind,
        name=name,
        model=value_text(model) if s.step_kind != "tool_call" else "",
        started=clock_text(s.started_ns),
        duration=ms_text(s.started_ns, s.ended_ns),
        tokens=tokens_text(s.input_tokens, s.output_tokens) if s.step_kind == "model_call" else "",
        tool_name=s.tool_name,
        arguments=(s.tool_arguments if s.arguments_from is None or s.tool_arguments is None
                   else f"{s.tool_arguments} (from the tool call of model step {s.arguments_from})"),
        status=status_text(s.status),
        record=s,
    )


def _sum(values: list[int | None]) -> str:
    known = [v for v in values if v is not None]
    if not known:
        return UNKNOWN
    total = str(sum(known))
    return total if len(known) == len(values) else f"at least {total}"


def steps_section(steps: tuple[StepRecord, ...] | None, withheld: str | None = None) -> StepsSection:
    if steps is None:
        return StepsSection(False, (), NOT_RECORDED, (STEPS_TABLE_MISSING,))
    if not steps:
        return StepsSection(False, (), NOT_RECORDED, (STEPS_NONE,))
    models = [s for s in steps if s.step_kind == "model_call"]
    tools = [s for s in steps if s.step_kind == "tool_call"]
    summary = (f"{len(models)} model call(s), {len(tools)} tool call(s), {len(steps) - len(models) - len(tools)} other; "
               f"tokens {_sum([s.input_tokens for s in models])} in / {_sum([s.output_tokens for s in models])} out")
    notes: list[str] = []
    if withheld and tools:
        notes.append(withheld)  # the access layer withheld them (otel_inputs.viewer._access)
    elif tools and all(s.tool_arguments is None for s in tools):
        notes.append("Tool arguments were not recorded (message content was not admitted for these spans).")
    aux = [s for s in steps if s.auxiliary]
    if aux:
        # A coding agent's calls that are not the turn's own (its session title, a model router): listed last.
        notes.append(f"{len(aux)} auxiliary call(s) not part of the turn itself ("
                     + ", ".join(sorted({str(s.auxiliary) for s in aux})) + ") are listed last.")
        steps = tuple(s for s in steps if not s.auxiliary) + tuple(aux)
    records = sorted({s.request_record for s in models if s.request_record and not s.auxiliary})
    if records:
        notes.append("Model requests: " + "; ".join(records))
    return StepsSection(True, tuple(step_row(s) for s in steps), summary, tuple(notes))


@dataclass(frozen=True)
class ExactMessages:
    system: str | None
    user: str | None
    source: str
    note: str | None


def exact_messages(attempt: AttemptRow, row: MessagesRecord | None) -> ExactMessages:
    """The messages to show and where they came from (C2 when present, else the attempt span)."""
    if row is None:
        return ExactMessages(attempt.system_prompt, attempt.user_prompt, MESSAGE_SOURCE_TEXT["attempt_span"], None)
    source = MESSAGE_SOURCE_TEXT.get(row.messages_source or "", f"source: {value_text(row.messages_source)}")
    return ExactMessages(row.system_prompt, row.user_prompt, source, row.messages_note)
