"""Removing object bytes from the artifact store: the graveyard protocol and start-up reconciliation.

Object removal is lock-free against concurrent captures: each object is first moved aside
(``objects/.gc-<digest>``), then every manifest written since the decision is re-read and an object
one of them references is put back.  A capture that deduplicated against an object re-checks it
after writing its manifest, so either the capture sees the object gone (and records the gap) or
the re-check sees its manifest.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from otel_inputs.store._store_index import refresh
from otel_inputs.store._store_io import spare_owner_alive

if TYPE_CHECKING:
    from otel_inputs.store._store import ArtifactStore

GC_PREFIX = ".gc-"
MTIME_SLACK_NS = 2_000_000_000  # filesystem timestamps are coarse; re-read a little more, never less
_HEX64 = re.compile(r"[0-9a-f]{64}")


def remove_objects(store: ArtifactStore, digests: Iterable[str],
                   referenced_since: Callable[[], set[str]], *, threads: int = 1) -> dict[str, int]:
    """Delete objects found unreferenced unless ``referenced_since()`` (called once they are moved
    aside) names them; returns {digest: size} of what was deleted.  ``threads`` > 1 overlaps the
    unlinks, each of which waits on the disk to free the file's blocks."""
    moved: dict[str, tuple[str, str, int]] = {}
    objects_dir = str(store.objects_dir)
    for digest in digests:
        if not isinstance(digest, str) or not _HEX64.fullmatch(digest):
            continue  # not a name this store gives objects
        final = os.path.join(objects_dir, digest)
        aside = os.path.join(objects_dir, GC_PREFIX + digest)
        try:
            size = os.lstat(final).st_size
            os.rename(final, aside)
        except OSError:
            continue
        moved[digest] = (final, aside, size)
    if not moved:
        return {}
    keep = referenced_since() & moved.keys()
    for digest in keep:
        final, aside, _size = moved.pop(digest)
        try:
            os.replace(aside, final)
        except FileNotFoundError:
            continue

    def unlink_all(digests: list[str]) -> list[str]:
        gone = []
        for digest in digests:
            try:
                os.unlink(moved[digest][1])
            except FileNotFoundError:
                continue
            gone.append(digest)
        return gone

    names = list(moved)
    if threads > 1 and len(names) > 64:
        with ThreadPoolExecutor(threads, thread_name_prefix="otel-inputs-gc") as pool:
            parts = pool.map(unlink_all, [names[k::threads] for k in range(threads)])
            gone = [d for part in parts for d in part]
    else:
        gone = unlink_all(names)
    return {digest: moved[digest][2] for digest in gone}


def digests_in_manifests_since(store: ArtifactStore, since_ns: int) -> set[str]:
    """Available digests of every manifest whose mtime is at or after ``since_ns``."""
    from otel_inputs.store._store import available_digests

    found: set[str] = set()
    with os.scandir(store.manifests_dir) as it:
        for entry in it:
            try:
                if not entry.name.endswith(".json") or entry.stat().st_mtime_ns < since_ns:
                    continue
                with open(entry.path, "rb") as fh:
                    body = json.loads(fh.read())
            except (OSError, ValueError):
                continue
            if isinstance(body, dict):
                found.update(available_digests(body))
    return found


def referenced_digests(store: ArtifactStore) -> set[str]:
    """Digests some readable manifest claims available, from the index validated just now."""
    return refresh(store.root).referenced()


def reconcile(store: ArtifactStore, min_age_s: float, now: float) -> dict[str, int]:
    """Remove staging and object bytes older than ``min_age_s`` that no committed manifest owns."""
    removed_staging = removed_objects = 0
    for entry in list(os.scandir(store.staging_dir)) if store.staging_dir.exists() else []:
        try:
            if now - entry.stat(follow_symlinks=False).st_mtime < min_age_s:
                continue
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path)
            else:
                os.unlink(entry.path)
            removed_staging += 1
        except FileNotFoundError:
            continue
    for folder in (store.manifests_dir, store.tombstones_dir, store.evictions.dir):
        for entry in list(os.scandir(folder)) if folder.exists() else []:
            # ".<name>.<rand>.tmp": a write interrupted before its rename; never read by anyone
            if entry.name.startswith(".") and entry.name.endswith(".tmp"):
                if spare_owner_alive(entry.name):  # a live process's pre-created manifest file
                    continue
                try:
                    if now - entry.stat(follow_symlinks=False).st_mtime >= min_age_s:
                        os.unlink(entry.path)
                        removed_staging += 1
                except FileNotFoundError:
                    pass
    refs = referenced_digests(store)
    for entry in list(os.scandir(store.objects_dir)) if store.objects_dir.exists() else []:
        if entry.name.startswith(GC_PREFIX):  # a gc pass died between moving aside and deleting
            digest = entry.name[len(GC_PREFIX):]
            try:
                if digest in refs:
                    os.replace(entry.path, store.objects_dir / digest)
                else:
                    os.unlink(entry.path)
                    removed_objects += 1
            except (FileNotFoundError, ValueError):
                pass
            continue
        if entry.name in refs:
            continue
        try:
            if now - entry.stat(follow_symlinks=False).st_mtime < min_age_s:
                continue
            os.unlink(entry.path)
            removed_objects += 1
        except FileNotFoundError:
            continue
    return {"staging_removed": removed_staging, "objects_removed": removed_objects}

