"""ClickHouse parity: the captured corpora of the three CLIs give the same coding-agent attempts, steps and
inputs on the ClickHouse views (chdb, every record inserted twice) as in DuckDB through ``otel-inputs collect``."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agents_support import Collector
from corpus import load, replay

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "clickhouse"))
from ch_corpus import export_parquet, load_chdb  # noqa: E402

from otel_inputs.exporter import ATTEMPT_TABLE_COLUMNS, TIMESTAMP_COLUMNS  # noqa: E402
from otel_inputs.viewer._backend import NOT_IN_STOCK_SCHEMA  # noqa: E402

chdb_session = pytest.importorskip("chdb.session", reason="chdb (in-process ClickHouse) is not installed")

FIXTURES = ("claude-code-inline", "claude-code-title-call", "claude-code-file-bodies", "codex", "gemini")
CODING = ("claude_code", "codex", "gemini_cli")
TABLES = {
    "agent_attempts": [c for c in ATTEMPT_TABLE_COLUMNS["agent_attempts"] if c not in NOT_IN_STOCK_SCHEMA["agent_attempts"]],
    "agent_attempt_steps": list(ATTEMPT_TABLE_COLUMNS["agent_attempt_steps"]),
    "agent_attempt_inputs": list(ATTEMPT_TABLE_COLUMNS["agent_attempt_inputs"]),
    "agent_attempt_messages": list(ATTEMPT_TABLE_COLUMNS["agent_attempt_messages"]),
}
_NUMERIC = ("_tokens", "_bytes", "_count", "seq", "turn_index", "input_packet_version")


def _where(table: str) -> str:
    formats = ", ".join(f"'{f}'" for f in CODING)
    if table == "agent_attempts":
        return f"WHERE source_format IN ({formats})"
    return f"WHERE attempt_id IN (SELECT attempt_id FROM agent_attempts WHERE source_format IN ({formats}))"


@pytest.fixture(scope="module")
def both(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Collector, Any]]:
    tmp = tmp_path_factory.mktemp("coding-ch")
    c = Collector(tmp / "t.duckdb", tmp / "store").start()
    try:
        replay(c.endpoint, [r for name in FIXTURES for r in load(name)[0]])
    finally:
        c.stop()
    export_parquet(c.db, tmp)
    sess = chdb_session.Session(str(tmp / "chdb"))
    try:
        load_chdb(sess, tmp, "otel_coding")
        settle_now(sess)
        yield c, sess
    finally:
        sess.close()


REFRESHED = ("otel_inputs_coding_turn_table", "otel_inputs_coding_step_table", "otel_inputs_coding_input_table",
             "otel_inputs_coding_attempt_table")


def settle_now(sess: Any) -> None:
    """Refresh the coding-agent views at once, each stage after the one it reads (else every 10 s)."""
    for view in REFRESHED:
        sess.query(f"SYSTEM REFRESH VIEW {view}")
        sess.query(f"SYSTEM WAIT VIEW {view}")


def _duck(c: Collector, table: str, cols: list[str]) -> list[tuple[Any, ...]]:
    sel = ", ".join(f"epoch_ns({x})" if x in TIMESTAMP_COLUMNS else x for x in cols)
    return sorted(c.rows(f"SELECT {sel} FROM {table} {_where(table)}"), key=repr)


def _ch(sess: Any, table: str, cols: list[str]) -> list[tuple[Any, ...]]:
    sel = ", ".join(f"toUnixTimestamp64Nano({x})" if x in TIMESTAMP_COLUMNS else x for x in cols)
    out = sess.query(f"SELECT {sel} FROM {table} {_where(table)}", "JSONCompactEachRow").bytes().decode()
    rows = []
    for line in out.splitlines():
        if line.strip():
            rows.append(tuple(int(v) if isinstance(v, str) and (c in TIMESTAMP_COLUMNS or c.endswith(_NUMERIC))
                              and v.lstrip("-").isdigit() else v for v, c in zip(json.loads(line), cols)))
    return sorted(rows, key=repr)


@pytest.mark.timeout(600)
@pytest.mark.parametrize("table", list(TABLES))
def test_clickhouse_views_give_the_coding_agent_rows_of_duckdb(both: tuple[Collector, Any], table: str) -> None:
    """For the five sessions of the three CLIs (each record inserted twice in ClickHouse), the view gives exactly the DuckDB rows of the coding agents."""
    c, sess = both
    cols = TABLES[table]
    want, got = _duck(c, table, cols), _ch(sess, table, cols)
    assert want, f"the corpora give {table} rows"
    for w, g in zip(want, got):
        differ = {col: (a, b) for col, a, b in zip(cols, g, w) if a != b}
        assert not differ, f"{table} differs: {differ}"
    assert len(got) == len(want)
