"""SpanViews from the observations of Langfuse's public API (``GET /api/public/v2/observations``).

An observation Langfuse ingested over OTLP keeps the span's ids (trace id in 32 hex, observation id =
span id in 16 hex), parent, times, level (``ERROR`` for a span whose status was an error) and status
message; Langfuse's ingestion keeps the span's other attributes in ``metadata.attributes`` (values
JSON-encoded to text), the resource's in ``metadata.resourceAttributes`` and the scope in
``metadata.scope``, and moves one pair of attributes into ``input`` and ``output``
(``langfuse_io.restore_io`` puts them back). Such a view reads as the span read from OTLP, except
for what Langfuse does not keep: span events (other than the messages it moved into ``input``), the
span kind, times finer than it stores, and the attributes its ingestion deletes.

An observation without ``metadata.attributes`` is read from its typed fields through the Langfuse
dialect (``dialects.langfuse.api_attributes``). For the Langfuse SDK's own spans (its scope
``langfuse-sdk``, or the ``public_key`` attribute its tracer's scope carries) and observations not
ingested over OTLP, the typed fields are what was written. A span of any other instrumentation
ingested over OTLP (its metadata keeps the resource or the scope) came back without its attributes:
a server that writes observations to its events table (``processToEvent``) keeps none.
:attr:`ObservationViews.without_attributes` counts them (``backfill.fidelity.attribute_problems``).

What cannot be read faithfully is listed in :attr:`ObservationViews.problems`: an id that is not an
OpenTelemetry id, an observation not ended, metadata Langfuse truncated (not an object), a parent
not among the observations. A run with problems is not fully read.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from otel_traj.adapters.langfuse_io import restore_events, restore_io
from otel_traj.dialects import langfuse
from otel_traj.spanview import EMPTY, STATUS_ERROR, SpanEvent, SpanView

_TRACE_ID = re.compile(r"[0-9a-f]{32}")
_SPAN_ID = re.compile(r"[0-9a-f]{16}")
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
# The Langfuse SDK's instrumentation scope (``langfuse-sdk``; its tracer's scope carries ``public_key``).
LANGFUSE_SDK_SCOPE = "langfuse-sdk"
# What an observation lost, as ``_attributes`` notes it.
MESSAGES_DROPPED = "messages"
ATTRIBUTES_MISSING = "attributes"


@dataclass(slots=True)
class ObservationViews:
    """The views of one trace's observations, and what could not be read faithfully."""

    views: list[SpanView] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    # OpenInference model observations whose ``llm.input_messages.*`` / ``llm.output_messages.*``
    # Langfuse deleted (it keeps ``input.value`` / ``output.value`` instead): the tool calls those
    # messages requested are not known.
    dropped_messages: int = 0
    # Observations of other instrumentations ingested over OTLP that came back without the span's
    # attributes: read from their typed fields only.
    without_attributes: int = 0


def timestamp_ns(value: str) -> int:
    """Nanoseconds since the epoch of an ISO 8601 time (``Z`` or an offset; naive is UTC)."""
    when = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    delta = when - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1_000


def _attribute(value: Any) -> Any:
    """An attribute as Langfuse keeps it (non-strings JSON-encoded to text) back to its value."""
    if not isinstance(value, str) or not value or value[0] not in "-0123456789[tf":
        return value
    try:
        decoded = orjson.loads(value)
    except orjson.JSONDecodeError:
        return value
    if isinstance(decoded, bool | int | float):
        return decoded
    if isinstance(decoded, list) and all(isinstance(v, str | bool | int | float) for v in decoded):
        return tuple(decoded)
    return value


def _object(value: Any) -> Mapping[str, Any] | None:
    """A metadata object, or the object a JSON text holds; None for anything else (truncated)."""
    if isinstance(value, Mapping):
        return value
    if isinstance(value, str):
        try:
            decoded = orjson.loads(value)
        except orjson.JSONDecodeError:
            return None
        return decoded if isinstance(decoded, Mapping) else None
    return None


def _text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return orjson.dumps(value).decode()


def _event_value(value: Any) -> Any:
    """An event attribute as Langfuse decoded it back to an attribute value (a list of scalars is
    an array)."""
    if isinstance(value, list) and all(isinstance(v, str | bool | int | float) for v in value):
        return tuple(value)
    return value


def _events(
    attrs: Mapping[str, Any], value_in: str | None, value_out: str | None, at: int
) -> tuple[SpanEvent, ...]:
    """The per-message events Langfuse moved into the observation's input and output (their times
    are not kept: the span's start)."""
    found = restore_events(attrs, value_in, value_out)
    if found is None:
        return ()
    return tuple(
        SpanEvent(name=name, timestamp=at, attributes={k: _event_value(v) for k, v in attributes.items()})
        for name, attributes in found
    )


def _without_attributes(metadata: Mapping[str, Any]) -> bool:
    """Whether an observation without kept attributes was a span of another instrumentation than
    the Langfuse SDK, ingested over OTLP: its metadata keeps the resource or the scope."""
    scope = _object(metadata.get("scope")) or EMPTY
    scope_attributes = _object(metadata.get("scopeAttributes")) or EMPTY
    if str(scope.get("name") or "").startswith(LANGFUSE_SDK_SCOPE) or "public_key" in scope_attributes:
        return False
    return any(key in metadata for key in ("resourceAttributes", "scopeAttributes", "scope"))


def _attributes(
    observation: Mapping[str, Any], name: str, start: int, problems: list[str], lost: list[str]
) -> tuple[dict[str, Any], Mapping[str, Any], str, tuple[SpanEvent, ...]]:
    """The span's attributes, resource, scope name and the events Langfuse kept."""
    metadata = observation.get("metadata")
    if metadata is not None and not isinstance(metadata, Mapping):
        problems.append(f"observation {observation.get('id')}: metadata truncated")
        metadata = None
    metadata = metadata or EMPTY
    kept = metadata.get("attributes")
    if kept is None:
        if _without_attributes(metadata):
            lost.append(ATTRIBUTES_MISSING)
        return langfuse.api_attributes(observation), EMPTY, "", ()
    attrs_in = _object(kept)
    if attrs_in is None:
        problems.append(f"observation {observation.get('id')}: attributes truncated")
        return langfuse.api_attributes(observation), EMPTY, "", ()
    resource = {k: _attribute(v) for k, v in (_object(metadata.get("resourceAttributes")) or EMPTY).items()}
    scope = _object(metadata.get("scope")) or EMPTY
    scope_name = str(scope.get("name") or "")
    attrs = {k: _attribute(v) for k, v in attrs_in.items()}
    value_in, value_out = _text(observation.get("input")), _text(observation.get("output"))
    events = _events(attrs, value_in, value_out, start) if scope_name != "ai" else ()
    if not events:
        restore_io(attrs, scope_name, name, value_in, value_out)
    if attrs.get("openinference.span.kind") == "LLM" and ("input.value" in attrs or "output.value" in attrs):
        lost.append(MESSAGES_DROPPED)
    return attrs, resource, scope_name, events


def _view(observation: Mapping[str, Any], problems: list[str], lost: list[str]) -> SpanView | None:
    ident, trace = observation.get("id"), observation.get("traceId")
    if not isinstance(ident, str) or not _SPAN_ID.fullmatch(ident):
        problems.append(f"observation {ident}: not an OpenTelemetry span id")
        return None
    if not isinstance(trace, str) or not _TRACE_ID.fullmatch(trace):
        problems.append(f"observation {ident}: trace id {trace} is not an OpenTelemetry trace id")
        return None
    parent = observation.get("parentObservationId")
    if parent is not None and not (isinstance(parent, str) and _SPAN_ID.fullmatch(parent)):
        problems.append(f"observation {ident}: parent {parent} is not an OpenTelemetry span id")
        parent = None
    name = str(observation.get("name") or "")
    start = timestamp_ns(str(observation["startTime"]))
    ended = observation.get("endTime")
    if ended is None:
        problems.append(f"observation {ident} ({name}) has not ended")
    attrs, resource, scope_name, events = _attributes(observation, name, start, problems, lost)
    error = observation.get("level") == "ERROR"
    message = observation.get("statusMessage")
    return SpanView(
        trace_id=int(trace, 16),
        span_id=int(ident, 16),
        parent_id=int(parent, 16) if parent else None,
        name=name,
        start_ns=start,
        end_ns=timestamp_ns(str(ended)) if ended is not None else start,
        attributes=attrs,
        events=events,
        status_code=STATUS_ERROR if error else 0,
        status_message=message if error and isinstance(message, str) else None,
        resource=resource,
        scope_name=scope_name,
    )


def views_from_observations(observations: Sequence[Mapping[str, Any]]) -> ObservationViews:
    """The views of one trace's observations (as the API returns them: JSON objects)."""
    out = ObservationViews()
    lost: list[str] = []
    for observation in observations:
        view = _view(observation, out.problems, lost)
        if view is not None:
            out.views.append(view)
    out.dropped_messages = lost.count(MESSAGES_DROPPED)
    out.without_attributes = lost.count(ATTRIBUTES_MISSING)
    present = {view.span_id for view in out.views}
    for view in out.views:
        if view.parent_id is not None and view.parent_id not in present:
            out.problems.append(f"observation {view.span_id:016x}: parent {view.parent_id:016x} missing")
    return out
