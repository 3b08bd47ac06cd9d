"""Store facts folded in ClickHouse (chdb) decide a fleet viewer's reads as the host's own catalog does.

A real store (real SQLite catalog, real files, a ``file://`` bucket) emits its facts through the
OpenTelemetry SDK; the records are inserted into the stock ``otel_logs`` table as the Collector's
exporter writes them (attributes as strings), in any order and twice; ``clickhouse/store_state.sql``
folds them; the viewer's fleet reader and access decisions (viewer/_fleet.py) run over the fold and
are compared with the host's :class:`~otel_inputs.store.EvidenceReader` and access decisions.
"""

from __future__ import annotations

import itertools
import random
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("chdb.session", reason="chdb (in-process ClickHouse) is not installed")
pytest.importorskip("fsspec", reason="the bucket needs fsspec")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from opentelemetry.sdk._logs import LoggerProvider  # noqa: E402
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor  # noqa: E402
from opentelemetry.sdk.resources import Resource  # noqa: E402

from otel_inputs._capture import capture_attempt_inputs  # noqa: E402
from otel_inputs._policy import AdmissionDecision  # noqa: E402
from otel_inputs.store import (  # noqa: E402
    AccessPolicy,
    ArtifactStore,
    EvidenceReader,
    RetentionPolicy,
    apply_retention,
    delete_run,
    purge,
    revoke_source,
    store_usage,
)
from otel_inputs.store.bucket import attach  # noqa: E402
from otel_inputs.store.facts import StoreFacts, attach_facts  # noqa: E402
from otel_inputs.types import CaptureDecision  # noqa: E402
from otel_inputs.viewer._access import current_access  # noqa: E402
from otel_inputs.viewer._backend import ChdbBackend, chdb_session, literal  # noqa: E402
from otel_inputs.viewer._fleet import StoreRef, host_decisions, load_host_facts  # noqa: E402
from otel_inputs.viewer._records import AttemptRow, InputRecord  # noqa: E402

pytestmark = pytest.mark.timeout(900)

SQL_DIR = Path(__file__).resolve().parents[2] / "clickhouse"
ADMIT = AdmissionDecision(CaptureDecision.ADMITTED)
HOST = "host-h"
_databases = itertools.count()


class Chdb:
    """One chdb directory for this module; each test gets a fresh database with the stock tables and the fold."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def database(self) -> ChdbBackend:
        name = f"facts{next(_databases)}"
        sess = chdb_session(self.path)
        sess.query(f"CREATE DATABASE {name}")
        for file in ("otel_tables.sql", "store_state.sql"):
            for chunk in (SQL_DIR / file).read_text().split(";\n"):
                body = "\n".join(x for x in chunk.splitlines() if not x.strip().startswith("--")).strip()
                if body:
                    sess.query(f"USE {name}")
                    sess.query(body)
        return ChdbBackend(str(self.path), name)


@pytest.fixture(scope="module")
def chdb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Chdb]:
    from otel_inputs.viewer._backend import close_chdb_sessions

    yield Chdb(tmp_path_factory.mktemp("chdb"))
    close_chdb_sessions()


def insert(db: ChdbBackend, records: list[dict[str, Any]]) -> None:
    """Log records into otel_logs as the stock exporter writes them: every attribute value as text."""
    rows = [f"(fromUnixTimestamp64Nano({r['ts']}), 'agent', map({_pairs(r['resource'])}), map({_pairs(r['attrs'])}), "
            f"{literal(r['event'])})" for r in records]
    if rows:
        db.rows("INSERT INTO otel_logs (Timestamp, ServiceName, ResourceAttributes, LogAttributes, EventName) VALUES "
                + ", ".join(rows))


def _pairs(d: dict[str, Any]) -> str:
    return ", ".join(f"{literal(k)}, {literal(str(v))}" for k, v in d.items())


class Host:
    """A real store on one host: its catalog, its files, a file:// bucket, its facts through the SDK."""

    def __init__(self, root: Path, name: str = HOST) -> None:
        self.root = root
        self.bucket = (root / "bucket").as_uri()
        self.store = ArtifactStore(root / "store", objects_url=self.bucket)
        self.sent = InMemoryLogRecordExporter()
        provider = LoggerProvider(resource=Resource.create({"host.name": name}))
        provider.add_log_record_processor(SimpleLogRecordProcessor(self.sent))
        attach_facts(self.store, provider.get_logger("otel_inputs.store"), bootstrap=False)
        self.tree = root / "tree"
        self.inputs: dict[str, list[str]] = {}  # attempt -> its input ids, kept after a run is deleted
        self.runs: dict[str, str] = {}

    def capture(self, attempt_id: str, run_id: str, files: dict[str, bytes]) -> None:
        folder = self.tree / attempt_id
        for name, data in files.items():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_bytes(data)
        capture_attempt_inputs(attempt_id=attempt_id, run_id=run_id, decision=ADMIT, store=self.store,
                               context_roots=[folder])
        self.store.mark_terminal(attempt_id)
        record = self.store.attempt(attempt_id)
        self.inputs[attempt_id] = [i.input_id for i in record.items]
        self.runs[attempt_id] = run_id

    def ref(self) -> StoreRef:
        return StoreRef(HOST, self.store.catalog.store_id(), self.bucket)

    def records(self) -> list[dict[str, Any]]:
        """What the host sent so far, as plain records (timestamp, resource, attributes, event name)."""
        assert attach(self.store).flush(300)  # generous: a loaded machine must not decide the verdict
        return [{"ts": int(r.log_record.timestamp), "resource": dict(r.resource.attributes),
                 "attrs": dict(r.log_record.attributes or {}), "event": r.log_record.event_name or ""}
                for r in self.sent.get_finished_logs()]


def decisions(host: Host, db: ChdbBackend) -> tuple[dict, dict]:
    """Every captured (attempt, input)'s read outcome, and every attempt's withheld inputs, on the host
    and on the fleet viewer (the folded facts in ``db``)."""
    reader = EvidenceReader(host.store, policy=AccessPolicy())
    facts = load_host_facts(db, host.ref(), host.inputs)
    ev, fleet_access = host_decisions(facts, (host.bucket,), "viewer")
    host_access = current_access(host.store, "viewer")
    here, there = {}, {}
    for attempt_id, inputs in host.inputs.items():
        for input_id in inputs:
            mine, theirs = reader.read("viewer", attempt_id, input_id), ev.reader.read("viewer", attempt_id, input_id)
            here[(attempt_id, input_id)] = (mine.outcome.value, mine.snapshot.data if mine.ok else None)
            there[(attempt_id, input_id)] = (theirs.outcome.value, theirs.snapshot.data if theirs.ok else None)
        record = host.store.attempt(attempt_id)
        rows = tuple(InputRecord(i.input_id, attempt_id, i.seq or 0, label=i.label, source_kind=i.source_kind,
                                 source_path=i.source_path, sha256=i.sha256) for i in (record.items if record else ()))
        attempt = AttemptRow(attempt_id, run_id=host.runs[attempt_id])
        for access, out in ((host_access, here), (fleet_access, there)):
            w = access.decide(attempt, rows)
            out[(attempt_id, "withheld")] = (sorted(w.items), w.purged_at_ns is not None)
    return here, there


# -- the bad inputs -----------------------------------------------------------------------------------
def test_facts_out_of_order_and_twice_fold_to_the_hosts_state(tmp_path: Path, chdb: Chdb) -> None:
    """A capture, a revocation, an eviction and a purge, their facts inserted newest first and each twice,
    fold to what the host's catalog says now: the fleet reads what the host reads, item for item."""
    host = Host(tmp_path)
    host.capture("a2", "r1", {"old.txt": b"old"})  # the oldest: retention takes it first
    host.capture("a1", "r1", {"keep.txt": b"keep", "secret/x.txt": b"x"})
    host.capture("a3", "r2", {"gone.txt": b"gone"})
    revoke_source(host.store, host.tree / "a1" / "secret")
    purge(host.store, attempt_ids=["a3"])
    apply_retention(host.store, RetentionPolicy(budget_bytes=store_usage(host.store).total_bytes - 1))
    assert host.store.attempt("a2").items[0].artifact_status == "evicted"
    db = chdb.database()
    records = host.records()
    insert(db, list(reversed(records)) + records)
    here, there = decisions(host, db)
    assert there == here
    assert {v[0] for v in here.values() if isinstance(v[0], str)} >= {"ok", "source_unavailable", "retention_expired"}


def test_a_revocation_arriving_after_an_upload_of_the_same_item_still_refuses(tmp_path: Path, chdb: Chdb) -> None:
    """The item's revocation (an item fact) and its object's upload (an object fact, a later change number)
    are separate rows: the upload arriving last never brings the revoked item back."""
    host = Host(tmp_path)
    host.capture("a1", "r1", {"f.txt": b"revoked later"})
    assert attach(host.store).flush(30)
    revoke_source(host.store, host.tree / "a1" / "f.txt")
    records = host.records()
    db = chdb.database()
    uploads = [r for r in records if r["attrs"]["otel_inputs.attempt.id"] == ""]
    insert(db, [r for r in records if r not in uploads])
    insert(db, uploads)  # the upload arrives after the revocation
    ev, _ = host_decisions(load_host_facts(db, host.ref(), ["a1"]), (host.bucket,), "viewer")
    (input_id,) = host.inputs["a1"]
    assert ev.reader.read("viewer", "a1", input_id).outcome == "source_unavailable"


def test_facts_from_another_host_never_decide_this_hosts_items(tmp_path: Path, chdb: Chdb) -> None:
    """A host that sends facts naming another host's store id and attempt (claiming its revoked item is
    captured, with a higher change number) is filed under itself: the real host's item stays refused."""
    host = Host(tmp_path / "h")
    host.capture("a1", "r1", {"f.txt": b"revoked"})
    revoke_source(host.store, host.tree / "a1" / "f.txt")
    db = chdb.database()
    insert(db, host.records())
    (input_id,) = host.inputs["a1"]
    forged = [r for r in host.records() if r["attrs"]["otel_inputs.store.item_key"] == input_id][-1]
    forged["attrs"]["otel_inputs.store.seq"] = 10 ** 9
    forged["attrs"].pop("otel_inputs.store.revoked_at", None)
    forged["resource"] = {"host.name": "evil-host"}
    insert(db, [forged])
    ev, _ = host_decisions(load_host_facts(db, host.ref(), ["a1"]), (host.bucket,), "viewer")
    assert ev.reader.read("viewer", "a1", input_id).outcome == "source_unavailable"
    evil = load_host_facts(db, StoreRef("evil-host", host.ref().store_id, host.bucket), ["a1"])
    assert evil.fact("a1", input_id) is not None and evil.fact("a1", "") is None  # filed under the sender only


def test_hostile_host_ids_and_item_keys_are_dropped_or_kept_apart(tmp_path: Path, chdb: Chdb) -> None:
    """Records with a quote-laden host, an over-long item key, a malformed store id, SHA-256 or state are
    dropped by the fold or kept under their own (escaped) key; the real host's facts are unaffected and
    a viewer asking for a hostile host id gets nothing, not an error."""
    host = Host(tmp_path)
    host.capture("a1", "r1", {"f.txt": b"fine"})
    db = chdb.database()
    records = host.records()
    insert(db, records)
    base = records[0]
    hostile = "x' OR 1=1 --\n\x00"
    variants = [({"otel_inputs.store.item_key": "k" * 300}, None), ({"otel_inputs.store.id": "not-hex"}, None),
                ({"otel_inputs.store.item_sha256": "zz" * 32}, None), ({"otel_inputs.store.state": "owned"}, None),
                ({"otel_inputs.store.seq": "-1"}, None), ({}, hostile)]
    for attrs, resource_host in variants:
        variant = {**base, "attrs": {**base["attrs"], **attrs}}
        if resource_host is not None:
            variant["resource"] = {"host.name": resource_host}
        insert(db, [variant])
    assert db.rows("SELECT count() FROM otel_inputs_store_state WHERE host != ?", [HOST]) == [(1,)]
    assert load_host_facts(db, StoreRef(hostile, host.ref().store_id, None), ["a1"]).fact("a1", "") is not None
    ev, _ = host_decisions(load_host_facts(db, host.ref(), ["a1"]), (host.bucket,), "viewer")
    assert ev.reader.read("viewer", "a1", host.inputs["a1"][0]).ok


# -- parity: random histories -------------------------------------------------------------------------
FILES = {"a.txt": b"alpha", "b.txt": b"beta", "d/c.txt": b"gamma", "d/e.txt": b"delta", "d/f/g.txt": b"epsilon"}
step = st.one_of(
    st.tuples(st.just("capture"), st.sampled_from(["r1", "r2", "r3"]),
              st.sets(st.sampled_from(sorted(FILES)), min_size=1, max_size=3)),
    st.tuples(st.just("revoke"), st.sampled_from(["a.txt", "d", "d/f", "d/e.txt"])),
    st.tuples(st.just("evict"), st.integers(0, 4)),
    st.tuples(st.just("purge_attempt"), st.integers(0, 5)),
    st.tuples(st.just("purge_source"), st.sampled_from(["b.txt", "d/f"])),
    st.tuples(st.just("delete_run"), st.sampled_from(["r1", "r2", "r3"])),
)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(history=st.lists(step, min_size=1, max_size=10), seed=st.integers(0, 2 ** 16))
def test_the_fleet_decides_as_the_hosts_catalog_for_any_history(chdb: Chdb, history: list, seed: int) -> None:
    """For a random history of captures, revocations, evictions, purges and run deletions, the fleet
    viewer's read of every item ever captured, over the facts folded in any order and with duplicates,
    equals the host's own reader's (outcome and bytes), and so do the inputs each attempt withholds."""
    root = Path(tempfile.mkdtemp(prefix="facts-parity-"))
    try:
        host = Host(root)
        attempts: list[str] = []
        for op in history:
            if op[0] == "capture":
                attempt_id = f"a{len(attempts)}"
                attempts.append(attempt_id)
                host.capture(attempt_id, op[1], {n: FILES[n] + attempt_id.encode() * (n == "b.txt")
                                                 for n in sorted(op[2])})
            elif op[0] == "revoke":
                for attempt_id in attempts:  # a path under every attempt's folder
                    revoke_source(host.store, host.tree / attempt_id / op[1])
            elif op[0] == "evict":
                usage = sum(len(v) for v in FILES.values())
                apply_retention(host.store, RetentionPolicy(budget_bytes=op[1] * usage))
            elif op[0] == "purge_attempt" and attempts:
                purge(host.store, attempt_ids=[attempts[op[1] % len(attempts)]])
            elif op[0] == "purge_source":
                for attempt_id in attempts:
                    purge(host.store, source_path=str(host.tree / attempt_id / op[1]))
            elif op[0] == "delete_run":
                delete_run(host.store, op[1])
        records = host.records()
        shuffled = records + records[: len(records) // 2]
        random.Random(seed).shuffle(shuffled)
        db = chdb.database()
        insert(db, shuffled)
        here, there = decisions(host, db)
        assert there == here
    finally:
        shutil.rmtree(root, ignore_errors=True)


# -- a real third-party writer -------------------------------------------------------------------------
def test_facts_written_by_rotel_fold_to_the_same_decisions(tmp_path: Path, chdb: Chdb) -> None:
    """A host's store facts sent over OTLP/HTTP to rotel-agent (from PyPI), whose ClickHouse exporter writes
    otel_logs without an EventName column, fold in ClickHouse to the host's own decisions, item for item."""
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
    from rotel_pipe import rotel_agent, rotel_into_chdb

    if rotel_agent() is None:
        pytest.skip("rotel (rotel-agent) is not installed")
    db = chdb.database()
    with rotel_into_chdb(chdb.path, db.database, tmp_path / "rotel.log") as endpoint:
        host = Host(tmp_path / "h")
        provider = LoggerProvider(resource=Resource.create({"host.name": HOST}))
        provider.add_log_record_processor(BatchLogRecordProcessor(OTLPLogExporter(endpoint=endpoint)))
        host.store.listeners[:] = [x for x in host.store.listeners if not isinstance(x, StoreFacts)]
        attach_facts(host.store, provider.get_logger("otel_inputs.store"), bootstrap=False)
        heard: list = []
        host.store.listeners.append(heard.append)
        host.capture("a1", "r1", {"keep.txt": b"keep", "d/x.txt": b"x"})
        host.capture("a2", "r2", {"gone.txt": b"gone"})
        revoke_source(host.store, host.tree / "a1" / "d")
        purge(host.store, run_id="r2")
        assert attach(host.store).flush(30)
        provider.shutdown()  # the SDK's batch is sent; rotel's batch follows within its timeout
        last = max(c.seq for change in heard for c in change.items)
        for _ in range(400):  # until the last change's fact is folded (at most 20 s)
            if db.rows("SELECT max(seq) FROM otel_inputs_store_state")[0][0] >= last:
                break
            time.sleep(0.05)
    assert db.rows("SELECT DISTINCT EventName FROM otel_logs") == [("",)], "rotel writes no event name"
    here, there = decisions(host, db)
    assert there == here
    assert here[("a1", "withheld")][0] and here[("a2", "withheld")][1]  # something revoked, something purged
