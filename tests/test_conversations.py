"""Conversations: the same traces give the same conversation verdicts offline (``grade``), in-process
(``TrajectoryProcessor``) and in ``serve`` (read back from the events it exports), and the verdict
says which trace and step broke which rule."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan

from otel_traj import TrajectoryProcessor
from otel_traj.conversations import Conversations, ConversationVerdict, TraceSummary, grade_conversation
from otel_traj.conversations.serialize import conversation_to_dict
from otel_traj.policy import Conversation, load_policy
from otel_traj.sinks.evaluation_records import TARGET, conversation_records
from tests.conversation_runs import POLICY, recorded
from tests.otlp_logs_receiver import logs_receiver
from tests.serve_helpers import Served, cli
from tests.support_trajectories import EXAMPLE_POLICY


def replay(spans: list[ReadableSpan]) -> list[ConversationVerdict]:
    """The recorded spans through a processor, as the SDK would call it."""
    got: list[ConversationVerdict] = []
    processor = TrajectoryProcessor(policy=POLICY, on_conversation=got.append)
    for span in sorted(spans, key=lambda s: s.start_time or 0):
        processor.on_start(span)  # type: ignore[arg-type]
    for span in sorted(spans, key=lambda s: s.end_time or 0):
        processor.on_end(span)
    processor.shutdown()
    return got


def offline(path: Path) -> tuple[int, list[dict[str, object]]]:
    result = cli("grade", str(path), "--policy", str(POLICY), "--format", "json")
    return result.returncode, json.loads(result.stdout)["conversations"]


def test_offline_in_process_and_serve_give_the_same_conversation_verdicts(tmp_path: Path) -> None:
    with recorded() as spans:
        path = tmp_path / "conversations.otlp.pb"
        path.write_bytes(encode_spans(spans).SerializeToString())
        in_process = replay(spans)
    code, documents = offline(path)
    assert code == 1  # conv-switch is unsafe: the exit code counts conversations
    assert [conversation_to_dict(v) for v in sorted(in_process, key=lambda v: v.start_ns)] == documents
    switch = next(d for d in documents if d["conversation_id"] == "conv-switch")
    assert switch["outcome"] == "unsafe" and switch["complete"] is True
    assert len(switch["trace_ids"]) == 3 and switch["tool_calls"] == 5 and switch["model_turns"] == 6
    assert (switch["input_tokens"], switch["output_tokens"]) == (600, 60)
    failed = {c["name"]: c for c in switch["checks"] if c["status"] == "fail"}
    assert set(failed) == {"conversation_scope", "conversation_repeats"}
    third, second = switch["trace_ids"][2], switch["trace_ids"][1]
    assert (
        f"trace {third} step {failed['conversation_scope']['steps'][0]}"
        in failed["conversation_scope"]["reason"]
    )
    assert "customer_id=C077, conversation subject is C023" in failed["conversation_scope"]["reason"]
    assert f"again in trace {second}" in failed["conversation_repeats"]["reason"]

    with logs_receiver() as receiver:
        served = Served(tmp_path, "--policy", str(POLICY), "--emit-otel", receiver.url)
        try:
            status, _, _ = served.post(path.read_bytes())
            assert status == 200
        finally:
            assert served.stop() == 0  # SIGTERM grades the open conversations and flushes the events
        events = [e for e in receiver.events if e.attributes[TARGET] == "conversation"]
    expected = [r for v in in_process for r in conversation_records(v)]
    assert len(events) == len(expected) == sum(len(v.checks) + 1 for v in in_process)
    got = {
        (e.attributes["gen_ai.conversation.id"], e.attributes["gen_ai.evaluation.name"]): e for e in events
    }
    for record in expected:
        event = got[
            (record.attributes["gen_ai.conversation.id"], record.attributes["gen_ai.evaluation.name"])
        ]
        assert (event.trace_id, event.span_id) == (f"{record.trace_id:032x}", f"{record.span_id:016x}")
        for key in ("gen_ai.evaluation.score.label", "gen_ai.evaluation.explanation", "gen_ai.agent.name"):
            assert event.attributes[key] == record.attributes[key]


def summary(trace: int, conversation: str = "c1", start: int = 0) -> TraceSummary:
    return TraceSummary(
        trace_id=f"{trace:032x}", conversation_id=conversation, agent="support_agent", service_name=None,
        parent_span=f"{trace:016x}", start_ns=start, end_ns=start + 10, outcome="pass", score=1.0,
        complete=True, tool_calls=3, model_turns=2, input_tokens=100, output_tokens=10,
    )  # fmt: skip


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_conversation_is_graded_once_idle_and_the_bounds_grade_the_oldest_early() -> None:
    policy = load_policy(POLICY)
    clock = Clock()
    conversations = Conversations(lambda: policy, max_conversations=2, clock=clock)
    assert conversations.add(summary(1, "a"))
    clock.now = 899.0
    assert conversations.add(summary(2, "b", start=5))
    assert conversations.ready() == []
    clock.now = 900.0
    assert [v.conversation_id for v in conversations.ready()] == ["a"]
    conversations.add(summary(3, "c"))
    conversations.add(summary(4, "d"))  # a third open conversation: the oldest (b) leaves early
    early = conversations.ready()
    assert [(v.conversation_id, v.complete, v.outcome) for v in early] == [("b", False, "incomplete")]
    assert conversations.stats.snapshot().dropped == {"max_conversations": 1}
    assert sorted(v.conversation_id for v in conversations.ready(flush=True)) == ["c", "d"]
    assert len(conversations) == 0 and conversations.size_bytes == 0


def test_a_conversation_that_cannot_be_graded_is_counted_and_leaves_the_others_graded() -> None:
    policies = [load_policy(POLICY)]
    conversations = Conversations(lambda: policies[-1])
    # Two traces whose start times cannot be ordered (one has none): built directly, past the
    # checks of ``from_dict``.
    broken = (summary(2, "broken"), replace(summary(5, "broken"), start_ns=None))
    for added in (summary(1, "a"), *broken, summary(3, "b")):
        assert conversations.add(added)
    assert sorted(v.conversation_id for v in conversations.ready(flush=True)) == ["a", "b"]
    snapshot = conversations.stats.snapshot()
    assert snapshot.dropped == {"internal_error": 1} and snapshot.internal_errors == 1
    # The policy is reloaded without a ``conversation`` section: the open conversation is not graded,
    # and counted.
    assert conversations.add(summary(4, "c"))
    policies.append(load_policy(EXAMPLE_POLICY))
    assert conversations.ready(flush=True) == []
    assert conversations.stats.snapshot().dropped == {"internal_error": 1, "conversation_rules_removed": 1}
    assert len(conversations) == 0 and conversations.size_bytes == 0


def test_the_budget_names_the_trace_that_crossed_it_and_arrival_order_does_not_matter() -> None:
    rules = Conversation.model_validate({"budget": {"max_tool_calls": 7, "max_traces": 2}})
    traces = [summary(n, start=n * 100) for n in (3, 1, 2)]
    verdict = grade_conversation(traces, rules)
    assert verdict.trace_ids == [f"{n:032x}" for n in (1, 2, 3)]
    [budget] = verdict.checks
    assert budget.status == "fail" and verdict.outcome == "pass_with_warnings"
    assert f"3 traces > 2 (crossed in trace {3:032x})" in budget.reason
    assert f"9 tool calls > 7 (crossed in trace {3:032x})" in budget.reason


def test_prometheus_counts_conversations_by_outcome_with_per_conversation_histograms() -> None:
    from prometheus_client import generate_latest

    from otel_traj.sinks.prometheus import PrometheusSink

    sink = PrometheusSink()
    with recorded() as spans:
        processor = TrajectoryProcessor(policy=POLICY, sinks=[sink])
        for span in sorted(spans, key=lambda s: s.start_time or 0):
            processor.on_start(span)  # type: ignore[arg-type]
        for span in sorted(spans, key=lambda s: s.end_time or 0):
            processor.on_end(span)
        processor.shutdown()
    text = generate_latest(sink.registry).decode()
    assert 'otel_traj_conversations_total{agent="support_agent",outcome="unsafe"} 1.0' in text
    assert 'otel_traj_conversations_total{agent="support_agent",outcome="pass"} 1.0' in text
    assert 'otel_traj_conversation_traces_sum{agent="support_agent"} 5.0' in text
    assert 'otel_traj_conversation_tokens_sum{agent="support_agent",type="total"} 1100.0' in text
    check = 'otel_traj_conversation_check_results_total{agent="support_agent",check="conversation_scope"'
    assert f'{check},severity="critical",status="fail"}} 1.0' in text
