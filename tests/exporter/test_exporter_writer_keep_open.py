"""The receiver's writer keeps one DuckDB connection across batches and hands the file to a waiting reader."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from exporter_helpers import SpanFactory, query
from sink_client import post, proto_request

from otel_inputs.exporter import OTLPSink, SinkConfig
from otel_inputs.exporter._arrow import build_batch
from otel_inputs.exporter._db import SINK_WRITER_SETTINGS, LockTimeout, file_lock, others_waiting
from otel_inputs.exporter._spans import from_readable
from otel_inputs.exporter._writer import DuckDBWriter, Progress

pytestmark = pytest.mark.timeout(120)

ROOT = Path(__file__).resolve().parents[2]

# A viewer-like reader in its own process: the shared sidecar lock, a read-only connection, one count.
_READER = textwrap.dedent(
    """
    import sys
    from otel_inputs.exporter._db import read_connection
    with read_connection(sys.argv[1], timeout_s=60) as con:
        print(con.execute("SELECT count(*) FROM otel_traces").fetchone()[0], flush=True)
    """
)


def _start_reader(db: Path) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", _READER, str(db)], cwd=ROOT, text=True, stdout=subprocess.PIPE,
                            env=dict(os.environ, PYTHONPATH=str(ROOT)))  # fmt: skip


def _until_waiting(db: Path, proc: subprocess.Popen[str]) -> None:
    """Block until the reader process is waiting for the sidecar lock."""
    for _ in range(6000):
        if others_waiting(db):
            return
        assert proc.poll() is None, "the reader ended without waiting"
        time.sleep(0.01)
    raise AssertionError("the reader never waited for the lock")


def _batch(spans: SpanFactory, first: int, n: int):
    return build_batch([from_readable(spans.attempt(i, items=1)) for i in range(first, first + n)])


def test_kept_connection_serves_several_batches_and_holds_the_writer_lock(spans: SpanFactory, db_path: Path) -> None:
    """A keep_open writer lands batches on one connection, holds the exclusive lock between them, and frees both on release."""
    writer = DuckDBWriter(db_path, settings=SINK_WRITER_SETTINGS, keep_open=True)
    assert writer.write_tables(_batch(spans, 0, 2)).error is None
    con = writer._con
    assert con is not None and writer.holds_connection
    assert writer.write_tables(_batch(spans, 2, 2)).error is None
    assert writer._con is con  # the same connection, not one per batch
    with pytest.raises(LockTimeout):
        with file_lock(db_path, exclusive=False, timeout_s=0.1):
            pass
    writer.release()
    assert not writer.holds_connection
    assert query(db_path, "SELECT count(*) FROM otel_traces") == [(4,)]


def test_short_lived_writer_keeps_nothing_between_batches(spans: SpanFactory, db_path: Path) -> None:
    """The in-process exporters' writer (keep_open off) closes its connection and lock after every batch."""
    writer = DuckDBWriter(db_path)
    assert writer.write_tables(_batch(spans, 0, 1)).error is None
    assert not writer.holds_connection
    with file_lock(db_path, exclusive=True, timeout_s=1):
        pass


def test_waiting_reader_gets_the_file_after_the_batch_then_the_writer_reopens(spans: SpanFactory, db_path: Path) -> None:
    """A reader process waiting for a keep_open writer's file reads it once the writer yields, and the writer's next batch reopens it."""
    writer = DuckDBWriter(db_path, settings=SINK_WRITER_SETTINGS, keep_open=True)
    assert writer.write_tables(_batch(spans, 0, 3)).error is None
    reader = _start_reader(db_path)
    try:
        _until_waiting(db_path, reader)
        assert writer.yield_to_waiters(wait_s=60)
        out, _ = reader.communicate(timeout=60)
    finally:
        if reader.poll() is None:
            reader.kill()
    assert out.strip() == "3"
    assert not writer.yield_to_waiters()  # nobody waits: nothing to hand over
    assert writer.write_tables(_batch(spans, 3, 1)).error is None and writer.holds_connection
    writer.release()
    assert query(db_path, "SELECT count(*) FROM otel_traces") == [(4,)]


def test_pausable_transaction_hands_the_file_over_mid_way_and_records_progress_once(
        spans: SpanFactory, db_path: Path) -> None:
    """A pausable write commits what it has when a reader waits between two batches, lets it read, then lands the rest with the position in the last transaction."""
    writer = DuckDBWriter(db_path, settings=SINK_WRITER_SETTINGS, keep_open=True)
    assert writer.write_tables(_batch(spans, 100, 1)).error is None  # migrated, connection kept
    readers: list[subprocess.Popen[str]] = []

    def produce() -> Iterator:
        yield _batch(spans, 0, 2)
        if not readers:  # produced once: a pause must not make the writer produce again
            readers.append(_start_reader(db_path))
            _until_waiting(db_path, readers[0])
        yield _batch(spans, 2, 2)
        yield _batch(spans, 4, 2)

    try:
        outcome = writer.write_lazy(produce, progress=Progress("collect", 7), spill=False, pausable=True)
        out, _ = readers[0].communicate(timeout=60)
    finally:
        for r in readers:
            if r.poll() is None:
                r.kill()
    assert outcome.error is None and outcome.written == 6
    assert out.strip() == "5"  # the first two batches (and the earlier span), committed before the hand-over
    writer.release()
    assert query(db_path, "SELECT count(*), count(DISTINCT \"SpanId\") FROM otel_traces") == [(7, 7)]
    assert query(db_path, "SELECT landed_seq FROM otel_inputs_ingest_progress WHERE log = 'collect'") == [(7,)]
    assert query(db_path, "SELECT value FROM exporter_health WHERE metric = 'spans_written'") == [(7,)]


def test_unpausable_transaction_keeps_a_waiting_reader_until_it_commits(spans: SpanFactory, db_path: Path) -> None:
    """Log records have no key, so a write without pausable commits whole: a reader waiting mid-way sees none of it."""
    writer = DuckDBWriter(db_path, settings=SINK_WRITER_SETTINGS, keep_open=True)
    assert writer.write_tables(_batch(spans, 100, 1)).error is None
    readers: list[subprocess.Popen[str]] = []

    def produce() -> Iterator:
        yield _batch(spans, 0, 2)
        if not readers:
            readers.append(_start_reader(db_path))
            _until_waiting(db_path, readers[0])
        yield _batch(spans, 2, 2)

    try:
        assert writer.write_lazy(produce, progress=Progress("collect", 3), spill=False).error is None
        assert writer.yield_to_waiters(wait_s=60)
        out, _ = readers[0].communicate(timeout=60)
    finally:
        for r in readers:
            if r.poll() is None:
                r.kill()
    assert out.strip() == "5"


def test_replay_after_a_partial_landing_lands_each_span_once(spans: SpanFactory, db_path: Path) -> None:
    """Spans committed by a paused transaction whose position never landed (a crash mid-way) land once when the request is replayed."""
    request = [spans.attempt(i, items=1) for i in range(6)]
    writer = DuckDBWriter(db_path, settings=SINK_WRITER_SETTINGS, keep_open=True)
    part = build_batch([from_readable(s) for s in request[:3]])  # what a paused transaction committed
    assert writer.write_tables(part).error is None
    writer.release()
    sink = OTLPSink(db_path, port=0).start()
    try:
        body = proto_request(request).SerializeToString()
        assert post(sink.endpoint, body)[0] == 200
        assert sink.flush(30)
    finally:
        sink.stop()
    assert query(db_path, "SELECT count(*), count(DISTINCT \"SpanId\") FROM otel_traces") == [(6, 6)]
    assert query(db_path, "SELECT count(*), count(DISTINCT attempt_id) FROM agent_attempts") == [(6, 6)]


def test_receiver_lets_go_of_the_file_when_idle(spans: SpanFactory, db_path: Path) -> None:
    """Once its queue is empty the receiver closes its connection and frees the lock, with no one asking."""
    sink = OTLPSink(db_path, port=0).start()
    try:
        assert post(sink.endpoint, proto_request([spans.attempt(0)]).SerializeToString())[0] == 200
        assert sink.flush(30) and sink.writer is not None
        for _ in range(3000):
            if not sink.writer.holds_connection:
                break
            time.sleep(0.01)
        assert not sink.writer.holds_connection
        with file_lock(db_path, exclusive=True, timeout_s=30):  # taken with the writer holding nothing
            assert not sink.writer.holds_connection
    finally:
        sink.stop()
    assert query(db_path, "SELECT count(*) FROM agent_attempts") == [(1,)]


_TABLES = {
    "otel_traces": '"TraceId", "SpanId", "SpanName", "SpanAttributes", "Events.Name", "Events.Attributes"',
    "agent_attempts": "*",
    "agent_attempt_inputs": "* EXCLUDE (captured_at)",
}


def _land_requests(db: Path, config: SinkConfig, requests: list[bytes]) -> tuple[dict[str, list[tuple]], bool]:
    sink = OTLPSink(db, port=0, config=config).start()
    try:
        for body in requests:
            assert post(sink.endpoint, body)[0] == 200
        assert sink.flush(120)
        pooled = sink._pool is not None
    finally:
        sink.stop()
    rows = {t: query(db, f"SELECT {cols} FROM {t} ORDER BY ALL") for t, cols in _TABLES.items()}
    return rows, pooled


def test_worker_processes_land_the_same_rows_as_the_writer_thread(spans: SpanFactory, tmp_path: Path) -> None:
    """Requests converted in worker processes, in pieces, land exactly the rows the writer thread's own conversion lands."""
    requests = [proto_request([spans.attempt(10 * r + i, items=3) for i in range(7)]).SerializeToString()
                for r in range(4)]  # fmt: skip
    pooled_rows, pooled = _land_requests(
        tmp_path / "pool.duckdb",
        SinkConfig(convert_workers=1, pool_from_bytes=1, insert_spans=3, decode_chunk_spans=2), requests,
    )  # fmt: skip
    local_rows, local_pooled = _land_requests(tmp_path / "local.duckdb", SinkConfig(convert_workers=0), requests)
    assert pooled and not local_pooled
    assert len(pooled_rows["otel_traces"]) == 28 and len(pooled_rows["agent_attempt_inputs"]) == 28 * 3
    assert pooled_rows == local_rows


def _land_batch(sink: OTLPSink, spans: SpanFactory, first: int) -> None:
    body = proto_request([spans.attempt(first + i, items=1) for i in range(4)]).SerializeToString()
    assert post(sink.endpoint, body)[0] == 200 and sink.flush(120)


def _signal_workers(sink: OTLPSink, signum: int) -> tuple[object, list]:
    """Send ``signum`` to every conversion worker of the sink's pool; the pool and its workers."""
    pool = sink._pool
    assert pool is not None
    workers = list(pool._processes.values())  # type: ignore[attr-defined]
    assert workers
    for proc in workers:
        os.kill(proc.pid, signum)
    return pool, workers


def test_a_killed_conversion_worker_loses_nothing(spans: SpanFactory, db_path: Path) -> None:
    """When the conversion workers are killed -9, the writer converts their pieces itself and the next batch starts new workers."""
    import signal

    sink = OTLPSink(db_path, port=0, config=SinkConfig(convert_workers=1, pool_from_bytes=1, insert_spans=2)).start()
    try:
        _land_batch(sink, spans, 0)
        pool, workers = _signal_workers(sink, signal.SIGKILL)
        for proc in workers:
            proc.join(10)
        _land_batch(sink, spans, 10)
        _land_batch(sink, spans, 20)
        assert sink._pool is not None and sink._pool is not pool  # new workers for the third batch
    finally:
        sink.stop()
    assert query(db_path, 'SELECT count(*), count(DISTINCT "SpanId") FROM otel_traces') == [(12, 12)]
    assert query(db_path, "SELECT count(*) FROM agent_attempt_inputs") == [(12,)]


def test_a_stuck_conversion_worker_is_replaced_and_loses_nothing(spans: SpanFactory, db_path: Path) -> None:
    """A worker that stops answering (SIGSTOP) costs piece_timeout_s: the writer converts its pieces, kills it, and every span lands once."""
    import signal

    config = SinkConfig(convert_workers=1, pool_from_bytes=1, insert_spans=2, piece_timeout_s=1.0)
    sink = OTLPSink(db_path, port=0, config=config).start()
    try:
        _land_batch(sink, spans, 0)
        pool, workers = _signal_workers(sink, signal.SIGSTOP)
        _land_batch(sink, spans, 10)
        assert sink._pool is not pool
        for proc in workers:
            proc.join(10)
            assert not proc.is_alive()  # killed, not left stopped
    finally:
        sink.stop()
    assert query(db_path, 'SELECT count(*), count(DISTINCT "SpanId") FROM otel_traces') == [(8, 8)]


def _children(pid: int) -> list[int]:
    out: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        text = (task / "children").read_text() if (task / "children").exists() else ""
        out += [int(c) for c in text.split()]
    return out


def test_conversion_workers_exit_when_the_receiver_is_killed(spans: SpanFactory, tmp_path: Path) -> None:
    """kill -9 of `otel-inputs collect` leaves no conversion worker behind: each exits with its parent."""

    db = tmp_path / "t.duckdb"
    cli = Path(sys.executable).with_name("otel-inputs")
    proc = subprocess.Popen([str(cli), "collect", "--db", str(db), "--port", "0"], stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        assert "listening on " in line, line
        endpoint = line.split("listening on ")[1].split(" ")[0]
        deadline = time.monotonic() + 60
        body = proto_request([spans.attempt(i, items=4) for i in range(800)]).SerializeToString()
        assert len(body) > 2 * 1024 * 1024  # over the default pool_from_bytes
        assert post(endpoint, body)[0] == 200
        workers: list[int] = []
        while not workers and time.monotonic() < deadline:
            workers = _children(proc.pid)
            time.sleep(0.05)
        assert workers, "no conversion worker started for a 2 MiB request"
    finally:
        proc.kill()
        proc.wait(30)
    deadline = time.monotonic() + 20
    while any(Path(f"/proc/{w}").exists() and "Z" not in _state(w) for w in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [w for w in workers if Path(f"/proc/{w}").exists() and "Z" not in _state(w)]


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "Z"


def test_writer_batch_is_bounded_in_spans_and_wire_bytes() -> None:
    """The writer takes queued requests up to the span and byte bounds, but always at least one."""
    from otel_inputs.exporter._sink import _Item, _Queue
    from otel_inputs.exporter._wal import Kind, Ref

    q = _Queue(max_spans=10_000, max_bytes=1 << 30)
    for seq in range(1, 6):
        q.put(_Item(Ref(seq, Kind.TRACES, Path("seg"), 0, 1000), spans=10, nbytes=1000))
    assert [i.seq for i in q.take(25, 0, max_bytes=10_000)] == [1, 2]  # spans bound
    assert [i.seq for i in q.take(1000, 0, max_bytes=1500)] == [3]  # bytes bound
    assert [i.seq for i in q.take(1000, 0, max_bytes=10)] == [4]  # one request is always taken
    assert [i.seq for i in q.take(1000, 0)] == [5]
