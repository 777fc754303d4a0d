"""The local verdict store: SQLite, one row per trajectory (its verdict JSON included). The file's
schema, ``connect`` and ``read_verdicts`` are in ``store_schema`` (importable from here too).

``SqliteSink`` writes on its own thread through the only writer connection (WAL journal, so
``otel-traj report`` can read while a service writes). ``export`` encodes the verdict (see
``prepare``) and queues it in a bounded queue: when the store falls behind, ``export`` blocks the
pipeline worker instead of dropping verdicts, the assembler fills, and the receiver answers with its
retryable status. ``shutdown`` ends that wait: as the SDK's batch processors, it writes what is queued
within its deadline and counts what it could not write. A trace graded again (a re-run with a new
policy) overwrites its row: the trace id is the key.

Sensitive argument values are masked before they are stored (``redact``: by default the secret-looking
keys; pass the policy's ``is_sensitive`` for its ``redact`` settings, or ``redact=False`` to keep them).
"""

from __future__ import annotations

import json
import logging
import sqlite3
import time
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import orjson

from otel_traj import env
from otel_traj.delivery import Delivery, Retry, backoff_delay
from otel_traj.forks import leave_to_parent
from otel_traj.redact import Redactor, SensitiveKey
from otel_traj.serialize import verdict_to_dict
from otel_traj.sinks.base import Sink
from otel_traj.sinks.store_conversations import ConversationRow, conversation_row, write_conversations
from otel_traj.sinks.store_judgements import JudgementRow, judgement_row, write_judgements
from otel_traj.sinks.store_schema import SCHEMA_VERSION, Query, StoreError, connect, read_verdicts
from otel_traj.verdict import Verdict

if TYPE_CHECKING:
    from otel_traj.conversations import ConversationVerdict
    from otel_traj.judge.result import JudgeResult

__all__ = [
    "SCHEMA_VERSION",
    "Prepared",
    "Query",
    "SqliteSink",
    "StoreError",
    "StoreSink",
    "connect",
    "prepare",
    "read_verdicts",
    "write_prepared",
    "write_verdicts",
]

logger = logging.getLogger("otel_traj.sinks.store")

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
_R = TypeVar("_R", JudgementRow, ConversationRow)


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
# sizes, largest first, so that a few statements, each prepared once, take any batch. Sizes that bind
# more variables than the connection allows are left out: SQLite before 3.32 allows 999 by default,
# and a build can lower it.
_UPSERT_ROWS = (256, 64, 16, 4, 1)
_UPSERTS = {rows: _upsert(rows) for rows in _UPSERT_ROWS}
UPSERT = _UPSERTS[1]
"""One verdict's upsert (``?`` parameters): the PostgreSQL store binds the same statement."""
_FAILED_ROWS = "SELECT " + ", ".join(f"json_extract(value, '$[{i}]')" for i in range(_CHECK_COLUMNS))
_DELETE_FAILED = "DELETE FROM failed_checks WHERE trace_id IN (SELECT value FROM json_each(?))"
_INSERT_FAILED = f"INSERT INTO failed_checks {_FAILED_ROWS} FROM json_each(?)"


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
Redact = SensitiveKey | Collection[str] | bool | None
"""What the store masks: None or True the secret-looking keys, a predicate (``Policy.is_sensitive``)
or key names as the Langfuse sink takes them, False nothing."""
DEFAULT_REDACTOR = Redactor()
_I = TypeVar("_I", Prepared, JudgementRow, ConversationRow)


def store_redactor(redact: Redact) -> Redactor | None:
    if redact is False:
        return None
    return DEFAULT_REDACTOR if redact is None or redact is True else Redactor(redact)


def prepare(verdict: Verdict, redactor: Redactor | None = DEFAULT_REDACTOR) -> Prepared:
    """The store's rows of a verdict. ``SqliteSink`` prepares each verdict as it is exported, while
    its objects are still in the CPU's caches: encoded by the writer in a batch of aged verdicts, the
    same verdicts took three times as long (their objects had to come back from memory). With
    ``redactor`` (None keeps every value), sensitive values are masked in the JSON and the reasons."""
    row = _row(verdict)
    data = verdict_to_dict(verdict, redactor)
    failed = [
        (row[0], i, c.name, c.status, c.severity, d["reason"], _json_text(c.steps))
        for i, (c, d) in enumerate(zip(verdict.checks, data["checks"], strict=True))
        if c.status == "fail"
    ]
    return (*row, _json_text(data)), failed


def write_prepared(conn: sqlite3.Connection, prepared: Sequence[Prepared]) -> None:
    """Upsert prepared verdicts (and replace their failed checks) in one transaction; of two verdicts
    for one trace, the later wins."""
    latest = list({row[0]: (row, failed) for row, failed in prepared}.values())
    rows = [row for row, _ in latest]
    failed_checks = [check for _, failed in latest for check in failed]
    limit = conn.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER)
    sizes = [n for n in _UPSERT_ROWS if n == 1 or n * len(_COLUMNS) <= limit]
    with conn:
        start = 0
        while start < len(rows):
            size = next(n for n in sizes if n <= len(rows) - start)
            conn.execute(_UPSERTS[size], [value for row in rows[start : start + size] for value in row])
            start += size
        # A trace graded again keeps none of its earlier failures.
        conn.execute(_DELETE_FAILED, (_json_text([row[0] for row in rows]),))
        if failed_checks:
            conn.execute(_INSERT_FAILED, (_json_text(failed_checks),))


def write_verdicts(conn: sqlite3.Connection, verdicts: Sequence[Verdict], redact: Redact = None) -> None:
    """``write_prepared`` of the verdicts, redacted as ``SqliteSink`` does."""
    redactor = store_redactor(redact)
    write_prepared(conn, [prepare(v, redactor) for v in verdicts])


# A writer that finds the database locked by another connection (an operator's ``sqlite3`` session,
# a backup) past the busy timeout tries the batch again after these waits, growing, instead of
# dropping verdicts it has acknowledged.
LOCKED_BACKOFF_S = (0.05, 2.0)
_LOCKED = (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
Item = Prepared | JudgementRow | ConversationRow


def _locked(exc: Exception) -> bool:
    return isinstance(exc, sqlite3.OperationalError) and (exc.sqlite_errorcode & 0xFF) in _LOCKED


class StoreSink(Sink):
    """What both store engines do alike: a verdict, a conversation's verdict or a judge's result
    becomes its rows here (``prepare``, redacted) and waits in the sink's ``Delivery`` for the writer.
    A subclass sets ``_redactor`` and ``_delivery`` and writes the rows (its delivery's ``deliver``)."""

    _redactor: Redactor | None
    _delivery: Delivery[Any]  # each engine's queue holds at least ``Item``s

    def export(self, verdict: Verdict) -> None:
        try:
            prepared = prepare(verdict, self._redactor)
        except Exception:  # a verdict that cannot be encoded costs only itself
            self.stats.count_sink_error(type(self).__name__)
            logger.exception("the verdict of trace %s cannot be stored", verdict.trajectory.trace_hex)
            return
        self._delivery.put(prepared)

    def on_judgement(self, result: JudgeResult) -> None:
        """An LLM judge's result, into the table ``judgements`` (see ``store_judgements``)."""
        self._delivery.put(judgement_row(result, self._redactor))

    def export_conversation(self, verdict: ConversationVerdict) -> None:
        """A conversation's verdict, into the table ``conversations`` (see ``store_conversations``); one
        that cannot be encoded raises, and the pipeline counts it as this sink's error."""
        self._delivery.put(conversation_row(verdict, self._redactor))

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Wait until everything exported so far is committed; False if that takes longer than
        ``timeout_millis`` (a locked database or a server away keeps it queued)."""
        return self._delivery.force_flush(timeout_millis)

    def shutdown(self, timeout_millis: int = 30_000) -> None:
        """Write what is queued and return within ``timeout_millis`` whatever the writer does. A
        writer still busy then finishes its batch on its own; what it has not taken is counted as
        dropped (``store_shutdown``)."""
        self._delivery.shutdown(timeout_millis)


class SqliteSink(StoreSink):
    """Persists every verdict in the SQLite store at ``path`` (created if missing).

    Args:
        path: the database file; default ``OTEL_TRAJ_STORE``, else ``./otel-traj.db`` (where
            ``otel-traj report`` reads).
        max_queue: verdicts waiting for the writer; beyond it ``export`` waits (no verdict is dropped
            before shutdown). Default ``OTEL_TRAJ_STORE_QUEUE``, else 10,000.
        batch_size: verdicts per transaction at most; a lone verdict is committed at once.
        redact: the argument values masked in what is stored: by default the secret-looking keys
            (as the Langfuse sink); the policy's ``is_sensitive`` adds its ``redact`` settings;
            ``False`` stores every value as it is.

    A database locked by another connection longer than the busy timeout (10 s) does not lose the
    batch: it waits at the head of the queue and is written again; meanwhile ``export`` waits for
    room as when the disk is slow. Any other error loses the batch, counted in
    ``otel_traj_dropped_total{reason="store"}``.
    """

    def __init__(
        self,
        *,
        path: str | Path | None = None,
        max_queue: int | None = None,
        batch_size: int = 500,
        redact: Redact = None,
    ) -> None:
        super().__init__()
        if max_queue is None:
            max_queue = env.STORE_QUEUE.read()
        self.path = Path(path if path is not None else env.STORE.read())
        self._redactor = store_redactor(redact)
        self.written = 0
        self._locked_attempts = 0  # consecutive batches that found the database locked
        # Opened here so that a bad path or a newer schema fails the constructor, not the thread.
        self._conn = connect(self.path)
        self._delivery: Delivery[Item] = Delivery(
            name="store",
            deliver=self._deliver,
            stats=self.stats,
            max_queue=max_queue,
            batch_size=batch_size,
            when_full="block",
            on_fork=self._reconnect,
            on_stop=self._close,
        )
        self.max_queue = max_queue
        self.batch_size = batch_size

    def _reconnect(self) -> None:
        """In a forked child: a connection of its own; the parent's must not even be closed here."""
        leave_to_parent(self._conn)
        self._conn = connect(self.path)

    def _close(self) -> None:
        self._conn.close()

    def _deliver(self, items: list[Item]) -> Retry[Item] | None:
        """Write a batch, each table in its transaction; what found the database locked is retried."""
        retry: list[Item] = []
        prepared = [i for i in items if isinstance(i, tuple)]
        if prepared:
            retry += self._write(prepared)
        judged = [i for i in items if isinstance(i, JudgementRow)]
        if judged:
            retry += self._write_rows("judgements", write_judgements, judged)
        talks = [i for i in items if isinstance(i, ConversationRow)]
        if talks:
            retry += self._write_rows("conversations", write_conversations, talks)
        if not retry:
            self._locked_attempts = 0
            return None
        self._locked_attempts += 1
        if self._locked_attempts == 1:
            logger.warning(
                "%s is locked by another connection; %d rows wait to be written", self.path, len(retry)
            )
        return Retry(retry, backoff_delay(self._locked_attempts - 1, *LOCKED_BACKOFF_S))

    def _write(self, prepared: list[Prepared]) -> list[Prepared]:
        """Commit ``prepared``; returns them if the database was locked, counts any other failure
        (the thread must outlive any batch)."""
        try:
            write_prepared(self._conn, prepared)
        except Exception as exc:
            return self._failed(exc, "verdicts", prepared)
        self.written += len(prepared)
        return []

    def _write_rows(
        self, table: str, write: Callable[[sqlite3.Connection, Sequence[_R]], None], rows: list[_R]
    ) -> list[_R]:
        try:
            write(self._conn, rows)
        except Exception as exc:
            return self._failed(exc, table, rows)
        return []

    def _failed(self, exc: Exception, what: str, rows: list[_I]) -> list[_I]:
        if self._delivery.abandoned:  # shutdown's deadline passed while this batch waited
            self.stats.count_dropped("store_shutdown", len(rows))
        elif _locked(exc):
            return rows
        else:
            self.stats.count_sink_error(type(self).__name__, len(rows))
            self.stats.count_dropped("store", len(rows))
            logger.error("writing %d %s to %s failed", len(rows), what, self.path, exc_info=exc)
        return []
