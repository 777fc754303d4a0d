"""The fleet store on PostgreSQL: its schema and migrations, and opening it.

The tables and columns are the SQLite store's (``store_schema``), at the same ``SCHEMA_VERSION``:
``trajectories`` (one row per trace, its verdict JSON as text, exactly as SQLite keeps it),
``failed_checks``, ``conversations`` and ``judgements``; the version is the one row of
``otel_traj_schema``. The verdict stays text rather than ``jsonb``: ``jsonb`` reorders keys and
refuses what the verdict JSON may hold (``\\u0000``, escaped lone surrogates), and the report reads
the text back as it was written. PostgreSQL has the indexes the report's and the gate's filters use
(time, agent, outcome, failed check, service and its version, policy version, conversation).

Replicas starting together each migrate under one transaction-scoped advisory lock: the first creates
or migrates, the others wait for its commit and find the current version.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from otel_traj.sinks.store_schema import SCHEMA_VERSION, StoreError

if TYPE_CHECKING:
    import psycopg

logger = logging.getLogger("otel_traj.sinks.store")

SCHEMES = ("postgresql", "postgres")
# pg_advisory_xact_lock's key: the bytes "otel-trj" as a signed 64-bit integer.
MIGRATION_LOCK = int.from_bytes(b"otel-trj", "big", signed=True)
CONNECT_TIMEOUT_S = 10

_SCHEMA = """
CREATE TABLE IF NOT EXISTS otel_traj_schema (version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS trajectories (
    trace_id TEXT PRIMARY KEY,
    agent TEXT NOT NULL,
    service_name TEXT,
    service_version TEXT,
    conversation_id TEXT,
    outcome TEXT NOT NULL,
    score DOUBLE PRECISION NOT NULL,
    policy_version TEXT,
    complete INTEGER NOT NULL,
    started_ns BIGINT NOT NULL,
    ended_ns BIGINT NOT NULL,
    graded_ns BIGINT NOT NULL,
    verdict TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS trajectories_started ON trajectories (started_ns);
CREATE INDEX IF NOT EXISTS trajectories_agent ON trajectories (agent, started_ns);
CREATE INDEX IF NOT EXISTS trajectories_outcome ON trajectories (outcome, started_ns);
CREATE INDEX IF NOT EXISTS trajectories_service ON trajectories (service_name, service_version, started_ns);
CREATE INDEX IF NOT EXISTS trajectories_service_version ON trajectories (service_version, started_ns);
CREATE INDEX IF NOT EXISTS trajectories_policy ON trajectories (policy_version, started_ns);
CREATE INDEX IF NOT EXISTS trajectories_conversation ON trajectories (conversation_id);
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
CREATE TABLE IF NOT EXISTS conversations (
    conversation_id TEXT NOT NULL,
    first_trace_id TEXT NOT NULL,
    agent TEXT NOT NULL,
    outcome TEXT NOT NULL,
    score DOUBLE PRECISION NOT NULL,
    policy_version TEXT,
    complete INTEGER NOT NULL,
    traces INTEGER NOT NULL,
    started_ns BIGINT NOT NULL,
    ended_ns BIGINT NOT NULL,
    graded_ns BIGINT NOT NULL,
    verdict TEXT NOT NULL,
    PRIMARY KEY (conversation_id, first_trace_id)
);
CREATE INDEX IF NOT EXISTS conversations_started ON conversations (started_ns);
CREATE TABLE IF NOT EXISTS judgements (
    trace_id TEXT NOT NULL,
    judge TEXT NOT NULL,
    agent TEXT NOT NULL,
    model TEXT NOT NULL,
    score DOUBLE PRECISION NOT NULL,
    label TEXT NOT NULL,
    explanation TEXT NOT NULL,
    severity TEXT NOT NULL,
    source TEXT NOT NULL,
    policy_version TEXT,
    judged_ns BIGINT NOT NULL,
    PRIMARY KEY (trace_id, judge)
);
CREATE INDEX IF NOT EXISTS judgements_judged ON judgements (judged_ns);
CREATE TABLE IF NOT EXISTS open_conversations (
    conversation_id TEXT PRIMARY KEY,
    due_ns BIGINT NOT NULL
);
CREATE INDEX IF NOT EXISTS open_conversations_due ON open_conversations (due_ns);
CREATE TABLE IF NOT EXISTS conversation_traces (
    conversation_id TEXT NOT NULL,
    trace_id TEXT NOT NULL,
    summary TEXT NOT NULL,
    PRIMARY KEY (conversation_id, trace_id)
);
"""
# From each older version to the next (version 3 was the first on PostgreSQL; version 4 adds the
# tables of the conversations a fleet holds, which ``_SCHEMA`` creates). A new version adds its step
# here and in ``store_schema``'s migrations alike.
_MIGRATIONS: dict[int, str] = {3: ""}


def is_postgres(target: object) -> bool:
    """Whether a store target (``--store``, ``OTEL_TRAJ_STORE``) names a PostgreSQL database."""
    return isinstance(target, str) and urlsplit(target).scheme in SCHEMES


def require_driver(url: str) -> None:
    """Raises ``StoreError`` saying how to install psycopg when it is missing (a PostgreSQL store
    named where only SQLite can be used)."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        raise StoreError(
            f"{shown(url)}: a PostgreSQL store needs psycopg: pip install 'otel-traj[postgres]'"
        ) from None


def shown(url: str) -> str:
    """The URL with its password masked, for messages and logs."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


def pg_sql(sql: str) -> str:
    """A statement written with SQLite's ``?`` parameters, with psycopg's ``%s`` (the shared
    statements hold no other ``?`` or ``%``)."""
    return sql.replace("?", "%s")


def connect(url: str, readonly: bool = False) -> psycopg.Connection[Any]:
    """A connection to the store at ``url`` (autocommit: each write takes its own transaction).

    A writer creates or migrates the schema first; a reader's connection refuses to write
    (``default_transaction_read_only``) and migrates nothing. Raises :class:`StoreError` for a
    database whose schema is newer than this otel-traj, or (reader) that holds no store, and
    ``psycopg.OperationalError`` when the server cannot be reached.
    """
    import psycopg

    if readonly:
        conn = psycopg.connect(
            url,
            autocommit=True,
            connect_timeout=CONNECT_TIMEOUT_S,
            options="-c default_transaction_read_only=on",
        )
    else:
        conn = psycopg.connect(url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S)
    try:
        if readonly:
            version = _version(conn)
            if version == 0:
                raise StoreError(f"{shown(url)}: no otel-traj store in this database")
            _check(url, version)
        else:
            _migrate(conn, url)
    except BaseException:
        conn.close()
        raise
    return conn


def _version(conn: psycopg.Connection[Any]) -> int:
    found = conn.execute("SELECT to_regclass('otel_traj_schema') IS NOT NULL").fetchone()
    if not found or not found[0]:
        return 0
    row = conn.execute("SELECT max(version) FROM otel_traj_schema").fetchone()
    return int(row[0]) if row and row[0] is not None else 0


def _check(url: str, version: int) -> None:
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"{shown(url)}: schema version {version} is newer than this otel-traj ({SCHEMA_VERSION})"
        )


def _migrate(conn: psycopg.Connection[Any], url: str) -> None:
    """Bring the schema to ``SCHEMA_VERSION`` in one transaction, under the advisory lock."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
        version = _version(conn)
        _check(url, version)
        if version == SCHEMA_VERSION:
            return
        steps = [_MIGRATIONS[v] for v in range(version, SCHEMA_VERSION)] if version else []
        for step in [*steps, _SCHEMA]:
            if step:
                conn.execute(step.encode())
        conn.execute("DELETE FROM otel_traj_schema")
        conn.execute("INSERT INTO otel_traj_schema (version) VALUES (%s)", (SCHEMA_VERSION,))
        logger.info("%s: store schema at version %d (was %d)", shown(url), SCHEMA_VERSION, version)
