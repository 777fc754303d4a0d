"""The fleet store: every replica's verdicts, conversations and judge results in one PostgreSQL
database (``postgresql://user:pass@host:port/db``), in the SQLite store's tables and rows.

``PostgresSink`` is ``SqliteSink``'s sibling: the same rows (``prepare``, ``conversation_row``,
``judgement_row``), the same upserts, on the delivery component's thread. What differs is what an
outage means. A SQLite file is local, and a slow disk should slow the pipeline down (backpressure);
a database server is shared and may be away for minutes, and the replicas must keep grading and
exporting to Prometheus and Langfuse meanwhile. So ``export`` never waits: verdicts wait in the
bounded queue while the server is unreachable, the batch at its head is tried again with backoff
(and the connection opened again, the schema migrated if needed), and what the queue cannot hold,
oldest first, is counted as ``otel_traj_dropped_total{reason="store"}``, as is a batch the server
refuses (a constraint, a value it cannot take).

A run delivered twice (to two replicas, or replayed) is one row: the upsert's key is the trace id,
and the same trace graded with the same policy writes the same row again.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from otel_traj import env
from otel_traj.delivery import Delivery, Retry, backoff_delay
from otel_traj.forks import leave_to_parent
from otel_traj.redact import Redactor
from otel_traj.sinks.store import UPSERT, Item, Prepared, Redact, StoreSink, store_redactor
from otel_traj.sinks.store_claims import SummaryRow, hold
from otel_traj.sinks.store_conversations import UPSERT as CONVERSATION_UPSERT
from otel_traj.sinks.store_conversations import ConversationRow
from otel_traj.sinks.store_judgements import UPSERT as JUDGEMENT_UPSERT
from otel_traj.sinks.store_judgements import JudgementRow
from otel_traj.sinks.store_postgres_schema import connect, pg_sql, shown
from otel_traj.sinks.store_retention import EVERY_S, Retention, prune

if TYPE_CHECKING:
    import psycopg


logger = logging.getLogger("otel_traj.sinks.store")

# Items lost: to the queue's cap while the server is away and to writes it refused, at shutdown's
# deadline, and exported after shutdown.
DROP_LOST = "store"
DROP_SHUTDOWN = "store_shutdown"
DROP_CLOSED = "store_closed"
# Between attempts to reach the server: from a tenth of a second, doubling, to 30 s.
BACKOFF_S = (0.1, 30.0)
_VERDICT = pg_sql(UPSERT).encode()
_CONVERSATION = pg_sql(CONVERSATION_UPSERT).encode()
_JUDGEMENT = pg_sql(JUDGEMENT_UPSERT).encode()
_DELETE_FAILED = b"DELETE FROM failed_checks WHERE trace_id = ANY(%s)"
_INSERT_FAILED = (
    b"INSERT INTO failed_checks (trace_id, position, name, status, severity, reason, steps) "
    b"VALUES (%s, %s, %s, %s, %s, %s, %s)"
)


def _text(value: Any) -> Any:
    """A value PostgreSQL's text takes: no NUL character, valid UTF-8 (lone surrogates replaced; the
    verdict JSON keeps both as escapes)."""
    if not isinstance(value, str) or (value.isascii() and "\x00" not in value):
        return value
    return value.encode("utf-8", "surrogatepass").decode("utf-8", "replace").replace("\x00", "\ufffd")


def _values(row: Sequence[Any]) -> tuple[Any, ...]:
    return tuple(_text(v) for v in row)


@dataclass(slots=True, frozen=True)
class StoreState:
    """What ``/healthz`` says of the store: reachable or not since ``since`` (unix seconds), the
    last error while down, and the items waiting."""

    up: bool
    since: float
    error: str | None
    waiting: int

    def describe(self) -> str:
        if self.up:
            return f"store: up, {self.waiting} waiting"
        ago = max(0.0, time.time() - self.since)
        return f"store: down for {ago:.0f}s ({self.error}), {self.waiting} waiting"


class PostgresSink(StoreSink):
    """Persists every verdict, conversation verdict and judge result in the PostgreSQL store at
    ``url`` (its schema created or migrated on first connection).

    Args:
        url: ``postgresql://`` or ``postgres://`` URL (libpq's: ``?sslmode=require``,
            ``?options=-csearch_path%3Dotel`` and the like work).
        max_queue: items waiting for the writer; beyond it the oldest are dropped (counted as
            ``store``). Default ``OTEL_TRAJ_STORE_QUEUE``, else 10,000.
        batch_size: items per transaction at most.
        redact: as ``SqliteSink``'s.
        retention_s: rows older than this many seconds are deleted, in batches, at most once a
            minute; 0 keeps everything. Default ``OTEL_TRAJ_STORE_RETENTION``.

    A server unreachable when the sink is made does not fail it (the writer connects when it can);
    a URL libpq cannot parse, or a schema newer than this otel-traj, does.
    """

    def __init__(
        self,
        *,
        url: str,
        max_queue: int | None = None,
        batch_size: int = 500,
        redact: Redact = None,
        retention_s: float | None = None,
    ) -> None:
        super().__init__()
        import psycopg

        self.url = url
        self.path = shown(url)  # what messages name, as SqliteSink's path
        self._redactor = store_redactor(redact)
        self.retention = Retention(env.STORE_RETENTION.read() if retention_s is None else retention_s)
        env.SECONDS.require("retention_s", self.retention.keep_s)
        self.written = 0
        self.pruned = 0
        self._attempts = 0  # consecutive batches that found the server unreachable
        self._last_prune = 0.0
        self._state_lock = threading.Lock()
        self._state = StoreState(up=False, since=time.time(), error="not connected yet", waiting=0)
        self._conn: psycopg.Connection[Any] | None = None
        try:
            self._conn = connect(url)
            self._mark(up=True)
        except psycopg.OperationalError as exc:
            self._mark(up=False, error=str(exc).strip())
            logger.warning("%s is unreachable; verdicts wait for it: %s", self.path, exc)
        self._delivery: Delivery[Item | SummaryRow] = Delivery(
            name="store",
            deliver=self._deliver,
            stats=self.stats,
            max_queue=env.STORE_QUEUE.read() if max_queue is None else max_queue,
            batch_size=batch_size,
            when_full="drop_oldest",
            on_drop=self._dropped,
            on_fork=self._reconnect,
            on_stop=self._close,
        )
        self.max_queue = self._delivery.max_queue
        self.batch_size = batch_size

    # -- state ----------------------------------------------------------------------------------

    def _mark(self, *, up: bool, error: str | None = None) -> None:
        with self._state_lock:
            since = self._state.since if self._state.up == up else time.time()
            self._state = StoreState(up=up, since=since, error=error, waiting=0)

    def state(self) -> StoreState:
        with self._state_lock:
            current = self._state
        return StoreState(current.up, current.since, current.error, self._delivery.pending)

    def hold(self, row: SummaryRow) -> None:
        """A trace's summary for its conversation in the store (``store_claims``)."""
        self._delivery.put(row)

    @property
    def redactor(self) -> Redactor | None:
        return self._redactor

    def _dropped(self, items: Sequence[Item | SummaryRow], reason: str) -> None:
        if reason in ("shutdown", "closed"):
            self.stats.count_dropped(DROP_SHUTDOWN if reason == "shutdown" else DROP_CLOSED, len(items))
        else:  # queue_full while the server is away, or an otel-traj bug (error)
            self.stats.count_dropped(DROP_LOST, len(items))

    # -- the writer's thread --------------------------------------------------------------------

    def _reconnect(self) -> None:
        """In a forked child: a connection of its own, opened by the writer when it needs one."""
        if self._conn is not None:
            leave_to_parent(self._conn)
        self._conn = None

    def _close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _deliver(self, items: list[Item | SummaryRow]) -> Retry[Item | SummaryRow] | None:
        import psycopg

        try:
            conn = self._conn if self._conn is not None and not self._conn.closed else connect(self.url)
            self._conn = conn
            self._write(conn, items)
        except psycopg.OperationalError as exc:
            return self._unreachable(exc, items)
        except psycopg.Error as exc:
            if self._delivery.abandoned:
                self.stats.count_dropped(DROP_SHUTDOWN, len(items))
            else:
                self.stats.count_sink_error(type(self).__name__, len(items))
                self.stats.count_dropped(DROP_LOST, len(items))
                logger.error("writing %d rows to %s failed", len(items), self.path, exc_info=exc)
            return None
        if self._attempts:
            logger.warning("%s is reachable again after %d attempts", self.path, self._attempts)
        self._attempts = 0
        self._mark(up=True)
        self._trim(conn)
        return None

    def _unreachable(self, exc: Exception, items: list[Item | SummaryRow]) -> Retry[Item | SummaryRow] | None:
        self._close()
        self._mark(up=False, error=str(exc).strip().splitlines()[0] if str(exc).strip() else repr(exc))
        if self._delivery.abandoned:
            self.stats.count_dropped(DROP_SHUTDOWN, len(items))
            return None
        self._attempts += 1
        if self._attempts == 1:
            logger.warning("%s is unreachable; %d rows wait to be written: %s", self.path, len(items), exc)
        return Retry(items, backoff_delay(self._attempts - 1, *BACKOFF_S))

    def _write(self, conn: psycopg.Connection[Any], items: list[Item | SummaryRow]) -> None:
        """Every item of the batch in one transaction: a batch is written whole or retried whole."""
        prepared = [i for i in items if isinstance(i, tuple)]
        judged = [i for i in items if isinstance(i, JudgementRow)]
        talks = [i for i in items if isinstance(i, ConversationRow)]
        summaries = [i for i in items if isinstance(i, SummaryRow)]
        with conn.transaction(), conn.cursor() as cur:
            if prepared:
                self._write_verdicts(cur, prepared)
            if summaries:
                hold(cur, summaries)
            if judged:
                cur.executemany(_JUDGEMENT, [_values(row.values) for row in judged])
            if talks:
                cur.executemany(_CONVERSATION, [_values(row.values) for row in talks])
        self.written += len(prepared)

    @staticmethod
    def _write_verdicts(cur: psycopg.Cursor[Any], prepared: list[Prepared]) -> None:
        # Of two verdicts for one trace in a batch, the later wins (as in SQLite).
        latest = list({row[0]: (row, failed) for row, failed in prepared}.values())
        cur.executemany(_VERDICT, [_values(row) for row, _ in latest])
        # A trace graded again keeps none of its earlier failures.
        cur.execute(_DELETE_FAILED, ([row[0] for row, _ in latest],))
        failed = [_values(check) for _, checks in latest for check in checks]
        if failed:
            cur.executemany(_INSERT_FAILED, failed)

    def _trim(self, conn: psycopg.Connection[Any]) -> None:
        """Retention, at most once every ``EVERY_S``, after a batch was written."""
        now = time.monotonic()
        cutoff = self.retention.cutoff_ns(time.time_ns())
        if cutoff is None or now - self._last_prune < EVERY_S:
            return
        self._last_prune = now

        def delete(sql: str, before_ns: int, limit: int) -> int:
            with conn.transaction():
                return conn.execute(pg_sql(sql).encode(), (before_ns, limit)).rowcount

        import psycopg

        try:
            self.pruned += prune(delete, cutoff)
        except psycopg.Error:
            logger.exception("%s: deleting rows older than the retention failed", self.path)
