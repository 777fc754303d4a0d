"""TrajectoryProcessor: the in-process front door, an OpenTelemetry ``SpanProcessor``.

The SDK calls ``on_start``/``on_end`` on the application's thread without any try/except, so both
hooks catch everything and count it. They do the minimum and take no lock: each appends to a
lock-free queue (``OpenSpans``). Deciding whether a span matters, parsing, assembly, grading and
export happen on the pipeline's worker thread.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor

from otel_traj.adapters.sdk import from_readable_span
from otel_traj.config import AssemblerConfig
from otel_traj.grader import Grader
from otel_traj.live import live_scope, subject_attributes
from otel_traj.pipeline import Pipeline, VerdictCallback
from otel_traj.policy import Policy, load_policy
from otel_traj.sinks.base import Sink
from otel_traj.stats import PipelineStats

# Ended spans queued before the hooks wake the worker early (its tick may be tens of ms away).
DRAIN_AT = 256


class TrajectoryProcessor(SpanProcessor):
    """Grades agent runs from the spans the application records.

    Attach it to a ``TracerProvider`` (``provider.add_span_processor(TrajectoryProcessor(...))``). It
    sees every *recorded* span, sampled or not: pair it with a sampler that records but does not
    sample (see README) to grade 100% of runs while exporting a sample.

    policy: a ``Policy``, or a path to a policy file (YAML or JSON); None grades nothing and only
    rebuilds trajectories. sinks: where verdicts go (Prometheus, Langfuse, SQLite, ...).
    on_verdict: callables receiving each ``Verdict`` on the worker thread, after every sink got it.
    """

    def __init__(
        self,
        policy: Policy | str | Path | None = None,
        sinks: Iterable[Sink] = (),
        on_verdict: VerdictCallback | Iterable[VerdictCallback] = (),
        config: AssemblerConfig | None = None,
        stats: PipelineStats | None = None,
    ) -> None:
        if isinstance(policy, str | Path):
            policy = load_policy(policy)
        self.policy = policy
        config = config or AssemblerConfig()
        callbacks = [on_verdict] if callable(on_verdict) else list(on_verdict)
        grader: Grader | None = None
        live = None
        if policy is not None:
            grader = Grader(policy)
            live = live_scope(policy)
            config = config.with_capture(subject_attributes(policy))
        self.pipeline = Pipeline(
            grade=grader.grade if grader is not None else None,
            grade_all=grader.grade_all if grader is not None else None,
            sinks=sinks,
            callbacks=callbacks,
            config=config,
            stats=stats,
            track_starts=True,
            live=live,
            view_of=from_readable_span,
        )
        self.stats = self.pipeline.stats
        self._open_spans = open_spans = self.pipeline.assembler.open_spans
        self._started, self._ended = open_spans.started, open_spans.ended
        self._ended_spans, self._max_backlog = open_spans.ended_spans, config.max_backlog
        self._drain_at = min(DRAIN_AT, config.max_backlog)

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        try:
            # A SpanContext is a tuple whose first item is the trace id: no property call.
            self._started(span._context[0])  # type: ignore[index]
        except Exception:
            self.stats.count_internal_error()

    def on_end(self, span: ReadableSpan) -> None:
        try:
            if len(self._ended_spans) < self._drain_at:
                self._ended(span)
            else:
                self._worker_behind(span)
        except Exception:
            self.stats.count_internal_error()

    def _worker_behind(self, span: ReadableSpan) -> None:
        # Spans held longer than a few milliseconds outlive the application's young garbage
        # collections and keep its memory cold: wake the worker instead of waiting for its tick.
        wake = self.pipeline.wake  # not kept: a forked child gets a new one
        if not wake.is_set():
            wake.set()
        if len(self._ended_spans) < self._max_backlog:
            self._ended(span)
        elif self._open_spans.ended_untriaged(span):
            # The worker is far behind: drop the step rather than grow without bound, and say so.
            self.stats.count_dropped("backlog")

    def add_sink(self, sink: Sink) -> None:
        self.pipeline.add_sink(sink)

    def add_callback(self, callback: VerdictCallback) -> None:
        self.pipeline.add_callback(callback)

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self.pipeline.force_flush(timeout_millis)

    def shutdown(self) -> None:
        self.pipeline.shutdown()
