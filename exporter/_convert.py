"""One accepted request's wire bytes → Arrow tables: the sink's conversion, in its writer thread or
in worker processes.

Conversion is pure Python bound by the GIL and was most of the receiver's CPU
(docs/performance.md), so under a backlog the sink hands it to a pool of worker processes and its
writer thread only inserts ready tables, while the workers convert the next pieces: the receiver
uses a second core.  A request is converted in pieces of a few hundred spans (each worker parses
the request again and converts only its piece; parsing is C and small next to the conversion), so
the writer inserts the first piece while the next is being converted.  Every function here is
deterministic and side-effect free: a retry, or a piece converted again in the writer thread after
a worker died, yields the same tables.  Problems come back as text for the writer to log and count,
since a worker process has no logging configured.
"""

from __future__ import annotations

import itertools
import multiprocessing
import multiprocessing.connection
import os
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field

import pyarrow as pa

from otel_inputs.exporter._arrow import BatchTables, build_reference
from otel_inputs.exporter._columns import Fallback, build_chunk
from otel_inputs.exporter._logs import logs_batch, parse_logs_protobuf
from otel_inputs.exporter._otlp import iter_valid, parse_protobuf, record_of
from otel_inputs.exporter._wal import Kind


@dataclass
class Tally:
    """What converting a piece met, filled in as its tables are made."""

    converted: int = 0
    """Spans (or log records) converted, those the reference path dropped included."""
    complete: bool = True
    """False when the rest of the piece could not be converted (the writer counts it as dropped)."""
    problems: list[str] = field(default_factory=list)
    """One line per problem met (a span the reference path dropped, a failed fast conversion)."""
    dropped: int = 0
    """Spans the reference path could not represent (counted as unconvertible, each in ``problems``)."""


@dataclass(frozen=True)
class Converted:
    """The tables of one piece of a request, in request order, and its :class:`Tally`."""

    tables: tuple[BatchTables, ...]
    tally: Tally


def iter_tables(kind: Kind, body: bytes, tally: Tally, start: int = 0, stop: int | None = None,
                chunk_spans: int = 64) -> Iterator[BatchTables]:  # fmt: skip
    """The tables of spans ``start``..``stop`` (request order) of a traces request, ``chunk_spans``
    spans at a time, lazily (only one chunk's tables at a time), or of a whole logs request; what it
    met goes into ``tally``.  Never raises."""
    if kind is Kind.LOGS:
        try:
            batch = logs_batch(parse_logs_protobuf(body))
        except Exception as exc:  # noqa: BLE001 - counted by the writer, never kills it
            tally.complete = False
            tally.problems.append(f"{type(exc).__name__}: {exc}")
            return
        tally.converted = batch.log_count
        yield batch
        return
    size = max(1, chunk_spans)
    try:
        # Parsed here, a local of this generator: freed when the last chunk is converted.
        valid = itertools.islice(iter_valid(parse_protobuf(body), frozenset()), start, stop)
        while chunk := list(itertools.islice(valid, size)):
            try:
                tables = build_chunk(chunk)
            except Exception as exc:  # noqa: BLE001 - the reference path orders repeats and isolates bad spans
                if not isinstance(exc, Fallback):
                    tally.problems.append(f"fast conversion failed ({type(exc).__name__}: {exc}); used the reference path")
                tables, lost = build_reference([record_of(*v) for v in chunk])
                tally.problems += lost
                tally.dropped += len(lost)
            tally.converted += len(chunk)
            del chunk
            yield tables
            del tables
    except Exception as exc:  # noqa: BLE001 - the rest of the piece is counted by the writer
        tally.complete = False
        tally.problems.append(f"{type(exc).__name__}: {exc}")


def convert_piece(kind: Kind, body: bytes, start: int = 0, stop: int | None = None,
                  chunk_spans: int = 64) -> Converted:  # fmt: skip
    """:func:`iter_tables` whole, for a worker process.  Never raises."""
    tally = Tally()
    return Converted(tuple(iter_tables(kind, body, tally, start, stop, chunk_spans)), tally)


def default_workers() -> int:
    """Conversion workers for a process that only receives: one less than the cores, at most 2."""
    return max(0, min(2, len(os.sched_getaffinity(0)) - 1))  # the cores this process may use


def skip_pandas_probe() -> None:
    """Let pyarrow record "no pandas" in a process that has not imported it (``otel-inputs collect``'s own).

    pyarrow's first ``pa.array(list)`` probes for pandas by importing it (+45 MiB RSS), only to
    recognise pandas inputs the sink never passes.  Probing once while the import is blocked makes
    pyarrow skip it; an explicit pandas conversion (``to_pandas``) still imports pandas later.  It
    is process-wide (pyarrow then no longer recognises pandas objects in ``pa.array``), so only a
    process of its own calls it (``otel-inputs collect``'s, a conversion worker), never
    :meth:`OTLPSink.start` inside someone else's process."""
    if "pandas" in sys.modules:
        return
    sys.modules["pandas"] = None  # type: ignore[assignment]  # makes `import pandas` raise ImportError
    try:
        pa.array([0], pa.int64())
    except Exception:  # noqa: BLE001 - only an optimisation
        pass
    finally:
        if sys.modules.get("pandas", 0) is None:
            del sys.modules["pandas"]


def use_system_memory_pool() -> None:
    """Make pyarrow allocate through malloc (``otel-inputs collect``'s own process, a conversion worker).

    pyarrow's default mimalloc pool keeps the pages of every converted batch (~20 MiB of the
    sink's resident memory, measured) where the sink's ``malloc_trim`` cannot return them.  It is
    process-wide, so only a process of its own calls it."""
    pa.set_memory_pool(pa.system_memory_pool())


def _worker_init() -> None:
    """A worker's initializer: pyarrow set up as in the sink's own process, and exit when the
    sink's process is gone (even by kill -9), whose pool can no longer stop it."""
    skip_pandas_probe()
    use_system_memory_pool()
    parent = multiprocessing.parent_process()
    if parent is None:
        return

    def watch() -> None:
        multiprocessing.connection.wait([parent.sentinel])
        os._exit(0)

    threading.Thread(target=watch, name="otel-inputs-convert-watch", daemon=True).start()


def worker_pool(workers: int) -> ProcessPoolExecutor:
    """A process pool for :func:`convert_piece`, started with ``spawn`` (the sink has server
    threads, which a fork would copy mid-state); its processes start at the first piece."""
    return ProcessPoolExecutor(
        max_workers=workers, mp_context=multiprocessing.get_context("spawn"), initializer=_worker_init,
    )  # fmt: skip
