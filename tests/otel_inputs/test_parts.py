"""Exchange parts: bounded, non-blocking evidence copies of the logical request and observable output."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import sqlite3
import threading
import warnings
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_inputs import names
from otel_inputs._parts import (
    EvidenceQueue,
    PartCapture,
    PartDispatch,
    PartLimits,
    PartName,
    PartPersistence,
    PartReason,
    PersistenceFailure,
    coerce_dispatch,
    encode_logical_request,
    encode_observable_output,
    observe_part,
    part_event_attributes,
    record_part_event,
)
from otel_inputs._policy import AdmissionDecision
from otel_inputs._parts import attempt_key
from otel_inputs.store import ArtifactStore, ReadbackError

CATALOG_FILE = "catalog.db"
from otel_inputs.types import CaptureDecision, GapReason

pytestmark = pytest.mark.timeout(60)  # a submit that blocked on the writer would hang, not pass

REQ = PartName.LOGICAL_REQUEST
OUT = PartName.OBSERVABLE_OUTPUT
ADMITTED = AdmissionDecision(CaptureDecision.ADMITTED)


class FakeClock:
    """A monotonic clock the test advances, so write timeouts are decided without sleeping."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class GateWriter:
    """A ``put_fn`` whose part-bytes writes block until the test opens the gate."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.gate = threading.Event()

    def __call__(self, store: ArtifactStore, receipt: dict, data: bytes | None) -> None:
        if data is not None:
            self.entered.set()
            assert self.gate.wait(30), "test never released the writer"
        store.put_part(receipt, data)


def read_part(root: Path, attempt_id: str, part: PartName | str) -> bytes:
    return ArtifactStore(root, create=False).read_part(attempt_id, part)


def read_part_receipt(root: Path, attempt_id: str, part: PartName | str) -> dict:
    return ArtifactStore(root, create=False).part_receipt(attempt_id, part)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "store"


@pytest.fixture
def queues():
    made: list[tuple[EvidenceQueue, GateWriter | None]] = []
    yield made
    for q, gate in made:  # never leave a writer blocked behind a test
        if gate is not None:
            gate.gate.set()
        q.flush(10)


def make_queue(queues, root: Path, gate: GateWriter | None = None, clock: FakeClock | None = None,
               **limits) -> EvidenceQueue:
    kwargs = {}
    if gate is not None:
        kwargs["put_fn"] = gate
    if clock is not None:
        kwargs["clock"] = clock
    q = EvidenceQueue(root, PartLimits(**limits), **kwargs)
    queues.append((q, gate))
    return q


def span_events(fn) -> list[dict]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    span = provider.get_tracer("t").start_span("invoke_agent")
    fn(span)
    span.end()
    provider.shutdown()
    [finished] = exporter.get_finished_spans()
    return [dict(e.attributes or {}) for e in finished.events if e.name == names.EXCHANGE_PART_EVENT]


def test_encoders_are_canonical_and_keep_missing_content_null() -> None:
    """Encoders emit sorted compact UTF-8 JSON and keep missing content as null, never "" or 0."""
    a = encode_logical_request("chat", "m-1", [{"role": "user", "content": "héllo"}], options={"b": 1, "a": 2})
    b = encode_logical_request("chat", "m-1", [{"content": "héllo", "role": "user"}], options={"a": 2, "b": 1})
    assert a == b
    assert b" " not in a.replace("héllo".encode(), b"")
    body = json.loads(a)
    assert body["tools"] is None and body["options"] == {"a": 2, "b": 1}
    assert "héllo".encode("utf-8") in a
    out = json.loads(encode_observable_output(settlement="interrupted"))
    assert out["text"] is None and out["usage"] is None and out["tool_calls"] is None
    assert json.loads(encode_observable_output(usage={"input_tokens": 12}))["usage"] == {"input_tokens": 12}
    with pytest.raises((TypeError, ValueError)):
        encode_logical_request("chat", "m", [object()])
    with pytest.raises(ValueError):
        encode_observable_output(usage={"cost": float("nan")})


def test_oversized_part_is_truncated_explicitly(root: Path, queues) -> None:
    """A part over the per-part limit keeps exactly the limit's prefix and says truncated/part_limit."""
    q = make_queue(queues, root, max_part_bytes=1000)
    data = bytes(range(256)) * 8  # 2048 bytes
    r = q.submit("run", "a1", REQ, data, PartDispatch.DISPATCHED)
    assert (r.capture, r.reason, r.persistence) == (PartCapture.TRUNCATED, PartReason.PART_LIMIT.value,
                                                    PartPersistence.QUEUED)
    assert r.size_bytes == 1000 and r.original_size_bytes == 2048
    assert q.flush(10)
    assert read_part(root, "a1", REQ) == data[:1000]
    stored = read_part_receipt(root, "a1", REQ)
    assert stored["capture"] == "truncated" and stored["reason"] == "part_limit"
    assert stored["original_size_bytes"] == 2048
    attrs = part_event_attributes(r)
    assert attrs[names.PART_CAPTURE] == "truncated" and attrs[names.PART_REASON] == "part_limit"
    assert attrs[names.PART_SIZE_BYTES] == 1000


def test_per_run_part_and_byte_budgets(root: Path, queues) -> None:
    """Beyond a run's part or byte budget a part is not_captured/capacity_exceeded/not_queued; other runs are unaffected."""
    q = make_queue(queues, root, max_run_parts=2, max_run_bytes=250)
    assert q.submit("r1", "a1", REQ, b"x" * 100).persistence is PartPersistence.QUEUED
    assert q.submit("r1", "a1", OUT, b"x" * 100).persistence is PartPersistence.QUEUED
    over_count = q.submit("r1", "a2", REQ, b"x")
    assert (over_count.capture, over_count.reason, over_count.persistence) == (
        PartCapture.NOT_CAPTURED, PartReason.CAPACITY_EXCEEDED.value, PartPersistence.NOT_QUEUED)
    assert q.submit("r2", "b1", REQ, b"x" * 200).persistence is PartPersistence.QUEUED
    over_bytes = q.submit("r2", "b1", OUT, b"x" * 100)
    assert over_bytes.capture is PartCapture.NOT_CAPTURED and over_bytes.reason == "capacity_exceeded"
    assert over_bytes.sha256 is None and over_bytes.size_bytes is None and over_bytes.ref is None
    assert q.flush(10)
    s = q.stats()
    assert (s["stored"], s["rejected"]) == (3, 2)
    with pytest.raises(ReadbackError) as err:
        read_part(root, "a2", REQ)
    assert err.value.outcome == "not_found"


def test_pending_caps_refuse_immediately_while_writer_is_stuck(root: Path, queues) -> None:
    """With the writer stuck, the pending part and byte caps turn further submits into immediate not_captured."""
    gate = GateWriter()
    q = make_queue(queues, root, gate, max_pending_parts=2, max_pending_bytes=300)
    assert q.submit("r", "a1", REQ, b"1" * 100).persistence is PartPersistence.QUEUED
    assert gate.entered.wait(10)
    assert q.submit("r", "a2", REQ, b"2" * 250).capture is PartCapture.NOT_CAPTURED  # 350 > 300 pending bytes
    assert q.submit("r", "a3", REQ, b"3" * 100).persistence is PartPersistence.QUEUED
    refused = q.submit("r", "a4", REQ, b"4")  # third pending part
    assert (refused.reason, refused.persistence) == ("capacity_exceeded", PartPersistence.NOT_QUEUED)
    assert "pending" in (refused.detail or "")
    assert q.stats()["pending_parts"] == 2 and q.stats()["pending_bytes"] == 200
    gate.gate.set()
    assert q.flush(10)
    assert q.stats()["pending_parts"] == 0 and q.stats()["stored"] == 2
    assert q.submit("r", "a4", REQ, b"4").persistence is PartPersistence.QUEUED  # capacity came back


def test_slow_store_times_out_but_keeps_capacity_reserved_until_settled(root: Path, queues) -> None:
    """Submit returns while the writer is blocked; the write goes timed_out, stays reserved, then becomes stored."""
    gate, clock = GateWriter(), FakeClock()
    q = make_queue(queues, root, gate, clock, max_pending_parts=1, write_timeout_s=2.0)
    first = q.submit("r", "a1", REQ, b"slow part", PartDispatch.DISPATCHED)
    assert first.persistence is PartPersistence.QUEUED
    assert gate.entered.wait(10)  # the writer is now inside the blocked write
    # The agent thread keeps going while the writer is stuck: this call returns, refused, not parked.
    blocked = q.submit("r", "a2", OUT, b"next")
    assert blocked.capture is PartCapture.NOT_CAPTURED and not gate.gate.is_set()
    assert q.receipt("a1", REQ).persistence is PartPersistence.QUEUED
    clock.now += 2.5
    live = q.receipt("a1", REQ)
    assert live.persistence is PartPersistence.TIMED_OUT
    s = q.stats()
    assert (s["timed_out"], s["pending_parts"], s["pending_bytes"]) == (1, 1, len(b"slow part"))
    # Timed out is not settled: its capacity is still reserved.
    assert q.submit("r", "a3", OUT, b"x").reason == "capacity_exceeded"
    assert not q.flush(0.05)
    with pytest.raises(ReadbackError):  # nothing is recorded before the bytes are durable
        read_part_receipt(root, "a1", REQ)
    gate.gate.set()
    assert q.flush(10)
    settled = q.receipt("a1", REQ)
    assert settled.persistence is PartPersistence.STORED
    assert settled.history == (PartPersistence.QUEUED, PartPersistence.TIMED_OUT, PartPersistence.STORED)
    stored = read_part_receipt(root, "a1", REQ)
    assert stored["persistence"] == "stored" and stored["settled_after_timeout"] is True
    assert read_part(root, "a1", REQ) == b"slow part"
    s = q.stats()
    assert (s["timed_out"], s["timed_out_total"], s["pending_parts"], s["stored"]) == (0, 1, 0, 1)
    assert q.submit("r", "a3", OUT, b"x").persistence is PartPersistence.QUEUED


def test_unwritable_store_gives_failed_receipt_not_exception(root: Path, queues) -> None:
    """When the store's staging is a regular file the part fails with a bounded reason and nothing is raised."""
    q = make_queue(queues, root)
    (root / "staging").rmdir()
    (root / "staging").write_bytes(b"not a directory")
    r = q.submit("r", "a1", REQ, b"data", "dispatched")
    assert r.persistence is PartPersistence.QUEUED  # queued says nothing about durability
    assert q.flush(10)
    final = q.receipt("a1", REQ)
    assert final.persistence is PartPersistence.FAILED
    assert final.persistence_reason is PersistenceFailure.STORE_UNAVAILABLE
    assert len(final.persistence_detail or "") <= 160
    assert q.stats()["failed"] == 1 and q.stats()["pending_bytes"] == 0
    with pytest.raises(ReadbackError):
        read_part(root, "a1", REQ)


def test_disk_full_is_a_failed_receipt_with_a_store_explanation(root: Path, queues) -> None:
    """A write failing with ENOSPC becomes failed/disk_full, and the stored receipt explains the gap."""

    def full_disk(store: ArtifactStore, receipt: dict, data: bytes | None) -> None:
        if data is not None:
            raise OSError(errno.ENOSPC, "No space left on device")
        store.put_part(receipt, data)

    q = EvidenceQueue(root, PartLimits(), put_fn=full_disk)
    q.submit("r", "a1", OUT, b"output")
    assert q.flush(10)
    assert q.receipt("a1", OUT).persistence_reason is PersistenceFailure.DISK_FULL
    stored = read_part_receipt(root, "a1", OUT)
    assert stored["persistence"] == "failed" and stored["persistence_reason"] == "disk_full"
    with pytest.raises(ReadbackError) as err:
        read_part(root, "a1", OUT)
    assert err.value.outcome == "not_found"


def test_unknown_dispatch_stays_unknown_end_to_end(root: Path, queues) -> None:
    """Unknown or unrecognised dispatch is recorded as unknown on the receipt, the store and the span event."""
    assert coerce_dispatch(None) is PartDispatch.UNKNOWN
    assert coerce_dispatch("maybe") is PartDispatch.UNKNOWN
    assert coerce_dispatch(False) is PartDispatch.UNKNOWN  # type: ignore[arg-type]
    q = make_queue(queues, root)
    r = q.submit("r", "a1", REQ, b"req", None)
    gap = observe_part(q, ADMITTED, run_id="r", attempt_id="a1", part=OUT, encode=lambda: 1 / 0,
                       dispatch="unknown")
    assert r.dispatch is PartDispatch.UNKNOWN and gap.dispatch is PartDispatch.UNKNOWN
    assert q.flush(10)
    assert read_part_receipt(root, "a1", REQ)["dispatch"] == "unknown"
    assert q.receipt("a1", REQ).dispatch is PartDispatch.UNKNOWN
    events = span_events(lambda span: (record_part_event(span, r), record_part_event(span, gap)))
    assert [e[names.PART_DISPATCH] for e in events] == ["unknown", "unknown"]


def test_request_and_output_have_independent_outcomes(root: Path, queues) -> None:
    """One attempt can keep its request while its output is not captured, and both are reported."""
    q = make_queue(queues, root, max_pending_bytes=4096)
    req = observe_part(q, ADMITTED, run_id="r", attempt_id="a1", part=REQ, dispatch="dispatched",
                       encode=lambda: encode_logical_request("chat", "m", [{"role": "user", "content": "q"}]))
    out = q.submit("r", "a1", OUT, b"o" * 5000, "dispatched")  # bigger than the pending byte budget
    assert req.capture is PartCapture.CAPTURED and out.capture is PartCapture.NOT_CAPTURED
    assert q.flush(10)
    assert json.loads(read_part(root, "a1", REQ))["model"] == "m"
    with pytest.raises(ReadbackError):
        read_part_receipt(root, "a1", OUT)
    req_ev, out_ev = span_events(lambda span: (record_part_event(span, req), record_part_event(span, out)))
    assert req_ev[names.PART_CAPTURE] == "captured" and names.PART_REASON not in req_ev
    assert req_ev[names.PART_PERSISTENCE] == "queued" and req_ev[names.PART_SHA256] == req.sha256
    assert req_ev[names.PART_REF] == f"part:{attempt_key('a1')}/logical_request"
    assert out_ev[names.PART_CAPTURE] == "not_captured" and out_ev[names.PART_REASON] == "capacity_exceeded"
    assert out_ev[names.PART_PERSISTENCE] == "not_queued"
    for absent in (names.PART_REF, names.PART_SHA256, names.PART_SIZE_BYTES):
        assert absent not in out_ev


def test_receipts_and_bytes_verify(root: Path, queues) -> None:
    """A stored part's receipt carries its identity and digest, and readback returns exactly the bytes."""
    q = make_queue(queues, root)
    data = encode_observable_output(text="answer", usage={"output_tokens": 3}, settlement="completed")
    r = q.submit("run-9", "att-9", OUT, data, PartDispatch.DISPATCHED)
    assert q.flush(10)
    body = read_part_receipt(root, "att-9", OUT)
    assert {k: body[k] for k in ("runId", "attemptId", "part", "capture", "dispatch", "persistence")} == {
        "runId": "run-9", "attemptId": "att-9", "part": "observable_output", "capture": "captured",
        "dispatch": "dispatched", "persistence": "stored"}
    assert body["sha256"] == r.sha256 and body["size_bytes"] == len(data) and body["written_at"].endswith("Z")
    assert "reason" not in body
    assert read_part(root, "att-9", OUT) == data
    buf = bytearray(b"mutable")
    q.submit("run-9", "att-10", REQ, buf)
    buf[:] = b"changed"  # the caller reusing its buffer must not alter the evidence
    assert q.flush(10)
    assert read_part(root, "att-10", REQ) == b"mutable"
    assert read_part(root, "att-9", "observable_output") == data
    with pytest.raises(ReadbackError):
        read_part(root, "other-attempt", OUT)


def test_tampered_part_bytes_are_refused(root: Path, queues) -> None:
    """Changed, extended or removed part bytes fail verification instead of being returned."""
    q = make_queue(queues, root)
    q.submit("r", "a1", REQ, b"original bytes")
    assert q.flush(10)
    path = root / "objects" / hashlib.sha256(b"original bytes").hexdigest()
    os.chmod(path, 0o644)
    path.write_bytes(b"Original bytes")
    with pytest.raises(ReadbackError) as err:
        read_part(root, "a1", REQ)
    assert err.value.outcome == "integrity_mismatch"
    path.write_bytes(b"original bytes+tail")
    with pytest.raises(ReadbackError) as err:
        read_part(root, "a1", REQ)
    assert err.value.outcome == "integrity_mismatch"
    path.unlink()
    with pytest.raises(ReadbackError) as err:
        read_part(root, "a1", REQ)
    assert err.value.outcome == "not_found"
    with sqlite3.connect(root / CATALOG_FILE) as con:  # a receipt row that names another attempt
        body = json.loads(con.execute("SELECT receipt FROM parts WHERE attempt_id = 'a1'").fetchone()[0])
        body["attemptId"] = "someone-else"
        con.execute("UPDATE parts SET receipt = ? WHERE attempt_id = 'a1'", [json.dumps(body)])
    con.close()
    with pytest.raises(ReadbackError) as err:
        read_part_receipt(root, "a1", REQ)
    assert err.value.outcome == "integrity_mismatch"


def test_admission_is_checked_before_content_is_encoded(root: Path, queues) -> None:
    """A refused admission yields a gap with its reason and never calls the encoder; nothing is queued."""
    q = make_queue(queues, root)
    calls: list[int] = []

    def encode() -> bytes:
        calls.append(1)
        return b"secret"

    for decision, reason in ((AdmissionDecision(CaptureDecision.SUPPRESSED, GapReason.TEMPORARY_RUN), "temporary_run"),
                             (AdmissionDecision(CaptureDecision.METADATA_ONLY, GapReason.POLICY_OPT_OUT), "policy_opt_out"),
                             (None, "observer_error")):
        r = observe_part(q, decision, run_id="r", attempt_id="a1", part=REQ, encode=encode, dispatch="dispatched")
        assert (r.capture, r.reason, r.persistence) == (PartCapture.NOT_CAPTURED, reason, PartPersistence.NOT_QUEUED)
    no_store = observe_part(None, ADMITTED, run_id="r", attempt_id="a1", part=REQ, encode=encode)
    assert no_store.reason == "store_unavailable"
    assert calls == [] and q.stats()["submitted"] == 0


def test_a_part_is_accepted_once_per_attempt(root: Path, queues) -> None:
    """A second copy of the same attempt's part is refused, so stored evidence is never overwritten."""
    q = make_queue(queues, root)
    assert q.submit("r", "a1", REQ, b"first").persistence is PartPersistence.QUEUED
    again = q.submit("r", "a1", REQ, b"second")
    assert (again.capture, again.reason) == (PartCapture.NOT_CAPTURED, PartReason.ALREADY_RECORDED.value)
    assert q.flush(10)
    assert read_part(root, "a1", REQ) == b"first"


def test_limits_default_to_the_seed_and_read_the_environment() -> None:
    """Defaults are the seed's bounds; environment values override them and bad values fall back."""
    d = PartLimits()
    assert (d.max_part_bytes, d.max_run_parts, d.max_run_bytes) == (256 * 1024, 128, 16 * 1024 * 1024)
    assert (d.max_pending_parts, d.max_pending_bytes, d.write_timeout_s) == (32, 4 * 1024 * 1024, 2.0)
    env = {names.ENV_PART_MAX_BYTES: "1024", names.ENV_PART_WRITE_TIMEOUT_S: "0.5",
           names.ENV_RUN_MAX_PARTS: "zero", names.ENV_PART_MAX_PENDING: "-3"}
    got = PartLimits.from_env(env)
    assert (got.max_part_bytes, got.write_timeout_s, got.max_run_parts, got.max_pending_parts) == (1024, 0.5, 128, 32)
    with pytest.raises(ValueError):
        PartLimits(max_pending_parts=0)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_writer_restarts_in_a_forked_child(root: Path, queues) -> None:
    """After fork the child gets its own writer thread and stores its parts."""
    q = make_queue(queues, root)
    q.submit("r", "parent", REQ, b"p")
    assert q.flush(10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # fork with live threads: the case under test
        pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        code = 1
        try:
            q.submit("r", "child", REQ, b"c")
            code = 0 if q.flush(10) and read_part(root, "child", REQ) == b"c" else 1
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert read_part(root, "child", REQ) == b"c"


def test_concurrent_submitters_keep_accounting_exact(root: Path, queues) -> None:
    """Parts from many agent threads are each either stored and verifiable or refused, with exact counts."""
    q = make_queue(queues, root, max_pending_parts=8, max_run_parts=40)
    receipts: list = []
    lock = threading.Lock()

    def agent(t: int) -> None:
        for i in range(30):
            r = q.submit(f"run-{t % 2}", f"t{t}-a{i}", REQ, f"thread {t} part {i}".encode(), "dispatched")
            with lock:
                receipts.append(r)

    threads = [threading.Thread(target=agent, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert q.flush(30)
    queued = [r for r in receipts if r.persistence is PartPersistence.QUEUED]
    refused = [r for r in receipts if r.persistence is PartPersistence.NOT_QUEUED]
    assert len(queued) + len(refused) == 120 and all(r.reason == "capacity_exceeded" for r in refused)
    assert len(queued) <= 80  # two runs, 40 parts each
    s = q.stats()
    assert (s["stored"], s["rejected"], s["pending_parts"], s["pending_bytes"]) == (len(queued), len(refused), 0, 0)
    for r in queued:
        assert read_part(root, r.attempt_id, REQ) == f"thread {r.attempt_id[1]} part {r.attempt_id.split('a')[1]}".encode()


def _store_of_the_previous_version(root: Path, parts: dict[tuple[str, str], bytes], tampered: set = frozenset()) -> None:
    """A store as the version before m004 wrote it: catalog migrations m001-m003, part bytes as
    ``parts/<attempt key>/<part>.bin`` files beside receipt rows."""
    from otel_inputs.store._catalog import MIGRATIONS

    (root / "objects").mkdir(parents=True)
    (root / "staging").mkdir()
    con = sqlite3.connect(root / CATALOG_FILE, isolation_level=None)
    con.execute("CREATE TABLE _migrations (name TEXT PRIMARY KEY, applied_at_ns INTEGER NOT NULL)")
    for name, apply in MIGRATIONS[:3]:
        apply(con, root)
        con.execute("INSERT INTO _migrations VALUES (?, 0)", [name])
    for (attempt_id, part), data in parts.items():
        body = {"receipt_version": 1, "runId": "r", "attemptId": attempt_id, "part": part, "capture": "captured",
                "dispatch": "dispatched", "persistence": "stored", "sha256": hashlib.sha256(data).hexdigest(),
                "size_bytes": len(data)}
        con.execute("INSERT INTO parts VALUES (?, ?, 'r', ?)", [attempt_id, part, json.dumps(body, sort_keys=True)])
        folder = root / "parts" / attempt_key(attempt_id)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{part}.bin").write_bytes(b"X" + data if (attempt_id, part) in tampered else data)
    con.close()


def test_a_store_of_the_previous_version_reads_its_parts_after_migration_m004(root: Path) -> None:
    """Opening a store whose part bytes are parts/<key>/<part>.bin files moves matching bytes into objects/
    (read back verified, kept by retention's reference rule), drops parts/, and a file that no longer
    matches its receipt reads back as missing, never as its wrong bytes."""
    _store_of_the_previous_version(root, {("a1", "logical_request"): b"request one",
                                          ("a1", "observable_output"): b"same bytes",
                                          ("a2", "observable_output"): b"same bytes",
                                          ("a3", "logical_request"): b"edited later"},
                                   tampered={("a3", "logical_request")})
    store = ArtifactStore(root)
    assert store.read_part("a1", REQ) == b"request one"
    assert store.read_part("a1", OUT) == store.read_part("a2", OUT) == b"same bytes"
    with pytest.raises(ReadbackError) as err:
        store.read_part("a3", REQ)
    assert err.value.outcome == "not_found"
    assert not (root / "parts").exists()
    from otel_inputs.store import reconcile_store

    reconcile_store(store, min_age_s=0)  # the migrated objects are named by their part rows: kept
    assert store.read_part("a1", REQ) == b"request one"
