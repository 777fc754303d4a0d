"""Trace-level values a span may carry in a dialect's own keys.

Applications attach run metadata (the customer, the session) as span attributes. Besides the plain
key (``app.customer_id``), Traceloop records it as an association property
(``traceloop.association.properties.app.customer_id``; its standard ``session_id`` / ``user_id``
properties are ``session.id`` / ``user.id``), the Langfuse SDK as JSON-encoded trace
metadata (``langfuse.trace.metadata.app.customer_id``), LangSmith's OpenTelemetry export as its run
metadata (``langsmith.metadata.app.customer_id``), and pydantic-ai and OpenInference put the
run's ``metadata`` as one JSON object on the agent span.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from otel_traj.dialects._base import bounded_value, dumps, loads, valid_text

TRACELOOP_PROPERTY = "traceloop.association.properties."
# traceloop-sdk's standard association properties (``AssociationProperty.SESSION_ID`` / ``USER_ID``)
# hold what these captured keys name, under names of their own: a run that sets only them still has
# its session (conversation) and user.
TRACELOOP_STANDARD = {"session.id": "session_id", "user.id": "user_id"}
# The Langfuse SDK's trace metadata (``propagate_attributes(metadata=...)``), each value as JSON.
LANGFUSE_METADATA = "langfuse.trace.metadata."
# LangSmith's run metadata, each value as it was (objects as JSON).
LANGSMITH_METADATA = "langsmith.metadata."
METADATA = "metadata"
# Run metadata larger than this is not parsed for captured values.
METADATA_LIMIT = 64 * 1024

Scalar = str | int | float | bool


def capture_sources(keys: Iterable[str]) -> dict[str, str]:
    """Every attribute key a captured value may be read from, mapped to the captured name, in the
    configured order (a trace's captured attributes keep one order in every process)."""
    keys = tuple(keys)
    found = {key: key for key in keys}
    for prefix in (TRACELOOP_PROPERTY, LANGFUSE_METADATA, LANGSMITH_METADATA):
        found |= {prefix + key: key for key in keys}
    found |= {TRACELOOP_PROPERTY + TRACELOOP_STANDARD[key]: key for key in keys if key in TRACELOOP_STANDARD}
    return found


def captured_values(
    attributes: Mapping[str, Any], sources: Mapping[str, str], max_chars: int
) -> list[tuple[str, Any]]:
    """The captured attributes present, as valid text cut to ``max_chars``: a run keeps them until it
    is graded, whatever size the span had."""
    return [
        (name, bounded_value(_decoded(key, attributes[key]), max_chars))
        for key, name in sources.items()
        if key in attributes
    ]


def _decoded(key: str, value: Any) -> Any:
    """Langfuse's metadata values are JSON (``"\"C023\""``): the scalar they hold."""
    if key.startswith(LANGFUSE_METADATA) and isinstance(value, str):
        decoded = loads(value)
        if isinstance(decoded, Scalar):
            return decoded
    return value


def metadata_text(attributes: Mapping[str, Any], keys: Iterable[str], max_chars: int) -> str | None:
    """The run metadata JSON a span carries, unparsed while it is within ``max_chars`` (most runs
    never need it); a longer one is parsed now and only the captured keys it holds are kept, as JSON
    within ``max_chars`` (the run keeps this text until it is graded)."""
    value = attributes.get(METADATA)
    if not isinstance(value, str):
        return None
    if len(value) <= max_chars:
        return valid_text(value)
    kept: dict[str, Scalar] = {}
    text: str | None = None
    for key, found in metadata_values(value, keys).items():
        more = {**kept, key: bounded_value(found, max_chars)}
        candidate = dumps(more)
        if candidate is not None and len(candidate) <= max_chars:
            kept, text = more, candidate
    return text


def metadata_values(text: str, keys: Iterable[str]) -> dict[str, Scalar]:
    """The captured keys that the run metadata JSON holds as scalar values."""
    data = loads(text, METADATA_LIMIT)
    if not isinstance(data, dict):
        return {}
    # A JSON escape (``"\\ud800"``) decodes to a lone surrogate: made valid as the attributes are.
    return {
        key: valid_text(value) if isinstance(value, str) else value
        for key in keys
        if isinstance(value := data.get(key), Scalar)
    }
