"""gen_ai.evaluation.result events carry the verdict's versions (``otel_traj.version.*``) and cost
(``otel_traj.cost_usd``, absent when unknown): a conversation whose release changed between turns,
from real SDK spans through the processor and the sink's OTLP exporter to a real receiver."""

from __future__ import annotations

import pytest
from opentelemetry.sdk.trace import TracerProvider

from otel_traj import TrajectoryProcessor
from otel_traj.conversations import ConversationVerdict, grade_conversation, summarize
from otel_traj.cost import run_cost
from otel_traj.grader import Grader
from otel_traj.policy import load_policy
from otel_traj.sinks.evaluation_records import conversation_records, trajectory_records
from otel_traj.sinks.otel_events import EvaluationEventSink
from otel_traj.verdict import Verdict
from tests.conversation_runs import POLICY
from tests.otlp_logs_receiver import logs_receiver
from tests.semconv_agent import INVOICES, Call, Run, Turn, emit
from tests.support_trajectories import example_policy, violating_run

SECOND = 1_000_000_000
VERSIONS = ("1.4.0", "1.5.0")


def turn(n: int, version: str) -> Run:
    return Run(
        user=f"Customer C023 here, turn {n}.",
        conversation_id="conv-release",
        root_attributes={"app.customer_id": "C023", "gen_ai.agent.version": version},
        start_ns=1_000 * SECOND + n * 60 * SECOND,
        turns=[Turn(calls=[Call("list_invoices", {"customer_id": "C023"}, INVOICES)] if n == 0 else []),
               Turn(text="Done.")],
    )  # fmt: skip


def test_every_record_carries_the_versions_and_cost_of_its_verdict() -> None:
    policy = load_policy(POLICY)
    verdicts: list[Verdict] = []
    conversations: list[ConversationVerdict] = []
    with logs_receiver() as receiver:
        processor = TrajectoryProcessor(
            policy=policy,
            sinks=[EvaluationEventSink(endpoint=receiver.url)],
            on_verdict=verdicts.append,
            on_conversation=conversations.append,
        )
        provider = TracerProvider()
        provider.add_span_processor(processor)
        for n, version in enumerate(VERSIONS):
            emit(provider.get_tracer("test"), turn(n, version))
        provider.shutdown()
        records = sum(len(v.checks) + 1 for v in verdicts) + sum(len(c.checks) + 1 for c in conversations)
        events = receiver.wait_for(records)
    [conversation] = conversations
    by_trace = {v.trajectory.trace_hex: v for v in verdicts}
    for event in events:
        attributes = event.attributes
        assert attributes["otel_traj.version.models"] == ["gpt-4o-mini"]
        assert attributes["otel_traj.version.policy"] == policy.policy_version
        # The example policy has no tool contracts: nothing to hash, no attribute.
        assert "otel_traj.version.tool_contracts" not in attributes
        if attributes["otel_traj.evaluation.target"] == "conversation":
            assert attributes["otel_traj.version.agent"] == "1.4.0, 1.5.0"
            assert attributes["otel_traj.cost_usd"] == pytest.approx(conversation.total_cost_usd)
            continue
        verdict = by_trace[event.trace_id]
        assert attributes["otel_traj.version.agent"] == verdict.versions.agent
        assert attributes["otel_traj.cost_usd"] == pytest.approx(run_cost(verdict.trajectory).total_usd)
    assert {e.attributes["otel_traj.version.agent"] for e in events} == {*VERSIONS, "1.4.0, 1.5.0"}
    assert conversation.total_cost_usd is not None and conversation.total_cost_usd > 0


def test_an_unknown_cost_leaves_the_attribute_out() -> None:
    policy = example_policy()
    verdict = Grader(policy).grade(violating_run())  # its model calls name no model
    assert run_cost(verdict.trajectory).total_usd is None
    agent_policy = policy.resolve(verdict.trajectory)
    for record in trajectory_records(verdict):
        assert "otel_traj.cost_usd" not in record.attributes
        assert "otel_traj.version.agent" not in record.attributes  # no version recorded
        assert record.attributes["otel_traj.version.tool_contracts"] == verdict.versions.tool_contracts
    summary = summarize(verdict, agent_policy)
    assert summary is not None
    rules = load_policy(POLICY).defaults.conversation
    assert rules is not None
    conversation = grade_conversation([summary], rules)
    assert conversation.total_cost_usd is None
    for record in conversation_records(conversation):
        assert "otel_traj.cost_usd" not in record.attributes
