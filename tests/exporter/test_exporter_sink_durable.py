"""An acknowledgment means durable: kill -9 after a 200, a full disk, an unusable database, the
large-attribute wedge, replay without duplicates.  Real `otel-inputs collect` processes and files."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from exporter_helpers import SpanFactory, query
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from sink_client import post, proto_request
from tmpfs import mount_tmpfs, unmount

from otel_inputs.exporter import OTLPSink, SinkConfig
from otel_inputs.exporter._db import file_lock
from otel_inputs.exporter._wal import wal_dir

pytestmark = pytest.mark.timeout(180)


@contextmanager
def collect(db: Path, *extra: str) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """`otel-inputs collect` in its own process; yields it and its traces endpoint; killed at the end."""
    exe = Path(sys.executable).with_name("otel-inputs")
    proc = subprocess.Popen([str(exe), "collect", "--db", str(db), "--port", "0", "--grpc-port", "0", *extra],
                            stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        line = ""
        deadline = time.monotonic() + 60
        while "listening on " not in line and time.monotonic() < deadline and proc.poll() is None:
            line = proc.stderr.readline() if proc.stderr else ""
        assert "listening on " in line, line
        yield proc, line.split("listening on ")[1].split(" ")[0]
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(30)
        if proc.stderr:
            proc.stderr.close()


def _spans(db: Path) -> int:
    return query(db, "SELECT count(*) FROM otel_traces")[0][0]


def test_kill_right_after_200_loses_nothing(spans: SpanFactory, db_path: Path) -> None:
    """A 200-span request acknowledged while the database is busy, then kill -9: every span is there after a restart."""
    body = proto_request([spans.span({"i": i}, name=f"s{i}") for i in range(200)]).SerializeToString()
    with file_lock(db_path, exclusive=True, timeout_s=5):  # the writer cannot land: only the log holds it
        with collect(db_path) as (proc, endpoint):
            assert post(endpoint, body)[0] == 200
            proc.send_signal(signal.SIGKILL)
    with collect(db_path) as (proc, endpoint):
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0
    assert _spans(db_path) == 200


@contextmanager
def _created_and_locked(db: Path) -> Iterator[None]:
    """Create the database (so the sink can replay against it), then hold its writer lock."""
    OTLPSink(db, port=0).start().stop()
    shutil.rmtree(wal_dir(db), ignore_errors=True)
    with file_lock(db, exclusive=True, timeout_s=5):
        yield


def test_replay_after_landing_does_not_duplicate_log_records(db_path: Path) -> None:
    """Log records (no key to replace by) landed before a kill -9 are not landed again by the replay."""
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor

    memory = InMemoryLogRecordExporter()
    provider = LoggerProvider()
    provider.add_log_record_processor(SimpleLogRecordProcessor(memory))
    logger = provider.get_logger("t")
    for i in range(5):
        logger.emit(body=f"line {i}", event_name="gen_ai.user.message")
    body = encode_logs(memory.get_finished_logs()).SerializeToString()
    with collect(db_path) as (proc, endpoint):
        assert post(endpoint, body, path="/v1/logs")[0] == 200
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and (not db_path.exists() or
                                                query(db_path, "SELECT count(*) FROM otel_logs")[0][0] < 5):  # fmt: skip
            time.sleep(0.1)
        proc.send_signal(signal.SIGKILL)
    assert list(wal_dir(db_path).glob("wal-*.log")), "the landed record is still in the log: the replay must skip it"
    with collect(db_path) as (proc, _):
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0
    assert query(db_path, "SELECT count(*) FROM otel_logs") == [(5,)]


def test_torn_log_tail_is_cut_and_earlier_records_replay(spans: SpanFactory, db_path: Path) -> None:
    """A half-written last record (a crash mid-append, never acknowledged) is cut off; the records before it land."""
    with _created_and_locked(db_path):
        with collect(db_path) as (proc, endpoint):
            assert post(endpoint, proto_request([spans.attempt(0)]).SerializeToString())[0] == 200
            proc.send_signal(signal.SIGKILL)
    (segment,) = sorted(wal_dir(db_path).glob("wal-*.log"))
    with open(segment, "ab") as fh:
        fh.write(b"\x01\x02\x03\x04\xff\xff\x00\x00partial")
    sink = OTLPSink(db_path, port=0).start()
    try:
        assert sink.replayed == 1
    finally:
        sink.stop()
    assert query(db_path, "SELECT attempt_id FROM agent_attempts") == [("att-0",)]


def test_large_attributes_do_not_wedge_the_sink(spans: SpanFactory, db_path: Path) -> None:
    """40 spans with 1 MiB attributes, then ordinary ones: all land, nothing is spilled or quarantined."""
    big = "x" * (1 << 20)
    sink = OTLPSink(db_path, port=0).start()
    try:
        for i in range(40):
            body = proto_request([spans.span({"big": big, "i": i}, name=f"big{i}")]).SerializeToString()
            for _ in range(300):
                status = post(sink.endpoint, body)[0]
                if status != 503:
                    break
                time.sleep(0.1)
            assert status == 200
        for i in range(5):
            assert post(sink.endpoint, proto_request([spans.attempt(i)]).SerializeToString())[0] == 200
        assert sink.flush(120)
    finally:
        sink.stop()
    assert _spans(db_path) == 45
    assert query(db_path, "SELECT count(*) FROM agent_attempts") == [(5,)]
    spool = Path(f"{db_path}.spool")
    assert not spool.exists() or not list(spool.iterdir())


def test_busy_database_answers_503_with_reason_then_accepted_spans_land(spans: SpanFactory, db_path: Path) -> None:
    """While the database cannot be written the queue fills and new requests get 503 + Retry-After; every 200 lands later."""
    sink = OTLPSink(db_path, port=0, config=SinkConfig(max_queued_spans=3, max_batch_spans=1, queue_wait_s=0.1)).start()
    codes: list[int] = []
    try:
        with file_lock(db_path, exclusive=True, timeout_s=5):
            for i in range(8):
                status, headers, _ = post(sink.endpoint, proto_request([spans.attempt(i)]).SerializeToString())
                codes.append(status)
                if status == 503:
                    assert headers.get("retry-after") == "1"
        assert 503 in codes and 200 in codes
    finally:
        sink.stop()
    assert query(db_path, "SELECT count(*) FROM agent_attempts") == [(codes.count(200),)]


@pytest.fixture
def tiny_wal_disk(db_path: Path) -> Iterator[Path]:
    """The sink's write-ahead log directory on a real 1 MiB tmpfs (needs root to mount)."""
    OTLPSink(db_path, port=0).start().stop()  # the database itself stays on the normal disk
    directory = wal_dir(db_path)
    shutil.rmtree(directory, ignore_errors=True)
    mount_tmpfs(directory, "1m")
    try:
        yield directory
    finally:
        unmount(directory)


def test_full_disk_answers_503_never_200_and_acknowledged_spans_land(spans: SpanFactory, db_path: Path,
                                                                     tiny_wal_disk: Path) -> None:  # fmt: skip
    """With the log's disk full the sink answers 503 + Retry-After (never 200 for what it cannot keep); all 200s land."""
    filler = tiny_wal_disk / "filler"
    body = proto_request([spans.attempt(i, items=20) for i in range(4)]).SerializeToString()
    sink = OTLPSink(db_path, port=0).start()
    acknowledged = 0
    refused: list[dict[str, str]] = []
    try:
        with file_lock(db_path, exclusive=True, timeout_s=5):  # nothing lands, so the log only grows
            for _ in range(40):
                status, headers, reply = post(sink.endpoint, body)
                if status == 200:
                    acknowledged += 1
                else:
                    assert status == 503, (status, reply)
                    refused.append(headers)
                    assert b"durable" in reply or b"retry later" in reply
        assert refused and all(h.get("retry-after") == "1" for h in refused)
    finally:
        sink.stop()
        filler.unlink(missing_ok=True)
    landed = query(db_path, "SELECT count(DISTINCT attempt_id) FROM agent_attempts")[0][0]
    assert landed == (4 if acknowledged else 0) and acknowledged >= 1
    # Restarting on the still-small disk replays nothing twice and accepts again once there is room.
    sink = OTLPSink(db_path, port=0).start()
    try:
        assert post(sink.endpoint, proto_request([spans.attempt(99)]).SerializeToString())[0] == 200
    finally:
        sink.stop()
    assert query(db_path, "SELECT count(*) FROM agent_attempts WHERE attempt_id = 'att-99'") == [(1,)]


def test_request_finding_the_queue_full_waits_for_room_instead_of_503(spans: SpanFactory, db_path: Path) -> None:
    """A request arriving at a full queue is held until the writer frees room (within queue_wait_s) and then gets 200."""
    import threading

    sink = OTLPSink(db_path, port=0, config=SinkConfig(max_queued_spans=1, max_batch_spans=1, queue_wait_s=20)).start()
    try:
        assert post(sink.endpoint, proto_request([spans.attempt(0)]).SerializeToString())[0] == 200  # creates the file
        assert sink.flush(30)
        lock = file_lock(db_path, exclusive=True, timeout_s=5)
        lock.__enter__()
        release = threading.Timer(1.5, lock.__exit__, args=(None, None, None))
        release.start()
        t0 = time.monotonic()
        codes = [post(sink.endpoint, proto_request([spans.attempt(i)]).SerializeToString())[0] for i in range(1, 4)]
        release.join()
        assert codes == [200, 200, 200] and time.monotonic() - t0 >= 1.0  # the last one waited for the lock's end
    finally:
        sink.stop()
    assert query(db_path, "SELECT count(*) FROM agent_attempts") == [(4,)]


def test_unusable_database_answers_unavailable_then_recovers_and_lands_every_200(spans: SpanFactory,
                                                                                  db_path: Path) -> None:  # fmt: skip
    """A database file that cannot be opened makes new requests 503 (UNAVAILABLE) after a few failed writes;
    once it is usable again every acknowledged span lands and requests are accepted again."""
    db_path.write_bytes(b"this is not a duckdb file" * 100)
    sink = OTLPSink(db_path, port=0, config=SinkConfig(refuse_after_db_failures=2)).start()
    codes: list[int] = []
    try:
        deadline = time.monotonic() + 60
        i = 0
        while (not codes or codes[-1] == 200) and time.monotonic() < deadline:
            status, _, reply = post(sink.endpoint, proto_request([spans.attempt(i)]).SerializeToString())
            codes.append(status)
            i += 1
            time.sleep(0.2)
        assert codes[-1] == 503 and b"cannot write the database" in reply
        db_path.unlink()  # the operator moves the bad file away
        assert sink.flush(60)
        assert post(sink.endpoint, proto_request([spans.attempt(1000)]).SerializeToString())[0] == 200
    finally:
        sink.stop()
    accepted = codes.count(200) + 1
    assert query(db_path, "SELECT count(*) FROM agent_attempts") == [(accepted,)]


def test_commit_whose_checkpoint_fails_is_not_landed_twice(db_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Log records (no key) with 1 MiB bodies under a 24 MB pool (the sink's before it kept its connection): a checkpoint failing after a durable
    COMMIT is recovered by a reopen, and no record lands twice, health counters included."""
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor

    from otel_inputs.exporter._db import SINK_WRITER_SETTINGS
    from otel_inputs.exporter._logs import logs_batch
    from otel_inputs.exporter._writer import DuckDBWriter

    memory = InMemoryLogRecordExporter()
    provider = LoggerProvider()
    provider.add_log_record_processor(SimpleLogRecordProcessor(memory))
    logger = provider.get_logger("t")
    writer = DuckDBWriter(db_path, settings={**SINK_WRITER_SETTINGS, "memory_limit": "24MB"})
    for i in range(40):
        memory.clear()
        logger.emit(body=f"{i:04d}" + "x" * (1 << 20))
        outcome = writer.write_tables(logs_batch(encode_logs(memory.get_finished_logs())))
        assert outcome.error is None and outcome.logs_written == 1
    assert writer.counters["batches_failed"] == 0
    assert "reopening the database" in caplog.text  # the failing checkpoint did happen
    assert query(db_path, 'SELECT count(*), count(DISTINCT left("Body", 4)) FROM otel_logs') == [(40, 40)]
    assert query(db_path, "SELECT value FROM exporter_health WHERE metric = 'logs_written'") == [(40,)]
