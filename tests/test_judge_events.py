"""Judge results as gen_ai.evaluation.result events: real SDK spans graded in-process, the judge asked
through the official openai client on the local chat server, the events exported by the Logs SDK's
OTLP exporter to a real receiver; each judge event sits on the span the run's outcome event is on."""

from __future__ import annotations

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_traj.processor import TrajectoryProcessor
from otel_traj.sinks.otel_events import EvaluationEventSink
from otel_traj.verdict import Verdict
from tests.judge_helpers import judge_policy
from tests.judge_server import answer, judge_server
from tests.otlp_logs_receiver import logs_receiver
from tests.semconv_agent import clean_refund, emit

JUDGE = "answer_addresses_request"
NAME = "gen_ai.evaluation.name"


def test_a_judge_result_is_an_event_parented_like_the_outcome(monkeypatch: pytest.MonkeyPatch) -> None:
    verdicts: list[Verdict] = []
    spans = InMemorySpanExporter()
    reply = answer(0.25, "fail", "The refund was promised to jane@example.com without a check.")
    with logs_receiver() as receiver, judge_server(reply=lambda request: reply) as llm:
        monkeypatch.setenv("OPENAI_BASE_URL", llm.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        events_sink = EvaluationEventSink(endpoint=receiver.url)
        processor = TrajectoryProcessor(
            policy=judge_policy(), sinks=[events_sink], on_verdict=verdicts.append
        )
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(spans))
        provider.add_span_processor(processor)
        trace_id = emit(provider.get_tracer("agent"), clean_refund())
        provider.shutdown()
        [graded] = verdicts
        events = receiver.wait_for(len(graded.checks) + 2)
    assert events_sink.stats.snapshot().dropped == {}
    by_name = {e.attributes[NAME]: e for e in events}
    outcome, judged = by_name["otel_traj.outcome"], by_name[f"otel_traj.judge.{JUDGE}"]
    span_names = {f"{s.context.span_id:016x}": s.name for s in spans.get_finished_spans()}
    assert (judged.trace_id, judged.span_id) == (f"{trace_id:032x}", outcome.span_id)
    assert span_names[judged.span_id].startswith("invoke_agent")
    attributes = judged.attributes
    assert attributes["gen_ai.evaluation.score.value"] == 0.25
    assert attributes["gen_ai.evaluation.score.label"] == "fail"
    assert attributes["otel_traj.evaluation.source"] == "judge"
    assert attributes["otel_traj.judge.model"] == "gpt-4o-mini"
    assert attributes["otel_traj.policy.version"] == graded.policy_version
    assert attributes["gen_ai.agent.name"] == graded.trajectory.agent_label
    explanation = str(attributes["gen_ai.evaluation.explanation"])
    assert explanation.startswith("The refund was promised to") and "jane@example.com" not in explanation
    # The checks' and the outcome's events are the rules' results: no source attribute on them.
    assert [e for e in events if "otel_traj.evaluation.source" in e.attributes] == [judged]
    # The judge's "fail" stays beside the verdict: the outcome event is the rules' own.
    assert outcome.attributes["gen_ai.evaluation.score.label"] == graded.outcome == "pass"
