"""SpanViews from Jaeger's JSON: the query API / UI download (``{"data": [trace, ...]}``) and v3.

Jaeger stores OTel concepts as tags; they are read back the way Jaeger's own OTLP translator writes
them (``span.kind``, ``otel.status_code``, ``otel.status_description``, ``error``,
``otel.scope.name``) and removed from the attributes, so a span reads the same as its OTLP original.
Times are microseconds. The v3 API (``{"result": {"resourceSpans": ...}}``) is OTLP/JSON inside. A
span that cannot be read is counted in ``malformed`` and, when its trace id can be, kept in its trace
as a ``MalformedSpan`` naming the field that could not be read.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable, Mapping
from typing import Any

from otel_traj.adapters.batch import SpanBatch
from otel_traj.adapters.otlp_json import (
    MalformedError,
    is_otlp_json,
    json_array,
    json_object,
    salvaged_fields,
    to_int,
    views_from_otlp_json,
)
from otel_traj.spanview import (
    EMPTY,
    KIND_CLIENT,
    KIND_CONSUMER,
    KIND_INTERNAL,
    KIND_PRODUCER,
    KIND_SERVER,
    STATUS_ERROR,
    STATUS_OK,
    STATUS_UNSET,
    MalformedSpan,
    SpanEvent,
    SpanView,
)

_HEX = re.compile(r"[0-9a-fA-F]+")
_KINDS = {
    "internal": KIND_INTERNAL,
    "server": KIND_SERVER,
    "client": KIND_CLIENT,
    "producer": KIND_PRODUCER,
    "consumer": KIND_CONSUMER,
}
# Tags that carry span fields rather than attributes; ``internal.span.format`` is Jaeger's own.
_SPAN_FIELD_TAGS = frozenset(
    {
        "span.kind",
        "otel.status_code",
        "otel.status_description",
        "error",
        "otel.scope.name",
        "otel.scope.version",
        "otel.library.name",
        "otel.library.version",
        "internal.span.format",
    }
)


def is_jaeger_json(doc: Any) -> bool:
    return isinstance(doc, Mapping) and (
        "data" in doc or "result" in doc or ("spans" in doc and ("traceID" in doc or "processes" in doc))
    )


def _hex_id(value: Any, size: int) -> int:
    # Jaeger drops leading zeros and writes 64-bit trace ids as 16 digits.
    if not isinstance(value, str) or len(value) > 2 * size or not _HEX.fullmatch(value):
        raise MalformedError(f"id {value!r} is not a hex string of up to {2 * size} digits")
    return int(value, 16)


def tag_value(tag: Mapping[str, Any]) -> Any:
    """The Python value of a typed Jaeger tag (``string``, ``bool``, ``int64``, ``float64``, ``binary``)."""
    kind = str(tag.get("type", "string")).lower()
    value = tag.get("value")
    if kind == "bool":
        return value if isinstance(value, bool) else str(value).lower() == "true"
    if kind == "int64":
        return to_int(value)
    if kind == "float64":
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            raise MalformedError(f"{value!r} is not a float64")
        try:
            return float(value)
        except (ValueError, OverflowError):
            raise MalformedError(f"{value!r} is not a float64") from None
    if kind == "binary":
        try:
            return base64.b64decode(str(value), validate=True)
        except (binascii.Error, ValueError):
            raise MalformedError(f"{value!r} is not base64") from None
    return value


def tags(value: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for tag in json_array(value):
        tag = json_object(tag)
        key = tag.get("key")
        if not isinstance(key, str):
            raise MalformedError(f"tag key {key!r} is not a string")
        out[key] = tag_value(tag)
    return out


def _resource(process: Any) -> dict[str, Any]:
    process = json_object(process)
    resource = tags(process.get("tags"))
    service = process.get("serviceName")
    if isinstance(service, str):
        resource["service.name"] = service
    return resource


def _event(log: Any) -> SpanEvent:
    log = json_object(log)
    fields = tags(log.get("fields"))
    name = fields.pop("event", "")
    return SpanEvent(str(name), to_int(log.get("timestamp")) * 1000, fields or EMPTY)


def _parent(span: Mapping[str, Any], trace_id: int) -> int | None:
    refs = [json_object(r) for r in json_array(span.get("references"))]
    for ref_type in ("CHILD_OF", "FOLLOWS_FROM"):
        for ref in refs:
            if ref.get("refType") != ref_type:
                continue
            if "traceID" in ref and _hex_id(ref["traceID"], 16) != trace_id:
                continue  # a reference into another trace is a link, not the parent
            return _hex_id(ref.get("spanID"), 8)
    parent = span.get("parentSpanID")
    return (_hex_id(parent, 8) or None) if parent else None


def _status(attrs: dict[str, Any]) -> tuple[int, str | None]:
    code = str(attrs.get("otel.status_code", "")).upper()
    message = attrs.get("otel.status_description")
    message = str(message) if message else None
    if code == "ERROR" or attrs.get("error") in (True, "true"):
        return STATUS_ERROR, message
    return (STATUS_OK if code == "OK" else STATUS_UNSET), message


def span_view(span: Any, resources: Mapping[str, Mapping[str, Any]]) -> SpanView:
    """One Jaeger span; raises ``MalformedError`` if it lacks valid ids or has wrong types."""
    span = json_object(span)
    trace_id = _hex_id(span.get("traceID"), 16)
    span_id = _hex_id(span.get("spanID"), 8)
    if not trace_id or not span_id:
        raise MalformedError("all-zero trace or span id")
    name = _name(span)
    start = to_int(span.get("startTime")) * 1000
    all_tags = tags(span.get("tags"))
    status_code, status_message = _status(all_tags)
    process = span.get("process")
    if process is not None:
        resource: Mapping[str, Any] = _resource(process)
    else:
        resource = resources.get(str(span.get("processID")), EMPTY)
    scope = all_tags.get("otel.scope.name", all_tags.get("otel.library.name", ""))
    logs = json_array(span.get("logs"))
    attrs = {k: v for k, v in all_tags.items() if k not in _SPAN_FIELD_TAGS}
    return SpanView(
        trace_id=trace_id,
        span_id=span_id,
        parent_id=_parent(span, trace_id),
        name=name,
        start_ns=start,
        end_ns=start + to_int(span.get("duration")) * 1000,
        attributes=attrs or EMPTY,
        events=tuple(_event(log) for log in logs) if logs else (),
        status_code=status_code,
        status_message=status_message,
        kind=_KINDS.get(str(all_tags.get("span.kind", "")).lower(), KIND_INTERNAL),
        resource=resource,
        scope_name=str(scope),
    )


def _nonzero_span_id(span: Mapping[str, Any]) -> int:
    span_id = _hex_id(span.get("spanID"), 8)
    if not span_id:
        raise MalformedError("all-zero span id")
    return span_id


def _name(span: Mapping[str, Any]) -> str:
    name = span.get("operationName", "")
    if not isinstance(name, str):
        raise MalformedError(f"operationName {name!r} is not a string")
    return name


def _field_readers(trace_id: int) -> tuple[tuple[str, Callable[[Mapping[str, Any]], Any]], ...]:
    """Each field of a span of trace ``trace_id`` by name, as ``salvaged_fields`` reads them."""
    return (
        ("spanID", _nonzero_span_id),
        ("references", lambda span: _parent(span, trace_id)),
        ("operationName", _name),
        ("startTime", lambda span: to_int(span.get("startTime")) * 1000),
        ("duration", lambda span: to_int(span.get("duration")) * 1000),
        ("tags", lambda span: tags(span.get("tags"))),
        ("logs", lambda span: [_event(log) for log in json_array(span.get("logs"))]),
        ("process", lambda span: span.get("process") is None or _resource(span["process"])),
    )


def _malformed_span(
    span: Any, resources: Mapping[str, Mapping[str, Any]], error: Exception
) -> MalformedSpan | None:
    """The placeholder of a span ``span_view`` could not read (``error``), when its trace id can be
    read; None when it cannot (the span is only counted)."""
    if not isinstance(span, dict):
        return None
    try:
        trace_id = _hex_id(span.get("traceID"), 16)
    except MalformedError:
        return None
    if not trace_id:
        return None
    values, problem = salvaged_fields(span, _field_readers(trace_id))
    start = values.get("startTime", 0)
    return MalformedSpan(
        trace_id=trace_id,
        span_id=values.get("spanID", 0),
        parent_id=values.get("references"),
        name=values.get("operationName", ""),
        start_ns=start,
        end_ns=start + values["duration"] if start and "duration" in values else 0,
        resource=resources.get(str(span.get("processID")), EMPTY),
        reason=problem or f"{type(error).__name__}: {error}",
    )


def _trace(trace: Any, batch: SpanBatch) -> None:
    trace = json_object(trace)
    resources: dict[str, Mapping[str, Any]] = {}
    for process_id, process in json_object(trace.get("processes")).items():
        try:
            resources[process_id] = _resource(process) or EMPTY
        except MalformedError:
            resources[process_id] = EMPTY
    for span in json_array(trace.get("spans")):
        try:
            batch.append(span_view(span, resources))
        except (MalformedError, RecursionError) as exc:
            batch.malformed += 1
            placeholder = _malformed_span(span, resources, exc)
            if placeholder is not None:
                batch.append(placeholder)


def views_from_jaeger(doc: Any) -> SpanBatch:
    """Views from a parsed Jaeger document: ``{"data": [...]}``, one trace object, or a v3 result.

    Raises ``ValueError`` if ``doc`` is none of these; anything unreadable inside is counted.
    """
    if not is_jaeger_json(doc):
        raise ValueError("not Jaeger JSON: expected an object with data, result or spans")
    if "result" in doc and "data" not in doc:
        result = doc["result"]
        if is_otlp_json(result) or isinstance(result, list):
            return views_from_otlp_json(result)
        return SpanBatch(malformed=1)
    batch = SpanBatch()
    try:
        traces = json_array(doc["data"]) if "data" in doc else [doc]
    except MalformedError:
        return SpanBatch(malformed=1)
    for trace in traces:
        try:
            _trace(trace, batch)
        except (MalformedError, RecursionError):
            batch.malformed += 1
    return batch
