"""The eviction journal: a retention pass records what it evicted in one durable file.

Marking 10,000 snapshots evicted by rewriting 10,000 manifests costs 10,000 file creations and
renames (0.3-1 ms each on an ordinary disk); one journal file per pass costs one write and two
fsyncs.  Layout::

    evictions/<evicted_at_ns, 20 digits>-<pid>-<rand>.log

Each file is written whole to a temp file, fsynced, renamed and its directory fsynced, all before
the pass deletes any byte, so a crash leaves either no record (and nothing deleted) or the whole
record.  After the header line ``otel-inputs-evictions 1 <evicted_at_ns> <count>`` each line names
one manifest as ``<attempt id as ASCII JSON>\\t<committed_at_ns, 20 digits>``: every item of that
commit that is still ``available`` was evicted (disk budget) at the file's time.  A later commit
of the same attempt (a new ``committed_at_ns``) is a new capture the line does not cover.

The journal is part of the manifests' authority: every reader of a manifest applies it
(:meth:`EvictionJournal.apply`), and every rewrite of a manifest writes the applied body.  Once the
journal holds more than :data:`FOLD_AT` lines, each evicting pass also folds its oldest files into
the manifests (rewriting them, then removing the files), at least as many lines as the pass added:
the rewrites the journal saved a burst of evictions are paid later, a bounded amount per pass, and
no reader carries an unbounded journal in memory.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from otel_inputs.store._store_io import fsync_dir

EVICTION_REASON = "disk_budget"
JOURNAL_DIR = "evictions"
FOLD_AT = 20_000  # journal lines past which each evicting pass folds its oldest files into the manifests
_MAGIC = "otel-inputs-evictions"
_LINE = re.compile(r'"[ -~]*"\t[0-9]{20}')  # an ASCII-JSON string, a tab, 20 digits
_VERSION = "1"

_journals: dict[str, EvictionJournal] = {}
_journals_lock = threading.Lock()


def journal_for(root: str | os.PathLike[str]) -> EvictionJournal:
    """The process's one journal reader for the store at ``root`` (its cache is shared by all users)."""
    key = os.path.abspath(root)
    with _journals_lock:
        journal = _journals.get(key)
        if journal is None:
            journal = _journals[key] = EvictionJournal(Path(key))
        return journal


def mark_evicted(body: dict[str, Any], evicted_at_ns: int) -> int:
    """Mark a manifest's available items evicted (disk budget); return how many."""
    evicted = 0
    items = body.get("items")
    for item in items if isinstance(items, list) else ():
        if isinstance(item, dict) and item.get("artifact_status") == "available":
            item["artifact_status"] = "evicted"
            item["status_reason"] = EVICTION_REASON
            item["evicted_at_ns"] = evicted_at_ns
            evicted += 1
    return evicted


def committed_key(body: dict[str, Any]) -> str:
    """A manifest's commit time as the journal (and the manifest index) spell it: 20 digits, zeros
    when it has none that is valid."""
    committed = body.get("committed_at_ns")
    if isinstance(committed, bool) or not isinstance(committed, int) or not 0 <= committed < 10**20:
        committed = 0
    return f"{committed:020d}"


def _parse(data: bytes) -> tuple[int, list[str]]:
    """(evicted_at_ns, lines ``<quoted attempt id>\t<committed>``) of one journal file; ``ValueError``
    if it is not one of ours."""
    lines = data.decode("ascii").split("\n")
    magic, version, at, count = lines[0].split(" ")
    if magic != _MAGIC or version != _VERSION:
        raise ValueError("not an eviction journal")
    int(count)  # a file is renamed in only once whole and fsynced; a short one is damage, and the
    # lines that still parse are evictions that did happen, so they are kept
    return int(at), [line for line in lines[1:] if _LINE.fullmatch(line)]


class EvictionJournal:
    """Reads (cached by the directory's file names: journal files never change once renamed in),
    writes and folds one store's eviction journal.  In memory it is one dict from journal line to
    eviction time (about 150 bytes a line), so :data:`FOLD_AT` bounds each reader's memory."""

    def __init__(self, root: Path) -> None:
        self.dir = root / JOURNAL_DIR
        self._lock = threading.Lock()
        self._names: tuple[str, ...] = ()
        self._merged: dict[str, int] = {}

    def names(self) -> tuple[str, ...]:
        """The journal's complete files, oldest first."""
        try:
            found = os.listdir(self.dir)
        except (FileNotFoundError, NotADirectoryError):
            return ()
        return tuple(sorted(n for n in found if n.endswith(".log") and not n.startswith(".")))

    def entries(self, names: tuple[str, ...] | None = None) -> dict[str, int]:
        """{journal line: evicted_at_ns} over the files ``names`` (default: all there are now)."""
        names = self.names() if names is None else names
        with self._lock:
            if names == self._names:
                return self._merged
            known = set(self._names)
            if not known <= set(names):  # files were folded away: start again
                known, self._merged = set(), {}
            merged = dict(self._merged)  # a reader holding the old dict keeps a consistent one
            for name in names:
                if name not in known:
                    at, lines = self._read(name)
                    for line in lines:
                        merged.setdefault(line, at)
            self._names, self._merged = names, merged
            return merged

    def lines_of(self, names: Iterable[str]) -> list[str]:
        """The lines (``<quoted attempt id>\t<committed>``) of these journal files."""
        return [line for name in names for line in self._read(name)[1]]

    def count(self) -> int:
        return len(self.entries())

    def _read(self, name: str) -> tuple[int, list[str]]:
        try:
            with open(self.dir / name, "rb") as fh:
                return _parse(fh.read())
        except (OSError, ValueError, UnicodeDecodeError):
            return 0, []  # unreadable: its items read as available, and missing bytes as missing

    def apply(self, body: Any, entries: dict[str, int] | None = None) -> int:
        """Apply the journal to one parsed manifest in place; how many items it marked evicted."""
        if not isinstance(body, dict):
            return 0
        entries = self.entries() if entries is None else entries
        aid = body.get("attempt_id")
        if not entries or not isinstance(aid, str):
            return 0
        at = entries.get(f"{json.dumps(aid, ensure_ascii=True)}\t{committed_key(body)}")
        return 0 if at is None else mark_evicted(body, at)

    def write(self, lines: list[tuple[str, str]], evicted_at_ns: int) -> str:
        """Durably add one journal file naming ``lines`` (quoted attempt id, committed) of evicted
        manifests (fsynced, renamed, directory fsynced); its name.

        Raises ``OSError`` (nothing is recorded then, and the caller must not delete bytes).
        """
        self.dir.mkdir(exist_ok=True)
        name = f"{evicted_at_ns:020d}-{os.getpid()}-{secrets.token_hex(4)}.log"
        tmp = self.dir / f".{name}.tmp"
        head = f"{_MAGIC} {_VERSION} {evicted_at_ns} {len(lines)}"
        data = "\n".join([head, *(f"{aid}\t{committed}" for aid, committed in lines)]).encode("ascii")
        try:
            with open(tmp, "xb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.dir / name)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        fsync_dir(self.dir)
        return name

    def remove(self, names: Iterable[str]) -> None:
        """Drop folded journal files (their evictions now stand in the manifests themselves)."""
        for name in names:
            try:
                os.unlink(self.dir / name)
            except FileNotFoundError:
                pass
        fsync_dir(self.dir)
