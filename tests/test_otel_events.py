"""EvaluationEventSink: every verdict as gen_ai.evaluation.result log records, exported with the
OpenTelemetry Logs SDK's own OTLP exporter to a real receiver that decodes ExportLogsServiceRequest;
each record's trace and span id are those of the span it evaluates."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import pytest
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.sdk._logs import LoggerProvider, ReadableLogRecord
from opentelemetry.sdk._logs.export import (
    BatchLogRecordProcessor,
    InMemoryLogRecordExporter,
    LogRecordExporter,
    LogRecordExportResult,
)
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_traj import TrajectoryProcessor
from otel_traj.conversations import ConversationVerdict
from otel_traj.judge.result import JudgeResult
from otel_traj.policy import load_policy
from otel_traj.sinks.evaluation_records import judgement_record, with_provenance
from otel_traj.sinks.otel_events import EvaluationEventSink
from otel_traj.verdict import Verdict
from tests.conversation_runs import POLICY, conversation_runs
from tests.otlp_logs_receiver import ReceivedEvent, logs_receiver
from tests.semconv_agent import Call, Run, Turn, emit

LOOKUP = Call("list_invoices", {"customer_id": "C023"}, [])
# Two identical calls in one turn: the run's own repeats check fails on the second call.
REPEATING = Run(
    user="Customer C023: invoices?",
    root_attributes={"app.customer_id": "C023"},
    turns=[Turn(calls=[LOOKUP, LOOKUP]), Turn(text="Here.")],
)


def run_all(
    sink: EvaluationEventSink,
) -> tuple[list[Verdict], list[ConversationVerdict], InMemorySpanExporter]:
    verdicts: list[Verdict] = []
    conversations: list[ConversationVerdict] = []
    spans = InMemorySpanExporter()
    processor = TrajectoryProcessor(
        policy=POLICY, sinks=[sink], on_verdict=verdicts.append, on_conversation=conversations.append
    )
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    provider.add_span_processor(processor)
    tracer = provider.get_tracer("test")
    for run in (*conversation_runs(), REPEATING):
        emit(tracer, run)
    provider.shutdown()
    return verdicts, conversations, spans


def check_parenting(
    events: Sequence[ReceivedEvent], spans: InMemorySpanExporter, verdicts: list[Verdict]
) -> None:
    names = {
        (f"{s.context.trace_id:032x}", f"{s.context.span_id:016x}"): s.name
        for s in spans.get_finished_spans()
    }
    failed = {
        (v.trajectory.trace_hex, "otel_traj." + c.name): c.steps[0] for v in verdicts for c in v.failed_checks
    }
    assert failed, "a run with a failed check"
    for event in events:
        assert event.event_name == "gen_ai.evaluation.result"
        name = names[(event.trace_id, event.span_id)]  # a span of the very trace
        step = failed.get((event.trace_id, event.attributes["gen_ai.evaluation.name"]))
        if event.attributes["otel_traj.evaluation.target"] == "trajectory" and step is not None:
            assert event.span_id == step and name.startswith("execute_tool")
        elif event.attributes["gen_ai.evaluation.score.label"] in ("pass", "skipped"):
            assert name.startswith("invoke_agent")


def test_every_check_and_outcome_is_an_event_on_the_span_it_evaluates() -> None:
    with logs_receiver() as receiver:
        sink = EvaluationEventSink(endpoint=receiver.url, policy=load_policy(POLICY))
        verdicts, conversations, spans = run_all(sink)
        expected = sum(len(v.checks) + 1 for v in (*verdicts, *conversations))
        events = receiver.wait_for(expected)
    assert len(events) == expected and len(conversations) == 2
    check_parenting(events, spans, verdicts)
    outcomes = [e for e in events if e.attributes["gen_ai.evaluation.name"] == "otel_traj.outcome"]
    assert {e.attributes["gen_ai.evaluation.score.label"] for e in outcomes} >= {
        "pass",
        "unsafe",
        "pass_with_warnings",
    }
    [scope] = [
        e
        for e in events
        if e.attributes["gen_ai.evaluation.name"] == "otel_traj.conversation_scope"
        and e.attributes["gen_ai.evaluation.score.label"] == "fail"
    ]
    assert scope.attributes["gen_ai.conversation.id"] == "conv-switch"
    assert scope.attributes["gen_ai.evaluation.score.value"] == 0.0
    assert "C077" in str(scope.attributes["gen_ai.evaluation.explanation"])
    # A run's outcome in a conversation carries its summary for a conversation replica.
    for event in outcomes:
        if event.attributes["otel_traj.evaluation.target"] == "trajectory":
            in_conversation = "gen_ai.conversation.id" in event.attributes
            assert ("otel_traj.trace.summary" in event.attributes) == in_conversation
    assert {e.resource["service.name"] for e in events} == {"otel-traj"}
    assert sink.stats.snapshot().dropped == {}


def test_a_logger_provider_of_the_application_and_the_standard_variables(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with logs_receiver() as receiver:
        provider = LoggerProvider()
        provider.add_log_record_processor(
            BatchLogRecordProcessor(OTLPLogExporter(endpoint=receiver.url + "/v1/logs"))
        )
        verdicts, conversations, spans = run_all(EvaluationEventSink(logger_provider=provider))
        # The sink flushed the application's provider at shutdown and left it running.
        assert len(receiver.events) == sum(len(v.checks) + 1 for v in (*verdicts, *conversations))
        provider.shutdown()
    with logs_receiver() as receiver:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
        verdicts, conversations, spans = run_all(EvaluationEventSink())
        assert len(receiver.events) == sum(len(v.checks) + 1 for v in (*verdicts, *conversations))
    check_parenting(receiver.events, spans, verdicts)


class Held(LogRecordExporter):
    """An exporter that holds its first batch until released, as a slow backend would."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.release = threading.Event()
        self.records = 0

    def export(self, batch: Sequence[ReadableLogRecord]) -> LogRecordExportResult:
        self.started.set()
        self.release.wait()
        self.records += len(batch)
        return LogRecordExportResult.SUCCESS

    def shutdown(self) -> None:
        self.release.set()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True


def test_the_queue_is_bounded_and_every_drop_counted() -> None:
    open_exporter = Held()
    open_exporter.release.set()
    verdicts, _, _ = run_all(EvaluationEventSink(exporter=open_exporter))
    exporter = Held()
    sink = EvaluationEventSink(exporter=exporter, max_queue=2)
    sink.export(verdicts[0])
    assert exporter.started.wait(10)  # the delivery thread holds the first verdict
    for verdict in verdicts[1:5]:
        sink.export(verdict)  # returns at once: the worker never waits for the backend
    assert sink.stats.snapshot().dropped == {"otel_events_queue_full": 2}
    exporter.release.set()
    sink.shutdown()
    assert exporter.records == sum(len(v.checks) + 1 for v in (verdicts[0], verdicts[3], verdicts[4]))
    sink.export(verdicts[0])
    assert sink.stats.snapshot().dropped == {"otel_events_queue_full": 2, "otel_events_closed": 1}


def test_the_summary_of_a_run_is_redacted_with_the_sinks_sensitive_keys() -> None:
    """The summary leaves the process in an attribute: the keys the sink redacts are masked in its
    call labels as in the explanations."""
    secret = "ACCT-99887766"
    call = Call("list_invoices", {"customer_id": "C023", "account_number": secret}, [])
    run = Run(
        user="Customer C023: invoices?",
        conversation_id="conv-secret",
        root_attributes={"app.customer_id": "C023"},
        turns=[Turn(calls=[call, call]), Turn(text="Here.")],
    )
    exporter = InMemoryLogRecordExporter()
    sink = EvaluationEventSink(exporter=exporter, redact={"account_number"}, policy=load_policy(POLICY))
    processor = TrajectoryProcessor(policy=POLICY, sinks=[sink])
    provider = TracerProvider()
    provider.add_span_processor(processor)
    emit(provider.get_tracer("test"), run)
    provider.shutdown()
    records = exporter.get_finished_logs()
    summaries = [
        r.log_record.attributes["otel_traj.trace.summary"]
        for r in records
        if r.log_record.attributes and "otel_traj.trace.summary" in r.log_record.attributes
    ]
    assert summaries and "list_invoices(customer_id=C023" in str(summaries[0])
    assert all(secret not in str(r.log_record.attributes) for r in records)


@pytest.mark.parametrize("setting", [None, "true"])
def test_the_evaluator_provenance_proposed_upstream_is_added_only_when_asked(
    setting: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    if setting is not None:
        monkeypatch.setenv("OTEL_TRAJ_EVENTS_PROVENANCE", setting)
    exporter = InMemoryLogRecordExporter()
    sink = EvaluationEventSink(exporter=exporter)
    run_all(sink)
    sink.shutdown()
    attributes = [dict(r.log_record.attributes or {}) for r in exporter.get_finished_logs()]
    assert attributes
    if setting is None:
        assert not any("gen_ai.evaluation.evaluator.id" in a for a in attributes)
        return
    for record in attributes:
        assert record["gen_ai.evaluation.evaluator.id"] == record["gen_ai.evaluation.name"]
        assert record["gen_ai.evaluation.evaluator.type"] == "deterministic"
        assert record.get("gen_ai.evaluation.evaluator.version") == record.get("otel_traj.policy.version")


def test_a_judges_result_is_an_llm_judges_in_its_provenance() -> None:
    result = JudgeResult(
        trace_id=1,
        agent="a",
        judge="helpful",
        model="m",
        score=0.5,
        label="partly",
        explanation="",
        severity="warning",
        end_ns=1,
        judged_at_ns=2,
        policy_version="7",
    )
    attributes = with_provenance(judgement_record(result)).attributes
    assert attributes["gen_ai.evaluation.evaluator.id"] == "otel_traj.judge.helpful"
    assert attributes["gen_ai.evaluation.evaluator.type"] == "llm_judge"
    assert attributes["gen_ai.evaluation.evaluator.version"] == "7"
