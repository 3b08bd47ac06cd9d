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
import threading
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field

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


def _exit_with_parent() -> None:
    """A worker's initializer: exit when the sink's process is gone (even by kill -9), whose pool
    can no longer stop it."""
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
        max_workers=workers, mp_context=multiprocessing.get_context("spawn"), initializer=_exit_with_parent,
    )  # fmt: skip
