"""GenAI events sent as OpenTelemetry log records, joined to the spans they were emitted in.

The GenAI semantic conventions define the messages of a model call as events, and an event is a log
record in the span's context: ``gen_ai.system.message``, ``gen_ai.user.message``,
``gen_ai.assistant.message``, ``gen_ai.tool.message`` (the request), ``gen_ai.choice`` (the response)
and ``gen_ai.client.inference.operation.details`` (both, in the newest conventions). Instrumentations
that follow them (OpenTelemetry's botocore instrumentation for Bedrock, Vertex AI, google-genai, util-genai
in ``event_only`` mode) record the messages, the calls a model asks for and the results sent back only
there: their spans hold the model and the usage. A record names its span (trace and span id), so it is
read as an event of that span: named by the record's event name (or its ``event.name`` attribute, as
older Logs SDKs write it), its attributes the record's plus, when the body is a map, the body's
fields. The dialects then read it as they read span events.

Only those event names are kept; any other record (an application's log lines, evaluation results)
is not part of a run. Records are bounded where they wait for their span (see ``PendingEvents``).
"""

from __future__ import annotations

import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from otel_traj import env
from otel_traj.adapters.otlp_json import (
    MalformedError,
    any_value,
    json_array,
    json_field,
    json_object,
    parse_id,
    to_int,
)
from otel_traj.adapters.otlp_json import attributes as json_attributes
from otel_traj.spanview import SpanEvent, SpanView

if TYPE_CHECKING:
    from otel_traj.config import AssemblerConfig
    from otel_traj.stats import PipelineStats

CONTENT_EVENTS = frozenset(
    {
        "gen_ai.system.message",
        "gen_ai.user.message",
        "gen_ai.assistant.message",
        "gen_ai.tool.message",
        "gen_ai.choice",
        "gen_ai.client.inference.operation.details",
    }
)
# Older Logs SDKs name an event in this attribute rather than in the record's event_name field.
EVENT_NAME_ATTRIBUTE = "event.name"

SpanKey = tuple[int, int]


def content_event(name: str, time_ns: int, attributes: Mapping[str, Any], body: Any) -> SpanEvent | None:
    """The span event a log record stands for, or None when it is not a GenAI content event."""
    if name not in CONTENT_EVENTS:
        return None
    # Attributes of log records may hold maps and arrays too (the operation-details event's messages).
    merged = {key: _as_json(value) for key, value in attributes.items() if key != EVENT_NAME_ATTRIBUTE}
    body = _as_json(body)
    if isinstance(body, dict):
        merged.update(body)
    elif body is not None:
        merged["body"] = body
    return SpanEvent(name, time_ns, MappingProxyType(merged))


def _as_json(value: Any) -> Any:
    """A body as the JSON it stands for (maps as dicts, arrays as lists), as the message readers take
    messages, whether it was decoded from OTLP or handed over by the Logs SDK."""
    if isinstance(value, Mapping):
        return {str(key): _as_json(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_as_json(item) for item in value]
    return value


@dataclass(slots=True)
class LogEvents:
    """Content events by the span they belong to; ``records`` counts the log records read,
    ``malformed`` those that could not be (no ids, wrongly typed fields)."""

    by_span: dict[SpanKey, list[SpanEvent]] = field(default_factory=dict)
    records: int = 0
    malformed: int = 0

    def add(self, key: SpanKey, event: SpanEvent) -> None:
        self.by_span.setdefault(key, []).append(event)

    def extend(self, other: LogEvents) -> None:
        for key, events in other.by_span.items():
            self.by_span.setdefault(key, []).extend(events)
        self.records += other.records
        self.malformed += other.malformed

    @property
    def events(self) -> int:
        return sum(len(events) for events in self.by_span.values())


def with_events(view: SpanView, events: Iterable[SpanEvent]) -> SpanView:
    """``view`` with ``events`` among its own, in time order (a stable sort: records emitted at the
    same nanosecond keep the order they were emitted in)."""
    added = list(events)
    if not added:
        return view
    return replace(view, events=sorted((*view.events, *added), key=lambda e: e.timestamp))


def attach(views: Iterable[SpanView], events: LogEvents) -> tuple[list[SpanView], int]:
    """Every view with its content events; and how many events named no view given."""
    pending = dict(events.by_span)
    joined = [with_events(view, pending.pop((view.trace_id, view.span_id), ())) for view in views]
    return joined, sum(len(left) for left in pending.values())


def json_record_event(
    obj: Mapping[str, Any], name: str, attributes: Mapping[str, Any]
) -> tuple[SpanKey, SpanEvent] | None:
    """The span and event of one OTLP/JSON log record named ``name`` (a content event's), or None when
    it was emitted outside any span; raises ``MalformedError`` on wrongly typed fields."""
    raw_trace, raw_span = json_field(obj, "traceId", "trace_id"), json_field(obj, "spanId", "span_id")
    if not raw_trace or not raw_span:
        return None
    trace_id, span_id = parse_id(raw_trace, 16), parse_id(raw_span, 8)
    time_ns = to_int(json_field(obj, "timeUnixNano", "time_unix_nano")) or to_int(
        json_field(obj, "observedTimeUnixNano", "observed_time_unix_nano")
    )
    event = content_event(name, time_ns, attributes, any_value(obj.get("body")))
    return ((trace_id, span_id), event) if event is not None and trace_id and span_id else None


def _json_record(found: LogEvents, record: Any) -> None:
    found.records += 1
    try:
        obj = json_object(record)
        attributes = json_attributes(obj.get("attributes"))
        name = json_field(obj, "eventName", "event_name") or attributes.get(EVENT_NAME_ATTRIBUTE)
        joined = json_record_event(obj, name, attributes) if name in CONTENT_EVENTS else None
    except (MalformedError, RecursionError):
        found.malformed += 1
        return
    if joined is not None:
        found.add(*joined)


def is_otlp_logs_json(doc: Any) -> bool:
    return isinstance(doc, dict) and ("resourceLogs" in doc or "resource_logs" in doc)


def json_log_records(doc: Any) -> Iterator[Any]:
    """Every log record of a parsed OTLP/JSON logs request (``resourceLogs`` → ``scopeLogs`` →
    ``logRecords``, snake_case accepted); raises ``MalformedError`` where its structure is not that."""
    for resource_logs in json_array(json_field(json_object(doc), "resourceLogs", "resource_logs")):
        scopes = json_field(json_object(resource_logs), "scopeLogs", "scope_logs")
        for scope_logs in json_array(scopes):
            yield from json_array(json_field(json_object(scope_logs), "logRecords", "log_records"))


def events_from_otlp_json(doc: Any) -> LogEvents:
    """The content events of one parsed OTLP/JSON logs document (an ``ExportLogsServiceRequest``)."""
    found = LogEvents()
    try:
        for record in json_log_records(doc):
            _json_record(found, record)
    except (MalformedError, RecursionError):
        found.malformed += 1
    return found


# Events kept for one span at most (the SDK's default limit of events on a span).
MAX_EVENTS_PER_SPAN = 128
# otel_traj_dropped_total{reason}: events whose span never came, or past a cap.
DROPPED_EVENTS = "log_events"


def event_size(value: Any) -> int:
    """The bytes an event (or any JSON-like value) holds in memory: the size of every object it is
    made of, as the interpreter allocates it (a text of 4-byte characters counts 4 bytes each, a
    small number its whole object, a container its slots), so that a byte bound on what waits bounds
    the resident memory it takes. Keys shared between events are counted in each."""
    size = sys.getsizeof(value)
    if isinstance(value, SpanEvent):
        return size + event_size(value.name) + event_size(value.attributes)
    if isinstance(value, Mapping):
        return size + sum(event_size(k) + event_size(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return size + sum(map(event_size, value))
    return size


class PendingEvents:
    """Content events waiting for their span: emitted while it runs (in-process), or received before
    it (``serve`` gets logs and traces in requests of their own; the Logs SDK usually exports first).

    Bounded three ways, the oldest spans' events going first: ``max_spans`` spans, ``max_bytes`` of
    events in all (``event_size``: a record's body is the instrumentation's, and may hold a whole
    conversation), and ``MAX_EVENTS_PER_SPAN`` a span. ``dropped`` counts the events lost."""

    def __init__(
        self, *, max_spans: int, max_bytes: int, on_drop: Callable[[int], None] | None = None
    ) -> None:
        self.max_spans = env.COUNT.require("max_spans", max_spans)
        self.max_bytes = env.SIZE.require("max_bytes", max_bytes)
        self.dropped = 0
        self._on_drop = on_drop
        self._waiting: OrderedDict[SpanKey, list[tuple[SpanEvent, int]]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    @classmethod
    def within(cls, config: AssemblerConfig, stats: PipelineStats) -> PendingEvents:
        """Bounded as the assembler's ``config`` says (``max_traces`` spans, ``max_event_bytes``), each
        loss counted in ``stats`` as ``dropped{reason="log_events"}``."""
        return cls(
            max_spans=config.max_traces,
            max_bytes=config.max_event_bytes,
            on_drop=lambda n: stats.count_dropped(DROPPED_EVENTS, n),
        )

    def __len__(self) -> int:
        with self._lock:
            return len(self._waiting)

    @property
    def bytes(self) -> int:
        """The estimated size of what waits."""
        with self._lock:
            return self._bytes

    def add(self, key: SpanKey, event: SpanEvent) -> None:
        sized = [(event, event_size(event))]  # measured before the lock is taken
        with self._lock:
            lost = self._add(key, sized)
        self._count(lost)

    def add_all(self, events: LogEvents) -> None:
        sized = {key: [(e, event_size(e)) for e in added] for key, added in events.by_span.items()}
        with self._lock:
            lost = sum(self._add(key, added) for key, added in sized.items())
        self._count(lost)

    def _add(self, key: SpanKey, added: list[tuple[SpanEvent, int]]) -> int:
        lost = 0
        waiting = self._waiting.get(key)
        for event, size in added:
            if size > self.max_bytes or (waiting is not None and len(waiting) >= MAX_EVENTS_PER_SPAN):
                lost += 1
                continue
            if waiting is None:
                waiting = self._waiting[key] = []
            waiting.append((event, size))
            self._bytes += size
        while len(self._waiting) > self.max_spans or self._bytes > self.max_bytes:
            _, evicted = self._waiting.popitem(last=False)
            self._bytes -= sum(size for _, size in evicted)
            lost += len(evicted)
        return lost

    def _count(self, lost: int) -> None:
        if lost:
            self.dropped += lost
            if self._on_drop is not None:
                self._on_drop(lost)

    def discard(self) -> None:
        """Drop (and count) every event still waiting: their spans will not come (shutdown)."""
        with self._lock:
            lost = sum(len(events) for events in self._waiting.values())
            self._waiting.clear()
            self._bytes = 0
        self._count(lost)

    def take(self, view: SpanView) -> SpanView:
        """``view`` with the events waiting for it (which stop waiting). A service that receives no
        such events pays a dict's truth test a span."""
        if not self._waiting:
            return view
        with self._lock:
            waiting = self._waiting.pop((view.trace_id, view.span_id), None)
            if waiting:
                self._bytes -= sum(size for _, size in waiting)
        return with_events(view, [event for event, _ in waiting]) if waiting else view
