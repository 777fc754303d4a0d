"""The store's file: its schema and migrations, opening it, and reading verdicts from it.

Every check result is in the verdict JSON; ``check_results`` is a view that lists them as rows, and
``failed_checks`` holds the failed ones as a table, indexed by check name, which is what ``report
--failed`` reads. (Passes are most check results and nobody looks one up by name: as rows of a
table with two indexes they took nearly half the store's write time.)
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SCHEMA_VERSION = 4

_SCHEMA = """
CREATE TABLE IF NOT EXISTS trajectories (
    trace_id TEXT PRIMARY KEY,
    agent TEXT NOT NULL,
    service_name TEXT,
    service_version TEXT,
    conversation_id TEXT,
    outcome TEXT NOT NULL,
    score REAL NOT NULL,
    policy_version TEXT,
    complete INTEGER NOT NULL,
    started_ns INTEGER NOT NULL,
    ended_ns INTEGER NOT NULL,
    graded_ns INTEGER NOT NULL,
    verdict TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS trajectories_started ON trajectories (started_ns);
CREATE INDEX IF NOT EXISTS trajectories_agent ON trajectories (agent, started_ns);
CREATE INDEX IF NOT EXISTS trajectories_outcome ON trajectories (outcome, started_ns);
CREATE TABLE IF NOT EXISTS failed_checks (
    trace_id TEXT NOT NULL REFERENCES trajectories (trace_id) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    name TEXT NOT NULL,
    status TEXT NOT NULL,
    severity TEXT NOT NULL,
    reason TEXT NOT NULL,
    steps TEXT NOT NULL,
    PRIMARY KEY (trace_id, position)
);
CREATE INDEX IF NOT EXISTS failed_checks_name ON failed_checks (name);
CREATE VIEW IF NOT EXISTS check_results (trace_id, position, name, status, severity, reason, steps) AS
SELECT trajectories.trace_id, c.key, json_extract(c.value, '$.name'), json_extract(c.value, '$.status'),
       json_extract(c.value, '$.severity'), json_extract(c.value, '$.reason'),
       json_extract(c.value, '$.steps')
FROM trajectories, json_each(trajectories.verdict, '$.checks') AS c;
CREATE TABLE IF NOT EXISTS conversations (
    conversation_id TEXT NOT NULL,
    first_trace_id TEXT NOT NULL,
    agent TEXT NOT NULL,
    outcome TEXT NOT NULL,
    score REAL NOT NULL,
    policy_version TEXT,
    complete INTEGER NOT NULL,
    traces INTEGER NOT NULL,
    started_ns INTEGER NOT NULL,
    ended_ns INTEGER NOT NULL,
    graded_ns INTEGER NOT NULL,
    verdict TEXT NOT NULL,
    PRIMARY KEY (conversation_id, first_trace_id)
);
CREATE INDEX IF NOT EXISTS conversations_started ON conversations (started_ns);
CREATE TABLE IF NOT EXISTS open_conversations (
    conversation_id TEXT PRIMARY KEY,
    due_ns INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS open_conversations_due ON open_conversations (due_ns);
CREATE TABLE IF NOT EXISTS conversation_traces (
    conversation_id TEXT NOT NULL,
    trace_id TEXT NOT NULL,
    summary TEXT NOT NULL,
    PRIMARY KEY (conversation_id, trace_id)
);
"""
# From each older version to the next. Version 1 kept every check result as a row of the table
# ``check_results``: its failed rows become ``failed_checks``, the view takes the name. Version 2 had
# no ``conversations`` table (``_SCHEMA`` creates it; ``store_conversations`` writes and reads it).
# Version 3 had no ``open_conversations`` and ``conversation_traces`` (the conversations a fleet
# holds in a PostgreSQL store, ``store_claims``; a SQLite store has them, empty).
_MIGRATIONS = {
    1: """
DROP INDEX check_results_failed;
ALTER TABLE check_results RENAME TO failed_checks;
DELETE FROM failed_checks WHERE status <> 'fail';
""",
    2: "",
    3: "",
}


class StoreError(RuntimeError):
    """The file is not a store this version can read."""


def connect(path: str | Path, readonly: bool = False) -> sqlite3.Connection:
    """Open (and for writers create or migrate) the store at ``path``.

    A reader (``readonly``) never creates, migrates or writes the store, and leaves no ``-wal`` or
    ``-shm`` file behind: reading a WAL database creates both, and only a connection that may write
    removes them when it is the last to close. So the reader opens the file for writing where the
    file allows it (``mode=rw``, which never creates it) and refuses every statement that would write
    (``query_only``); a write-protected file is opened read-only.
    """
    if readonly:
        if not Path(path).exists():
            raise StoreError(f"{path}: no such store")
        uri = Path(path).resolve().as_uri()
        conn = sqlite3.connect(f"{uri}?mode=rw", uri=True, timeout=10.0)
        conn.execute("PRAGMA query_only=ON")
    else:
        conn = sqlite3.connect(path, timeout=10.0, check_same_thread=False)
        conn.execute("PRAGMA journal_mode=WAL")
        # NORMAL is durable across process crashes in WAL mode; only a power cut can lose the last
        # commits, which a re-sent trace would grade again anyway.
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA foreign_keys=ON")
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version > SCHEMA_VERSION:
        conn.close()
        raise StoreError(f"{path}: schema version {version} is newer than this otel-traj ({SCHEMA_VERSION})")
    if not readonly and version < SCHEMA_VERSION:
        # One transaction: a store is migrated whole or not at all.
        # A new file (version 0) gets the schema only.
        steps = [_MIGRATIONS[v] for v in range(version, SCHEMA_VERSION)] if version else []
        try:
            conn.executescript(
                f"BEGIN; {''.join(steps)} {_SCHEMA} PRAGMA user_version={SCHEMA_VERSION}; COMMIT;"
            )
        except sqlite3.Error:
            conn.close()  # rolls the migration back
            raise
    return conn


@dataclass(slots=True, frozen=True)
class Query:
    """Filters of ``read_verdicts``; ``since_ns`` compares with the run's start time; ``failed``: runs
    in which the check of that name failed (``scope``, ``case.tool_selection``, ...); ``equal``:
    (column, value) pairs a run's indexed columns must hold (``COLUMN_FILTERS``)."""

    since_ns: int | None = None
    agent: str | None = None
    outcome: str | None = None
    failed: str | None = None
    limit: int | None = None
    equal: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        for column, _ in self.equal:
            if column not in COLUMN_FILTERS:
                raise ValueError(f"equal: {column!r} is not one of {', '.join(COLUMN_FILTERS)}")


# The columns of ``trajectories`` a query may compare with a value (the verdict's fields of the same
# name); each is indexed in a PostgreSQL store.
COLUMN_FILTERS = ("agent", "service_name", "service_version", "conversation_id")


def _failed_table(conn: sqlite3.Connection) -> str:
    """Where failed checks are rows: ``failed_checks``, or in a version-1 store (read-only
    connections do not migrate) its table ``check_results``; both indexed by check name."""
    found = conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'failed_checks'").fetchone()
    return "failed_checks" if found else "check_results"


def select_verdicts(
    table: str, filters: Iterable[tuple[str, Any]], order: str, limit: int | None
) -> tuple[str, list[Any]]:
    """``SELECT verdict FROM table`` with the filters whose value is not None (each clause takes its
    value as its one parameter) and at most ``limit`` rows, ordered by ``order``: the SQL and its
    parameters."""
    where: list[str] = []
    params: list[Any] = []
    for clause, value in filters:
        if value is not None:
            where.append(clause)
            params.append(value)
    sql = f"SELECT verdict FROM {table}"
    if where:
        sql += " WHERE " + " AND ".join(where)
    sql += f" ORDER BY {order}"
    if limit is not None:
        sql += " LIMIT ?"
        params.append(limit)
    return sql, params


def verdicts_sql(query: Query, failed_table: str = "failed_checks") -> tuple[str, list[Any]]:
    """The SQL (``?`` parameters) and parameters of ``read_verdicts``, for either engine."""
    failed = ""
    if query.failed is not None:
        failed = f"trace_id IN (SELECT trace_id FROM {failed_table} WHERE name = ? AND status = 'fail')"
    filters = (
        ("started_ns >= ?", query.since_ns),
        ("agent = ?", query.agent),
        ("outcome = ?", query.outcome),
        (failed, query.failed),
        *((f"{column} = ?", value) for column, value in query.equal),
    )
    return select_verdicts("trajectories", filters, "started_ns, trace_id", query.limit)


def read_verdicts(conn: sqlite3.Connection, query: Query | None = None) -> Iterator[dict[str, Any]]:
    """Stored verdicts as ``verdict_to_dict`` shapes, oldest run first."""
    query = query or Query()
    table = _failed_table(conn) if query.failed is not None else "failed_checks"
    sql, params = verdicts_sql(query, table)
    for (text,) in conn.execute(sql, params):
        yield json.loads(text)
