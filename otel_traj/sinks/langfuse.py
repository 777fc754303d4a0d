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
import time
from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING

from otel_traj import env
from otel_traj.delivery import Delivery, Retry, backoff_delay
from otel_traj.forks import leave_to_parent
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
        public_key = public_key or env.LANGFUSE_PUBLIC_KEY.read()
        secret_key = secret_key or env.LANGFUSE_SECRET_KEY.read()
        if not public_key:
            raise ValueError("public_key is required (argument or LANGFUSE_PUBLIC_KEY)")
        if not secret_key:
            raise ValueError("secret_key is required (argument or LANGFUSE_SECRET_KEY)")
        env.COUNT.require("batch_size", batch_size)
        env.COUNT.require("max_queue", max_queue)
        if max_age_s is None:
            max_age_s = env.LANGFUSE_MAX_AGE_S.read()
        positive = {"flush_interval": flush_interval, "timeout": timeout, "max_age_s": max_age_s}
        for name, number in positive.items():
            if number <= 0:
                raise ValueError(f"{name}={number!r}: must be positive")
        url = base_url or env.LANGFUSE_BASE_URL.read() or env.LANGFUSE_HOST.read()
        self.base_url = (url or DEFAULT_BASE_URL).rstrip("/")
        self.environment = validate_environment(
            environment if environment is not None else env.LANGFUSE_TRACING_ENVIRONMENT.read()
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
        self._failures = 0  # consecutive failed attempts: the backoff keeps growing across batches
        self._delivered = 0
        self._rejected = 0
        self._dropped = 0
        self._messages: dict[str, None] = {}
        # Scores with the time (by ``clock``) they were queued, oldest first; a batch put back after an
        # outage's failures goes back to the head, so the oldest are always first to expire or go.
        self._delivery: Delivery[Queued] = Delivery(
            name=SINK_NAME,
            deliver=self._deliver,
            stats=self.stats,
            max_queue=max_queue,
            batch_size=batch_size,
            when_full="drop_oldest",
            linger_s=flush_interval,
            stale=self._expired,
            abandon_in_flight=True,
            on_drop=self._dropped_items,
            on_fork=self._reconnect,
            on_stop=lambda: self._transport.close(),
        )

    def _connect(self) -> ScoreTransport:
        from otel_traj.sinks.langfuse_transport import ScoreTransport

        public_key, secret_key = self._credentials
        return ScoreTransport(
            self.base_url, public_key, secret_key, mode=self._api_mode, timeout=self._timeout
        )

    def _reconnect(self) -> None:
        """In a forked child: an HTTP client of its own (the parent's pool holds the parent's
        sockets)."""
        leave_to_parent(self._transport)
        self._failures = 0
        self._transport = self._connect()

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
        now = self._clock()
        self._delivery.put_all([(now, score) for score in scores])

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Deliver everything queued so far; False if the timeout passed first (delivery goes on)."""
        return self._delivery.force_flush(timeout_millis)

    def shutdown(self, timeout_millis: int = 30_000) -> None:
        """Deliver what is pending within ``timeout_millis`` and return by then, whatever the server
        does. Scores still queued or awaiting an answer at the deadline are counted as dropped
        (``langfuse_shutdown``); a request still in flight then is abandoned to its own timeout."""
        self._delivery.shutdown(timeout_millis)

    def report(self) -> DeliveryReport:
        with self._delivery.lock:
            return DeliveryReport(
                delivered=self._delivered,
                rejected=self._rejected,
                dropped=self._dropped,
                pending=self._delivery.pending,
                errors=tuple(self._messages),
                form=self._transport.form if self._transport.detected else None,
            )

    # -- delivery thread ----------------------------------------------------------------------------

    def _expired(self, item: Queued) -> bool:
        return item[0] <= self._clock() - self.max_age_s

    def _dropped_items(self, items: Sequence[Queued], reason: str) -> None:
        self._drop(_DROP_REASONS[reason], len(items))

    def _drop(self, reason: str, n: int) -> None:
        """Count ``n`` lost scores."""
        if n <= 0:
            return
        with self._delivery.lock:
            self._dropped += n if reason != DROP_REJECTED else 0
            self._rejected += n if reason == DROP_REJECTED else 0
        self.stats.count_dropped(reason, n)
        self.stats.count_sink_error(SINK_NAME, n)

    def _note(self, message: str, level: int, what: str) -> None:
        """Log each distinct server message once."""
        with self._delivery.lock:
            if message in self._messages or len(self._messages) >= MAX_DISTINCT_MESSAGES:
                return
            self._messages[message] = None
        logger.log(level, "Langfuse %s: %s", what, message)

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        return backoff_delay(
            attempt,
            self.backoff_initial,
            self.backoff_max,
            None if retry_after is None else min(retry_after, MAX_RETRY_AFTER_S),
        )

    def _deliver(self, batch: list[Queued]) -> Retry[Queued] | None:
        """Up to ``max_retries`` attempts at one batch; what still fails then goes back to the head of
        the queue, where the cap and the maximum age see it, and is tried again after the backoff,
        which keeps growing up to ``backoff_max``."""
        delivery = self._delivery
        pending = batch
        for attempt in range(self.max_retries + 1):
            with delivery.lock:
                if delivery.abandoned:
                    return None
                kept = [item for item in pending if not self._expired(item)]
                self._drop(DROP_EXPIRED, len(pending) - len(kept))
                pending = kept
                delivery.in_flight = len(pending)
                if not pending:
                    return None
            result = self._transport.send([score for _, score in pending], delivery.time_left())
            for message in dict.fromkeys(result.rejected):
                self._note(message, logging.WARNING, "rejected scores (not retried)")
            if result.transient_error:
                self._note(result.transient_error, logging.INFO, "delivery failed, retrying")
            with delivery.lock:
                if delivery.abandoned:
                    return None
                self._delivered += result.delivered
                self._drop(DROP_REJECTED, len(result.rejected))
                retry = {id(score) for score in result.retry}
                pending = [item for item in pending if id(item[1]) in retry]
                delivery.in_flight = len(pending)
                self._failures = self._failures + 1 if pending else 0
            if not pending:
                return None
            delay = self._backoff(self._failures - 1, result.retry_after)
            if attempt == self.max_retries:
                if self._failures == self.max_retries + 1:
                    logger.warning(
                        "Langfuse: %d scores still failing after %d attempts; kept queued, retrying",
                        len(pending),
                        self._failures,
                    )
                return Retry(pending, delay)
            if delivery.wait_abandoned(delay):
                return None
        return None


_DROP_REASONS = {
    "queue_full": DROP_QUEUE_FULL,
    "closed": DROP_SHUTDOWN,
    "shutdown": DROP_SHUTDOWN,
    "expired": DROP_EXPIRED,
    "error": DROP_RETRIES_EXHAUSTED,
}


__all__ = ["DeliveryReport", "LangfuseSink"]
