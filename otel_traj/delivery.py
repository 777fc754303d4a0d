"""Delivery: the bounded queue and the one thread under every sink that talks to something slow.

A sink's ``export`` runs on the grading worker and must never wait on a database, a server or a
model: it turns what it receives into items and ``put``s them here. One daemon thread takes them in
batches and hands each batch to the sink's ``deliver``; ``force_flush`` and ``shutdown`` keep their
deadlines whatever ``deliver`` does; every item lost is counted by reason; the thread starts afresh
in a forked child. This is the OpenTelemetry SDK's ``BatchProcessor`` for otel-traj's sinks (the
SQLite store, Langfuse, evaluation events, the LLM judges): a sink is the code that turns a batch
into a write, a request or a call, and nothing in ``sinks/`` or ``judge/`` starts a thread.

Drop reasons given to ``on_drop``: ``queue_full`` (the queue's cap), ``closed`` (put after
``shutdown`` began), ``shutdown`` (still queued at shutdown's deadline), ``expired`` (``stale``
items at the head of the queue) and ``error`` (``deliver`` raised: an otel-traj bug). Counted by
default as ``otel_traj_dropped_total{reason}`` with the delivery's name: ``<name>_<reason>``, and
``<name>`` alone for items lost to an error (the reason a sink's own failed writes take too).
"""

from __future__ import annotations

import logging
import math
import random
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Generic, Literal, TypeVar

from otel_traj import env
from otel_traj.forks import after_fork_in_child, start_daemon
from otel_traj.stats import PipelineStats

logger = logging.getLogger("otel_traj.delivery")

T = TypeVar("T")
WhenFull = Literal["block", "drop_oldest", "drop_newest"]
"""What ``put`` does when ``max_queue`` items wait: wait for room (the store: backpressure, nothing
dropped before shutdown), drop the oldest (telemetry: the newest matters most) or the new item."""


@dataclass(frozen=True, slots=True)
class Retry(Generic[T]):
    """``deliver``'s answer when some items could not be delivered yet: they go back to the head of
    the queue (where the cap and ``stale`` see them), and the thread waits ``delay_s`` (or until the
    shutdown's deadline) before it takes a batch again."""

    items: Sequence[T]
    delay_s: float


def backoff_delay(attempt: int, initial_s: float, max_s: float, at_least_s: float | None = None) -> float:
    """Exponential backoff with jitter: ``initial_s * 2**attempt`` capped at ``max_s``, times a random
    factor in [0.5, 1]; never below ``at_least_s`` (a server's ``Retry-After``) when given. The
    exponent is capped too: an outage of days must not overflow the float."""
    delay = min(max_s, initial_s * 2.0 ** min(attempt, 64)) * random.uniform(0.5, 1.0)
    return delay if at_least_s is None else max(delay, at_least_s)


def drop_reasons(name: str, when_full: WhenFull, expires: bool) -> tuple[str, ...]:
    """The reasons a delivery with these settings counts drops under by default."""
    reasons = ["closed", "shutdown"]
    reasons += ["queue_full"] if when_full != "block" else []
    reasons += ["expired"] if expires else []
    return (name, *(f"{name}_{reason}" for reason in reasons))


class Delivery(Generic[T]):
    """Items put by producers, delivered in order by one thread, in batches of ``batch_size``.

    Args:
        name: the thread's name (``otel-traj-<name>``), the health gauge's ``sink`` label and, with
            the default ``on_drop``, the prefix of the drop reasons (``<name>_queue_full``, ...).
        deliver: called on the thread with each batch; returns None when the batch is settled
            (delivered, or dropped and counted by the sink), or ``Retry``. It should not raise: what
            it raises is logged, counted as an internal error and its batch dropped (``error``).
        stats: where errors are counted and the queue's depth is exported.
        max_queue, batch_size: at least 1.
        when_full: see ``WhenFull``.
        linger_s: how long a partial batch waits for more items (0: delivered at once); a flush or
            the shutdown does not wait.
        stale: items the head of the queue drops (``expired``) before a batch is taken (items are
            queued oldest first, so the first fresh item ends the search).
        abandon_in_flight: at shutdown's deadline, the batch ``deliver`` still holds counts as
            dropped (``shutdown``) too: its outcome will not be known (``deliver`` checks
            ``abandoned`` before counting anything). Without it the batch finishes on its own.
        on_drop: counts items lost, with the reason; default ``stats.count_dropped(f"{name}_{reason}")``.
        on_fork: in a forked child, before the thread starts again: reopen what the parent owns
            (a connection, an HTTP pool). If it raises, the child's copy takes nothing.
        on_stop: on the thread, when it ends: release what ``deliver`` used.
    """

    def __init__(
        self,
        *,
        name: str,
        deliver: Callable[[list[T]], Retry[T] | None],
        stats: PipelineStats,
        max_queue: int,
        batch_size: int,
        when_full: WhenFull,
        linger_s: float = 0.0,
        stale: Callable[[T], bool] | None = None,
        abandon_in_flight: bool = False,
        on_drop: Callable[[Sequence[T], str], None] | None = None,
        on_fork: Callable[[], None] | None = None,
        on_stop: Callable[[], None] | None = None,
    ) -> None:
        env.COUNT.require("max_queue", max_queue)
        env.COUNT.require("batch_size", batch_size)
        env.SECONDS.require("linger_s", linger_s)
        self.name = name
        self.max_queue = max_queue
        self.batch_size = batch_size
        self._deliver = deliver
        self._stats = stats
        self._when_full = when_full
        self._linger_s = linger_s
        self._stale = stale
        self._abandon_in_flight = abandon_in_flight
        self._on_drop = on_drop if on_drop is not None else self._count_dropped
        self._on_fork = on_fork
        self._on_stop = on_stop
        self._closing = False
        self._reset()
        ref = weakref.ref(self)  # the stats outlive the sink (a collector keeps them)
        stats.watch_queue(name, lambda: delivery.pending if (delivery := ref()) is not None else 0)
        self._thread = start_daemon(self._run, f"otel-traj-{name}")
        after_fork_in_child(self._restart_in_child)

    def _reset(self) -> None:
        # (sequence number, item), oldest first. A batch put back (``Retry``) goes back to the head
        # under the sequence number of its oldest item, so a flush waits for it.
        self._queue: deque[tuple[int, T]] = deque()
        self.lock = threading.Condition()
        """Held by ``deliver`` while it settles part of its batch (``in_flight``, ``abandoned``)."""
        self._seq = 0
        self._batch: list[T] = []
        self._batch_seq: int | None = None  # the first sequence number of the batch being delivered
        self.in_flight = 0
        """Items of the batch being delivered not yet settled; ``deliver`` may lower it (under
        ``lock``) as parts are delivered."""
        self._since = 0.0  # when the oldest waiting item was queued (monotonic), for ``linger_s``
        self._flushing = 0
        self._stopped = False
        self._abandoned = False
        self._deadline: float | None = None

    def _restart_in_child(self) -> None:
        """In a forked child: an empty queue and a thread of its own; what the parent queued is the
        parent's to deliver, and the parent's locks (this one, the stats') may have been held at the
        fork."""
        self._reset()
        self._stats.restart_in_child()
        if self._closing:
            return
        if self._on_fork is not None:
            try:
                self._on_fork()
            except Exception:
                logger.exception("%s cannot start again in this forked process", self.name)
                self._closing = True
                return
        self._thread = start_daemon(self._run, f"otel-traj-{self.name}")

    # -- producers ----------------------------------------------------------------------------------

    @property
    def pending(self) -> int:
        """Items queued or being delivered."""
        return len(self._queue) + self.in_flight

    @property
    def abandoned(self) -> bool:
        """Shutdown's deadline passed: what was outstanding was counted then; count nothing more."""
        return self._abandoned

    def accepts(self) -> bool:
        """Whether a ``put`` now would queue its item rather than drop it or wait."""
        return not self._closing and len(self._queue) < self.max_queue

    def put(self, item: T) -> None:
        self.put_all((item,))

    def put_all(self, items: Iterable[T]) -> None:
        """Queue ``items`` in order (``when_full`` decides what a full queue does)."""
        dropped: list[T] = []
        reason = "queue_full"
        with self.lock:
            if not self._queue:
                self._since = time.monotonic()
            for item in items:
                if self._when_full == "block":
                    while len(self._queue) >= self.max_queue and not self._closing:
                        self.lock.notify_all()  # the thread may not know yet what waits for it
                        self.lock.wait()
                if self._closing:
                    dropped.append(item)
                    reason = "closed"
                    continue
                if len(self._queue) >= self.max_queue:
                    if self._when_full == "drop_newest":
                        dropped.append(item)
                        continue
                    dropped.append(self._queue.popleft()[1])
                self._seq += 1
                self._queue.append((self._seq, item))
                # Wake the thread to start the linger clock, or to take a full batch.
                if len(self._queue) == 1 or len(self._queue) == self.batch_size:
                    self.lock.notify_all()
        if dropped:
            self._on_drop(dropped, reason)

    def _count_dropped(self, items: Sequence[T], reason: str) -> None:
        self._stats.count_dropped(self.name if reason == "error" else f"{self.name}_{reason}", len(items))

    # -- the thread ---------------------------------------------------------------------------------

    def _run(self) -> None:
        try:
            while (batch := self._next()) is not None:
                self._hand(batch)
        finally:
            with self.lock:
                self._stopped = True
                self.lock.notify_all()
            if self._on_stop is not None:
                self._on_stop()

    def _next(self) -> list[T] | None:
        with self.lock:
            while True:
                if self._abandoned:
                    return None
                self._expire()
                if self._queue:
                    due = self._since + self._linger_s - time.monotonic()
                    if len(self._queue) >= self.batch_size or self._flushing or self._closing or due <= 0:
                        taken = [self._queue.popleft() for _ in range(min(self.batch_size, len(self._queue)))]
                        self._batch_seq = taken[0][0]
                        self._batch = [item for _, item in taken]
                        self.in_flight = len(taken)
                        self._since = time.monotonic()
                        self.lock.notify_all()  # producers waiting for room
                        return self._batch
                    self.lock.wait(due)
                elif self._closing:
                    return None
                else:
                    self.lock.wait()

    def _expire(self) -> None:
        """Drop the stale items at the head of the queue. Called with the lock held."""
        if self._stale is None:
            return
        expired: list[T] = []
        while self._queue and self._stale(self._queue[0][1]):
            expired.append(self._queue.popleft()[1])
        if expired:
            self._on_drop(expired, "expired")

    def _hand(self, batch: list[T]) -> None:
        try:
            retry = self._deliver(batch)
        except Exception:
            logger.exception("%s: delivering %d items failed", self.name, len(batch))
            self._stats.count_internal_error()
            retry = None
            with self.lock:
                lost = [] if self._abandoned else batch[len(batch) - self.in_flight :]
            if lost:
                self._on_drop(lost, "error")
        with self.lock:
            first = self._batch_seq
            self._batch, self._batch_seq, self.in_flight = [], None, 0
            if retry is not None and retry.items and not self._abandoned and first is not None:
                self._queue.extendleft((first, item) for item in reversed(retry.items))
                self._since = time.monotonic() - self._linger_s  # due as soon as the wait is over
                self._trim()
            self.lock.notify_all()
            if retry is not None and retry.items:
                self.lock.wait_for(lambda: self._abandoned, timeout=retry.delay_s)

    def _trim(self) -> None:
        """Items put back beyond the cap: the oldest go, as ``drop_oldest`` would have dropped them."""
        if self._when_full == "block":
            return  # a store's queue may hold one batch more for a while; nothing is dropped
        overflow = [self._queue.popleft()[1] for _ in range(len(self._queue) - self.max_queue)]
        if overflow:
            self._on_drop(overflow, "queue_full")

    def wait_abandoned(self, timeout_s: float) -> bool:
        """For ``deliver``'s own waits (a backoff between attempts): True once shutdown's deadline
        has passed, else after ``timeout_s``."""
        with self.lock:
            return self.lock.wait_for(lambda: self._abandoned, timeout=timeout_s)

    def time_left(self) -> float | None:
        """Seconds to shutdown's deadline once it began (bounds each network wait), else None."""
        deadline = self._deadline
        return None if deadline is None else max(0.001, deadline - time.monotonic())

    # -- lifecycle ----------------------------------------------------------------------------------

    def _oldest(self) -> float:
        if self._batch_seq is not None:
            return self._batch_seq
        return self._queue[0][0] if self._queue else math.inf

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Wait until everything put so far is settled; False if ``timeout_millis`` passed first (or
        the thread is gone with items left)."""
        deadline = time.monotonic() + max(0, timeout_millis) / 1000
        with self.lock:
            target = self._seq
            self._flushing += 1
            self.lock.notify_all()
            try:
                while self._oldest() <= target:
                    left = deadline - time.monotonic()
                    if left <= 0 or self._stopped:
                        return False
                    self.lock.wait(left)
                return True
            finally:
                self._flushing -= 1

    def shutdown(self, timeout_millis: int = 30_000) -> None:
        """Deliver what is queued within ``timeout_millis`` and return by then whatever ``deliver``
        does; what is still queued then is counted (``shutdown``), and with ``abandon_in_flight`` the
        batch in ``deliver``'s hands too. A later ``put`` counts ``closed``."""
        deadline = time.monotonic() + max(0, timeout_millis) / 1000
        with self.lock:
            if self._closing:
                return
            self._closing = True
            self._deadline = deadline
            self.lock.notify_all()
        self._thread.join(max(0.0, deadline - time.monotonic()))
        with self.lock:
            self._abandoned = True
            left = [item for _, item in self._queue]
            self._queue.clear()
            if self._abandon_in_flight and self.in_flight:
                left += self._batch[len(self._batch) - self.in_flight :]
                self.in_flight = 0
            self.lock.notify_all()
        if left:
            logger.warning(
                "%s: %d items not delivered: the shutdown took longer than %d ms",
                self.name,
                len(left),
                timeout_millis,
            )
            self._on_drop(left, "shutdown")

    def wait_stopped(self, timeout_s: float) -> bool:
        """True once the thread has ended (after ``shutdown``, it ends when ``deliver`` returns)."""
        self._thread.join(timeout_s)
        return not self._thread.is_alive()
