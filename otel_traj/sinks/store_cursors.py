"""Backfill cursors in the store: per source and project, the start of the newest trace graded, so
``otel-traj backfill --since last`` continues where the previous run stopped.

A table of its own, created by the first write (``CREATE TABLE IF NOT EXISTS``): it changes neither
the schema version nor the other tables, and a store written before it reads as having no cursor.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from otel_traj.sinks.store_schema import connect

_TABLE = """
CREATE TABLE IF NOT EXISTS backfill_cursors (
    source TEXT NOT NULL,
    project TEXT NOT NULL,
    newest_ns INTEGER NOT NULL,
    updated_ns INTEGER NOT NULL,
    PRIMARY KEY (source, project)
)
"""


def read_cursor(path: str | Path, source: str, project: str) -> int | None:
    """The cursor of ``project`` at ``source`` (nanoseconds), None when there is none yet."""
    if not Path(path).exists():
        return None
    conn = connect(path, readonly=True)
    try:
        row = conn.execute(
            "SELECT newest_ns FROM backfill_cursors WHERE source = ? AND project = ?", (source, project)
        ).fetchone()
    except sqlite3.OperationalError:
        return None  # no cursor was ever written to this store
    finally:
        conn.close()
    return int(row[0]) if row else None


def write_cursor(path: str | Path, source: str, project: str, newest_ns: int) -> None:
    """Set the cursor of ``project`` at ``source``; it never moves back."""
    conn = connect(path)
    try:
        with conn:
            conn.execute(_TABLE)
            conn.execute(
                "INSERT INTO backfill_cursors (source, project, newest_ns, updated_ns) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (source, project) DO UPDATE SET newest_ns = max(newest_ns, excluded.newest_ns), "
                "updated_ns = excluded.updated_ns",
                (source, project, newest_ns, time.time_ns()),
            )
    finally:
        conn.close()
