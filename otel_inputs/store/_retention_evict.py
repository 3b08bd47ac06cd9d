"""The evicting half of a retention pass: choose victims oldest first, record them in the eviction
journal, delete the bytes whose last reference went, and fold a long journal into the manifests.

Ordering is crash-safe: the journal file naming the victims is durable before any byte is deleted
(see :mod:`otel_inputs.store._store_evictions`), and deletion follows the graveyard protocol of
:mod:`otel_inputs.store._store_index_sweep`.
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from otel_inputs.store._store import ArtifactStore, StoreError
from otel_inputs.store._store_evictions import FOLD_AT
from otel_inputs.store._store_index import ManifestView, changed_since, identity, row_of
from otel_inputs.store._store_index_sweep import remove_objects
from otel_inputs.store._store_io import read_ended_quoted

if TYPE_CHECKING:
    from otel_inputs.store._retention import StoreIndex

JOURNAL_CHUNK = 1024  # lines per journal file: on a full disk the chunks written so far still free bytes,
# and a fold removes whole files, so this is also the grain of folding
FOLD_PER_PASS = 2048  # past FOLD_AT, a pass folds at least this many lines (~0.5 ms each), or what it added
UNLINK_THREADS = 8  # freeing a file's blocks waits on the disk (~0.2 ms here); unlinks overlap well


def _owner_alive(owner: Any) -> bool:
    if not isinstance(owner, dict) or owner.get("host") != socket.gethostname():
        return True  # another host's process: we cannot tell, so keep protecting it
    pid = owner.get("pid")
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def still_running(aid: str, owner: str, ended: set[str], alive: dict[str, bool]) -> bool:
    """Whether an index row (quoted ``aid``, ``owner`` JSON of a running manifest, "" otherwise) is a
    live attempt: running, not in the ended logs, its owner alive (``alive`` caches per owner)."""
    if not owner or aid in ended:
        return False
    if owner not in alive:
        alive[owner] = _owner_alive(json.loads(owner))
    return alive[owner]


@dataclass
class GcReport:
    evicted_attempts: int = 0
    evicted_items: int = 0
    deleted_objects: int = 0
    freed_bytes: int = 0
    total_bytes_after: int = 0
    protected_bytes: int = 0
    over_budget_after: bool = False
    reasons: list[str] = field(default_factory=list)


@dataclass
class _Plan:
    """Which rows to evict, oldest first, with the refcounts the plan leaves behind."""

    index: StoreIndex
    refcount: Counter[str]
    pending: dict[str, int] = field(default_factory=dict)
    victims: list[int] = field(default_factory=list)
    chosen: set[int] = field(default_factory=set)

    def freed_by(self, i: int) -> int:
        freed = 0
        for digest in self.index.view.digest_list(i):
            left = self.pending.get(digest, self.refcount[digest]) - 1
            self.pending[digest] = left
            if left <= 0:
                freed += self.index.object_bytes.get(digest, 0)
        return freed

    def evict_until(self, candidates: list[int], still_over: Callable[[int], bool]) -> int:
        """Choose candidates oldest first until ``still_over(planned_freed)`` is false."""
        planned = 0
        for i in candidates:
            if i in self.chosen:
                continue
            if not still_over(planned):
                break
            planned += self.freed_by(i)
            self.victims.append(i)
            self.chosen.add(i)
        return planned


def _candidates(index: StoreIndex) -> list[int]:
    """Rows that may be evicted, oldest first (commit time, then attempt id): unprotected, holding bytes."""
    v = index.view
    rows = [i for i, d in enumerate(v.digests) if d and i not in index.protected]
    rows.sort(key=v.aids.__getitem__)
    rows.sort(key=v.committed.__getitem__)  # stable; fixed-width digits, so text order is time order
    return rows


def _still_evictable(store: ArtifactStore, plan: _Plan) -> list[tuple[int, str]]:
    """(row, commit time) of each victim whose manifest is still the one the scan indexed and still
    holds available bytes; a manifest changed since (one stat tells) is read again and re-judged."""
    view = plan.index.view
    chosen: list[tuple[int, str]] = []
    ended: set[str] | None = None
    alive: dict[str, bool] = {}
    dir_fd = os.open(store.manifests_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for i in plan.victims:
            try:
                st = os.stat(view.names[i], dir_fd=dir_fd)
            except FileNotFoundError:
                continue  # deleted since the scan: nothing left to mark
            if view.idents[i] and identity(st) == view.idents[i]:
                chosen.append((i, view.committed[i]))
                continue
            try:
                body = store.manifest(json.loads(view.aids[i]))
                row = row_of(body)
            except (OSError, ValueError, StoreError):
                continue
            if row[3]:  # running again (re-committed since the scan): a live attempt stays protected
                ended = read_ended_quoted(store.ended_dir) if ended is None else ended
                if still_running(row[0], row[3], ended, alive):
                    continue
            if row[4]:
                chosen.append((i, row[2]))
    finally:
        os.close(dir_fd)
    return chosen


def _evict(store: ArtifactStore, plan: _Plan, report: GcReport,
           progress: Callable[[int], None] | None) -> tuple[list[str], ManifestView]:
    """Record the plan's victims in the eviction journal (durable before any byte goes), then delete
    bytes whose last reference went; returns the deleted digests and the manifest view as it stands
    after the object re-check."""
    view = plan.index.view
    chosen = _still_evictable(store, plan)
    journal = store.evictions
    reflected = journal.names() == view.journal  # else the next refresh applies our files too
    recorded = 0
    for k in range(0, len(chosen), JOURNAL_CHUNK):
        chunk = chosen[k:k + JOURNAL_CHUNK]
        try:
            name = journal.write([(view.aids[i], committed) for i, committed in chunk], time.time_ns())
        except OSError as exc:  # e.g. a full disk: what is recorded so far is still evicted below
            report.reasons.append(f"eviction journal not written ({exc.strerror or exc}); "
                                  f"{len(chosen) - recorded} snapshot(s) left for a later pass")
            break
        recorded += len(chunk)
        if reflected:
            view.journal = (*view.journal, name)
        if progress:
            progress(len(chunk))
    if not recorded:
        return [], view
    last_refs: list[str] = []
    for i, _committed in chosen[:recorded]:
        report.evicted_attempts += 1
        for digest in view.digest_list(i):
            report.evicted_items += 1
            plan.refcount[digest] -= 1
            if plan.refcount[digest] <= 0:
                last_refs.append(digest)
        view.digests[i] = ""
    view.dirty = True
    latest = view

    def referenced_since() -> set[str]:
        nonlocal latest
        found, latest = changed_since(store.root, view)
        return found

    deleted = list(remove_objects(store, last_refs, referenced_since, threads=UNLINK_THREADS))
    if journal.count() > FOLD_AT:
        latest = _fold_journal(store, latest, max(FOLD_PER_PASS, recorded))
    return deleted, latest


def _fold_journal(store: ArtifactStore, view: ManifestView, budget: int) -> ManifestView:
    """Write the oldest journal files' evictions (about ``budget`` lines, at least one file) into the
    manifests themselves, then drop those files."""
    journal = store.evictions
    names: list[str] = []
    lines: list[str] = []
    for name in journal.names():
        got = journal.lines_of([name])
        if names and len(lines) + len(got) > budget:
            break
        names.append(name)
        lines.extend(got)
    ids: list[str] = []
    for line in lines:
        try:
            ids.append(json.loads(line.partition("\t")[0]))
        except ValueError:
            continue
    written: dict[str, tuple[str, dict[str, Any]]] = {}
    store.modify_manifests(dict.fromkeys(ids), lambda _body: False, written=written)  # synced
    journal.remove(names)
    pos = view.position()
    for name, (ident, body) in written.items():
        view.put(pos, name, ident, row_of(body))
    folded = set(names)
    view.journal = tuple(n for n in view.journal if n not in folded)
    view.dirty = True
    return view
