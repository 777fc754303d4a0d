"""SpanViews from OTLP/JSON, including the variants real exporters and backends write.

The OTLP spec's JSON mapping: lowerCamelCase keys, hex trace and span ids, 64-bit integers as strings,
enums as integers. Accepted as well, because files in the wild have them: snake_case keys (protobuf
JSON printers with ``preserving_proto_field_name``), base64 ids (protobuf's generic JSON mapping),
integers as numbers, enums by name (``SPAN_KIND_SERVER``, ``STATUS_CODE_ERROR``), Grafana Tempo's
``{"batches": [...]}`` with the pre-1.0 ``instrumentationLibrarySpans`` / ``instrumentationLibrary``,
and ``{"trace": ...}`` around any of these.

Input is parsed JSON (``Any``). A span with missing ids or wrongly typed fields is counted in
``SpanBatch.malformed``; so is any other entry that is not a JSON object where one belongs. When its
trace id can be read, the span is kept in its trace as a ``MalformedSpan`` naming the field that could
not be read, so that its run is never graded as if it were whole.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable, Mapping
from typing import Any

from otel_traj.adapters.batch import SpanBatch
from otel_traj.spanview import EMPTY, MalformedSpan, SpanEvent, SpanView

_GROUP_KEYS = ("resourceSpans", "resource_spans", "batches")
OTLP_JSON_KEYS = (*_GROUP_KEYS, "trace")

_HEX = re.compile(r"[0-9a-fA-F]+")
_HAS_IS_REMOTE = 0x100
_IS_REMOTE = 0x200
_KINDS = {"UNSPECIFIED": 0, "INTERNAL": 1, "SERVER": 2, "CLIENT": 3, "PRODUCER": 4, "CONSUMER": 5}
_STATUS_CODES = {"UNSET": 0, "OK": 1, "ERROR": 2}


class MalformedError(ValueError):
    """One entry (span, attribute, id) that cannot be read; its span is skipped and counted."""


def json_field(obj: Mapping[str, Any], camel: str, snake: str) -> Any:
    """A field under its lowerCamelCase name, else its snake_case one (both are OTLP/JSON in the wild)."""
    value = obj.get(camel)
    return obj.get(snake) if value is None else value


def parse_id(value: Any, size: int) -> int:
    """A trace (``size`` 16) or span (8) id from hex, or from base64 as some exporters write it."""
    if not isinstance(value, str):
        raise MalformedError(f"id must be a string, got {type(value).__name__}")
    if len(value) == 2 * size and _HEX.fullmatch(value):
        return int(value, 16)
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise MalformedError(f"id {value!r} is neither hex nor base64") from None
    if len(raw) != size:
        raise MalformedError(f"id {value!r} is not {size} bytes")
    return int.from_bytes(raw)


def to_int(value: Any, default: int = 0) -> int:
    """An integer that JSON may carry as a number or, for 64-bit values, as a string."""
    if value is None:
        return default
    if isinstance(value, bool):
        raise MalformedError("boolean where an integer belongs")
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            raise MalformedError(f"{value!r} is not an integer") from None
    if isinstance(value, float) and value.is_integer():
        return int(value)
    raise MalformedError(f"{value!r} is not an integer")


def _to_float(value: Any) -> float:
    if isinstance(value, bool):
        raise MalformedError("boolean where a double belongs")
    if isinstance(value, float):
        return value
    if isinstance(value, int):
        try:
            return float(value)
        except OverflowError:
            raise MalformedError(f"{value} is out of range for a double") from None
    if isinstance(value, str):
        try:
            return float(value)  # proto3 JSON writes "NaN", "Infinity", "-Infinity"
        except ValueError:
            raise MalformedError(f"{value!r} is not a double") from None
    raise MalformedError(f"{value!r} is not a double")


def _enum(value: Any, names: dict[str, int], prefix: str) -> int:
    if value is None:
        return 0
    if isinstance(value, str) and not value.lstrip("-").isdigit():
        return names.get(value.upper().removeprefix(prefix), 0)
    return to_int(value)


def json_object(value: Any) -> Mapping[str, Any]:
    """``value`` if it is a JSON object; ``null`` reads as an empty one, anything else is malformed.

    Parsed JSON holds its objects as ``dict``s (no other mapping, whose ABC check costs more)."""
    if value is None:
        return EMPTY
    if not isinstance(value, dict):
        raise MalformedError(f"expected a JSON object, got {type(value).__name__}")
    return value


def json_array(value: Any) -> list[Any]:
    """``value`` if it is a JSON array; ``null`` reads as an empty one, anything else is malformed."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise MalformedError(f"expected a JSON array, got {type(value).__name__}")
    return value


def _str(value: Any) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise MalformedError(f"expected a string, got {type(value).__name__}")
    return value


def _bool(value: Any) -> bool:
    if not isinstance(value, bool):
        raise MalformedError(f"{value!r} is not a boolean")
    return value


def _array(value: Any) -> tuple[Any, ...]:
    return tuple(any_value(item) for item in json_array(json_object(value).get("values")))


def _kvlist(value: Any) -> dict[str, Any]:
    return attributes(json_object(value).get("values"))


def _bytes(value: Any) -> bytes:
    try:
        return base64.b64decode(_str(value), validate=True)
    except (binascii.Error, ValueError):
        raise MalformedError(f"{value!r} is not base64") from None


# The reader of each AnyValue member, by its lowerCamelCase and its snake_case key.
_VALUE_READERS: dict[str, Callable[[Any], Any]] = {
    key: reader
    for camel, snake, reader in (
        ("stringValue", "string_value", _str),
        ("intValue", "int_value", to_int),
        ("boolValue", "bool_value", _bool),
        ("doubleValue", "double_value", _to_float),
        ("arrayValue", "array_value", _array),
        ("kvlistValue", "kvlist_value", _kvlist),
        ("bytesValue", "bytes_value", _bytes),
    )
    for key in (camel, snake)
}


def any_value(value: Any) -> Any:
    """The Python value of an OTLP/JSON ``AnyValue`` object (arrays -> tuple, kvlists -> dict)."""
    for key, inner in json_object(value).items():
        reader = _VALUE_READERS.get(key)
        if reader is not None:
            return reader(inner)
    return None


def attributes(value: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kv in json_array(value):
        kv = json_object(kv)
        out[_str(kv.get("key"))] = any_value(kv.get("value"))
    return out


def _event(obj: Any) -> SpanEvent:
    obj = json_object(obj)
    return SpanEvent(
        _str(obj.get("name")),
        to_int(json_field(obj, "timeUnixNano", "time_unix_nano")),
        attributes(obj.get("attributes")) or EMPTY,
    )


def span_view(obj: Any, resource: Mapping[str, Any], scope_name: str) -> SpanView:
    """One OTLP/JSON span; raises ``MalformedError`` if it lacks valid ids or has wrong types."""
    obj = json_object(obj)
    trace_id = parse_id(json_field(obj, "traceId", "trace_id"), 16)
    span_id = parse_id(json_field(obj, "spanId", "span_id"), 8)
    if not trace_id or not span_id:
        raise MalformedError("all-zero trace or span id")
    parent = json_field(obj, "parentSpanId", "parent_span_id")
    status = json_object(obj.get("status"))
    kind = _enum(obj.get("kind"), _KINDS, "SPAN_KIND_")
    code = _enum(status.get("code"), _STATUS_CODES, "STATUS_CODE_")
    flags = to_int(obj.get("flags"))
    events = json_array(obj.get("events"))
    return SpanView(
        trace_id=trace_id,
        span_id=span_id,
        parent_id=(parse_id(parent, 8) or None) if parent else None,
        name=_str(obj.get("name")),
        start_ns=to_int(json_field(obj, "startTimeUnixNano", "start_time_unix_nano")),
        end_ns=to_int(json_field(obj, "endTimeUnixNano", "end_time_unix_nano")),
        attributes=attributes(obj.get("attributes")) or EMPTY,
        events=tuple(_event(e) for e in events) if events else (),
        status_code=code if 0 <= code <= 2 else 0,
        status_message=_str(status.get("message")) or None,
        # OTLP numbers kinds one above the SDK and reserves 0 for "unspecified" (read as internal).
        kind=kind - 1 if 0 < kind <= 5 else 0,
        parent_is_remote=flags & (_HAS_IS_REMOTE | _IS_REMOTE) == _HAS_IS_REMOTE | _IS_REMOTE,
        resource=resource,
        scope_name=scope_name,
    )


def _parent_id(obj: Mapping[str, Any]) -> int | None:
    parent = json_field(obj, "parentSpanId", "parent_span_id")
    return (parse_id(parent, 8) or None) if parent else None


def _nonzero_span_id(obj: Mapping[str, Any]) -> int:
    span_id = parse_id(json_field(obj, "spanId", "span_id"), 8)
    if not span_id:
        raise MalformedError("all-zero span id")
    return span_id


# Each field of a span by the name the reason of a malformed one gives, with its reader: read one by
# one only for a span that ``span_view`` could not read, to keep what can be and name what cannot.
_FIELD_READERS: tuple[tuple[str, Callable[[Mapping[str, Any]], Any]], ...] = (
    ("spanId", _nonzero_span_id),
    ("parentSpanId", _parent_id),
    ("name", lambda obj: _str(obj.get("name"))),
    ("startTimeUnixNano", lambda obj: to_int(json_field(obj, "startTimeUnixNano", "start_time_unix_nano"))),
    ("endTimeUnixNano", lambda obj: to_int(json_field(obj, "endTimeUnixNano", "end_time_unix_nano"))),
    ("attributes", lambda obj: attributes(obj.get("attributes"))),
    ("events", lambda obj: [_event(e) for e in json_array(obj.get("events"))]),
    ("status", lambda obj: _str(json_object(obj.get("status")).get("message"))),
    (
        "status.code",
        lambda obj: _enum(json_object(obj.get("status")).get("code"), _STATUS_CODES, "STATUS_CODE_"),
    ),
    ("kind", lambda obj: _enum(obj.get("kind"), _KINDS, "SPAN_KIND_")),
    ("flags", lambda obj: to_int(obj.get("flags"))),
)


def salvaged_fields(
    obj: Mapping[str, Any], readers: tuple[tuple[str, Callable[[Mapping[str, Any]], Any]], ...]
) -> tuple[dict[str, Any], str]:
    """The fields of ``obj`` that ``readers`` can read, by name, and what was wrong with the first
    that could not be (``"<field>: <problem>"``; empty when every one could)."""
    values: dict[str, Any] = {}
    problems: list[str] = []
    for name, reader in readers:
        try:
            values[name] = reader(obj)
        except (MalformedError, RecursionError) as exc:
            problems.append(f"{name}: {exc}")
    return values, problems[0] if problems else ""


def malformed_span(
    obj: Any, resource: Mapping[str, Any], scope_name: str, error: Exception
) -> MalformedSpan | None:
    """The placeholder of a span ``span_view`` could not read (``error``), when its trace id can be
    read; None when it cannot (the span is only counted)."""
    if not isinstance(obj, dict):
        return None
    try:
        trace_id = parse_id(json_field(obj, "traceId", "trace_id"), 16)
    except MalformedError:
        return None
    if not trace_id:
        return None
    values, problem = salvaged_fields(obj, _FIELD_READERS)
    return MalformedSpan(
        trace_id=trace_id,
        span_id=values.get("spanId", 0),
        parent_id=values.get("parentSpanId"),
        name=values.get("name", ""),
        start_ns=values.get("startTimeUnixNano", 0),
        end_ns=values.get("endTimeUnixNano", 0),
        resource=resource,
        scope_name=scope_name,
        reason=problem or f"{type(error).__name__}: {error}",
    )


def _scope_spans(obj: Any, resource: Mapping[str, Any], batch: SpanBatch) -> None:
    obj = json_object(obj)
    scope = json_field(obj, "scope", "instrumentationLibrary")
    if scope is None:
        scope = obj.get("instrumentation_library")
    scope_name = _str(json_object(scope).get("name"))
    for span in json_array(obj.get("spans")):
        try:
            batch.append(span_view(span, resource, scope_name))
        except (MalformedError, RecursionError) as exc:
            batch.malformed += 1
            placeholder = malformed_span(span, resource, scope_name, exc)
            if placeholder is not None:
                batch.append(placeholder)


def _resource_spans(obj: Any, batch: SpanBatch) -> None:
    obj = json_object(obj)
    resource = attributes(json_object(obj.get("resource")).get("attributes")) or EMPTY
    groups = json_field(obj, "scopeSpans", "scope_spans")
    if groups is None:
        groups = json_field(obj, "instrumentationLibrarySpans", "instrumentation_library_spans")
    for group in json_array(groups):
        try:
            _scope_spans(group, resource, batch)
        except (MalformedError, RecursionError):
            batch.malformed += 1


def is_otlp_json(doc: Any) -> bool:
    return isinstance(doc, Mapping) and any(key in doc for key in OTLP_JSON_KEYS)


def views_from_otlp_json(doc: Any) -> SpanBatch:
    """Views from one parsed OTLP/JSON document: a request object, a list of them, a Tempo export.

    Raises ``ValueError`` if ``doc`` is none of these; anything unreadable inside is counted.
    """
    batch = SpanBatch()
    if isinstance(doc, list):
        for item in doc:
            if is_otlp_json(item):
                batch.extend_batch(views_from_otlp_json(item))
            else:
                batch.malformed += 1
        return batch
    if not is_otlp_json(doc):
        raise ValueError(f"not OTLP/JSON: expected an object with one of {', '.join(OTLP_JSON_KEYS)}")
    groups = next((doc[key] for key in _GROUP_KEYS if doc.get(key) is not None), None)
    if groups is None and "trace" in doc:
        inner = doc["trace"]
        if is_otlp_json(inner) or isinstance(inner, list):
            return views_from_otlp_json(inner)
        return SpanBatch(malformed=1)
    try:
        groups = json_array(groups)
    except MalformedError:
        batch.malformed += 1
        return batch
    for group in groups:
        try:
            _resource_spans(group, batch)
        except (MalformedError, RecursionError):
            batch.malformed += 1
    return batch
