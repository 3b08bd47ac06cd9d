"""The sink's pipeline: answer after validation, convert while writing, spill and count without loss."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from exporter_helpers import SpanFactory, query
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from sink_client import post, proto_request

import otel_inputs.exporter._convert as convert_module
from otel_inputs.exporter import OTLPSink
from otel_inputs.exporter._arrow import build_batch
from otel_inputs.exporter._db import file_lock
from otel_inputs.exporter._spans import from_readable
from otel_inputs.exporter._writer import DuckDBWriter, _out_of_memory

pytestmark = pytest.mark.timeout(60)


def test_answer_with_partial_success_comes_before_the_write(spans: SpanFactory, db_path: Path) -> None:
    """While the writer is stalled on the file, a request is answered with its partial_success and lands later."""
    req = proto_request([spans.attempt(0, items=2), spans.attempt(1, items=1)])
    req.resource_spans[0].scope_spans[0].spans[1].span_id = b"\x01\x02"
    sink = OTLPSink(db_path, port=0).start()
    try:
        with file_lock(db_path, exclusive=True, timeout_s=5):
            status, _, body = post(sink.endpoint, req.SerializeToString())
            assert status == 200
            assert ExportTraceServiceResponse.FromString(body).partial_success.rejected_spans == 1
        assert sink.flush(20)
    finally:
        sink.stop()
    assert query(db_path, "SELECT count(*) FROM otel_traces") == [(1,)]
    assert query(db_path, "SELECT count(*) FROM agent_attempt_inputs") == [(2,)]
    assert query(db_path, "SELECT value FROM exporter_health WHERE metric = 'spans_rejected'") == [(1,)]


def test_lazy_write_spills_every_batch_when_the_file_stays_locked(spans: SpanFactory, db_path: Path) -> None:
    """A failed lazy write produces its batches again into the spool; the next write drains them, nothing is lost."""
    writer = DuckDBWriter(db_path, lock_timeout_s=0.2)
    writer.write_batches([])
    batches = [build_batch([from_readable(spans.attempt(i, items=2))]) for i in range(3)]
    calls = []

    def produce() -> list:
        calls.append(1)
        return batches

    with file_lock(db_path, exclusive=True, timeout_s=5):
        outcome = writer.write_lazy(produce)
    assert outcome.spilled == 3 and outcome.dropped == 0 and outcome.error is not None
    assert calls and len(writer.spooled_batches()) == 3  # produced again for the spool
    assert writer.write_lazy(list).error is None
    assert writer.spooled_batches() == []
    assert query(db_path, "SELECT count(*) FROM agent_attempts") == [(3,)]


def test_a_request_that_cannot_be_converted_is_counted_and_the_writer_keeps_going(
    spans: SpanFactory, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """If both conversions fail for a request, its spans are counted as dropped and later requests still land."""
    sink = OTLPSink(db_path, port=0).start()
    try:
        with monkeypatch.context() as m:
            m.setattr(convert_module, "build_chunk", _boom)
            m.setattr(convert_module, "record_of", _boom)
            assert post(sink.endpoint, proto_request([spans.attempt(0)]).SerializeToString())[0] == 200
            assert sink.flush(20)
        assert post(sink.endpoint, proto_request([spans.attempt(1)]).SerializeToString())[0] == 200
    finally:
        sink.stop()
    assert query(db_path, "SELECT count(*) FROM agent_attempts") == [(1,)]
    health = dict(query(db_path, "SELECT metric, value FROM exporter_health"))
    assert health["spans_unconvertible"] == 1 and health["spans_dropped"] == 1


def _boom(*args: object) -> None:
    raise RuntimeError("conversion exploded")


def test_commit_that_cannot_pin_a_buffer_counts_as_out_of_memory() -> None:
    """DuckDB's 'failed to pin block' at COMMIT is retried with the default memory limit, like other OOMs."""
    assert _out_of_memory(duckdb.TransactionException("Failed to commit: failed to pin block of size 256.0 KiB"))
    assert not _out_of_memory(duckdb.TransactionException("Conflict on tuple deletion"))


def test_sink_process_never_imports_pandas(tmp_path: Path) -> None:
    """A sink process set up as `otel-inputs collect` does lands spans without pyarrow importing pandas."""
    script = f"""
import sys
sys.path[:0] = {sys.path!r}
from otel_inputs.exporter import OTLPSink
from otel_inputs.exporter._convert import skip_pandas_probe
from exporter_helpers import SpanFactory
from sink_client import post, proto_request
skip_pandas_probe()
sink = OTLPSink({str(tmp_path / "p.duckdb")!r}, port=0).start()
status = post(sink.endpoint, proto_request([SpanFactory().attempt(0)]).SerializeToString())[0]
sink.stop()
print(status, "pandas" in sys.modules)
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.split() == ["200", "False"], out.stderr[-2000:]


def test_sink_started_inside_an_application_leaves_pyarrow_pandas_support_alone(tmp_path: Path) -> None:
    """OTLPSink.start() in a process that later uses pandas does not stop pyarrow from converting pandas objects."""
    script = f"""
import sys
sys.path[:0] = {sys.path!r}
from otel_inputs.exporter import OTLPSink
sink = OTLPSink({str(tmp_path / "p.duckdb")!r}, port=0).start()
sink.stop()
import pandas, pyarrow
print(pyarrow.array(pandas.Series([1, 2], dtype="Int64")).null_count, pyarrow.array(pandas.Series([1, None], dtype="Int64")).null_count)
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.split() == ["0", "1"], out.stderr[-2000:]


def test_reference_path_drops_only_the_unrepresentable_span_inside_a_write(
    spans: SpanFactory, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A span the reference conversion cannot build is dropped and counted mid-write (no deadlock); its neighbours land."""
    import otel_inputs.exporter._arrow as arrow_module

    real_build = arrow_module.build_batch

    def picky_build(records: list) -> object:
        if any(r.name == "unrepresentable" for r in records):
            raise ValueError("cannot represent")
        return real_build(records)

    bad = spans.span({"plain": "span"}, name="unrepresentable")
    monkeypatch.setattr(convert_module, "build_chunk", _boom)
    monkeypatch.setattr(arrow_module, "build_batch", picky_build)
    sink = OTLPSink(db_path, port=0).start()
    try:
        body = proto_request([spans.attempt(0), bad, spans.attempt(1)]).SerializeToString()
        assert post(sink.endpoint, body)[0] == 200
        assert sink.flush(20)
        assert post(sink.endpoint, proto_request([spans.attempt(2)]).SerializeToString())[0] == 200
    finally:
        sink.stop()
    assert query(db_path, "SELECT count(*) FROM agent_attempts") == [(3,)]
    health = dict(query(db_path, "SELECT metric, value FROM exporter_health"))
    assert health["spans_unconvertible"] == 1 and health["spans_dropped"] == 1
