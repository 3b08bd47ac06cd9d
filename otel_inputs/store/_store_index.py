"""A derived, compact index of the store's manifests, so a gc pass need not read 100,000 files.

The manifests stay the authority.  The index caches, per manifest file, what retention needs
(attempt id, run, commit time, running owner, available digests) together with the file's
identity ``inode.size.mtime_ns.ctime_ns`` at the moment it was read.  Every use validates it
against the manifests directory as it is now: a file whose identity differs, a new name, or an
entry marked racy is read again; a name that is gone is dropped.  So a stale index costs re-reads,
never a wrong answer:

* a rewrite by rename (every writer of this store) gives the name a new inode and ctime;
* an in-place write changes ctime, which no process can set back;
* an entry read within ``RACY_NS`` of its file's last change is stored with an empty identity
  (racily clean, as git calls it): a same-tick change after our read could leave every stat field
  equal, so it is read again next time.

A manifest gc rewrites itself is recorded with the identity of its own descriptor after the rename,
taken under the store lock: a later writer replaces the file by rename, which cannot reuse that
inode while it is still linked.

Evictions recorded in the eviction journal (:mod:`otel_inputs.store._store_evictions`) change no manifest
file, so the index also names the journal files its rows reflect; a journal file it has not seen is
applied to the rows it keeps, and every manifest read from disk is read with the journal applied.

The index file is one blob with a SHA-256 over its body, written to a temp file and renamed: a
torn, truncated, corrupt or foreign file fails the check and is rebuilt from the manifests.  It
needs no lock: each writer's content is self-consistent, so whichever rename lands last only
decides how much the next reader re-reads.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import operator
import os
import re
import secrets
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from otel_inputs.store._store_evictions import EvictionJournal, committed_key, journal_for

INDEX_DIR = "index"
INDEX_FILE = "manifests.idx"
_MAGIC = b"otel-inputs-manifest-index"
_VERSION = 3
RACY_NS = 2_000_000_000  # well above any filesystem timestamp granularity
_STALE_TMP_S = 600.0
_HEX64 = re.compile(r"[0-9a-f]{64}")
_COLS = ("names", "idents", "aids", "runs", "committed", "running", "digests")
_SEP = "\x1d"  # between columns; JSON-encoded values escape it, like "\n" between rows
_SAFE_NAME = re.compile(r"[0-9A-Za-z._-]+")


def identity(st: os.stat_result) -> str:
    return f"{st.st_ino}.{st.st_size}.{st.st_mtime_ns}.{st.st_ctime_ns}"


def quote(value: str) -> str:
    """The index's (and the ended log's) one-line form of an id: ASCII JSON, no raw control characters."""
    return json.dumps(value, ensure_ascii=True)


@dataclass
class ManifestView:
    """Column lists, one position per manifest file; ``idents[i] == ""`` means: read it again next time.

    ``aids`` and ``runs`` hold :func:`quote`\\ d values (``runs`` ``"null"`` when absent),
    ``committed`` the commit time in ns as 20 digits (text order is time order),
    ``running`` the owner as compact JSON for a manifest whose state is ``running`` (else ""),
    ``digests`` the comma-joined lowercase SHA-256 of its available items.
    """

    names: list[str] = field(default_factory=list)
    idents: list[str] = field(default_factory=list)
    aids: list[str] = field(default_factory=list)
    runs: list[str] = field(default_factory=list)
    committed: list[str] = field(default_factory=list)
    running: list[str] = field(default_factory=list)
    digests: list[str] = field(default_factory=list)
    errors: dict[str, tuple[str, str]] = field(default_factory=dict)  # name -> (identity, message)
    object_sizes: dict[str, int] = field(default_factory=dict)
    objects_ident: str = ""  # of the objects directory when object_sizes was listed ("" racy/unknown)
    journal: tuple[str, ...] = ()  # eviction journal files the rows reflect
    dir_ident: str = ""  # of the manifests directory just before this view was listed ("" racy); not saved
    reread: int = 0  # manifests read from disk by the last refresh (0: the index answered everything)
    kept: int = 0  # rows [0, kept) came from the index; later rows were read from disk
    dirty: bool = False

    def __len__(self) -> int:
        return len(self.names)

    def append(self, name: str, ident: str, row: tuple[str, str, str, str, str]) -> None:
        self.names.append(name)
        self.idents.append(ident)
        self.aids.append(row[0])
        self.runs.append(row[1])
        self.committed.append(row[2])
        self.running.append(row[3])
        self.digests.append(row[4])

    def digest_list(self, i: int) -> list[str]:
        d = self.digests[i]
        return d.split(",") if d else []

    def referenced(self) -> set[str]:
        """Every digest some readable manifest still claims available."""
        joined = ",".join(d for d in self.digests if d)
        return set(joined.split(",")) if joined else set()

    def position(self) -> dict[str, int]:
        return dict(zip(self.names, range(len(self.names))))

    def put(self, pos: dict[str, int], name: str, ident: str, row: tuple[str, str, str, str, str]) -> None:
        """Record what we just wrote to ``name`` (``pos`` from :meth:`position`, kept up to date)."""
        i = pos.get(name)
        if i is None:
            pos[name] = len(self.names)
            self.append(name, ident, row)
        else:
            self.idents[i] = ident
            self.aids[i], self.runs[i], self.committed[i], self.running[i], self.digests[i] = row
        self.errors.pop(name, None)
        self.dirty = True


def row_of(body: Any) -> tuple[str, str, str, str, str]:
    """The cached columns of one parsed manifest; ``ValueError`` when it is not a manifest."""
    if not isinstance(body, dict) or not isinstance(body.get("attempt_id"), str):
        raise ValueError("manifest lacks attempt_id")
    run = body.get("run_id")
    running = ""
    if body.get("state") == "running":
        running = json.dumps(body.get("owner"), ensure_ascii=True, sort_keys=True, separators=(",", ":"))
    digests = []
    items = body.get("items")
    for item in items if isinstance(items, list) else ():
        if isinstance(item, dict) and item.get("artifact_status") == "available":
            d = item.get("sha256")
            if isinstance(d, str) and _HEX64.fullmatch(d):  # only such a name can be an object
                digests.append(d)
    return (quote(body["attempt_id"]), quote(run) if isinstance(run, str) else "null", committed_key(body),
            running, ",".join(digests))


def _read(dir_fd: int, name: str, started_ns: int,
          apply: Callable[[Any], Any]) -> tuple[str, tuple[str, str, str, str, str] | str]:
    """(identity or "" when racy, row or an error message) of one manifest file read now."""
    fd = os.open(name, os.O_RDONLY | os.O_CLOEXEC, dir_fd=dir_fd)
    try:
        before = os.fstat(fd)
        chunks = []
        while chunk := os.read(fd, max(before.st_size, 1 << 16) + 1):
            chunks.append(chunk)
        after = os.fstat(fd)
    finally:
        os.close(fd)
    ident = identity(after)
    if ident != identity(before) or max(after.st_mtime_ns, after.st_ctime_ns) >= started_ns - RACY_NS:
        ident = ""
    try:
        body = json.loads(b"".join(chunks))
        apply(body)
        return ident, row_of(body)
    except ValueError as exc:  # torn or foreign content: as unreadable as iter_manifests says it is
        return ident, f"unreadable manifest {name}: {exc}"


def _cacheable(name: str) -> bool:
    return bool(_SAFE_NAME.fullmatch(name))


def _index_path(root: Path) -> Path:
    return root / INDEX_DIR / INDEX_FILE


def load(root: Path) -> ManifestView | None:
    """The saved index, or ``None`` when it is missing, torn, corrupt or of another version."""
    try:
        raw = _index_path(root).read_bytes()
        cut = raw.index(b"\n")
        magic, version, digest = raw[:cut].split(b" ")
        body = memoryview(raw)[cut + 1:]
        if magic != _MAGIC or int(version) != _VERSION or hashlib.sha256(body).hexdigest().encode() != digest:
            return None
        parts = str(body, "utf-8").split(_SEP)
        meta = json.loads(parts[0])
        n, n_obj = int(meta["manifests"]), int(meta["objects"])
        cols = [p.split("\n") if n else [] for p in parts[1:1 + len(_COLS)]]
        onames = parts[1 + len(_COLS)].split("\n") if n_obj else []
        osizes = parts[2 + len(_COLS)].split("\n") if n_obj else []
        errors = json.loads(parts[3 + len(_COLS)])
        if len(cols) != len(_COLS) or any(len(c) != n for c in cols) or len(onames) != n_obj or len(osizes) != n_obj:
            return None
        view = ManifestView(*cols)
        view.errors = {str(e[0]): (str(e[1]), str(e[2])) for e in errors}
        view.object_sizes = dict(zip(onames, map(int, osizes)))
        view.objects_ident = str(meta.get("objects_ident", ""))
        view.journal = tuple(map(str, meta.get("journal", ())))
        return view
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        return None


def _safe_names(names: Iterable[str]) -> bool:
    """Whether every name can sit in a newline-separated ASCII column (checked at once, not per name)."""
    names = list(names)
    joined = "\n".join(names)
    return joined.count("\n") + 1 == len(names) and joined.isascii() and _SEP not in joined or not names


def save(root: Path, view: ManifestView) -> None:
    """Write the index atomically (temp file + rename); a failure only costs the next pass re-reads."""
    original = view
    if not _safe_names(view.names):  # an odd file name is left out: it is simply read every pass
        keep = [i for i, n in enumerate(view.names) if _cacheable(n)]
        view = dataclasses.replace(view, **{c: [getattr(view, c)[i] for i in keep] for c in _COLS})
    objects = view.object_sizes
    if not _safe_names(objects):
        objects = {n: s for n, s in objects.items() if _cacheable(n)}
    dir_ident = view.objects_ident if len(objects) == len(view.object_sizes) else ""
    parts = [json.dumps({"manifests": len(view), "objects": len(objects), "objects_ident": dir_ident,
                         "journal": list(view.journal), "written_at_ns": time.time_ns()})]
    parts.extend("\n".join(getattr(view, c)) for c in _COLS)
    parts.append("\n".join(objects))
    parts.append("\n".join(map(str, objects.values())))
    parts.append(json.dumps([[n, i, m] for n, (i, m) in view.errors.items()], ensure_ascii=True))
    body = _SEP.join(parts).encode("utf-8")
    head = b"%s %d %s\n" % (_MAGIC, _VERSION, hashlib.sha256(body).hexdigest().encode())
    directory = root / INDEX_DIR
    try:
        directory.mkdir(exist_ok=True)
        tmp = directory / f".{INDEX_FILE}.{os.getpid()}-{secrets.token_hex(4)}.tmp"
        with open(tmp, "xb") as fh:
            fh.write(head)
            fh.write(body)
        os.replace(tmp, directory / INDEX_FILE)
        original.dirty = False
        _remove_stale_temps(directory)
    except OSError:
        pass


def _remove_stale_temps(directory: Path) -> None:
    """A writer killed mid-write leaves its temp file; nobody reads it, so old ones just go."""
    now = time.time()
    for entry in os.scandir(directory):
        if entry.name.endswith(".tmp"):
            try:
                if now - entry.stat(follow_symlinks=False).st_mtime > _STALE_TMP_S:
                    os.unlink(entry.path)
            except OSError:
                continue


def _allocated(st: os.stat_result) -> int:
    return getattr(st, "st_blocks", 0) * 512 or st.st_size


def refresh(root: Path, *, progress: Callable[[int], None] | None = None, persist: bool = True,
            cached: ManifestView | None = None, objects: bool = True) -> ManifestView:
    """The index validated against the manifests and objects directories as they are now."""
    started = time.time_ns()
    old = cached if cached is not None else (load(root) or ManifestView())
    view = ManifestView()
    journal = journal_for(root)
    view.journal = journal.names()  # listed before any manifest is read: a later file is applied next time
    entries = journal.entries(view.journal)
    try:
        dir_fd = os.open(root / "manifests", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except FileNotFoundError:
        return view
    try:
        st = os.fstat(dir_fd)
        if max(st.st_mtime_ns, st.st_ctime_ns) < started - RACY_NS:
            view.dir_ident = identity(st)
        keep, unknown = _compare(dir_fd, old)
        if keep == len(old):  # nothing moved: share the lists (the common case, and the costly one)
            for col in _COLS:
                setattr(view, col, list(getattr(old, col)))
        else:
            pick = operator.itemgetter(*keep) if keep else (lambda _src: ())
            for col in _COLS:
                got = pick(getattr(old, col))
                setattr(view, col, list(got) if len(keep) != 1 else [got])
        view.kept = len(view.names)
        for name, (ident, message) in old.errors.items():
            if ident and unknown.get(name) == ident:
                view.errors[name] = (ident, message)
                del unknown[name]
        _apply_new_journal(view, journal, old.journal)
        _read_into(view, dir_fd, unknown, started, progress, lambda body: journal.apply(body, entries))
    finally:
        os.close(dir_fd)
    view.dirty = (old.dirty or bool(view.reread) or view.kept != len(old)
                  or len(view.errors) != len(old.errors) or view.journal != old.journal)
    if objects:
        view.objects_ident, view.object_sizes = _object_sizes(root / "objects", old, started)
        view.dirty = view.dirty or view.objects_ident != old.objects_ident
    else:
        view.objects_ident, view.object_sizes = old.objects_ident, old.object_sizes
    if persist and view.dirty:
        save(root, view)
    return view


def _apply_new_journal(view: ManifestView, journal: EvictionJournal, seen: tuple[str, ...]) -> None:
    """Clear the available digests of kept rows that journal files unseen by the old index evicted."""
    known = set(seen)
    new = [n for n in view.journal if n not in known]
    if not new:
        return
    evicted = set(journal.lines_of(new))
    aids, committed, digests = view.aids, view.committed, view.digests
    for i in range(view.kept):
        if digests[i] and f"{aids[i]}\t{committed[i]}" in evicted:
            digests[i] = ""


def _compare(dir_fd: int, old: ManifestView) -> tuple[list[int] | int, dict[str, str]]:
    """(positions of ``old`` still valid, or ``len(old)`` when all are, in order; {name: current
    identity} of every other manifest file)."""
    pos = dict(zip(old.names, range(len(old.names))))
    idents = old.idents
    keep: list[int] = []
    unknown: dict[str, str] = {}
    stat = os.stat
    in_order = True
    for name in os.listdir(dir_fd):
        i = pos.get(name)
        if i is None and (not name.endswith(".json") or name.startswith(".")):
            continue
        try:
            st = stat(name, dir_fd=dir_fd)
        except FileNotFoundError:
            continue
        except OSError:
            unknown[name] = ""
            continue
        ident = f"{st.st_ino}.{st.st_size}.{st.st_mtime_ns}.{st.st_ctime_ns}"
        if i is not None and idents[i] == ident:
            in_order = in_order and i == len(keep)
            keep.append(i)
        else:
            unknown[name] = ident
    if in_order and len(keep) == len(idents):
        return len(idents), unknown
    return keep, unknown


def _read_into(view: ManifestView, dir_fd: int, names: Iterable[str], started: int,
               progress: Callable[[int], None] | None, apply: Callable[[Any], Any]) -> None:
    for n, name in enumerate(sorted(names), 1):
        try:
            ident, row = _read(dir_fd, name, started, apply)
        except FileNotFoundError:
            continue
        except OSError as exc:
            view.errors[name] = ("", f"unreadable manifest {name}: {exc}")
            continue
        view.reread += 1
        if not _cacheable(name):
            ident = ""
        if isinstance(row, str):
            view.errors[name] = (ident, row)
        else:
            view.append(name, ident, row)
        if progress and n % 1000 == 0:
            progress(1000)


def _object_sizes(objects_dir: Path, old: ManifestView, started: int) -> tuple[str, dict[str, int]]:
    """(identity of the objects directory, allocated bytes per object file).

    A directory's mtime and ctime change with every entry created, renamed or removed in it, so
    an unchanged (and not racy) directory identity means an unchanged listing; and a
    content-addressed name always holds the same bytes, so only new names are stat'ed.
    """
    try:
        st = os.stat(objects_dir)
    except FileNotFoundError:
        return "", {}
    ident = identity(st)
    if ident and ident == old.objects_ident:
        return ident, dict(old.object_sizes)
    if max(st.st_mtime_ns, st.st_ctime_ns) >= started - RACY_NS:
        ident = ""
    sizes: dict[str, int] = {}
    get = old.object_sizes.get
    for name in os.listdir(objects_dir):
        size = get(name)
        if size is None or name.startswith(".gc-"):  # set aside by a gc pass: may be going
            try:
                size = _allocated(os.lstat(os.path.join(objects_dir, name)))
            except FileNotFoundError:
                continue
        sizes[name] = size
    return ident, sizes


def changed_since(root: Path, view: ManifestView) -> tuple[set[str], ManifestView]:
    """Digests claimed available by manifests that changed since ``view`` was validated (or were
    racy then), and the view brought up to date: the re-check of gc's object removal.

    Every writer of this store puts a manifest in place by a rename, which changes the directory's
    mtime and ctime; so when the directory's identity is still the one taken before ``view`` was
    listed (and was not racy then), no manifest was added or replaced since, and none is stat'ed.
    """
    if view.dir_ident:
        try:
            if identity(os.stat(root / "manifests")) == view.dir_ident:
                return set(), view
        except OSError:
            pass
    fresh = refresh(root, persist=False, cached=view, objects=False)
    found: set[str] = set()
    for i in range(fresh.kept, len(fresh)):
        found.update(fresh.digest_list(i))
    return found, fresh
