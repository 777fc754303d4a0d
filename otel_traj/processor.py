"""TrajectoryProcessor: the in-process front door, an OpenTelemetry ``SpanProcessor``.

The SDK calls ``on_start``/``on_end`` on the application's thread without any try/except, so both
hooks catch everything and count it. They do the minimum and take no lock: each appends to a
lock-free queue (``OpenSpans``). Reading spans, assembly, grading and export happen on the
pipeline's worker thread. It follows the SDK's ``BatchSpanProcessor``: after ``shutdown`` the hooks
do nothing and ``force_flush`` returns False; both honour their deadline.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor

from otel_traj.adapters.log_events import PendingEvents
from otel_traj.adapters.sdk import from_readable_span, trace_id_of
from otel_traj.assembler import SpanReader
from otel_traj.config import AssemblerConfig
from otel_traj.dialects import may_be_step
from otel_traj.grader import Grader
from otel_traj.live import live_scope, subject_attributes
from otel_traj.pipeline import Pipeline, VerdictCallback
from otel_traj.policy import Policy, load_policy
from otel_traj.sinks.base import Sink
from otel_traj.spanview import SpanView, Wanted
from otel_traj.stats import PipelineStats

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

    from otel_traj.conversations import Conversations, ConversationVerdict
    from otel_traj.log_processor import GenAIEventProcessor

# Ended spans queued before the hooks wake the worker early (its tick may be tens of ms away).
DRAIN_AT = 256


def _conversations(policy: Policy | None) -> Conversations | None:
    """Conversations are held only when some agent's policy grades them."""
    if policy is None or all(p.conversation is None for p in (policy.defaults, *policy.agents.values())):
        return None
    from otel_traj.conversations import Conversations

    return Conversations(lambda: policy)


class TrajectoryProcessor(SpanProcessor):
    """Grades agent runs from the spans the application records.

    Attach it to a ``TracerProvider`` (``provider.add_span_processor(TrajectoryProcessor(...))``). It
    sees every *recorded* span, sampled or not: pair it with a sampler that records but does not
    sample (see README) to grade 100% of runs while exporting a sample.

    policy: a ``Policy``, or a path to a policy file (YAML or JSON); None grades nothing and only
    rebuilds trajectories. sinks: where verdicts go (Prometheus, Langfuse, SQLite, ...).
    on_verdict: a callable, or several, receiving each ``Verdict`` on the worker thread after every
    sink got it. config: the assembler's limits (``OTEL_TRAJ_*`` defaults). registry: where the
    pipeline's health metrics (``otel_traj_spans_total``, ``otel_traj_dropped_total``, ...) are
    registered; by default the registry of every Prometheus sink among ``sinks``.
    conversations: where traces of conversations wait for their conversation's verdict (bounded;
    ``OTEL_TRAJ_MAX_CONVERSATIONS``, ``OTEL_TRAJ_CONVERSATION_MAX_BYTES``); by default one when the
    policy has a ``conversation`` section. on_conversation: a callable receiving each
    ``ConversationVerdict`` on the worker thread after every sink got it. A policy with ``judges``
    adds a ``JudgeSink`` (``otel_traj.judge``) publishing to ``sinks``, with ``OPENAI_BASE_URL`` and
    ``OPENAI_API_KEY``.
    """

    def __init__(
        self,
        *,
        policy: Policy | str | Path | None = None,
        sinks: Iterable[Sink] = (),
        on_verdict: VerdictCallback | Iterable[VerdictCallback] = (),
        config: AssemblerConfig | None = None,
        registry: CollectorRegistry | None = None,
        conversations: Conversations | None = None,
        on_conversation: Callable[[ConversationVerdict], None] | None = None,
    ) -> None:
        if isinstance(policy, str | Path):
            policy = load_policy(policy)
        self.policy = policy
        config = config or AssemblerConfig()
        stats = PipelineStats()
        self._events = PendingEvents.within(config, stats)
        self._log_record_processor: GenAIEventProcessor | None = None
        callbacks = [on_verdict] if callable(on_verdict) else list(on_verdict)
        grader: Grader | None = None
        live = None
        if policy is not None:
            grader = Grader(policy, stats)
            live = live_scope(policy)
            config = config.with_capture(subject_attributes(policy))
            if policy.has_judges():
                # Only a policy with judges loads them (and the openai client).
                from otel_traj.judge.sink import with_judges

                sinks = with_judges(policy, sinks)
        self.pipeline = Pipeline(
            grade=grader.grade if grader is not None else None,
            grade_all=grader.grade_all if grader is not None else None,
            sinks=sinks,
            callbacks=callbacks,
            config=config,
            stats=stats,
            reader=SpanReader(view=self._read, trace_id=trace_id_of),
            live=live,
            conversations=conversations or _conversations(policy),
        )
        if on_conversation is not None:
            self.pipeline.add_conversation_callback(on_conversation)
        self.stats = self.pipeline.stats
        # Read by both hooks on every span: a plain attribute of this object.
        self._shut_down = False
        self._registry = registry
        self._register_health()
        self._make_record = self.pipeline.assembler.make_record
        self._open_spans = open_spans = self.pipeline.assembler.open_spans
        self._started, self._ended = open_spans.started, open_spans.ended
        self._ended_spans, self._max_backlog = open_spans.ended_spans, config.max_backlog
        self._drain_at = min(DRAIN_AT, config.max_backlog)

    @property
    def log_record_processor(self) -> GenAIEventProcessor:
        """The ``LogRecordProcessor`` to add to the application's ``LoggerProvider`` when its
        instrumentations emit GenAI events as log records (``otel_traj.log_processor``). Made on first
        use: an application without such events never loads the Logs SDK."""
        if self._log_record_processor is None:
            from otel_traj.log_processor import GenAIEventProcessor

            self._log_record_processor = GenAIEventProcessor(self._events, self.stats)
        return self._log_record_processor

    def _read(self, span: ReadableSpan, wanted: Wanted) -> SpanView:
        """The view of an ended span with the GenAI events emitted as log records while it ran."""
        return self._events.take(from_readable_span(span, wanted))

    def _register_health(self) -> None:
        """Health metrics of this pipeline and of its sinks (once each, however often called)."""
        if self._registry is not None:
            registries = [self._registry]
        else:
            candidates = (getattr(sink, "registry", None) for sink in self.pipeline.sinks)
            registries = [r for r in candidates if r is not None]
        if not registries:
            return
        # Here, not at import: an application without Prometheus never loads prometheus_client.
        from otel_traj.sinks.prometheus_health import register_pipeline_health

        for registry in registries:
            register_pipeline_health(registry, self.stats, *(sink.stats for sink in self.pipeline.sinks))

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        if self._shut_down:
            return
        try:
            self._started(span.get_span_context().trace_id)
        except Exception:
            self.stats.count_internal_error()

    def on_end(self, span: ReadableSpan) -> None:
        if self._shut_down:
            return
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
            return
        # The worker is far behind: keep what the trace's completion needs, drop the step rather
        # than grow without bound, and say so.
        view = from_readable_span(span)
        record = self._make_record.record(view, None)
        if may_be_step(view.name, view.attributes):
            # Its run is then graded incomplete, or counted as a run lost if nothing else of it is left.
            self._open_spans.ended_lost_step(record)
            self.stats.count_dropped("backlog")
        else:
            self._open_spans.ended_without_step(record)

    def add_sink(self, sink: Sink) -> None:
        self.pipeline.add_sink(sink)
        self._register_health()

    def add_callback(self, callback: VerdictCallback) -> None:
        self.pipeline.add_callback(callback)

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self.pipeline.force_flush(timeout_millis)

    def shutdown(self) -> None:
        self._shut_down = True
        self.pipeline.shutdown()
        self._events.discard()
