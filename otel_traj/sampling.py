"""Grade every run, export a sample: a sampler that records all spans but samples only some.

Span processors see every *recorded* span; the SDK's ``BatchSpanProcessor`` and
``SimpleSpanProcessor`` skip spans that are not *sampled*. ``RecordAllSampler`` therefore lets the
``TrajectoryProcessor`` grade 100% of agent runs while the exporter ships only ``ratio`` of them.
"""

from __future__ import annotations

from collections.abc import Sequence

from opentelemetry.context import Context
from opentelemetry.sdk.trace.sampling import (
    Decision,
    ParentBased,
    Sampler,
    SamplingResult,
    TraceIdRatioBased,
)
from opentelemetry.trace import Link, SpanKind, get_current_span
from opentelemetry.trace.span import TraceState
from opentelemetry.util.types import Attributes


class RecordAllSampler(Sampler):
    """Samples like ``ParentBased(TraceIdRatioBased(ratio))``; turns every drop into RECORD_ONLY."""

    def __init__(self, ratio: float) -> None:
        self._ratio = ratio
        self._inner = ParentBased(TraceIdRatioBased(ratio))

    def should_sample(
        self,
        parent_context: Context | None,
        trace_id: int,
        name: str,
        kind: SpanKind | None = None,
        attributes: Attributes = None,
        links: Sequence[Link] | None = None,
        trace_state: TraceState | None = None,
    ) -> SamplingResult:
        result = self._inner.should_sample(
            parent_context, trace_id, name, kind, attributes, links, trace_state
        )
        if result.decision is not Decision.DROP:
            return result
        state = trace_state or get_current_span(parent_context).get_span_context().trace_state
        return SamplingResult(Decision.RECORD_ONLY, attributes, state)

    def get_description(self) -> str:
        return f"RecordAllSampler{{ratio={self._ratio}}}"
