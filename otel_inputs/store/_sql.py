"""SQLite statements shared by the catalog and the import of the old layout (which the catalog runs
on its first open, so neither may import the other for them)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager

# Items a purge covers are marked purged (also when a stale writer commits the attempt again).
MARK_PURGED_ALL = ("UPDATE items SET artifact_status = CASE artifact_status WHEN 'available' THEN 'evicted' "
                   "ELSE artifact_status END, status_reason = 'purged' WHERE coalesce(status_reason, '') != 'purged' "
                   "AND EXISTS (SELECT 1 FROM purged p WHERE p.attempt_id = items.attempt_id "
                   "AND p.input_id IN ('', items.input_id))")
MARK_PURGED = MARK_PURGED_ALL + " AND attempt_id = ?"


@contextmanager
def transaction(con: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """``BEGIN IMMEDIATE`` … ``COMMIT``, rolled back on any exception."""
    con.execute("BEGIN IMMEDIATE")
    try:
        yield con
        con.execute("COMMIT")
    except BaseException:
        if con.in_transaction:
            con.execute("ROLLBACK")
        raise
