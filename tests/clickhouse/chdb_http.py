"""A test-only ClickHouse HTTP endpoint on 127.0.0.1: each query the client sends is run by the real
engine (chdb, in-process) and chdb's own output in the requested format is the answer.

It speaks the part of ClickHouse's HTTP interface that clickhouse-connect and rotel's ClickHouse
exporter use: ``GET /ping``, an INSERT whose rows are the (possibly chunked) POST body,
and queries in the ``query`` URL parameter and/or the POST body, ``database`` as a URL parameter,
the output format named by the query's trailing ``FORMAT`` clause (Native by default), errors as
HTTP 500 with ``X-ClickHouse-Exception-Code``.  Everything else (settings, sessions, compression)
is ignored: the answer is uncompressed and nothing is kept between requests.
"""

from __future__ import annotations

import re
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from otel_inputs.viewer._backend import chdb_query

_FORMAT = re.compile(r"\s+FORMAT\s+(\w+)\s*;?\s*$", re.IGNORECASE)
# a writer's INSERT with its rows in the body (a Collector exporter's or rotel's): table and column list, format
_INSERT = re.compile(r"^\s*INSERT\s+INTO\s+(\S+\s*(?:\([^)]*\))?)\s*FORMAT\s+(\w+)\s*$", re.IGNORECASE)
_CODE = re.compile(r"Code: (\d+)")


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - quiet in tests
        pass

    def _answer(self, status: int, body: bytes, headers: dict[str, str]) -> None:
        self.send_response(status)
        for k, v in {"Content-Length": str(len(body)), "X-ClickHouse-Timezone": "UTC", **headers}.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802
        if urlsplit(self.path).path == "/ping":
            self._answer(200, b"Ok.\n", {"Content-Type": "text/plain"})
        else:
            self._query(b"")

    def do_POST(self) -> None:  # noqa: N802
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            body = b""
            while size := int(self.rfile.readline().strip().split(b";")[0] or b"0", 16):
                body += self.rfile.read(size)
                self.rfile.readline()
            self.rfile.readline()
        else:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._query(body)

    def _query(self, body: bytes) -> None:
        self.server.requests += 1
        params = parse_qs(urlsplit(self.path).query)
        query = params.get("query", [""])[0]
        insert = _INSERT.match(query)
        if insert and body:  # rows in the body (RowBinary, ...): the engine reads them from a file
            with tempfile.NamedTemporaryFile(suffix=".bin") as rows:
                rows.write(body)
                rows.flush()
                self._run(params, f"INSERT INTO {insert.group(1)} SELECT * FROM file('{rows.name}', "
                                  f"{insert.group(2)}) SETTINGS use_structure_from_insertion_table_in_table_functions = 1")
            return
        self._run(params, (query + " " + body.decode("utf-8")).strip())

    def _run(self, params: dict[str, list[str]], sql: str) -> None:
        m = _FORMAT.search(sql)
        fmt = m.group(1) if m else "TabSeparated"
        if m:
            sql = sql[: m.start()]
        try:
            data = chdb_query(self.server.chdb_path, params.get("database", ["default"])[0], sql, fmt).bytes()
        except Exception as exc:  # noqa: BLE001 - the engine's error, passed on as the server would
            text = str(exc)
            code = _CODE.search(text)
            self._answer(500, text.encode(), {"X-ClickHouse-Exception-Code": code.group(1) if code else "1"})
            return
        self._answer(200, data, {"X-ClickHouse-Format": fmt, "Content-Type": "application/octet-stream"})


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, chdb_path: Path) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.chdb_path = str(chdb_path)
        self.requests = 0


@contextmanager
def chdb_http(chdb_path: Path) -> Iterator[_Server]:
    """The endpoint serving ``chdb_path`` on a free loopback port, stopped on exit."""
    server = _Server(chdb_path)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
