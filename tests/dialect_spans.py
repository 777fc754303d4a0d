"""Real SDK spans for dialect tests: recorded through a TracerProvider, read back as SpanViews."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode

from otel_traj.adapters.sdk import from_readable_span
from otel_traj.spanview import SpanView

_EXPORTER = InMemorySpanExporter()
_PROVIDER = TracerProvider()
_PROVIDER.add_span_processor(SimpleSpanProcessor(_EXPORTER))


def record(
    name: str,
    attributes: Mapping[str, Any],
    *,
    scope: str = "test",
    events: Sequence[tuple[str, Mapping[str, Any]]] = (),
    error: BaseException | None = None,
    status_message: str | None = None,
) -> SpanView:
    """End one span with these attributes and events (and, with ``error``, a recorded exception)."""
    _EXPORTER.clear()
    span = _PROVIDER.get_tracer(scope).start_span(name, attributes=dict(attributes))
    for event_name, event_attributes in events:
        span.add_event(event_name, dict(event_attributes))
    if error is not None:
        span.record_exception(error)
        span.set_status(
            Status(StatusCode.ERROR, status_message if status_message is not None else str(error))
        )
    span.end()
    (finished,) = _EXPORTER.get_finished_spans()
    return from_readable_span(finished)
