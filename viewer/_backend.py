"""Where the viewer's rows come from: a DuckDB file or a ClickHouse database, behind one small face.

Every query of :mod:`otel_inputs.viewer._queries` is written once, in the SQL both engines accept
(``?`` parameters, ``epoch_ns(...)``, ``count(*) FILTER (WHERE ...)``, ``NULLS LAST``).  What differs
between them lives here and only here:

* parameters: DuckDB binds ``?`` itself; ClickHouse gets them rendered as literals by
  :func:`render` (one escaping rule for both ClickHouse clients);
* functions: ``epoch_ns`` becomes ``toUnixTimestamp64Nano`` (DateTime64 vs TIMESTAMP_NS), a list
  parameter is ``IN (SELECT unnest(?::VARCHAR[]))`` vs ``IN (...)`` (:meth:`Backend.in_list`),
  a distinct list joined by commas (:meth:`Backend.distinct_join`);
* how one attempt's rows are found quickly (:meth:`Backend.by_attempt`): DuckDB prunes row groups
  by the attempt's start time, ClickHouse reads by the trace's primary key;
* tables only one side has (``agent_artifacts``, ``exporter_health``, ``otel_inputs_schema`` are
  DuckDB-only): :meth:`Backend.has` says so, and the pages say "not recorded on this backend",
  never "none"; columns the stock ClickHouse schema lacks (:attr:`Backend.columns_not_recorded`)
  read as NULL there.

A backend lives for one page refresh (:func:`open_backend`); a missing, locked, unreachable or
unprepared database becomes :class:`DbUnavailable` with a sentence for the page.
"""

from __future__ import annotations

import os
import threading
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import duckdb

from otel_inputs.exporter import (
    MIGRATIONS,
    SCHEMA_VERSION,
    LockTimeout,
    SchemaError,
    check_version,
    connect_with_retry,
    file_lock,
    sha256_key_sql,
)

LOCK_WAIT_S = 20.0  # several writers may hold the lock back to back; a slow page beats an error page
CLICKHOUSE_TIMEOUT_S = 10.0
CLICKHOUSE_SCHEMES = ("http", "https", "clickhouse", "chdb")
DUCKDB_ONLY = frozenset({"agent_artifacts", "exporter_health", "otel_inputs_schema"})
"""Tables the exporter writes into DuckDB that the stock ClickHouse exporter has no counterpart for."""
NOT_IN_STOCK_SCHEMA = {"agent_attempts": frozenset({"dropped_events_count", "dropped_attributes_count"})}
"""Projection columns the stock otel_traces schema has no source for: NULL on ClickHouse
(its agent_attempts.projection_gaps says so too)."""


class DbUnavailable(Exception):
    """The database cannot be read right now; ``str(exc)`` is the sentence shown on the page."""


class Backend(ABC):
    """One refresh's read access to the projection: ``rows(sql, params)`` plus the dialect helpers."""

    kind: str = ""
    label: str = ""
    """What the sidebar may show: a file name or host/database, never a path or a password."""
    columns_not_recorded: dict[str, frozenset[str]] = {}
    """{table: its columns this backend has no source for (they read as NULL)}."""

    @abstractmethod
    def query(self, sql: str, params: Sequence[Any] = ()) -> tuple[list[str], list[tuple[Any, ...]]]:
        """Column names and rows of ``sql`` with ``?`` parameters bound."""

    @abstractmethod
    def tables(self) -> frozenset[str]:
        """The tables and views of this database."""

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self.query(sql, params)[1]

    def dicts(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        names, rows = self.query(sql, params)
        return [dict(zip(names, r)) for r in rows]

    def has(self, table: str) -> bool:
        return table in self.tables()

    # -- dialect -------------------------------------------------------------------------------
    def in_list(self, column: str) -> str:
        """``column`` is one of a list parameter's values."""
        return f"{column} IN (SELECT unnest(?::VARCHAR[]))"

    def distinct_join(self, column: str) -> str:
        """The distinct non-null values of ``column``, sorted and joined with ', ' ('' for none)."""
        return f"coalesce(string_agg(DISTINCT {column}, ', ' ORDER BY {column}), '')"

    def sha256_match(self, cols: str, table: str) -> tuple[str, int]:
        """SQL selecting ``cols`` of ``table`` rows with ``sha256 = ?``, and how many ``?`` it has."""
        return f"SELECT {cols} FROM {table} WHERE sha256 = ?", 1

    def session_scope(self, session_id: str) -> tuple[str, list[Any]]:
        """A condition (ending in AND) that narrows ``agent_attempts`` to a session's rows the engine's
        fast way, and its parameters; DuckDB needs none (a scan of one column is quick there)."""
        return "", []

    @abstractmethod
    def by_attempt(self, table: str, select: str, attempt_id: str, started_ns: int | None, trace_id: str | None,
                   order: str) -> tuple[str, list[Any]]:
        """SQL for one attempt's rows of ``table`` in ``order``, found the engine's fast way."""


# --------------------------------------------------------------------------------------------
# DuckDB: the exporter's file, opened read-only for one refresh
# --------------------------------------------------------------------------------------------
class DuckDBBackend(Backend):
    kind = "duckdb"

    def __init__(self, con: duckdb.DuckDBPyConnection, label: str) -> None:
        self.con = con
        self.label = label
        self._tables: frozenset[str] | None = None

    def query(self, sql: str, params: Sequence[Any] = ()) -> tuple[list[str], list[tuple[Any, ...]]]:
        cur = self.con.execute(sql, list(params))
        return [d[0] for d in cur.description], cur.fetchall()

    def tables(self) -> frozenset[str]:
        if self._tables is None:
            self._tables = frozenset(r[0] for r in self.con.execute(
                "SELECT table_name FROM duckdb_tables() UNION ALL SELECT view_name FROM duckdb_views()").fetchall())
        return self._tables

    def sha256_match(self, cols: str, table: str) -> tuple[str, int]:
        # The 8-byte key first (migration 13), the full text only where the key matched or is absent.
        return (f"SELECT {cols} FROM {table} WHERE sha256_key = {sha256_key_sql('?')} AND sha256 = ? "
                f"UNION ALL SELECT {cols} FROM {table} WHERE sha256_key IS NULL AND sha256 = ?", 3)

    def by_attempt(self, table: str, select: str, attempt_id: str, started_ns: int | None, trace_id: str | None,
                   order: str) -> tuple[str, list[Any]]:
        """``attempt_started_at = <start>`` lets the row-group min/max zone maps skip nearly every row
        group (rows land roughly in time order); the ``IS NULL`` branch finds rows landed before the
        column existed and is itself pruned by the null statistics, so no row is ever missed."""
        if started_ns is None:  # start unknown: an unpruned scan by attempt id (correct, slower)
            return f"SELECT {select} FROM {table} WHERE attempt_id = ? ORDER BY {order}", [attempt_id]
        return (
            f"SELECT {select} FROM {table} WHERE attempt_started_at = make_timestamp_ns(?::BIGINT) AND attempt_id = ? "
            f"UNION ALL SELECT {select} FROM {table} WHERE attempt_started_at IS NULL AND attempt_id = ? ORDER BY {order}",
            [int(started_ns), attempt_id, attempt_id],
        )


def _schema_version(con: duckdb.DuckDBPyConnection) -> int:
    """The applied schema version, checked like ``check_version`` but without information_schema.

    Reading the version table directly costs ~1 ms instead of ~17 ms per refresh; any surprise
    (no table yet, unexpected shape) falls back to the exporter's own ``check_version``.
    """
    try:
        rows = con.execute("SELECT version, name FROM otel_inputs_schema").fetchall()
    except duckdb.Error:
        return check_version(con)
    known = {m.version: m.name for m in MIGRATIONS}
    version = max((int(v) for v, _ in rows), default=0)
    if version > SCHEMA_VERSION or any(known.get(int(v)) != name for v, name in rows):
        return check_version(con)  # raises SchemaError with the exporter's wording
    # Migrations may land out of order (see migrate): the version this file fully has is the one
    # below its first missing migration.
    missing = sorted(set(known) - {int(v) for v, _ in rows})
    return missing[0] - 1 if missing else version


@contextmanager
def read_only(db_path: str | os.PathLike[str]) -> Iterator[DuckDBBackend]:
    """Open ``db_path`` read-only for one refresh, check its schema, and always close it."""
    path = Path(db_path)
    if not path.exists():
        raise DbUnavailable(f"No database {path.name} yet. Record an attempt first, or check OTEL_INPUTS_DB.")
    # The shared sidecar lock waits for the writers instead of failing the refresh: waiting says so
    # (<db>.lock.wait), and the receiver hands the file over after its insert in progress (p99
    # 0.3-1.5 s under a sustained backlog, docs/performance.md "Ingest").  It is released when this
    # refresh's connection closes.
    lock = file_lock(path, exclusive=False, timeout_s=LOCK_WAIT_S)
    try:
        lock.__enter__()
    except LockTimeout as exc:
        raise DbUnavailable(
            f"The database {path.name} is busy with a long write; the page retries on its next refresh."
        ) from exc
    try:
        con = connect_with_retry(path, read_only=True)
    except duckdb.Error as exc:
        lock.__exit__(None, None, None)
        text = str(exc)
        if "lock" in text.lower():
            raise DbUnavailable(
                f"The database {path.name} is locked by a writer right now; the page retries on its next refresh."
            ) from exc
        raise DbUnavailable(f"The database {path.name} cannot be opened: {text.splitlines()[0]}") from exc
    except BaseException:
        lock.__exit__(None, None, None)
        raise
    try:
        try:
            version = _schema_version(con)
        except SchemaError as exc:
            raise DbUnavailable(str(exc)) from exc
        if version < SCHEMA_VERSION:
            raise DbUnavailable(
                f"The database {path.name} has schema version {version}, older than this viewer reads "
                f"({SCHEMA_VERSION}); the exporter upgrades it the next time it writes."
            )
        yield DuckDBBackend(con, path.name)
    finally:
        con.close()
        lock.__exit__(None, None, None)


# --------------------------------------------------------------------------------------------
# ClickHouse: the stock exporter's tables under clickhouse/projection.sql
# --------------------------------------------------------------------------------------------
def render(sql: str, params: Sequence[Any]) -> str:
    """``sql`` with each ``?`` outside quotes replaced by ``params``' next value as a ClickHouse literal."""
    out: list[str] = []
    values = iter(params)
    quote: str | None = None
    i = 0
    while i < len(sql):
        c = sql[i]
        if quote:
            out.append(c)
            if c == "\\":
                out.append(sql[i + 1])
                i += 1
            elif c == quote:
                quote = None
        elif c in "'\"`":
            quote = c
            out.append(c)
        elif c == "?":
            try:
                out.append(literal(next(values)))
            except StopIteration:
                raise ValueError("fewer parameters than ? placeholders") from None
        else:
            out.append(c)
        i += 1
    if next(values, _END) is not _END:
        raise ValueError("more parameters than ? placeholders")
    return "".join(out)


_END = object()


def literal(value: Any) -> str:
    """A ClickHouse SQL literal: strings escaped (backslash and quote), a list as a tuple for ``IN``."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    if isinstance(value, (list, tuple)):
        return "(" + ", ".join(literal(v) for v in value) + ("," if len(value) == 1 else "") + ")"
    raise TypeError(f"no ClickHouse literal for {type(value).__name__}")


def translate(sql: str) -> str:
    """The few function names that differ (the rest of the viewer's SQL is common to both engines)."""
    return sql.replace("epoch_ns(", "toUnixTimestamp64Nano(")


class ClickHouseBackend(Backend):
    """The ClickHouse dialect; subclasses say how a rendered statement reaches the engine."""

    kind = "clickhouse"
    columns_not_recorded = NOT_IN_STOCK_SCHEMA

    def __init__(self, label: str) -> None:
        self.label = label
        self._tables: frozenset[str] | None = None

    @abstractmethod
    def _run(self, sql: str) -> tuple[list[str], list[tuple[Any, ...]]]: ...

    def query(self, sql: str, params: Sequence[Any] = ()) -> tuple[list[str], list[tuple[Any, ...]]]:
        return self._run(render(translate(sql), params))

    def tables(self) -> frozenset[str]:
        if self._tables is None:
            self._tables = frozenset(r[0] for r in self._run(
                "SELECT name FROM system.tables WHERE database = currentDatabase()")[1])
        return self._tables

    def in_list(self, column: str) -> str:
        return f"{column} IN ?"

    def distinct_join(self, column: str) -> str:
        return f"arrayStringConcat(arraySort(groupUniqArray({column})), ', ')"

    def by_attempt(self, table: str, select: str, attempt_id: str, started_ns: int | None, trace_id: str | None,
                   order: str) -> tuple[str, list[Any]]:
        # Every projection view carries the trace id, the first column of the tables' sort keys: with
        # it the views read one trace's granules instead of every span.
        if trace_id is None:  # the attempt's trace(s) by its id first (a table sorted by it), then by the sort key
            return (f"SELECT {select} FROM {table} WHERE trace_id IN (SELECT trace_id FROM otel_inputs_trace_keys "
                    f"WHERE kind = 'attempt' AND key = ?) AND attempt_id = ? ORDER BY {order}", [attempt_id, attempt_id])
        return (f"SELECT {select} FROM {table} WHERE trace_id = ? AND attempt_id = ? ORDER BY {order}",
                [trace_id, attempt_id])

    def session_scope(self, session_id: str) -> tuple[str, list[Any]]:
        # The session's traces from the key table (sorted by the id), then those traces by the sort
        # key: the attempts view is not worked out for every landed span.
        return ("trace_id IN (SELECT trace_id FROM otel_inputs_trace_keys WHERE kind = 'session' AND key = ?) AND ",
                [session_id])

    def check(self) -> None:
        """The projection is applied here, else a sentence saying what to apply."""
        if not self.has("agent_attempts"):
            raise DbUnavailable(
                f"The ClickHouse database {self.label} has no otel-inputs projection (no agent_attempts view): "
                "apply clickhouse/projection_functions.sql and clickhouse/projection.sql to it.")


class ConnectBackend(ClickHouseBackend):
    """A ClickHouse server over HTTP, through clickhouse-connect."""

    def __init__(self, client: Any, label: str) -> None:
        super().__init__(label)
        self.client = client

    def _run(self, sql: str) -> tuple[list[str], list[tuple[Any, ...]]]:
        from clickhouse_connect.driver.exceptions import OperationalError

        try:
            result = self.client.query(sql)
        except OperationalError as exc:  # the server went away mid-page: a message, not a crash
            raise DbUnavailable(f"{self.label} stopped answering ({_first_line(exc)}); "
                                "the page retries on its next refresh.") from exc
        return list(result.column_names), [tuple(r) for r in result.result_rows]


_chdb_lock = threading.RLock()
_chdb_sessions: dict[str, Any] = {}


def chdb_session(path: str | os.PathLike[str]) -> Any:
    """The process's chdb session on ``path`` (chdb runs one embedded engine per process: shared)."""
    import chdb.session as chdb_module

    key = os.path.realpath(path)
    with _chdb_lock:  # an RLock: chdb_query holds it around its use of the session
        sess = _chdb_sessions.get(key)
        if sess is None:
            for other in _chdb_sessions.values():  # one engine per process: another path ends it
                other.close()
            _chdb_sessions.clear()
            sess = _chdb_sessions[key] = chdb_module.Session(key)
        return sess


def chdb_query(path: str | os.PathLike[str], database: str, sql: str, fmt: str) -> Any:
    """``sql`` run in ``database`` of the process's chdb session on ``path``, answered in ``fmt``."""
    sess = chdb_session(path)
    with _chdb_lock:  # the session's current database is shared state: set it with each statement
        sess.query(f"USE {_ident(database)}")
        return sess.query(sql, fmt)


class ChdbBackend(ClickHouseBackend):
    """The ClickHouse engine in-process (chdb) on a local session directory."""

    def __init__(self, path: str, database: str) -> None:
        super().__init__(f"chdb {Path(path).name}/{database}")
        self.path, self.database = path, database

    def _run(self, sql: str) -> tuple[list[str], list[tuple[Any, ...]]]:
        table = chdb_query(self.path, self.database, sql, "ArrowTable")
        names = list(table.column_names)
        cols = [table.column(i).to_pylist() for i in range(len(names))]
        return names, list(zip(*cols)) if cols else []


def _ident(name: str) -> str:
    return "`" + name.replace("\\", "\\\\").replace("`", "\\`") + "`"


@dataclass(frozen=True)
class ClickHouseTarget:
    """A parsed ``--clickhouse`` value: an HTTP(S) URL for clickhouse-connect, or ``chdb:PATH``."""

    url: str
    scheme: str
    database: str
    label: str
    path: str | None = None

    @classmethod
    def parse(cls, url: str) -> ClickHouseTarget:
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        if scheme not in CLICKHOUSE_SCHEMES:
            # The value is never echoed: it may carry a password (``https://user:pw@host/...``).
            raise DbUnavailable(f"a URL with scheme {scheme or 'none'!r} is not a ClickHouse URL "
                                "(http://host:8123/database, https://..., or chdb:PATH).")
        database = parse_qs(parts.query).get("database", [""])[0]
        if scheme == "chdb":
            path = parts.netloc + parts.path if parts.netloc else parts.path
            return cls(url, scheme, database or "default", f"chdb {Path(path).name}/{database or 'default'}", path)
        database = database or parts.path.strip("/") or "default"
        host = parts.hostname or "localhost"
        port = parts.port or (8443 if scheme == "https" else 8123)
        return cls(url, scheme, database, f"ClickHouse {host}:{port}/{database}")  # no user, no password


def connect_client(target: ClickHouseTarget) -> Any:
    """A clickhouse-connect client for ``target``; an unreachable server is a :class:`DbUnavailable`."""
    try:
        import clickhouse_connect
    except ImportError as exc:
        raise DbUnavailable("Reading ClickHouse needs clickhouse-connect: pip install 'otel-inputs[clickhouse]'.") from exc
    parts = urlsplit(target.url)
    try:
        return clickhouse_connect.get_client(
            host=parts.hostname or "localhost", port=parts.port or (8443 if target.scheme == "https" else 8123),
            username=parts.username or "default", password=parts.password or "", database=target.database,
            secure=target.scheme == "https", connect_timeout=CLICKHOUSE_TIMEOUT_S,
            send_receive_timeout=60, autogenerate_session_id=False)
    except Exception as exc:  # noqa: BLE001 - OperationalError, DatabaseError, refused, DNS: all one sentence
        raise DbUnavailable(f"{target.label} cannot be reached ({_first_line(exc)}); "
                            "the page retries on its next refresh.") from exc


def _first_line(exc: BaseException) -> str:
    """The gist of a client error: its first line, without the driver's request details, bounded."""
    text = str(exc).strip()
    first = text.splitlines()[0] if text else type(exc).__name__
    for noise in (" executing HTTP request", " (Caused by"):
        if noise in first and first.index(noise) > 0:
            first = first[: first.index(noise)]
    return first[:300]


@contextmanager
def clickhouse(url: str) -> Iterator[ClickHouseBackend]:
    """One refresh's ClickHouse backend on ``url``, its projection checked."""
    target = ClickHouseTarget.parse(url)
    backend: ClickHouseBackend
    if target.scheme == "chdb":
        if not target.path or not Path(target.path).is_dir():
            raise DbUnavailable(f"No chdb session directory {Path(target.path or '').name or '(empty)'}.")
        try:
            import chdb  # noqa: F401
        except ImportError as exc:
            raise DbUnavailable("Reading a chdb directory needs chdb: pip install chdb.") from exc
        backend = ChdbBackend(target.path, target.database)
    else:
        client = connect_client(target)
        backend = ConnectBackend(client, target.label)
    try:
        try:
            backend.check()
        except DbUnavailable:
            raise
        except Exception as exc:  # noqa: BLE001 - the server went away or refused between connect and query
            raise DbUnavailable(f"{target.label} did not answer ({_first_line(exc)})") from exc
        yield backend
    finally:
        if isinstance(backend, ConnectBackend):
            backend.client.close()


def is_clickhouse(source: str | os.PathLike[str]) -> bool:
    """Whether ``source`` names a ClickHouse database (a URL) rather than a DuckDB file."""
    return isinstance(source, str) and urlsplit(source).scheme.lower() in CLICKHOUSE_SCHEMES


@contextmanager
def open_backend(source: str | os.PathLike[str]) -> Iterator[Backend]:
    """A DuckDB file path or a ClickHouse URL, opened for one refresh."""
    if is_clickhouse(source):
        with clickhouse(str(source)) as ch:
            yield ch
    else:
        with read_only(source) as db:
            yield db


def close_chdb_sessions() -> None:
    """End this process's chdb session (tests, and a process about to open another directory)."""
    with _chdb_lock:
        for sess in _chdb_sessions.values():
            sess.close()
        _chdb_sessions.clear()
