"""What changed since the previous turn: files by path or snapshot, compared by SHA-256."""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from otel_inputs.types import CaptureStatus, DeliveryMode, PreviewKind
from otel_inputs.viewer._previews import PreviewRefused, Source, read_verified_text
from otel_inputs.viewer._records import InputRecord

MAX_DIFF_LINES = 2000


@dataclass(frozen=True)
class ChangeRow:
    key: str
    mark: str  # new | changed | unchanged | gone | unknown
    current: InputRecord | None
    previous: InputRecord | None
    reason: str = ""

    @property
    def diffable(self) -> bool:
        """A changed text file whose two snapshots may both be read back and verified."""
        return (
            self.mark == "changed"
            and self.current is not None
            and self.previous is not None
            and self.current.preview_kind == PreviewKind.TEXT.value
            and self.previous.preview_kind == PreviewKind.TEXT.value
        )


@dataclass(frozen=True)
class ChangesModel:
    previous_attempt_id: str | None
    rows: tuple[ChangeRow, ...]
    note: str


def _is_file(item: InputRecord) -> bool:
    """A file present by path or snapshot (an item with a source path; sentinels excluded)."""
    if item.capture_status == CaptureStatus.ENUMERATION_INCOMPLETE.value or not item.source_path:
        return False
    return item.delivery_mode == DeliveryMode.PATH_REFERENCE.value or bool(item.snapshot_ref)


def _keyed(items: tuple[InputRecord, ...]) -> dict[tuple[str, int], InputRecord]:
    out: dict[tuple[str, int], InputRecord] = {}
    seen: dict[str, int] = {}
    for item in items:
        if not _is_file(item):
            continue
        key = item.source_path or item.input_id
        n = seen.get(key, 0)
        seen[key] = n + 1
        out[(key, n)] = item
    return out


def compute_changes(
    inputs: tuple[InputRecord, ...],
    previous_inputs: tuple[InputRecord, ...] | None,
    previous_attempt_id: str | None,
    *,
    previous_has_packet: bool = True,
) -> ChangesModel:
    """Mark each file new, changed, unchanged or gone against the same session's previous turn."""
    if previous_attempt_id is None or previous_inputs is None:
        return ChangesModel(None, (), "No previous turn in this session was recorded, so there is nothing to compare.")
    if not previous_has_packet:
        return ChangesModel(
            previous_attempt_id, (),
            "The previous turn has no recorded input packet, so changes cannot be computed.",
        )
    now, before = _keyed(inputs), _keyed(previous_inputs)
    rows: list[ChangeRow] = []
    for key, cur in now.items():
        prev = before.get(key)
        if prev is None:
            rows.append(ChangeRow(key[0], "new", cur, None))
        elif not cur.sha256 or not prev.sha256:
            rows.append(ChangeRow(key[0], "unknown", cur, prev, "no SHA-256 recorded on one side"))
        elif cur.sha256 == prev.sha256:
            rows.append(ChangeRow(key[0], "unchanged", cur, prev))
        else:
            rows.append(ChangeRow(key[0], "changed", cur, prev))
    for key, prev in before.items():
        if key not in now:
            rows.append(ChangeRow(key[0], "gone", None, prev))
    note = f"Compared by SHA-256 with the previous turn {previous_attempt_id}."
    return ChangesModel(previous_attempt_id, tuple(rows), note)


@dataclass(frozen=True)
class TextDiff:
    lines: tuple[str, ...]
    truncated: bool
    refused: str | None = None


def text_diff(source: "Source", row: ChangeRow) -> TextDiff:
    """Unified diff of a changed text file; both snapshots are verified against their SHA-256 first."""
    if not row.diffable or row.current is None or row.previous is None:
        return TextDiff((), False, "no text diff for this row")
    try:
        old = read_verified_text(source, row.previous)
        new = read_verified_text(source, row.current)
    except PreviewRefused as exc:
        return TextDiff((), False, exc.owner_text)
    diff = list(
        difflib.unified_diff(
            old.splitlines(), new.splitlines(),
            fromfile=f"previous turn ({row.previous.attempt_id})", tofile="this turn", lineterm="",
        )
    )
    return TextDiff(tuple(diff[:MAX_DIFF_LINES]), len(diff) > MAX_DIFF_LINES)
