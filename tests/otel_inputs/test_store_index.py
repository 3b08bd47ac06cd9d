"""The derived manifest index must never make gc act on stale or corrupt knowledge."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from otel_inputs import ArtifactStore, RetentionPolicy
from otel_inputs.store import ReadbackError, apply_retention, purge, scan_store
import otel_inputs.store._store_index as store_index
from otel_inputs.store._store_index import INDEX_DIR, INDEX_FILE, load, quote, refresh

ROOT = Path(__file__).resolve().parents[2]
SIZE = 4096  # one block each, so allocated bytes are predictable
RACY_S = 0.2


@pytest.fixture(autouse=True)
def short_racy_window(monkeypatch: pytest.MonkeyPatch) -> None:
    """A short racily-clean window so tests can wait it out (the rule itself is unchanged)."""
    monkeypatch.setattr(store_index, "RACY_NS", int(RACY_S * 1e9))


def settle() -> None:
    """Wait until everything written so far is outside the racy window."""
    time.sleep(RACY_S + 0.1)


def put_object(store: ArtifactStore, tag: str) -> str:
    data = tag.encode().ljust(SIZE, b".")
    digest = hashlib.sha256(data).hexdigest()
    path = store.objects_dir / digest
    if not path.exists():
        path.write_bytes(data)
        past = time.time() - 3600
        os.utime(path, (past, past))
    return digest


def manifest(attempt_id: str, digest: str, *, status: str = "available", run: str = "r", committed: int = 0,
             detail: str = "") -> dict:
    return {"attempt_id": attempt_id, "run_id": run, "state": "terminal", "committed_at_ns": committed,
            "items": [{"input_id": "in-1", "seq": 0, "sha256": digest, "size_bytes": SIZE,
                       "artifact_status": status, "detail": detail}]}


def write(store: ArtifactStore, body: dict) -> None:
    store.update_manifest(body["attempt_id"], body)


def truth(store: ArtifactStore) -> dict[str, tuple[str, str, list[str]]]:
    """What a full read of every manifest says: {attempt id: (run, running owner, available digests)}."""
    out = {}
    for body in store.iter_manifests():
        if "error" in body:
            continue
        digests = sorted(i["sha256"] for i in body.get("items", ()) if i.get("artifact_status") == "available")
        owner = json.dumps(body.get("owner"), sort_keys=True) if body.get("state") == "running" else ""
        out[body["attempt_id"]] = (body.get("run_id"), owner, digests)
    return out


def indexed(store: ArtifactStore) -> dict[str, tuple[str, str, list[str]]]:
    """The same facts as the validated index answers them."""
    v = refresh(store.root)
    out = {}
    for i in range(len(v)):
        owner = json.dumps(json.loads(v.running[i]), sort_keys=True) if v.running[i] else ""
        out[json.loads(v.aids[i])] = (json.loads(v.runs[i]), owner, sorted(v.digest_list(i)))
    return out


def rewrite_in_place(path: Path, data: bytes) -> None:
    """Overwrite a file's bytes keeping its inode, size and mtime (from another process, as an editor might)."""
    st = path.stat()
    assert len(data) == st.st_size
    code = ("import os,sys; p=sys.argv[1]; fd=os.open(p, os.O_WRONLY); os.write(fd, bytes.fromhex(sys.argv[2])); "
            "os.close(fd); os.utime(p, ns=(int(sys.argv[3]), int(sys.argv[3])))")
    subprocess.run([sys.executable, "-c", code, str(path), data.hex(), str(st.st_mtime_ns)], check=True)
    after = path.stat()
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (st.st_ino, st.st_size, st.st_mtime_ns)


def same_size_pair(store: ArtifactStore, attempt_id: str, digest: str) -> tuple[bytes, bytes]:
    """Encoded manifests of one attempt saying evicted vs available, padded to the same length."""
    evicted = store._encode(attempt_id, manifest(attempt_id, digest, status="evicted", detail="xx", committed=50))
    available = store._encode(attempt_id, manifest(attempt_id, digest, committed=50))
    assert len(evicted) == len(available)
    return evicted, available


@pytest.fixture
def shared(tmp_path: Path) -> tuple[ArtifactStore, str]:
    """A store where the oldest attempt 'old' shares its bytes with attempt 'twin' (currently evicted)."""
    store = ArtifactStore(tmp_path / "store", sync_in_background=False)
    digest = put_object(store, "shared")
    write(store, manifest("old", digest, committed=1))
    write(store, manifest("twin", digest, status="evicted", detail="xx", committed=50))
    for n in range(3):
        write(store, manifest(f"new-{n}", put_object(store, f"new-{n}"), committed=10 + n))
    return store, digest


def test_index_agrees_with_a_full_read_and_rereads_nothing_when_unchanged(shared) -> None:
    """A fresh index equals a full read; validating it again reads no manifest."""
    store, _ = shared
    assert indexed(store) == truth(store)
    settle()
    assert refresh(store.root).reread == 5  # all were racy when first read
    assert refresh(store.root).reread == 0
    assert indexed(store) == truth(store)


def test_in_place_change_with_same_size_and_mtime_is_seen(shared) -> None:
    """A manifest rewritten in place by another process (same inode, size and mtime) is re-read: the
    bytes it now claims are not deleted when the attempt sharing them is evicted."""
    store, digest = shared
    evicted, available = same_size_pair(store, "twin", digest)
    path = store.manifest_path("twin")
    path.write_bytes(evicted)
    os.utime(path, (time.time() - 60, time.time() - 60))
    settle()
    assert refresh(store.root).reread == 5
    assert refresh(store.root).reread == 0  # from here the index trusts the entry's identity
    rewrite_in_place(path, available)
    assert indexed(store) == truth(store)
    report = apply_retention(store, RetentionPolicy(budget_bytes=3 * SIZE))
    assert report.evicted_attempts == 2  # 'old' frees nothing while 'twin' holds the bytes: 'new-0' goes too
    assert store.read_input("twin", "in-1").data.startswith(b"shared")


def test_same_tick_change_right_after_indexing_is_seen(shared) -> None:
    """A manifest changed in place within the same clock tick as the index read it (every stat
    field equal, ctime included) is read again next time: entries that young are racily clean."""
    store, digest = shared
    evicted, available = same_size_pair(store, "twin", digest)
    path = store.manifest_path("twin")
    # The rule itself (recent kernels' multigrain ctime rarely lets a same-tick change happen here):
    path.write_bytes(evicted)
    view = refresh(store.root)
    assert view.idents[view.names.index(path.name)] == ""
    assert load(store.root).idents[view.names.index(path.name)] == ""
    assert refresh(store.root).reread >= 1
    same_tick = 0
    for _ in range(200):
        path.write_bytes(evicted)
        before = path.stat()
        refresh(store.root)  # indexes 'twin' as evicted, within microseconds of the write
        fd = os.open(path, os.O_WRONLY)
        os.pwrite(fd, available, 0)
        os.close(fd)
        after = path.stat()
        if (after.st_mtime_ns, after.st_ctime_ns) == (before.st_mtime_ns, before.st_ctime_ns):
            same_tick += 1
            assert indexed(store) == truth(store)
            if same_tick >= 3:
                break
    apply_retention(store, RetentionPolicy(budget_bytes=3 * SIZE))
    assert store.read_input("twin", "in-1").data.startswith(b"shared")


def test_manifest_added_or_removed_behind_the_index(shared) -> None:
    """A manifest file added by another writer keeps its bytes; a removed one stops counting."""
    store, digest = shared
    refresh(store.root)
    write(store, manifest("late", digest, committed=70))  # a capture deduplicating against the shared bytes
    os.unlink(store.manifest_path("new-2"))
    assert indexed(store) == truth(store)
    apply_retention(store, RetentionPolicy(budget_bytes=3 * SIZE))
    assert store.read_input("late", "in-1").data.startswith(b"shared")
    assert "new-2" not in indexed(store)


@pytest.mark.parametrize("damage", ["garbage", "truncated", "flipped", "empty", "directory"])
def test_corrupt_index_is_detected_and_rebuilt(shared, damage: str) -> None:
    """A torn, truncated, bit-flipped or foreign index file is refused and rebuilt from the manifests."""
    store, digest = shared
    refresh(store.root)
    path = store.root / INDEX_DIR / INDEX_FILE
    raw = path.read_bytes()
    if damage == "garbage":
        path.write_bytes(os.urandom(len(raw)))
    elif damage == "truncated":
        path.write_bytes(raw[: len(raw) // 2])
    elif damage == "flipped":
        middle = len(raw) * 2 // 3
        path.write_bytes(raw[:middle] + bytes([raw[middle] ^ 1]) + raw[middle + 1:])
    elif damage == "empty":
        path.write_bytes(b"")
    else:
        path.unlink()
        path.mkdir()
    assert load(store.root) is None
    assert indexed(store) == truth(store)
    apply_retention(store, RetentionPolicy(budget_bytes=3 * SIZE))
    assert indexed(store) == truth(store)
    with pytest.raises(ReadbackError):
        store.read_input("twin", "in-1")


def test_index_older_than_a_purge_cannot_bring_bytes_back(tmp_path: Path) -> None:
    """An index saved before a purge, put back afterwards, still answers with the purge applied."""
    store = ArtifactStore(tmp_path / "store", sync_in_background=False)
    kept = put_object(store, "kept")
    gone = put_object(store, "gone")
    write(store, manifest("keep", kept, committed=1))
    write(store, manifest("purge-me", gone, committed=2))
    settle()
    refresh(store.root)
    before = (store.root / INDEX_DIR / INDEX_FILE).read_bytes()
    purge(store, attempt_ids=["purge-me"])
    (store.root / INDEX_DIR / INDEX_FILE).write_bytes(before)
    assert load(store.root) is not None  # valid on its own: only validation against the manifests saves us
    assert gone not in store.referenced_digests()
    assert indexed(store)["purge-me"][2] == []
    index = scan_store(store)
    assert gone not in index.refcount()
    with pytest.raises(ReadbackError) as err:
        store.read_input("purge-me", "in-1")
    assert err.value.outcome == "retention_expired"


@pytest.mark.parametrize("name", ["odd\nname.json", "\u00fcn\u00efcode.json", "bad-\udcff-bytes.json"])
def test_odd_manifest_file_names_still_hold_their_bytes(shared, name: str) -> None:
    """A manifest under a name the index format cannot hold is read every pass, never dropped."""
    store, digest = shared
    raw = store._encode("copy", manifest("copy", digest, committed=99))
    (store.manifests_dir / name).write_bytes(raw)
    apply_retention(store, RetentionPolicy(budget_bytes=3 * SIZE))
    assert (store.objects_dir / digest).exists()  # 'old' was evicted, but the odd copy still claims the bytes
    assert load(store.root) is not None
    assert indexed(store) == truth(store)


def test_own_eviction_writes_are_indexed(tmp_path: Path) -> None:
    """After an evicting pass the saved index already knows the rewritten manifests."""
    store = ArtifactStore(tmp_path / "store", sync_in_background=False)
    for n in range(20):
        write(store, manifest(f"a-{n:02d}", put_object(store, f"a-{n}"), committed=n))
    settle()
    report = apply_retention(store, RetentionPolicy(budget_bytes=15 * SIZE))
    assert report.evicted_attempts == 5 and report.deleted_objects == 5
    after = refresh(store.root)
    assert after.reread == 0
    assert indexed(store) == truth(store)


def test_running_attempts_stay_protected_through_the_index(tmp_path: Path) -> None:
    """A running attempt with a live owner is never evicted; once its end is logged it may be."""
    store = ArtifactStore(tmp_path / "store", sync_in_background=False)
    body = manifest("live", put_object(store, "live"), committed=1)
    body.update(state="running", owner={"pid": os.getpid(), "host": os.uname().nodename})
    write(store, body)
    write(store, manifest("done", put_object(store, "done"), committed=2))
    apply_retention(store, RetentionPolicy(budget_bytes=0))
    assert store.manifest("live")["items"][0]["artifact_status"] == "available"
    assert store.manifest("done")["items"][0]["artifact_status"] == "evicted"
    store.mark_terminal_later("live")
    assert quote("live") in {quote(a) for a in store.ended_attempts()}
    apply_retention(store, RetentionPolicy(budget_bytes=0))
    assert store.manifest("live")["items"][0]["artifact_status"] == "evicted"


GC_SCRIPT = """
import sys, time
sys.path.insert(0, {root!r})
from otel_inputs.store import ArtifactStore, RetentionPolicy, apply_retention
store = ArtifactStore({store!r}, sync_in_background=False)
while time.time() < {start}:
    time.sleep(0.001)
r = apply_retention(store, RetentionPolicy(budget_bytes={budget}))
print(r.evicted_attempts, r.deleted_objects)
"""


def test_two_gc_processes_at_once(tmp_path: Path) -> None:
    """Two gc processes started together evict once between them and delete no referenced bytes."""
    store = ArtifactStore(tmp_path / "store", sync_in_background=False)
    shared = put_object(store, "shared")
    for n in range(40):
        digest = shared if n % 10 == 0 else put_object(store, f"o-{n}")
        write(store, manifest(f"a-{n:02d}", digest, committed=n))
    objects = len(list(store.objects_dir.iterdir()))
    budget = (objects - 10) * SIZE
    start = time.time() + 1.0
    script = GC_SCRIPT.format(root=str(ROOT), store=str(store.root), start=start, budget=budget)
    procs = [subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=60)[0].split() for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert sum(int(o[1]) for o in outs) == 10  # exactly what one pass needed, not twice that
    for body in store.iter_manifests():
        for item in body["items"]:
            if item["artifact_status"] == "available":
                assert store.read_input(body["attempt_id"], "in-1").data
    assert indexed(store) == truth(store)


KILL_SCRIPT = """
import os, sys, time
sys.path.insert(0, {root!r})
import otel_inputs.store._store_index as si
real_open = open
class Slow:
    def __init__(self, fh): self.fh = fh
    def __enter__(self): return self
    def __exit__(self, *a): self.fh.close()
    def write(self, data):
        for k in range(0, len(data), 256):
            self.fh.write(data[k:k + 256]); self.fh.flush(); time.sleep(0.001)
si.open = lambda p, mode="r", *a, **k: Slow(real_open(p, mode, *a, **k)) if str(p).endswith(".tmp") else real_open(p, mode, *a, **k)
view = si.refresh(si.Path({store!r}), persist=False)
view.dirty = True
print("ready", flush=True)
while True:
    si.save(si.Path({store!r}), view)
"""


def test_kill_9_mid_index_write_leaves_a_usable_store(tmp_path: Path) -> None:
    """A process SIGKILLed while writing the index leaves the old index or none, never a torn one used as valid."""
    store = ArtifactStore(tmp_path / "store", sync_in_background=False)
    for n in range(300):
        write(store, manifest(f"a-{n:03d}", put_object(store, f"o-{n}"), committed=n))
    refresh(store.root)
    for delay in (0.05, 0.2, 0.4):
        proc = subprocess.Popen([sys.executable, "-c", KILL_SCRIPT.format(root=str(ROOT), store=str(store.root))],
                                stdout=subprocess.PIPE, text=True)
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(delay)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        leftovers = [p for p in (store.root / INDEX_DIR).iterdir() if p.name.endswith(".tmp")]
        assert leftovers, "the kill should land mid-write"
        assert load(store.root) is not None  # the renamed file is whole; the torn temp file is never read
        # and a manifest changes after the last complete index: validation still sees it
        write(store, manifest("a-000", put_object(store, "o-0"), status="evicted", committed=0))
        assert indexed(store) == truth(store)
    report = apply_retention(store, RetentionPolicy(budget_bytes=290 * SIZE))
    assert report.deleted_objects == 10
    assert indexed(store) == truth(store)
