"""GenAIEventProcessor: the GenAI events an instrumentation emits as log records, for the
``TrajectoryProcessor`` that grades their spans (see ``otel_traj.adapters.log_events``).

Instrumentations that record a model call's messages as GenAI events (OpenTelemetry's botocore
instrumentation for Bedrock, Vertex AI, google-genai, util-genai in ``event_only`` mode) emit them
through the application's ``LoggerProvider`` while the model call's span runs. Added to that provider
(``logger_provider.add_log_record_processor(processor.log_record_processor)``), this keeps each such
event until the worker reads the span it was emitted in, and the span is graded with it. Records that
are not GenAI content events, or emitted outside a span, are left alone.

``on_emit`` runs on the application's thread, like a span processor's hooks: it never raises
(anything unexpected is counted as an internal error) and keeps a reference to the record's
attributes and body rather than copying them. What waits is bounded (``PendingEvents``): events
whose span never comes are dropped and counted (``otel_traj_dropped_total{reason="log_events"}``).
"""

from __future__ import annotations

from typing import Any

from opentelemetry.sdk._logs import LogRecordProcessor

from otel_traj.adapters.log_events import CONTENT_EVENTS, EVENT_NAME_ATTRIBUTE, PendingEvents, content_event
from otel_traj.stats import PipelineStats


class GenAIEventProcessor(LogRecordProcessor):
    """Hands GenAI content events to the worker that reads their spans (``pending``)."""

    def __init__(self, pending: PendingEvents, stats: PipelineStats) -> None:
        self._pending = pending
        self._stats = stats

    def on_emit(self, log_record: Any) -> None:
        # The SDK hands over a ReadWriteLogRecord (1.39 on) or a LogData (before): both hold the
        # record itself in ``log_record``.
        try:
            record = getattr(log_record, "log_record", log_record)
            attributes = record.attributes or {}
            name = getattr(record, "event_name", None) or attributes.get(EVENT_NAME_ATTRIBUTE)
            if name not in CONTENT_EVENTS or not record.span_id or not record.trace_id:
                return
            time_ns = record.timestamp or record.observed_timestamp or 0
            event = content_event(name, time_ns, attributes, record.body)
            if event is not None:
                self._pending.add((record.trace_id, record.span_id), event)
        except Exception:
            self._stats.count_internal_error()

    # SDKs before 1.35 call ``emit(LogData)``.
    emit = on_emit

    def shutdown(self) -> None:
        """Nothing to release: the events wait in the ``TrajectoryProcessor``'s pipeline."""

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True
