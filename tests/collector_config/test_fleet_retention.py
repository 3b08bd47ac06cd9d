"""docs/fleet.md's retention statements on the real ClickHouse engine (chdb), over our DDL and projection.

fleet.yaml leaves the DDL to the operator (``create_schema: false``), so the exporter's ``ttl`` does
nothing and retention is an ``ALTER TABLE ... MODIFY TTL`` that docs/fleet.md gives.  These run in a
child process: chdb allows one embedded server per process, and tests/clickhouse holds its own.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("chdb", reason="chdb (in-process ClickHouse) is not installed")

REPO = Path(__file__).resolve().parents[2]
SQL_FILES = ("otel_tables.sql", "projection_functions.sql", "projection.sql", "store_state.sql")

_CHILD = r"""
import json, sys
from chdb import session
workdir, database, files, alters = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), json.loads(sys.argv[4])
s = session.Session(workdir)
s.query(f"CREATE DATABASE IF NOT EXISTS {database}")
s.query(f"USE {database}")
for path in files:
    for chunk in open(path, encoding="utf-8").read().split(";\n"):
        body = "\n".join(l for l in chunk.splitlines() if not l.strip().startswith("--")).strip()
        if body:
            s.query(body)
out = {}
for stmt in alters:
    s.query(stmt)
    table = stmt.split()[2]
    out[table] = s.query(f"SHOW CREATE TABLE {table}", "TSVRaw").bytes().decode()
print(json.dumps(out))
"""


def doc_ttl_statements() -> list[str]:
    doc = (REPO / "docs" / "fleet.md").read_text(encoding="utf-8")
    return re.findall(r"^(ALTER TABLE \S+ MODIFY TTL [^;]+);$", doc, re.M)


def test_doc_retention_statements_apply_to_our_tables(tmp_path: Path) -> None:
    """Every ``MODIFY TTL`` statement in docs/fleet.md runs on the ClickHouse engine over our SQL files and leaves a TTL on its table."""
    alters = doc_ttl_statements()
    tables = {stmt.split()[2] for stmt in alters}
    assert {"otel.otel_traces", "otel.otel_logs"} <= tables
    files = [str(REPO / "clickhouse" / name) for name in SQL_FILES]
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, str(tmp_path / "chdb"), "otel", json.dumps(files), json.dumps(alters)],
        capture_output=True, text=True, timeout=240, check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    created = json.loads(proc.stdout.strip().splitlines()[-1])
    for table in tables:
        assert re.search(r"^TTL .*toIntervalDay\(30\)", created[table], re.M), created[table]
