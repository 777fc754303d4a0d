"""The local verdict store: SQLite, one row per trajectory (its verdict JSON included).

Every check result is in the verdict JSON; ``check_results`` is a view that lists them as rows, and
``failed_checks`` holds the failed ones as a table, indexed by check name, which is what ``report
--failed`` reads. (Passes are most check results and nobody looks one up by name: as rows of a
table with two indexes they took nearly half the store's write time.)

``SqliteSink`` writes on its own thread through the only writer connection (WAL journal, so
``otel-traj report`` can read while a service writes). ``export`` encodes the verdict (see
``prepare``) and queues it in a bounded queue: when the store falls behind, ``export`` blocks the
pipeline worker instead of dropping verdicts, the assembler fills, and the receiver answers with its
retryable status. A trace graded again (a re-run with a new policy) overwrites its row: the trace id
is the key.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
import time
from collections import deque
from collections.abc import Iterator, Sequence
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from otel_traj.forks import after_fork_in_child, leave_to_parent, start_daemon
from otel_traj.serialize import verdict_to_dict
from otel_traj.sinks.base import Sink
from otel_traj.verdict import Verdict

logger = logging.getLogger("otel_traj.sinks.store")

SCHEMA_VERSION = 2

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
"""
# From each older version to the next. Version 1 kept every check result as a row of the table
# ``check_results``: its failed rows become ``failed_checks``, the view takes the name.
_MIGRATIONS = {
    1: """
DROP INDEX check_results_failed;
ALTER TABLE check_results RENAME TO failed_checks;
DELETE FROM failed_checks WHERE status <> 'fail';
""",
}

_COLUMNS = (
    "trace_id",
    "agent",
    "service_name",
    "service_version",
    "conversation_id",
    "outcome",
    "score",
    "policy_version",
    "complete",
    "started_ns",
    "ended_ns",
    "graded_ns",
    "verdict",
)
_CHECK_COLUMNS = 7


def _upsert(rows: int) -> str:
    values = ", ".join(["(" + ", ".join("?" * len(_COLUMNS)) + ")"] * rows)
    return (
        f"INSERT INTO trajectories ({', '.join(_COLUMNS)}) VALUES {values} "
        f"ON CONFLICT (trace_id) DO UPDATE SET {', '.join(f'{c} = excluded.{c}' for c in _COLUMNS[1:])}"
    )


# Each statement writes many rows, so SQLite does a batch in a few calls outside the interpreter lock:
# row by row (executemany), each row releases and re-takes the lock, and while the service receives
# and grades, every re-take waits for the threads that hold it. The rows' values are bound as they
# are (a batch as one JSON array, as the failed checks go, made SQLite parse them back and copy each
# verdict's text twice more: 15% more of the store's time). A batch is cut into statements of these
# sizes, largest first, so that five statements, each prepared once, take any batch.
_UPSERT_ROWS = (256, 64, 16, 4, 1)
_UPSERTS = {rows: _upsert(rows) for rows in _UPSERT_ROWS}
_FAILED_ROWS = "SELECT " + ", ".join(f"json_extract(value, '$[{i}]')" for i in range(_CHECK_COLUMNS))
_DELETE_FAILED = "DELETE FROM failed_checks WHERE trace_id IN (SELECT value FROM json_each(?))"
_INSERT_FAILED = f"INSERT INTO failed_checks {_FAILED_ROWS} FROM json_each(?)"


class StoreError(RuntimeError):
    """The file is not a store this version can read."""


def connect(path: str | Path, readonly: bool = False) -> sqlite3.Connection:
    """Open (and for writers create or migrate) the store at ``path``."""
    if readonly:
        if not Path(path).exists():
            raise StoreError(f"{path}: no such store")
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10.0)
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


def _json_text(data: Any) -> str:
    """Compact JSON text. orjson encodes a verdict in a third of the standard encoder's time (the
    store's largest cost); the standard encoder takes what orjson refuses (integers beyond 64 bits,
    keys that are not strings, strings with lone surrogates, e.g. file names decoded with
    ``surrogateescape``). Its output is ASCII: such strings travel as escapes and read back as they were
    instead of failing the UTF-8 encoding on their way into SQLite."""
    try:
        return orjson.dumps(data, default=str).decode()
    except TypeError:
        return json.dumps(data, separators=(",", ":"), default=str)


def _column_text(value: str | None) -> str | None:
    """Text for an indexed column: valid UTF-8 even when the value holds lone surrogates (such text
    cannot be bound: it has no UTF-8 encoding); the verdict JSON keeps them exactly."""
    if value is None or value.isascii():
        return value
    return value.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


def _row(verdict: Verdict) -> tuple[Any, ...]:
    """The indexed columns of a verdict's row."""
    traj = verdict.trajectory
    return (
        traj.trace_hex,
        _column_text(traj.agent_label),
        _column_text(traj.service_name),
        _column_text(traj.service_version),
        _column_text(traj.conversation_id),
        verdict.outcome,
        verdict.score,
        verdict.policy_version,
        int(traj.complete),
        traj.start_ns,
        traj.end_ns,
        verdict.graded_at_ns or time.time_ns(),
    )


# What a verdict becomes in the store: its row (the columns of ``trajectories``, its verdict JSON
# last) and its failed checks.
Prepared = tuple[tuple[Any, ...], list[tuple[Any, ...]]]


def prepare(verdict: Verdict) -> Prepared:
    """The store's rows of a verdict. ``SqliteSink`` prepares each verdict as it is exported, while
    its objects are still in the CPU's caches: encoded by the writer in a batch of aged verdicts, the
    same verdicts took three times as long (their objects had to come back from memory)."""
    row = _row(verdict)
    failed = [
        (row[0], i, c.name, c.status, c.severity, c.reason, _json_text(c.steps))
        for i, c in enumerate(verdict.checks)
        if c.status == "fail"
    ]
    return (*row, _json_text(verdict_to_dict(verdict))), failed


def write_prepared(conn: sqlite3.Connection, prepared: Sequence[Prepared]) -> None:
    """Upsert prepared verdicts (and replace their failed checks) in one transaction; of two verdicts
    for one trace, the later wins."""
    latest = list({row[0]: (row, failed) for row, failed in prepared}.values())
    rows = [row for row, _ in latest]
    failed_checks = [check for _, failed in latest for check in failed]
    with conn:
        start = 0
        while start < len(rows):
            size = next(n for n in _UPSERT_ROWS if n <= len(rows) - start)
            conn.execute(_UPSERTS[size], [value for row in rows[start : start + size] for value in row])
            start += size
        # A trace graded again keeps none of its earlier failures.
        conn.execute(_DELETE_FAILED, (_json_text([row[0] for row in rows]),))
        if failed_checks:
            conn.execute(_INSERT_FAILED, (_json_text(failed_checks),))


def write_verdicts(conn: sqlite3.Connection, verdicts: Sequence[Verdict]) -> None:
    """``write_prepared`` of the verdicts."""
    write_prepared(conn, [prepare(v) for v in verdicts])


@dataclass(slots=True, frozen=True)
class Query:
    """Filters of ``read_verdicts``; ``since_ns`` compares with the run's start time; ``failed``: runs
    in which the check of that name failed (``scope``, ``case.tool_selection``, ...)."""

    since_ns: int | None = None
    agent: str | None = None
    outcome: str | None = None
    failed: str | None = None
    limit: int | None = None


def _failed_table(conn: sqlite3.Connection) -> str:
    """Where failed checks are rows: ``failed_checks``, or in a version-1 store (read-only
    connections do not migrate) its table ``check_results``; both indexed by check name."""
    found = conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'failed_checks'").fetchone()
    return "failed_checks" if found else "check_results"


def read_verdicts(conn: sqlite3.Connection, query: Query | None = None) -> Iterator[dict[str, Any]]:
    """Stored verdicts as ``verdict_to_dict`` shapes, oldest run first."""
    query = query or Query()
    where: list[str] = []
    params: list[Any] = []
    if query.since_ns is not None:
        where.append("started_ns >= ?")
        params.append(query.since_ns)
    if query.agent is not None:
        where.append("agent = ?")
        params.append(query.agent)
    if query.outcome is not None:
        where.append("outcome = ?")
        params.append(query.outcome)
    if query.failed is not None:
        table = _failed_table(conn)
        where.append(f"trace_id IN (SELECT trace_id FROM {table} WHERE name = ? AND status = 'fail')")
        params.append(query.failed)
    sql = "SELECT verdict FROM trajectories"
    if where:
        sql += " WHERE " + " AND ".join(where)
    sql += " ORDER BY started_ns, trace_id"
    if query.limit is not None:
        sql += " LIMIT ?"
        params.append(query.limit)
    for (text,) in conn.execute(sql, params):
        yield json.loads(text)


_STOP = object()


class SqliteSink(Sink):
    """Persists every verdict in the SQLite store at ``path`` (created if missing).

    Args:
        path: the database file.
        max_queue: verdicts waiting for the writer; beyond it ``export`` waits (no verdict is dropped).
        batch_size: verdicts per transaction at most; a lone verdict is committed at once.
    """

    def __init__(self, path: str | Path, max_queue: int = 10_000, batch_size: int = 500) -> None:
        super().__init__()
        if max_queue < 1 or batch_size < 1:
            raise ValueError(f"max_queue={max_queue}, batch_size={batch_size}: must be at least 1")
        self.path = Path(path)
        self.max_queue = max_queue
        self.batch_size = batch_size
        # Opened here so that a bad path or a newer schema fails the constructor, not the thread.
        self._conn = connect(self.path)
        self._start_writer()
        self._closed = False
        self.written = 0
        after_fork_in_child(self._restart_in_child)

    def _start_writer(self) -> None:
        # Prepared verdicts, flush markers and the stop marker, in order. A deque and an event instead of a
        # ``queue.Queue``: its put and get are Python code taking a condition's lock each time (2.5 µs
        # of the interpreter's time per verdict, measured); here the writer is woken once per burst.
        self._pending: deque[Any] = deque()
        self._wake = threading.Event()
        self._room = threading.Condition()
        self._thread = start_daemon(self._run, "otel-traj-sqlite")

    def _restart_in_child(self) -> None:
        """In a forked child: a connection, queue and writer of its own; what the parent queued is
        the parent's to write, and its connection must not even be closed here."""
        leave_to_parent(self._conn)
        self._pending = deque()
        if self._closed:
            return
        try:
            self._conn = connect(self.path)
        except (sqlite3.Error, StoreError, OSError):
            logger.exception("the store %s cannot be opened in this forked process", self.path)
            self._closed = True
            return
        self._start_writer()

    def _enqueue(self, item: Any) -> None:
        self._pending.append(item)
        if not self._wake.is_set():
            self._wake.set()

    def export(self, verdict: Verdict) -> None:
        if self._closed:
            self.stats.count_dropped("store_closed")
            return
        try:
            prepared = prepare(verdict)
        except Exception:  # a verdict that cannot be encoded costs only itself
            self.stats.count_sink_error(type(self).__name__)
            logger.exception("the verdict of trace %s cannot be stored", verdict.trajectory.trace_hex)
            return
        if len(self._pending) >= self.max_queue:
            with self._room:
                # The writer notifies as it takes verdicts; the timeout re-checks that it still lives.
                while len(self._pending) >= self.max_queue and self._thread.is_alive():
                    self._room.wait(1.0)
        self._enqueue(prepared)

    def _run(self) -> None:
        pending = self._pending
        with closing(self._conn):
            while True:
                self._wake.wait()
                self._wake.clear()
                while pending:
                    items = [pending.popleft() for _ in range(min(len(pending), self.batch_size))]
                    with self._room:
                        self._room.notify_all()
                    prepared = [i for i in items if isinstance(i, tuple)]
                    if prepared:
                        self._write(prepared)
                    for i in items:
                        if isinstance(i, threading.Event):
                            i.set()
                    if any(i is _STOP for i in items):
                        return

    def _write(self, prepared: list[Prepared]) -> None:
        """Commit ``prepared``, counting what fails; never raises (the thread must outlive any batch)."""
        try:
            write_prepared(self._conn, prepared)
        except Exception:
            self.stats.count_sink_error(type(self).__name__, len(prepared))
            logger.exception("writing %d verdicts to %s failed", len(prepared), self.path)
        else:
            self.written += len(prepared)

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Wait until every verdict exported so far is committed."""
        if not self._thread.is_alive():
            return True
        done = threading.Event()
        self._enqueue(done)
        return done.wait(timeout_millis / 1000)

    def shutdown(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._enqueue(_STOP)
        self._thread.join()
