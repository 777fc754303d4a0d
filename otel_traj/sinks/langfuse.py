"""LangfuseSink: trajectory scores on the very traces and observations the agent exported.

``export`` runs on the pipeline worker and only turns the verdict into scores and appends them to a
bounded queue; one daemon thread batches and delivers them. The agent's thread never waits on Langfuse,
and every score that is not delivered is counted (``self.stats.dropped`` by reason,
``sink_errors["langfuse"]``) and reported, never dropped silently. An outage, however long, loses
nothing by itself: a batch still failing after ``max_retries`` goes back to the head of the queue and
delivery goes on at the capped backoff; only the queue's cap and the scores' maximum age drop them.

Talks to the REST API with plain httpx (``langfuse_transport``), not ``Langfuse()``: that client
installs span processors on the host's global TracerProvider and swallows failed scores. Importing
this module imports neither the ``langfuse`` package nor httpx; the transport is loaded when a sink is
made.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections import deque
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING

from otel_traj.config import env_float, env_str
from otel_traj.forks import after_fork_in_child, leave_to_parent, start_daemon
from otel_traj.redact import Redactor
from otel_traj.sinks.base import Sink
from otel_traj.sinks.langfuse_scores import (
    DeliveryReport,
    WireScore,
    judge_score,
    validate_environment,
    verdict_scores,
)
from otel_traj.sinks.langfuse_sessions import conversation_scores
from otel_traj.verdict import Verdict

if TYPE_CHECKING:
    from otel_traj.conversations import ConversationVerdict
    from otel_traj.judge.result import JudgeResult
    from otel_traj.sinks.langfuse_transport import ApiMode, ScoreTransport

Queued = tuple[float, WireScore]
"""A score waiting for delivery, with the time (by the sink's ``clock``) it was queued."""

logger = logging.getLogger(__name__)

SINK_NAME = "langfuse"
DEFAULT_BASE_URL = "https://cloud.langfuse.com"
# Reasons in ``PipelineStats.dropped`` (exported as ``otel_traj_dropped_total{reason}``).
DROP_QUEUE_FULL = "langfuse_queue_full"
DROP_REJECTED = "langfuse_rejected"
DROP_RETRIES_EXHAUSTED = "langfuse_retries_exhausted"
DROP_SHUTDOWN = "langfuse_shutdown"
DROP_EXPIRED = "langfuse_expired"
DEFAULT_MAX_AGE_S = 3600.0
# A server asking for more than this is treated as asking for this: scores must not wait for hours.
MAX_RETRY_AFTER_S = 300.0
# Distinct server messages kept for log-once and reports (bounded: some hold a request id each).
MAX_DISTINCT_MESSAGES = 100


class LangfuseSink(Sink):
    """Publishes each verdict as Langfuse scores (see ``otel_traj.sinks.langfuse_scores``).

    Pass the policy's ``is_sensitive`` as ``redact`` so comments never quote the values of arguments
    the policy marks sensitive (a set of key names, or None for secret-looking keys only, also work).
    Delivery tries the list form first and falls back for older servers (``api_mode="auto"``); 429,
    5xx and network errors are retried with exponential backoff and jitter, honouring ``Retry-After``;
    other 4xx are permanent: dropped, counted, and the server's message logged once. A batch still
    failing after ``max_retries`` attempts goes back to the head of the queue and is tried again at
    the capped backoff (``backoff_max``) until the server answers: while it is down, scores are dropped
    only when the queue is full (``max_queue``, the oldest first) or when older than ``max_age_s``
    (default ``OTEL_TRAJ_LANGFUSE_MAX_AGE_S``, else 3600), each counted. ``clock`` (seconds, monotonic)
    measures the scores' age. Durations are in seconds, except the SDK-shaped ``timeout_millis`` of
    ``force_flush`` and ``shutdown``.
    """

    def __init__(
        self,
        *,
        public_key: str | None = None,
        secret_key: str | None = None,
        base_url: str | None = None,
        environment: str | None = None,
        batch_size: int = 100,
        flush_interval: float = 1.0,
        max_queue: int = 10_000,
        api_mode: ApiMode = "auto",
        timeout: float = 10.0,
        max_retries: int = 8,
        backoff_initial: float = 0.5,
        backoff_max: float = 30.0,
        max_age_s: float | None = None,
        redact: Callable[[str, str], bool] | Collection[str] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__()
        public_key = public_key or env_str("LANGFUSE_PUBLIC_KEY", None)
        secret_key = secret_key or env_str("LANGFUSE_SECRET_KEY", None)
        if not public_key:
            raise ValueError("public_key is required (argument or LANGFUSE_PUBLIC_KEY)")
        if not secret_key:
            raise ValueError("secret_key is required (argument or LANGFUSE_SECRET_KEY)")
        for name, value in (("batch_size", batch_size), ("max_queue", max_queue)):
            if value < 1:
                raise ValueError(f"{name}={value!r}: must be at least 1")
        if max_age_s is None:
            max_age_s = env_float("OTEL_TRAJ_LANGFUSE_MAX_AGE_S", DEFAULT_MAX_AGE_S)
        positive = {"flush_interval": flush_interval, "timeout": timeout, "max_age_s": max_age_s}
        for name, number in positive.items():
            if number <= 0:
                raise ValueError(f"{name}={number!r}: must be positive")
        url = base_url or env_str("LANGFUSE_BASE_URL", None) or env_str("LANGFUSE_HOST", None)
        self.base_url = (url or DEFAULT_BASE_URL).rstrip("/")
        self.environment = validate_environment(
            environment if environment is not None else env_str("LANGFUSE_TRACING_ENVIRONMENT", None)
        )
        self.batch_size = batch_size
        self.flush_interval = flush_interval
        self.max_queue = max_queue
        self.max_retries = max(0, max_retries)
        self.backoff_initial = backoff_initial
        self.backoff_max = backoff_max
        self.max_age_s = max_age_s
        self._clock = clock
        self._redactor = Redactor(redact)
        self._credentials = (public_key, secret_key)
        self._timeout = timeout
        self._api_mode: ApiMode = api_mode
        self._transport = self._connect()

        self._cond = threading.Condition()
        # (time queued by ``clock``, score), oldest first; a batch put back after an outage's failures
        # goes back to the head, so the oldest are always first to expire or to be dropped.
        self._queue: deque[Queued] = deque()
        self._queue_since = 0.0
        self._in_flight = 0
        self._failures = 0  # consecutive failed attempts: the backoff keeps growing across batches
        self._flush_waiters = 0
        self._closing = False
        # Set once shutdown's deadline has passed: everything outstanding was counted as dropped then,
        # so the delivery thread counts nothing more.
        self._abort = False
        self._deadline: float | None = None
        self._delivered = 0
        self._rejected = 0
        self._dropped = 0
        self._messages: dict[str, None] = {}
        self._thread = start_daemon(self._run, "otel-traj-langfuse")
        after_fork_in_child(self._restart_in_child)

    def _connect(self) -> ScoreTransport:
        from otel_traj.sinks.langfuse_transport import ScoreTransport

        public_key, secret_key = self._credentials
        return ScoreTransport(
            self.base_url, public_key, secret_key, mode=self._api_mode, timeout=self._timeout
        )

    def _restart_in_child(self) -> None:
        """In a forked child: an HTTP client of its own (the parent's pool holds the parent's
        sockets), an empty queue (the parent delivers what it queued) and a delivery thread."""
        leave_to_parent(self._transport)
        self.stats.restart_in_child()
        self._cond = threading.Condition()
        self._queue.clear()
        self._in_flight = self._flush_waiters = self._failures = 0
        if not self._closing:
            self._transport = self._connect()
            self._thread = start_daemon(self._run, "otel-traj-langfuse")

    # -- pipeline side -------------------------------------------------------------------------------

    def export(self, verdict: Verdict) -> None:
        try:
            scores = verdict_scores(verdict, self._redactor, self.environment)
        except Exception:
            logger.exception("could not build Langfuse scores for trace %s", verdict.trajectory.trace_hex)
            self.stats.count_internal_error()
            return
        self._enqueue(scores)

    def export_conversation(self, verdict: ConversationVerdict) -> None:
        """A conversation's verdict: scores on the Langfuse session (see ``langfuse_sessions``)."""
        try:
            scores = conversation_scores(verdict, self._redactor, self.environment)
        except Exception:
            logger.exception("could not build Langfuse scores for conversation %s", verdict.conversation_id)
            self.stats.count_internal_error()
            return
        self._enqueue(scores)

    def on_judgement(self, result: JudgeResult) -> None:
        """An LLM judge's result: one NUMERIC score ``judge.<name>`` (metadata ``source: judge``)."""
        self._enqueue([judge_score(result, self._redactor, self.environment)])

    def _enqueue(self, scores: list[WireScore]) -> None:
        with self._cond:
            if self._closing:
                self._drop(DROP_SHUTDOWN, len(scores))
                return
            was_empty = not self._queue
            if was_empty:
                self._queue_since = time.monotonic()
            now = self._clock()
            self._queue.extend((now, score) for score in scores)
            self._trim()
            # Wake the delivery thread to start the flush-interval clock, or to send a full batch.
            if was_empty or len(self._queue) >= self.batch_size:
                self._cond.notify_all()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Deliver everything queued so far; False if the timeout passed first (delivery goes on)."""
        with self._cond:
            self._flush_waiters += 1
            self._cond.notify_all()
            try:
                return self._cond.wait_for(self._idle, timeout=max(0, timeout_millis) / 1000)
            finally:
                self._flush_waiters -= 1

    def shutdown(self, timeout_millis: int = 30_000) -> None:
        """Deliver what is pending within ``timeout_millis`` and return by then, whatever the server
        does. Scores still queued or awaiting an answer at the deadline are counted as dropped
        (``langfuse_shutdown``); a request still in flight then is abandoned to its own timeout."""
        deadline = time.monotonic() + max(0, timeout_millis) / 1000
        with self._cond:
            if self._closing:
                return
            self._closing = True
            self._deadline = deadline
            self._cond.notify_all()
        self._thread.join(max(0.0, deadline - time.monotonic()))
        with self._cond:
            self._abort = True
            self._drop(DROP_SHUTDOWN, len(self._queue) + self._in_flight)
            self._queue.clear()
            self._in_flight = 0
            self._cond.notify_all()

    def report(self) -> DeliveryReport:
        with self._cond:
            return DeliveryReport(
                delivered=self._delivered,
                rejected=self._rejected,
                dropped=self._dropped,
                pending=len(self._queue) + self._in_flight,
                errors=tuple(self._messages),
                form=self._transport.form if self._transport.detected else None,
            )

    # -- delivery thread ----------------------------------------------------------------------------

    def _idle(self) -> bool:
        return not self._queue and self._in_flight == 0

    def _trim(self) -> None:
        """Drop (and count) the oldest scores beyond ``max_queue``. Called with ``_cond`` held."""
        overflow = len(self._queue) - self.max_queue
        for _ in range(overflow):
            self._queue.popleft()
        self._drop(DROP_QUEUE_FULL, overflow)

    def _expire(self) -> float:
        """Drop (and count) queued scores older than ``max_age_s``; returns the cut-off time."""
        cutoff = self._clock() - self.max_age_s
        expired = 0
        while self._queue and self._queue[0][0] <= cutoff:
            self._queue.popleft()
            expired += 1
        self._drop(DROP_EXPIRED, expired)
        return cutoff

    def _drop(self, reason: str, n: int) -> None:
        """Count ``n`` lost scores. Called with ``_cond`` held."""
        if n <= 0:
            return
        self._dropped += n if reason != DROP_REJECTED else 0
        self._rejected += n if reason == DROP_REJECTED else 0
        self.stats.count_dropped(reason, n)
        self.stats.count_sink_error(SINK_NAME, n)

    def _note(self, message: str, level: int, what: str) -> None:
        """Log each distinct server message once."""
        with self._cond:
            if message in self._messages or len(self._messages) >= MAX_DISTINCT_MESSAGES:
                return
            self._messages[message] = None
        logger.log(level, "Langfuse %s: %s", what, message)

    def _next_batch(self) -> list[Queued] | None:
        with self._cond:
            while True:
                if self._abort or (self._closing and not self._queue):
                    return None
                self._expire()
                if self._queue:
                    due = self._queue_since + self.flush_interval - time.monotonic()
                    if (
                        len(self._queue) >= self.batch_size
                        or self._flush_waiters
                        or self._closing
                        or due <= 0
                    ):
                        batch = [self._queue.popleft() for _ in range(min(self.batch_size, len(self._queue)))]
                        self._in_flight = len(batch)
                        return batch
                    self._cond.wait(due)
                else:
                    self._cond.wait()

    def _run(self) -> None:
        transport = self._transport
        try:
            while (batch := self._next_batch()) is not None:
                try:
                    self._deliver(transport, batch)
                except Exception:
                    logger.exception("Langfuse delivery failed")
                    self.stats.count_internal_error()
                    with self._cond:
                        if not self._abort:
                            self._drop(DROP_RETRIES_EXHAUSTED, self._in_flight)
                finally:
                    with self._cond:
                        if not self._abort:
                            self._in_flight = 0
                        self._cond.notify_all()
        finally:
            transport.close()

    def _time_left(self) -> float | None:
        """Seconds to shutdown's deadline (bounds each network wait while closing), else None."""
        deadline = self._deadline
        return None if deadline is None else max(0.001, deadline - time.monotonic())

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        # The exponent is capped too: an outage of days must not overflow the float.
        delay = min(self.backoff_max, self.backoff_initial * 2.0 ** min(attempt, 64)) * random.uniform(
            0.5, 1.0
        )
        if retry_after is not None:
            delay = max(delay, min(retry_after, MAX_RETRY_AFTER_S))
        return delay

    def _deliver(self, transport: ScoreTransport, batch: list[Queued]) -> None:
        pending = batch
        for attempt in range(self.max_retries + 1):
            with self._cond:
                if self._abort:
                    return
                cutoff = self._expire()
                kept = [item for item in pending if item[0] > cutoff]
                self._drop(DROP_EXPIRED, len(pending) - len(kept))
                pending = kept
                self._in_flight = len(pending)
                if not pending:
                    return
            result = transport.send([score for _, score in pending], self._time_left())
            for message in dict.fromkeys(result.rejected):
                self._note(message, logging.WARNING, "rejected scores (not retried)")
            if result.transient_error:
                self._note(result.transient_error, logging.INFO, "delivery failed, retrying")
            with self._cond:
                if self._abort:
                    return
                self._delivered += result.delivered
                self._drop(DROP_REJECTED, len(result.rejected))
                retry = {id(score) for score in result.retry}
                pending = [item for item in pending if id(item[1]) in retry]
                self._in_flight = len(pending)
                self._failures = self._failures + 1 if pending else 0
                if not pending:
                    return
                if attempt == self.max_retries:
                    # Back to the head of the queue, where the cap and the maximum age see them; the
                    # next attempt waits the backoff, which keeps growing up to ``backoff_max``.
                    self._queue.extendleft(reversed(pending))
                    self._in_flight = 0
                    self._queue_since = time.monotonic() - self.flush_interval
                    self._trim()
                    if self._failures == self.max_retries + 1:
                        logger.warning(
                            "Langfuse: %d scores still failing after %d attempts; kept queued, retrying",
                            len(pending),
                            self._failures,
                        )
                self._cond.wait_for(
                    lambda: self._abort, timeout=self._backoff(self._failures - 1, result.retry_after)
                )
                if self._abort or attempt == self.max_retries:
                    return


__all__ = ["DeliveryReport", "LangfuseSink"]
