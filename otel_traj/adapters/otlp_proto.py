"""SpanViews from OTLP protobuf (``ExportTraceServiceRequest``): files and the network receiver.

Parsing is upb's (≈0.5 µs per span); the cost is reading the fields back into Python, ≈0.5 µs per
attribute because each access to a upb sub-message allocates a wrapper. So each sub-message is read
once, and resource attributes are converted once per ``ResourceSpans`` and shared by its spans.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from otel_traj.adapters.batch import SpanBatch
from otel_traj.spanview import EMPTY, STATUS_ERROR, MalformedSpan, SpanEvent, SpanView

# SpanFlags: bit 0x100 says whether the producer knew if the parent was remote, 0x200 says it was.
_HAS_IS_REMOTE = 0x100
_IS_REMOTE = 0x200
_BOTH_REMOTE_BITS = _HAS_IS_REMOTE | _IS_REMOTE
_MAX_KIND = 5


def any_value(value: AnyValue) -> Any:
    """The Python value of an OTLP ``AnyValue``: arrays become tuples, key-value lists dicts."""
    which = value.WhichOneof("value")
    if which == "string_value":
        return value.string_value
    if which == "int_value":
        return value.int_value
    if which == "bool_value":
        return value.bool_value
    if which == "double_value":
        return value.double_value
    if which == "array_value":
        return tuple([any_value(item) for item in value.array_value.values])
    if which == "kvlist_value":
        return attributes(value.kvlist_value.values)
    if which == "bytes_value":
        return value.bytes_value
    return None


def attributes(kvs: Iterable[KeyValue]) -> dict[str, Any]:
    return {kv.key: any_value(kv.value) for kv in kvs}


def _view(span: Span, resource: dict[str, Any], scope_name: str) -> SpanView | None:
    trace_bytes = span.trace_id
    span_bytes = span.span_id
    parent_bytes = span.parent_span_id
    if len(trace_bytes) != 16 or len(span_bytes) != 8 or len(parent_bytes) not in (0, 8):
        return None
    trace_id = int.from_bytes(trace_bytes)
    span_id = int.from_bytes(span_bytes)
    if not trace_id or not span_id:
        return None
    kind = span.kind
    status = span.status
    code = status.code
    events = span.events
    kvs = span.attributes
    return SpanView(
        trace_id,
        span_id,
        int.from_bytes(parent_bytes) or None,
        span.name,
        span.start_time_unix_nano,
        span.end_time_unix_nano,
        attributes(kvs) if kvs else EMPTY,
        tuple([SpanEvent(e.name, e.time_unix_nano, attributes(e.attributes)) for e in events])
        if events
        else (),
        code if 0 <= code <= STATUS_ERROR else 0,
        status.message or None,
        # OTLP numbers kinds one above the SDK and reserves 0 for "unspecified" (read as internal).
        kind - 1 if 0 < kind <= _MAX_KIND else 0,
        span.flags & _BOTH_REMOTE_BITS == _BOTH_REMOTE_BITS,
        resource,
        scope_name,
    )


def _id_problem(name: str, value: bytes, size: int) -> str:
    if len(value) != size:
        return f"{name}: {len(value)} bytes, not {size}"
    return f"{name}: all zero" if not any(value) else ""


def _malformed(span: Span, resource: dict[str, Any], scope_name: str) -> MalformedSpan | None:
    """The placeholder of a span ``_view`` could not read, when its trace id is valid; else None
    (the span is only counted)."""
    if _id_problem("trace_id", span.trace_id, 16):
        return None
    span_problem = _id_problem("span_id", span.span_id, 8)
    parent_bytes = span.parent_span_id
    parent_problem = _id_problem("parent_span_id", parent_bytes, 8) if parent_bytes else ""
    return MalformedSpan(
        trace_id=int.from_bytes(span.trace_id),
        span_id=0 if span_problem else int.from_bytes(span.span_id),
        parent_id=None if parent_problem else int.from_bytes(parent_bytes) or None,
        name=span.name,
        start_ns=span.start_time_unix_nano,
        end_ns=span.end_time_unix_nano,
        resource=resource,
        scope_name=scope_name,
        reason=span_problem or parent_problem,
    )


def views_from_request(request: ExportTraceServiceRequest) -> SpanBatch:
    """All spans of a request. A span without valid ids is counted in ``malformed`` and, when its
    trace id is valid, kept in its trace as a ``MalformedSpan`` saying which id is wrong."""
    batch = SpanBatch()
    append = batch.append
    for resource_spans in request.resource_spans:
        # One dict per resource, shared by its spans: resources repeat, spans should not pay twice.
        resource = attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            scope_name = scope_spans.scope.name
            for span in scope_spans.spans:
                view = _view(span, resource, scope_name)
                if view is None:
                    batch.malformed += 1
                    view = _malformed(span, resource, scope_name)
                    if view is None:
                        continue
                append(view)
    return batch


def parse_request(data: bytes) -> ExportTraceServiceRequest:
    """Parse protobuf bytes; raises ``google.protobuf.message.DecodeError`` on invalid input."""
    request = ExportTraceServiceRequest()
    request.ParseFromString(data)
    return request


def views_from_bytes(data: bytes) -> SpanBatch:
    """Decode a serialized ``ExportTraceServiceRequest``; raises ``DecodeError`` if it is not one."""
    return views_from_request(parse_request(data))
