"""A conversation's versions and cost: merged from its traces (real SDK spans through the processor),
the cost's total unknown with the reason when one trace's is, ``conversation.budget.max_cost_usd``
enforced over the traces, and both carried by the summaries replicas exchange."""

from __future__ import annotations

from dataclasses import replace

import pytest
import yaml

from otel_traj.conversations import ConversationVerdict, TraceSummary, grade_conversation
from otel_traj.conversations.serialize import conversation_to_dict
from otel_traj.cost import run_cost
from otel_traj.policy import Conversation, Policy, parse_policy
from otel_traj.verdict import Verdict
from otel_traj.versions import Versions, contracts_hash
from tests.conversation_runs import POLICY, processed
from tests.semconv_agent import INVOICES, Call, Run, Turn

SECOND = 1_000_000_000
LOOKUP = Call("list_invoices", {"customer_id": "C023"}, INVOICES)


def policy(**budget: float) -> Policy:
    """The conversations' example policy with a tool contract and the given conversation budget."""
    document = yaml.safe_load(POLICY.read_text())
    document["defaults"]["tools"] = {"contracts": {"create_refund_request": {"side_effect": True}}}
    document["defaults"]["conversation"]["budget"] = budget
    return parse_policy(document)


def turn(n: int, version: str, tokens: int) -> Run:
    return Run(
        user=f"Customer C023 here, turn {n}.",
        conversation_id="conv-release",
        root_attributes={"app.customer_id": "C023", "gen_ai.agent.version": version},
        start_ns=1_000 * SECOND + n * 60 * SECOND,
        turns=[Turn(calls=[LOOKUP] if n == 0 else [], input_tokens=tokens), Turn(text="Done.")],
    )


def graded(rules: Policy) -> tuple[list[Verdict], ConversationVerdict]:
    """Three turns of one conversation, the release 1.5.0 landing before the third, through a
    TrajectoryProcessor as the SDK calls it."""
    turns = ((0, "1.4.0", 1000), (1, "1.4.0", 2000), (2, "1.5.0", 4000))
    return processed(rules, [turn(n, version, tokens) for n, version, tokens in turns])


def costs(verdicts: list[Verdict]) -> list[float]:
    found = [run_cost(v.trajectory).total_usd for v in verdicts]
    assert None not in found
    return [c or 0.0 for c in found]


def test_the_verdict_merges_its_traces_versions_and_sums_their_cost() -> None:
    rules = policy(max_cost_usd=1.0)
    verdicts, conversation = graded(rules)
    assert [v.versions.agent for v in verdicts] == ["1.4.0", "1.4.0", "1.5.0"]
    assert conversation.versions == Versions(
        agent="1.4.0, 1.5.0",
        models=("gpt-4o-mini",),
        policy=rules.policy_version,
        tool_contracts=contracts_hash(rules.defaults),
    )
    assert conversation.versions.tool_contracts is not None
    assert conversation.total_cost_usd == pytest.approx(sum(costs(verdicts)))
    assert conversation.cost_reason is None
    [budget] = [c for c in conversation.checks if c.name == "conversation_budget"]
    assert budget.status == "pass"

    document = conversation_to_dict(conversation)
    assert document["total_cost_usd"] == conversation.total_cost_usd
    assert document["cost_reason"] is None
    assert document["versions"] == conversation.versions.to_dict()
    assert [t["cost_usd"] for t in document["traces"]] == pytest.approx(costs(verdicts))


def test_the_budget_fails_on_cost_naming_the_trace_that_crossed_it() -> None:
    # Measured first: the limit lies between the first two traces' cost and the three's.
    verdicts, _ = graded(policy(max_cost_usd=1.0))
    first, second, third = costs(verdicts)
    limit = round(first + second + third / 2, 9)
    _, conversation = graded(policy(max_cost_usd=limit))
    [budget] = [c for c in conversation.checks if c.name == "conversation_budget"]
    assert budget.status == "fail"
    crossing = conversation.traces[2].trace_id
    assert budget.reason == (
        f"cost ${first + second + third:.6g} > ${limit:.6g} (crossed in trace {crossing})"
    )
    assert conversation.outcome == "pass_with_warnings"  # the example's budget severity: warning


def summaries() -> list[TraceSummary]:
    base = TraceSummary(
        trace_id=f"{1:032x}", conversation_id="c1", agent="support_agent", service_name=None,
        parent_span=None, start_ns=0, end_ns=SECOND, outcome="pass", score=1.0, complete=True,
        tool_calls=1, model_turns=2, input_tokens=100, output_tokens=10, cost_usd=0.25,
        versions=Versions(agent="2.0", models=("gpt-4o",), prompt="support@3"),
    )  # fmt: skip
    unknown = replace(
        base,
        trace_id=f"{2:032x}",
        start_ns=2 * SECOND,
        cost_usd=None,
        cost_reason="model call 0000000000002001: model acme-1 not in the price database",
        versions=Versions(agent="2.0", models=("acme-1",), prompt="support@4"),
    )
    return [base, unknown, replace(unknown, trace_id=f"{3:032x}", start_ns=3 * SECOND)]


def test_an_unknown_trace_cost_makes_the_total_unknown_with_the_reason() -> None:
    traces = summaries()
    verdict = grade_conversation(traces, Conversation(), policy_version="7@abc", tool_contracts="c0ffee")
    assert verdict.total_cost_usd is None
    assert verdict.cost_reason == (
        f"trace {traces[1].trace_id}: model call 0000000000002001: model acme-1 not in the price "
        "database (and 1 more)"
    )
    assert verdict.versions == Versions(
        "2.0", ("gpt-4o", "acme-1"), "support@3, support@4", "7@abc", "c0ffee"
    )
    # The first trace alone has a known cost.
    assert grade_conversation(traces[:1], Conversation()).total_cost_usd == 0.25


def test_a_cost_limit_is_not_judged_on_a_partial_sum() -> None:
    traces = summaries()
    only_cost = Conversation.model_validate({"budget": {"max_cost_usd": 0.1}})
    [result] = grade_conversation(traces, only_cost).checks
    # The known trace alone is over the limit, but the total is unknown: not measurable.
    assert result.status == "skipped"
    assert result.reason == (
        f"not measurable: cost unknown: trace {traces[1].trace_id}: model call 0000000000002001: "
        "model acme-1 not in the price database"
    )
    with_traces = Conversation.model_validate({"budget": {"max_cost_usd": 0.1, "max_traces": 5}})
    [result] = grade_conversation(traces, with_traces).checks
    assert result.status == "pass"
    assert result.reason.startswith("within budget over 3 traces (cost unknown: trace ")


def test_summaries_carry_cost_and_versions_between_replicas() -> None:
    for summary in summaries():
        assert TraceSummary.from_dict(summary.to_dict()) == summary
    # A summary from a replica that predates them.
    older = {
        k: v for k, v in summaries()[0].to_dict().items() if k not in {"cost_usd", "cost_reason", "versions"}
    }
    read = TraceSummary.from_dict(older)
    assert (read.cost_usd, read.cost_reason, read.versions) == (None, None, Versions())
