"""Admission of received spans into the pipeline: all or nothing per request.

Both transports end here. A request is either fed to the assembler whole or refused whole with a
retryable error, so an exporter that retries a refused request neither loses spans nor counts any
twice. Refusal happens when the request would open more traces than ``max_traces`` allows (the
assembler holds every trace until graded, and the worker grades at most what the assembler held);
traces already buffered always get their spans, so a trace that has started can finish. The spans of
a request enter the assembler under one hold of its lock, so no trace is graded from half a request.
A request that alone holds more traces than ``max_traces`` could never be taken: it is refused as such
(:class:`Unfit`, not retryable), before its spans are read.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field

from otel_traj.adapters.batch import SpanBatch
from otel_traj.adapters.log_events import PendingEvents
from otel_traj.pipeline import Pipeline

logger = logging.getLogger("otel_traj.serve")

REQUEST_RESULTS = (
    "ok",
    "partial",
    "overloaded",
    "unavailable",
    "invalid",
    "too_large",
    "too_many_traces",
    "body_timeout",
    "body_evicted",
    "unauthorized",
    "internal_error",
)
# What a request that failed inside otel-traj is told (not retryable: a retry would fail alike).
INTERNAL_ERROR = "internal error, the request was not taken; the receiver's log has the details"


class Refused(Exception):
    """The request was not taken; the exporter should retry it later (503 / UNAVAILABLE)."""

    def __init__(self, reason: str, retry_after_s: float) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after_s = retry_after_s


class Unfit(Exception):
    """The request alone holds more than the service ever holds: it can never be taken, and retrying
    it would be refused forever (413 / INVALID_ARGUMENT, which OTLP exporters do not retry)."""


class InvalidRequest(ValueError):
    """The payload cannot be decoded at all (400 / INVALID_ARGUMENT); retrying will not help."""


@dataclass(slots=True, frozen=True)
class Accepted:
    """The OTLP ``partial_success`` of one request: spans that could not be read are rejected."""

    spans: int
    rejected: int

    @property
    def message(self) -> str:
        if not self.rejected:
            return ""
        return f"{self.rejected} spans rejected: missing or invalid trace/span id or unreadable fields"


@dataclass
class ReceiverStats:
    """Requests by transport and result, and policy reloads; read by the metrics endpoint."""

    requests: dict[tuple[str, str], int] = field(default_factory=dict)
    policy_reloads: int = 0
    policy_reload_errors: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def count_request(self, transport: str, result: str) -> None:
        with self._lock:
            key = (transport, result)
            self.requests[key] = self.requests.get(key, 0) + 1

    def count_reload(self, ok: bool) -> None:
        with self._lock:
            if ok:
                self.policy_reloads += 1
            else:
                self.policy_reload_errors += 1

    def snapshot(self) -> tuple[dict[tuple[str, str], int], int, int]:
        with self._lock:
            return dict(self.requests), self.policy_reloads, self.policy_reload_errors


class Ingest:
    """Feeds decoded batches to the pipeline's assembler, or refuses them whole."""

    def __init__(
        self, pipeline: Pipeline, retry_after_s: float = 1.0, events: PendingEvents | None = None
    ) -> None:
        self.pipeline = pipeline
        self.assembler = pipeline.assembler
        self.max_traces = self.assembler.config.max_traces
        # GenAI events received as log records before their spans (``LogIngest`` adds them).
        if events is None:
            events = PendingEvents.within(self.assembler.config, pipeline.stats)
        self.events = events
        self.retry_after_s = retry_after_s
        self.stats = ReceiverStats()
        self._lock = threading.Lock()
        self._closed = False

    def close(self) -> None:
        """Refuse everything from now on (shutdown: exporters retry against another replica)."""
        with self._lock:
            self._closed = True

    @property
    def accepting(self) -> bool:
        return not self._closed

    def failed(self, transport: str) -> None:
        """Called in the ``except`` of a request that failed inside otel-traj: logged with its
        traceback and counted as an internal error (the receivers count the request's result)."""
        self.pipeline.stats.count_internal_error()
        logger.exception("OTLP/%s request failed", transport)

    def _why_full(self) -> str:
        assembler = self.assembler
        if assembler.over_budget:
            limit = assembler.config.max_held_bytes
            return f"the runs in flight hold {assembler.held} bytes, the limit is {limit} (max_held_bytes)"
        return f"{assembler.in_flight} traces in flight, the limit is {self.max_traces}"

    def accept(self, batch: SpanBatch) -> Accepted:
        """Add every span of ``batch`` or none; raises :class:`Refused` when over capacity, and
        :class:`Unfit` when the request alone holds more than ``max_traces`` traces."""
        traces = len({view.trace_id for view in batch})
        if traces > self.max_traces:
            raise Unfit(
                f"the request holds {traces} traces and the receiver holds at most {self.max_traces} "
                "(max_traces): send fewer traces per request (the exporter's batch size)"
            )
        # Reading spans is the expensive part; it happens before any lock is taken.
        make_record, take = self.assembler.make_record, self.events.take
        records = [make_record(take(view)) for view in batch]
        with self._lock:
            if self._closed:
                raise Refused("shutting down", self.retry_after_s)
            was_idle = self.assembler.idle
            if not self.assembler.add_all(records, self.max_traces):
                raise Refused(self._why_full(), self.retry_after_s)
        if was_idle:
            # The worker of an idle service sleeps longer than its tick: the first request wakes it.
            self.pipeline.wake.set()
        if batch.malformed:
            self.pipeline.stats.count_spans("malformed", batch.malformed)
        return Accepted(spans=len(batch), rejected=batch.malformed)
