"""Recorded spans handed to a processor again: an SDK span equal to each one, as the processor saw it
in the agent."""

from __future__ import annotations

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

from otel_traj.spanview import SpanView


def readable(view: SpanView) -> ReadableSpan:
    """An SDK span equal to the recorded one, as the processor would have seen it in the agent."""
    parent = None
    if view.parent_id is not None:
        parent = SpanContext(view.trace_id, view.parent_id, is_remote=view.parent_is_remote)
    return ReadableSpan(
        name=view.name,
        context=SpanContext(view.trace_id, view.span_id, is_remote=False, trace_flags=TraceFlags(1)),
        parent=parent,
        resource=Resource(dict(view.resource)),
        attributes=dict(view.attributes),
        events=[Event(e.name, dict(e.attributes or {}), e.timestamp) for e in view.events],
        kind=SpanKind(view.kind),
        status=Status(StatusCode(view.status_code), view.status_message),
        start_time=view.start_ns,
        end_time=view.end_ns,
        instrumentation_scope=InstrumentationScope(view.scope_name),
    )
