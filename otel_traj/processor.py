"""TrajectoryProcessor: the in-process front door, an OpenTelemetry ``SpanProcessor``.

The SDK calls ``on_start``/``on_end`` on the application's thread without any try/except, so both
hooks catch everything and count it. They do the minimum and take no lock: one test whether the span
can matter, then appends to lock-free queues (``OpenSpans``). Parsing, assembly, grading and export
happen on the pipeline's worker thread.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor

from otel_traj.adapters.sdk import from_readable_span
from otel_traj.config import AssemblerConfig
from otel_traj.dialects import MARKERS, NAME_PREFIXES
from otel_traj.grader import Grader
from otel_traj.live import live_scope, subject_attributes
from otel_traj.pipeline import Pipeline, VerdictCallback
from otel_traj.policy import Policy, load_policy
from otel_traj.sinks.base import Sink
from otel_traj.stats import PipelineStats
from otel_traj.verdict import Verdict

_EMPTY: Mapping[str, Any] = {}


class TrajectoryProcessor(SpanProcessor):
    """Grades agent runs from the spans the application records.

    Attach it to a ``TracerProvider`` (``provider.add_span_processor(TrajectoryProcessor(...))``). It
    sees every *recorded* span, sampled or not: pair it with a sampler that records but does not
    sample (see README) to grade 100% of runs while exporting a sample.

    policy: a ``Policy``, or a path to a policy file (YAML or JSON); None grades nothing and only
    rebuilds trajectories. sinks: where verdicts go (Prometheus, Langfuse, SQLite, ...).
    on_verdict: callables receiving each ``Verdict`` on the worker thread.
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
        grade: Callable[..., Verdict] | None = None
        live = None
        if policy is not None:
            grade = Grader(policy).grade
            live = live_scope(policy)
            config = config.with_capture(subject_attributes(policy))
        self.pipeline = Pipeline(
            grade=grade,
            sinks=sinks,
            callbacks=callbacks,
            config=config,
            stats=stats,
            track_starts=True,
            live=live,
            view_of=from_readable_span,
        )
        self.stats = self.pipeline.stats
        self._assembler = self.pipeline.assembler
        open_spans = self._assembler.open_spans
        self._interesting = MARKERS | self._assembler.capture_keys
        self._started, self._ended, self._ended_plain = (
            open_spans.started,
            open_spans.ended,
            open_spans.ended_plain,
        )
        self._root_ended, self._candidate = open_spans.root_ended, open_spans.candidate
        self._candidates, self._max_backlog = open_spans.candidates, config.max_backlog

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        try:
            self._started(span._context.trace_id)  # type: ignore[union-attr]
        except Exception:
            self.stats.count_internal_error()

    def on_end(self, span: ReadableSpan) -> None:
        try:
            self._on_end(span)
        except Exception:
            # A span we cannot read must never reach the application's span.end().
            self._close_quietly(span)

    def _on_end(self, span: ReadableSpan) -> None:
        # Private fields, not the public properties: this runs for every span of the application
        # and each property is a Python-level call (``attributes`` even wraps the SDK's dict twice).
        # Ended spans are immutable, so reading the inner dict is safe. Other spans fall back.
        try:
            context, parent, name = span._context, span._parent, span._name
            attrs = span._attributes._dict  # type: ignore[union-attr]
        except AttributeError:
            context, parent, name = span.context, span.parent, span.name
            attrs = span.attributes or _EMPTY
        if context is None:
            raise ValueError("span without a context")
        trace_id = context.trace_id
        # One C-level pass over the span's keys decides for nearly every non-GenAI span.
        if self._interesting.isdisjoint(attrs) and not name.startswith(NAME_PREFIXES):
            if parent is None or parent.is_remote:
                self._root_ended((trace_id, context.span_id, span.start_time or 0, span.end_time or 0))
            self._ended_plain(trace_id)
            return
        # A span that may carry a step or a captured attribute: queued as is, parsed by the worker
        # (message JSON alone costs tens of microseconds), retained for one worker tick at most.
        if len(self._candidates) >= self._max_backlog:
            # The worker is far behind: drop rather than grow without bound, and say so.
            self.stats.count_dropped("backlog")
            self._ended(trace_id)
            return
        self._candidate(span)
        self._ended(trace_id)

    def _close_quietly(self, span: ReadableSpan) -> None:
        try:
            if span.context is not None:
                self._assembler.open_spans.ended_malformed(span.context.trace_id)
        except Exception:
            self.stats.count_internal_error()

    def add_sink(self, sink: Sink) -> None:
        self.pipeline.add_sink(sink)

    def add_callback(self, callback: VerdictCallback) -> None:
        self.pipeline.add_callback(callback)

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self.pipeline.force_flush(timeout_millis)

    def shutdown(self) -> None:
        self.pipeline.shutdown()
