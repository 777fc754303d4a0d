"""EvaluationEventSink: verdicts as ``gen_ai.evaluation.result`` events through the OpenTelemetry
Logs SDK, to any OTLP backend (Tempo, Jaeger, Honeycomb, Datadog, a Collector).

``export`` only queues the verdict (bounded: the oldest is dropped and counted when full); one
delivery thread turns verdicts into log records and exports them. With the ``LoggerProvider`` the
user passes, records go to its processors (usually a ``BatchLogRecordProcessor``); without one the
sink builds its own from the standard ``OTEL_EXPORTER_OTLP_*`` variables (``OTLPLogExporter`` over
HTTP) and exports each batch itself on its thread, so that every record lost is counted.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING

from opentelemetry._logs import SeverityNumber
from opentelemetry.sdk._logs import (
    LoggerProvider,
    LogRecordProcessor,
    ReadableLogRecord,
    ReadWriteLogRecord,
)
from opentelemetry.sdk._logs.export import LogRecordExporter, LogRecordExportResult
from opentelemetry.sdk.resources import Resource
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, set_span_in_context

from otel_traj import env
from otel_traj.delivery import Delivery
from otel_traj.judge.result import JudgeResult
from otel_traj.redact import Redactor, SensitiveKey, TraceRedaction
from otel_traj.sinks.base import Sink
from otel_traj.sinks.evaluation_records import (
    EVENT_NAME,
    EvaluationRecord,
    conversation_records,
    judgement_record,
    trajectory_records,
    with_provenance,
)
from otel_traj.verdict import Verdict

if TYPE_CHECKING:
    from otel_traj.conversations import ConversationVerdict, TraceSummary
    from otel_traj.policy import Policy

logger = logging.getLogger("otel_traj.sinks.otel_events")

SCOPE = "otel_traj"
BATCH = 512
_Queued = Verdict | JudgeResult | tuple[str, "ConversationVerdict"]


class _Collect(LogRecordProcessor):
    """The sink's own provider hands each record to the delivery thread's current batch."""

    def __init__(self) -> None:
        self.batch: list[ReadableLogRecord] = []

    def on_emit(self, log_record: ReadWriteLogRecord) -> None:
        self.batch.append(
            ReadableLogRecord(
                log_record=log_record.log_record,
                resource=log_record.resource or Resource.get_empty(),
                instrumentation_scope=log_record.instrumentation_scope,
                limits=log_record.limits,
            )
        )

    def shutdown(self) -> None:
        self.batch = []

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True


def _otlp_exporter(endpoint: str | None) -> LogRecordExporter:
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter

    # Without a base URL the exporter reads OTEL_EXPORTER_OTLP_LOGS_ENDPOINT, then
    # OTEL_EXPORTER_OTLP_ENDPOINT + /v1/logs, and the headers, timeout, compression and certificates.
    return OTLPLogExporter(endpoint=endpoint.rstrip("/") + "/v1/logs" if endpoint else None)


class EvaluationEventSink(Sink):
    """One ``gen_ai.evaluation.result`` log record per check and one per outcome, for every verdict
    (trajectory and conversation), and one per LLM judge result, parented to the evaluated span.

    Args:
        logger_provider: where records go; the caller owns it (``shutdown`` flushes it, never shuts
            it down). Default: a provider the sink builds and owns, exporting OTLP/HTTP.
        endpoint: base URL of an OTLP/HTTP receiver (records are posted to ``<endpoint>/v1/logs``);
            default the ``OTEL_EXPORTER_OTLP_*`` variables. Only without ``logger_provider``.
        exporter: the exporter of the sink's own provider, instead of OTLP/HTTP.
        max_queue: verdicts waiting for the delivery thread (``OTEL_TRAJ_EVENTS_MAX_QUEUE``, 10,000);
            beyond it the oldest is dropped (``dropped{reason="otel_events_queue_full"}``).
        redact: what masks explanations (as the other sinks: secret-looking keys by default).
        policy: the policy (or what returns the one in force): with it, the outcome record of a run
            in a conversation carries the run's summary, for a replica that grades conversations.
        provenance: add the evaluator provenance attributes proposed upstream
            (``gen_ai.evaluation.evaluator.id``, ``.version``, ``.type``; see ``evaluation_records``);
            default ``OTEL_TRAJ_EVENTS_PROVENANCE``, else off.
    """

    def __init__(
        self,
        *,
        logger_provider: LoggerProvider | None = None,
        endpoint: str | None = None,
        exporter: LogRecordExporter | None = None,
        max_queue: int | None = None,
        redact: SensitiveKey | Collection[str] | None = None,
        policy: Policy | Callable[[], Policy | None] | None = None,
        provenance: bool | None = None,
    ) -> None:
        super().__init__()
        if logger_provider is not None and (endpoint is not None or exporter is not None):
            raise ValueError(
                "endpoint and exporter configure the sink's own provider: not with logger_provider"
            )
        self.max_queue = env.COUNT.require(
            "max_queue", max_queue if max_queue is not None else env.EVENTS_MAX_QUEUE.read()
        )
        self._redactor = Redactor(redact)
        self._policy = policy
        self.provenance = provenance if provenance is not None else env.EVENTS_PROVENANCE.read()
        self._owned = logger_provider is None
        self._collect = _Collect()
        self._exporter: LogRecordExporter | None = None
        if logger_provider is None:
            self._exporter = exporter if exporter is not None else _otlp_exporter(endpoint)
            attributes = {} if env.SERVICE_NAME.read() else {"service.name": "otel-traj"}
            logger_provider = LoggerProvider(resource=Resource.create(attributes))
            logger_provider.add_log_record_processor(self._collect)
        self.logger_provider = logger_provider
        self._logger = logger_provider.get_logger(SCOPE)
        self._delivery: Delivery[_Queued] = Delivery(
            name="otel_events",
            deliver=self._deliver,
            stats=self.stats,
            max_queue=self.max_queue,
            batch_size=BATCH,
            when_full="drop_oldest",
        )

    # -- the grading worker's side: queue and return --------------------------------------------

    def export(self, verdict: Verdict) -> None:
        self._delivery.put(verdict)

    def export_conversation(self, verdict: ConversationVerdict) -> None:
        self._delivery.put(("conversation", verdict))

    def on_judgement(self, result: JudgeResult) -> None:
        self._delivery.put(result)

    # -- the delivery thread ---------------------------------------------------------------------

    def _deliver(self, items: Sequence[_Queued]) -> None:
        for item in items:
            for record in self._records(item):
                self._emit(with_provenance(record) if self.provenance else record)
        if self._exporter is None:
            return
        batch, self._collect.batch = self._collect.batch, []
        if not batch:
            return
        result = self._exporter.export(batch)
        if result is not LogRecordExportResult.SUCCESS:
            self.stats.count_dropped("otel_events_export_failed", len(batch))

    def _records(self, item: _Queued) -> list[EvaluationRecord]:
        if isinstance(item, Verdict):
            redaction = self._redactor.scope(item.trajectory)
            return trajectory_records(item, redaction, self._summary(item))
        # No one run's argument values to mask by value (a judge saw only redacted evidence): the
        # sensitive keys and secret-looking patterns still apply.
        redaction = TraceRedaction(self._redactor.sensitive, (), ())
        if isinstance(item, JudgeResult):
            return [judgement_record(item, redaction)]
        return conversation_records(item[1], redaction)

    def _summary(self, verdict: Verdict) -> TraceSummary | None:
        if self._policy is None or not verdict.trajectory.conversation_id:
            return None
        policy = self._policy() if callable(self._policy) else self._policy
        if policy is None:
            return None
        rules = policy.resolve(verdict.trajectory)
        if rules.conversation is None:
            return None
        from otel_traj.conversations import summarize

        return summarize(verdict, rules)

    def _emit(self, record: EvaluationRecord) -> None:
        span = SpanContext(
            record.trace_id, record.span_id, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED)
        )
        self._logger.emit(
            timestamp=record.timestamp_ns or time.time_ns(),
            context=set_span_in_context(NonRecordingSpan(span)),
            severity_number=SeverityNumber.INFO,
            event_name=EVENT_NAME,
            attributes=record.attributes,
        )

    # -- lifecycle -------------------------------------------------------------------------------

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Deliver every queued verdict within the deadline."""
        deadline = time.monotonic() + timeout_millis / 1000
        if not self._delivery.force_flush(timeout_millis):
            return False
        if self._owned:
            return True
        return bool(self.logger_provider.force_flush(max(0, int((deadline - time.monotonic()) * 1000))))

    def shutdown(self, timeout_millis: int = 30_000) -> None:
        """Deliver what is queued within the deadline (what is left then is counted), then shut down
        the sink's own provider; the caller's provider is flushed, never shut down."""
        deadline = time.monotonic() + timeout_millis / 1000
        self.force_flush(timeout_millis)
        if self._exporter is not None:
            # Stops an export that is retrying, so the thread returns by the deadline.
            self._exporter.shutdown()  # type: ignore[no-untyped-call]
        self._delivery.shutdown(max(0, int((deadline - time.monotonic()) * 1000)))
        if self._owned:
            self.logger_provider.shutdown()
