"""Reading a store of either engine: ``open_store(target)`` for a SQLite file or a ``postgresql://``
URL, and the same questions of both (``report``, ``policy suggest``, ``gate``).

The queries are the SQLite store's (``verdicts_sql``, ``conversations_sql``), with psycopg's
parameters on PostgreSQL; only what the engines say differently is written twice: a conversation's
failed check (SQLite's ``json_each``, PostgreSQL's ``json_array_elements``) and "one of these trace
ids".
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from otel_traj.sinks.store_conversations import conversations_sql, read_conversations
from otel_traj.sinks.store_judgements import COLUMNS as JUDGEMENT_COLUMNS
from otel_traj.sinks.store_judgements import read_judgements
from otel_traj.sinks.store_postgres_schema import is_postgres, pg_sql, require_driver, shown
from otel_traj.sinks.store_schema import Query, connect, read_verdicts, verdicts_sql

if TYPE_CHECKING:
    import psycopg

__all__ = ["StoreReader", "open_store", "read_errors", "store_name"]

_PG_FAILED_CONVERSATION = (
    "EXISTS (SELECT 1 FROM json_array_elements(verdict::json -> 'checks') AS c "
    "WHERE c ->> 'name' = ? AND c ->> 'status' = 'fail')"
)


class StoreReader(Protocol):
    """A read-only connection to a store; ``name`` is what messages call it (a URL without its
    password)."""

    name: str

    def verdicts(self, query: Query | None = None) -> list[dict[str, Any]]: ...
    def conversations(self, query: Query | None = None) -> list[dict[str, Any]]: ...
    def trajectories(self, trace_ids: Sequence[str]) -> list[dict[str, Any]]: ...
    def judgements(self, trace_id: str | None = None) -> list[dict[str, Any]]: ...
    def close(self) -> None: ...


def read_errors(*also: type[Exception]) -> tuple[type[Exception], ...]:
    """What a read may raise besides ``StoreError``: the engines' errors (psycopg's only where it is
    installed), and ``also``."""
    try:
        import psycopg
    except ImportError:
        return (sqlite3.Error, OSError, *also)
    return (sqlite3.Error, OSError, psycopg.Error, *also)


def store_name(target: str | Path) -> str:
    """What messages call a store: its path, or its URL without the password."""
    return shown(target) if isinstance(target, str) and is_postgres(target) else str(target)


def open_store(target: str | Path) -> StoreReader:
    """A reader of the store at ``target``. Raises ``StoreError`` (no such store, a newer schema, no
    driver for PostgreSQL) or one of ``read_errors()``."""
    if isinstance(target, str) and is_postgres(target):
        require_driver(target)
        from otel_traj.sinks.store_postgres_schema import connect as pg_connect

        return PostgresReader(pg_connect(target, readonly=True), shown(target))
    return SqliteReader(connect(target, readonly=True), str(target))


class SqliteReader:
    def __init__(self, conn: sqlite3.Connection, name: str) -> None:
        self.conn = conn
        self.name = name

    def verdicts(self, query: Query | None = None) -> list[dict[str, Any]]:
        return list(read_verdicts(self.conn, query))

    def conversations(self, query: Query | None = None) -> list[dict[str, Any]]:
        return read_conversations(self.conn, query)

    def trajectories(self, trace_ids: Sequence[str]) -> list[dict[str, Any]]:
        sql = "SELECT verdict FROM trajectories WHERE trace_id IN (SELECT value FROM json_each(?))"
        return [json.loads(text) for (text,) in self.conn.execute(sql, (json.dumps(list(trace_ids)),))]

    def judgements(self, trace_id: str | None = None) -> list[dict[str, Any]]:
        return read_judgements(self.conn, trace_id)

    def close(self) -> None:
        self.conn.close()


class PostgresReader:
    def __init__(self, conn: psycopg.Connection[Any], name: str) -> None:
        self.conn = conn
        self.name = name

    def _texts(self, sql: str, params: Sequence[Any]) -> list[dict[str, Any]]:
        return [json.loads(text) for (text,) in self.conn.execute(pg_sql(sql).encode(), params)]

    def verdicts(self, query: Query | None = None) -> list[dict[str, Any]]:
        return self._texts(*verdicts_sql(query or Query()))

    def conversations(self, query: Query | None = None) -> list[dict[str, Any]]:
        return self._texts(*conversations_sql(query or Query(), _PG_FAILED_CONVERSATION))

    def trajectories(self, trace_ids: Sequence[str]) -> list[dict[str, Any]]:
        return self._texts("SELECT verdict FROM trajectories WHERE trace_id = ANY(?)", (list(trace_ids),))

    def judgements(self, trace_id: str | None = None) -> list[dict[str, Any]]:
        where, args = ("WHERE trace_id = %s", (trace_id,)) if trace_id is not None else ("", ())
        sql = f"SELECT {', '.join(JUDGEMENT_COLUMNS)} FROM judgements {where} ORDER BY judged_ns"
        return [
            dict(zip(JUDGEMENT_COLUMNS, row, strict=True)) for row in self.conn.execute(sql.encode(), args)
        ]

    def close(self) -> None:
        self.conn.close()
