"""SpanView: the minimal read-only view of one span that everything downstream sees.

Adapters (``otel_traj.adapters``) build SpanViews from the SDK's ``ReadableSpan``, OTLP protobuf,
OTLP/JSON and Jaeger JSON, so in-process and offline grading run the very same code.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Protocol

EMPTY: Mapping[str, Any] = MappingProxyType({})

# Whether anything downstream reads a span of this name and these attributes: an adapter may read
# the others without their attributes, events and resource.
Wanted = Callable[[str, Mapping[str, Any]], bool]

STATUS_UNSET = 0
STATUS_OK = 1
STATUS_ERROR = 2

# Span kinds numbered as the SDK's ``SpanKind``; OTLP numbers them one higher (0 = unspecified).
KIND_INTERNAL = 0
KIND_SERVER = 1
KIND_CLIENT = 2
KIND_PRODUCER = 3
KIND_CONSUMER = 4


class EventLike(Protocol):
    """A span event. The SDK's own ``Event`` satisfies it, so in-process spans need no copy."""

    @property
    def name(self) -> str: ...

    @property
    def timestamp(self) -> int: ...

    @property
    def attributes(self) -> Mapping[str, Any] | None: ...


@dataclass(slots=True, frozen=True)
class SpanEvent:
    name: str
    timestamp: int
    attributes: Mapping[str, Any] = field(default_factory=lambda: EMPTY)


@dataclass(slots=True)
class SpanView:
    """One span, as the grader needs it.

    ``attributes`` and ``resource`` are mappings of OTel attribute values (str, bool, int, float or
    sequences of them). Adapters may hand over the SDK's own mappings without copying: treat them as
    read-only. ``kind`` is one of the ``KIND_*`` constants.
    """

    trace_id: int
    span_id: int
    parent_id: int | None
    name: str
    start_ns: int
    end_ns: int
    attributes: Mapping[str, Any] = field(default_factory=lambda: EMPTY)
    events: Sequence[EventLike] = ()
    status_code: int = STATUS_UNSET
    status_message: str | None = None
    kind: int = 0
    parent_is_remote: bool = False
    resource: Mapping[str, Any] = field(default_factory=lambda: EMPTY)
    scope_name: str = ""

    @property
    def is_error(self) -> bool:
        return self.status_code == STATUS_ERROR

    @property
    def is_local_root(self) -> bool:
        return self.parent_id is None or self.parent_is_remote


@dataclass(slots=True)
class MalformedSpan(SpanView):
    """The placeholder of a span an adapter could not read but whose trace id it could: kept in its
    trace so that the run says it was not fully read, instead of being graded without the span.
    Fields that could not be read keep their defaults (a span id of 0 when it was the id); ``reason``
    says what was wrong. Never a local root: whether it was one cannot be trusted."""

    reason: str = ""

    @property
    def is_local_root(self) -> bool:
        return False
