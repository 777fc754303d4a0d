"""TrajectoryProcessor: the in-process front door, an OpenTelemetry ``SpanProcessor``.

The SDK calls ``on_start``/``on_end`` on the application's thread without any try/except, so both
hooks catch everything and count it. They do the minimum: a fast test whether the span can matter,
and for GenAI spans the extraction of one compact step appended under a lock. Building, grading and
exporting happen on the pipeline's worker thread.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor

from otel_traj.adapters.sdk import from_readable_span
from otel_traj.config import AssemblerConfig
from otel_traj.dialects import to_step
from otel_traj.gate import might_be_genai
from otel_traj.grader import Grader
from otel_traj.live import live_scope, subject_attributes
from otel_traj.pipeline import Pipeline, VerdictCallback
from otel_traj.policy import Policy, load_policy
from otel_traj.sinks.base import Sink
from otel_traj.stats import PipelineStats
from otel_traj.steps import Step
from otel_traj.verdict import Verdict

logger = logging.getLogger("otel_traj")

_EMPTY: Mapping[str, Any] = {}


def _raw_attributes(span: ReadableSpan) -> Mapping[str, Any]:
    """The span's attribute dict without the SDK's wrappers.

    ``ReadableSpan.attributes`` wraps the SDK's ``BoundedAttributes`` in a ``MappingProxyType``; each
    ``in`` test through both layers is a Python-level call. Ended spans are immutable, so reading the
    inner dict is safe and several times faster on this every-span path.
    """
    attrs = getattr(span, "_attributes", None)
    inner = getattr(attrs, "_dict", None)
    if isinstance(inner, dict):
        return inner
    return span.attributes or _EMPTY


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
        self._config = config
        self._max_chars = config.max_chars
        self.pipeline = Pipeline(
            grade=grade,
            sinks=sinks,
            callbacks=callbacks,
            config=config,
            stats=stats,
            track_starts=True,
            live=live,
            convert=self._convert,
        )
        self.stats = self.pipeline.stats
        self._assembler = self.pipeline.assembler

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        try:
            self._assembler.span_started(span.context.trace_id)
        except Exception:
            self.stats.count_internal_error()

    def on_end(self, span: ReadableSpan) -> None:
        try:
            self._on_end(span)
        except Exception:
            # A span we cannot read must never reach the application's span.end().
            self._close_quietly(span)

    def _on_end(self, span: ReadableSpan) -> None:
        context = span.context
        assert context is not None
        attrs = _raw_attributes(span)
        parent = span.parent
        is_root = parent is None or parent.is_remote
        candidate = might_be_genai(attrs, span.name)
        if not candidate and not is_root and self._assembler.captures_nothing(attrs):
            self._assembler.span_ended_untracked(context.trace_id)
            return
        self._assembler.add(
            context.trace_id,
            context.span_id,
            parent.span_id if parent is not None else None,
            is_root,
            span.start_time or 0,
            span.end_time or 0,
            None,
            attrs,
            span.resource.attributes,
            pending=span if candidate else None,
        )

    def _convert(self, span: ReadableSpan) -> Step | None:
        """Worker side: the step of a GenAI candidate span; a span we cannot read is counted."""
        try:
            return to_step(from_readable_span(span), self._max_chars)
        except Exception:
            self.stats.count_internal_error()
            return None

    def _close_quietly(self, span: ReadableSpan) -> None:
        try:
            if span.context is not None:
                self._assembler.span_ended_untracked(span.context.trace_id, "malformed")
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
