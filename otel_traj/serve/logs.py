"""OTLP logs in ``serve`` (``POST /v1/logs`` and ``LogsService/Export``): the conversation tier, and
the GenAI events that instrumentations record as log records.

In a fleet the traces of one conversation reach different replicas (traces are routed by trace id).
Each replica emits ``gen_ai.evaluation.result`` events, and the outcome event of a run in a
conversation carries the run's summary (``otel_traj.trace.summary``, JSON). A Collector routes those
records by ``gen_ai.conversation.id`` to the replica that assembles the conversation; it receives them
here and adds each summary to its conversations, which are graded as the ones it holds from its own
traces are. A GenAI content event (``gen_ai.user.message``, ``gen_ai.choice``, ...; see
``adapters.log_events``) waits for the span it was emitted in, which the traces' ``Ingest`` reads with
it. Any other log record is accepted and counted as ``ignored``.

A request is taken whole (refused only while shutting down); a summary or an event that cannot be
read is counted ``invalid`` and reported in ``partial_success.rejected_log_records``. With
``--conversations-from traces`` (the default) a replica grades conversations from the traces it
grades itself and counts received summaries as ``disabled``: adding them too would grade each turn
it has seen twice and the conversation in part.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import KeyValue
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord
from prometheus_client.metrics_core import CounterMetricFamily, Metric
from prometheus_client.registry import Collector

from otel_traj.adapters.log_events import (
    CONTENT_EVENTS,
    EVENT_NAME_ATTRIBUTE,
    LogEvents,
    PendingEvents,
    SpanKey,
    content_event,
    json_log_records,
    json_record_event,
)
from otel_traj.adapters.otlp_json import MalformedError, json_field, json_object
from otel_traj.adapters.otlp_json import attributes as json_attributes
from otel_traj.adapters.otlp_proto import any_value
from otel_traj.adapters.otlp_proto import attributes as proto_attributes
from otel_traj.conversations import Conversations, TraceSummary
from otel_traj.serve.codec import encode, load_json
from otel_traj.serve.ingest import REQUEST_RESULTS, InvalidRequest, ReceiverStats, Refused
from otel_traj.sinks.evaluation_records import EVENT_NAME, SUMMARY
from otel_traj.spanview import SpanEvent

logger = logging.getLogger("otel_traj.serve")

# What became of each received log record (otel_traj_log_records_total{result}).
RECORD_RESULTS = ("summary", "content", "ignored", "invalid", "no_conversation", "disabled")
_MAX_TRACE_ID = 1 << 128


@dataclass(slots=True)
class LogBatch:
    """The summaries and the GenAI content events of one request; ``records`` counts every log
    record, ``content`` the GenAI content events (``events``, by the span they were emitted in),
    ``ignored`` the records that are neither, ``invalid`` those that could not be read."""

    summaries: list[TraceSummary] = field(default_factory=list)
    events: LogEvents = field(default_factory=LogEvents)
    records: int = 0
    content: int = 0
    ignored: int = 0
    invalid: int = 0

    def add_content(self, joined: tuple[SpanKey, SpanEvent] | None) -> None:
        """A content event's record, joined to its span (None: emitted outside any, ignored)."""
        self.records += 1
        if joined is None:
            self.ignored += 1
        else:
            self.content += 1
            self.events.add(*joined)

    def read(self, event_name: str, summary: Any) -> None:
        self.records += 1
        if summary is None or event_name != EVENT_NAME:
            self.ignored += 1
            return
        try:
            if not isinstance(summary, str):
                raise TypeError(f"{SUMMARY} is a {type(summary).__name__}, not a JSON string")
            parsed = TraceSummary.from_dict(json.loads(summary))
            if int(parsed.trace_id, 16) >= _MAX_TRACE_ID:
                raise ValueError(f"trace id {parsed.trace_id} is longer than 128 bits")
        except (KeyError, TypeError, ValueError, ArithmeticError, RecursionError) as exc:
            logger.debug("unreadable trace summary: %s", exc)
            self.invalid += 1
            return
        self.summaries.append(parsed)


@dataclass(slots=True, frozen=True)
class LogsAccepted:
    """The OTLP ``partial_success`` of one logs request."""

    records: int
    rejected: int

    @property
    def message(self) -> str:
        if not self.rejected:
            return ""
        return (
            f"{self.rejected} log records rejected: an {SUMMARY} that is not a trace summary, or unreadable"
        )


def _wanted(kvs: Iterable[KeyValue]) -> tuple[str, Any]:
    """The ``event.name`` attribute and the summary among a record's attributes (the rest unread)."""
    event_name, summary = "", None
    for kv in kvs:
        if kv.key == SUMMARY:
            which = kv.value.WhichOneof("value")
            # Anything but a string is not a summary (and is counted invalid).
            summary = kv.value.string_value if which == "string_value" else kv.value
        elif kv.key == EVENT_NAME_ATTRIBUTE and kv.value.WhichOneof("value") == "string_value":
            event_name = kv.value.string_value
    return event_name, summary


def decode_logs_protobuf(data: bytes) -> LogBatch:
    request = ExportLogsServiceRequest()
    try:
        request.ParseFromString(data)
    except DecodeError as exc:
        raise InvalidRequest(f"not an ExportLogsServiceRequest: {exc}") from None
    batch = LogBatch()
    for resource_logs in request.resource_logs:
        for scope_logs in resource_logs.scope_logs:
            for record in scope_logs.log_records:
                named, summary = _wanted(record.attributes)
                name = record.event_name or named
                if name in CONTENT_EVENTS:
                    batch.add_content(_content_event(record, name))
                else:
                    batch.read(name, summary)
    return batch


def _content_event(record: LogRecord, name: str) -> tuple[SpanKey, SpanEvent] | None:
    if len(record.trace_id) != 16 or len(record.span_id) != 8:
        return None  # emitted outside any span (or ids of a wrong size)
    key = (int.from_bytes(record.trace_id), int.from_bytes(record.span_id))
    time_ns = record.time_unix_nano or record.observed_time_unix_nano
    body = any_value(record.body) if record.HasField("body") else None
    event = content_event(name, time_ns, proto_attributes(record.attributes), body)
    return (key, event) if event is not None and all(key) else None


def decode_logs_json(data: bytes) -> LogBatch:
    """OTLP/JSON (lowerCamelCase keys; snake_case accepted as for traces). A record that is not a
    well-formed object counts as invalid; a request whose structure is not OTLP is a 400."""
    doc = load_json(data)
    batch = LogBatch()
    try:
        for record in json_log_records(doc):
            _read_json(batch, record)
    except MalformedError as exc:
        raise InvalidRequest(f"not an OTLP/JSON logs request: {exc}") from None
    return batch


def _read_json(batch: LogBatch, record: Any) -> None:
    try:
        obj = json_object(record)
        attributes = json_attributes(obj.get("attributes"))
        event_name = json_field(obj, "eventName", "event_name") or attributes.get(EVENT_NAME_ATTRIBUTE) or ""
        content = event_name in CONTENT_EVENTS
        joined = json_record_event(obj, event_name, attributes) if content else None
    except (MalformedError, RecursionError):
        batch.records += 1
        batch.invalid += 1
        return
    if content:
        batch.add_content(joined)
    else:
        batch.read(str(event_name), attributes.get(SUMMARY))


def logs_response(accepted: LogsAccepted) -> ExportLogsServiceResponse:
    message = ExportLogsServiceResponse()
    if accepted.rejected:
        message.partial_success.rejected_log_records = accepted.rejected
        message.partial_success.error_message = accepted.message
    return message


def logs_response_body(accepted: LogsAccepted, content_type: str) -> bytes:
    return encode(logs_response(accepted), content_type)


class LogIngest:
    """Adds the summaries of received log records to ``conversations`` (when ``enabled``: the
    service assembles conversations from logs), and counts every record by what became of it."""

    def __init__(
        self,
        conversations: Conversations,
        enabled: bool,
        retry_after_s: float = 1.0,
        events: PendingEvents | None = None,
    ) -> None:
        self.conversations = conversations
        self.enabled = enabled
        self.retry_after_s = retry_after_s
        # GenAI content events wait here for their spans (the traces' Ingest takes them).
        self.events = events
        self.stats = ReceiverStats()
        self._records = dict.fromkeys(RECORD_RESULTS, 0)
        self._lock = threading.Lock()
        self._closed = False
        self._warned = False

    def close(self) -> None:
        """Refuse everything from now on (shutdown: the exporter retries against another replica)."""
        with self._lock:
            self._closed = True

    @property
    def accepting(self) -> bool:
        return not self._closed

    def records(self) -> dict[str, int]:
        with self._lock:
            return dict(self._records)

    def accept(self, batch: LogBatch) -> LogsAccepted:
        with self._lock:
            if self._closed:
                raise Refused("shutting down", self.retry_after_s)
        added = missing = 0
        if self.enabled:
            for summary in batch.summaries:
                if self.conversations.add(summary):
                    added += 1
                else:
                    missing += 1
        elif batch.summaries and not self._warned:
            self._warned = True
            logger.warning(
                "received trace summaries, counted as disabled: this replica grades conversations "
                "from its own traces (start it with --conversations-from logs to take them)"
            )
        if self.events is not None and batch.events.by_span:
            self.events.add_all(batch.events)
        with self._lock:
            self._records["summary"] += added
            self._records["content"] += batch.content
            self._records["no_conversation"] += missing
            self._records["disabled"] += 0 if self.enabled else len(batch.summaries)
            self._records["ignored"] += batch.ignored
            self._records["invalid"] += batch.invalid
        return LogsAccepted(records=batch.records, rejected=batch.invalid)


class LogsCollector(Collector):
    """``otel_traj_receiver_log_requests_total{transport,result}`` and
    ``otel_traj_log_records_total{result}``."""

    def __init__(self, logs: LogIngest) -> None:
        self._logs = logs

    def collect(self) -> Iterable[Metric]:
        requests, _, _ = self._logs.stats.snapshot()
        family = CounterMetricFamily(
            "otel_traj_receiver_log_requests",
            "OTLP logs export requests received, by transport and result.",
            labels=["transport", "result"],
        )
        for transport in ("grpc", "http"):
            for result in REQUEST_RESULTS:
                family.add_metric([transport, result], requests.get((transport, result), 0))
        yield family
        records = CounterMetricFamily(
            "otel_traj_log_records",
            "OTLP log records received, by what became of them: summary (added to a conversation), "
            "content (a GenAI event joined to its span), ignored (neither, or emitted outside a span), "
            "invalid (unreadable, rejected), no_conversation (its agent's policy has no conversation "
            "section), disabled (--conversations-from traces).",
            labels=["result"],
        )
        for result, n in self._logs.records().items():
            records.add_metric([result], n)
        yield records
