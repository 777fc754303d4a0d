"""SpanView from the SDK's ``ReadableSpan``: the in-process front door.

Read through the SDK's public properties only, on the worker thread: attributes, events and resource
attributes are the SDK's own objects (no longer mutated once the span has ended), handed through as
read-only mappings and sequences, so nothing is copied.
"""

from __future__ import annotations

from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import StatusCode

from otel_traj.spanview import EMPTY, STATUS_ERROR, STATUS_OK, STATUS_UNSET, SpanView, Wanted

_STATUS = {StatusCode.UNSET: STATUS_UNSET, StatusCode.OK: STATUS_OK, StatusCode.ERROR: STATUS_ERROR}


def from_readable_span(span: ReadableSpan, wanted: Wanted | None = None) -> SpanView:
    """The view of an ended SDK span. A span that ``wanted`` rejects is read without its attributes,
    events and resource: most spans of an application are not GenAI, and only their place in the
    trace matters."""
    context, name = span.context, span.name
    if context is None or not isinstance(name, str):
        raise ValueError(f"span {name!r}: no span context, or a name that is not text")
    parent = span.parent
    view = SpanView(
        trace_id=context.trace_id,
        span_id=context.span_id,
        parent_id=parent.span_id if parent is not None else None,
        name=name,
        start_ns=span.start_time or 0,
        end_ns=span.end_time or 0,
        parent_is_remote=parent is not None and parent.is_remote,
    )
    attributes = span.attributes or EMPTY
    if wanted is not None and not wanted(name, attributes):
        return view
    # A plain dict: the dialects probe many absent keys, which the SDK's attribute mapping answers by
    # raising and catching KeyError in Python, and the attributes are read several times.
    view.attributes = dict(attributes)
    view.events = span.events
    status = span.status
    view.status_code = _STATUS.get(status.status_code, STATUS_UNSET)
    view.status_message = status.description
    view.kind = span.kind.value
    view.resource = span.resource.attributes
    scope = span.instrumentation_scope
    view.scope_name = scope.name if scope is not None else ""
    return view


def trace_id_of(span: ReadableSpan) -> int:
    """The trace id of a span whose view cannot be built."""
    context = span.context
    if context is None:
        raise ValueError("no span context")
    trace_id: int = context.trace_id
    return trace_id


def comparable(view: SpanView) -> tuple[Any, ...]:
    """Everything a SpanView says, with mappings and events in plain comparable form."""
    events = [(e.name, e.timestamp, dict(e.attributes or EMPTY)) for e in view.events]
    return (
        view.trace_id,
        view.span_id,
        view.parent_id,
        view.name,
        view.start_ns,
        view.end_ns,
        dict(view.attributes),
        events,
        view.status_code,
        view.status_message,
        view.kind,
        view.parent_is_remote,
        dict(view.resource),
        view.scope_name,
    )
