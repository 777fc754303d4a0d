"""``efficiency`` on runs the real frameworks recorded: lookups done one turn at a time that could
have been one parallel turn, and turns that produced nothing."""

from __future__ import annotations

import pytest

from otel_traj.checks import check_efficiency
from otel_traj.checks.base import step_id
from otel_traj.policy import Tools
from otel_traj.policy.rules import Efficiency
from tests.real_frameworks import FRAMEWORKS
from tests.real_runs import (
    WITH_RESULTS,
    agent_policy,
    real_run,
    the_call,
    with_model,
    without_results,
)
from tests.support_trajectories import example_policy

POLICY = example_policy().agents["support_agent"]
assert POLICY.tools is not None
TOOLS: Tools = POLICY.tools
# Semantic Kernel records no model responses and Mastra none of the calls a response requested: their
# turns that requested tools show neither a call nor text. Runs of several agents are left out: the
# check takes their turns for one agent's (support_agent's first lookups "could have run" in the triage
# agent's turn, whose only tool was the handoff).
JUDGED = sorted(
    name
    for name in set(WITH_RESULTS) - {"semantic_kernel"}
    if FRAMEWORKS[name].requested_calls and not FRAMEWORKS[name].agent_calls
)


@pytest.mark.parametrize("framework", JUDGED)
def test_lookups_that_depend_on_earlier_results_are_not_waste(framework: str) -> None:
    # check_payment(INV-1002) needs the invoice list; the refund is a write.
    result = check_efficiency(real_run(framework), Efficiency(), TOOLS)
    assert (result.status, result.reason) == ("pass", "0 wasted turns, max 0")


@pytest.mark.parametrize("framework", JUDGED)
def test_independent_lookups_one_turn_at_a_time_are_wasted_turns(framework: str) -> None:
    traj = real_run(framework, "violating")
    result = check_efficiency(traj, Efficiency(), TOOLS)
    saved = sum(max(0, m.end_ns - m.start_ns) for m in traj.model_calls[2:4]) / 1e9
    assert result.status == "fail"
    assert result.reason == (
        f"2 wasted turns, {saved:.2f} s could have been saved: turn 2 (list_invoices) could have run in "
        "turn 1; turn 3 (list_invoices) could have run in turn 2"
    )
    lookups = [c for c in traj.tool_calls if c.name == "list_invoices"]
    assert result.steps == tuple(step_id(c) for c in lookups)
    # The repeated get_subscription(C023) is not waste here: C023 is in the first lookup's result
    # (the repeats check judges the repeat itself).
    assert check_efficiency(traj, Efficiency(max_wasted_turns=2), TOOLS).status == "pass"


def test_a_lookup_using_what_the_user_just_said_is_not_waste() -> None:
    traj = real_run("openai_agents", "violating")
    for at in range(2, len(traj.model_calls)):  # the user's last message, from turn 2 on
        traj = with_model(traj, at, input_text="Sorry, my customer id is C028.")
    result = check_efficiency(traj, Efficiency(), TOOLS)
    assert result.reason.endswith("turn 3 (list_invoices) could have run in turn 2")
    assert "turn 2 (list_invoices)" not in result.reason


def test_a_turn_with_neither_a_call_nor_text_is_wasted() -> None:
    traj = real_run("pydantic_ai")
    traj = with_model(traj, len(traj.model_calls) - 1, output_text=None, requested_tools=())
    result = check_efficiency(traj, Efficiency(), TOOLS)
    assert result.status == "fail"
    assert result.reason.endswith("s could have been saved: turn 3 produced neither a tool call nor text")
    assert result.reason.startswith("1 wasted turn, ")


@pytest.mark.parametrize("scenario", ["clean", "violating"])
def test_turns_are_not_called_empty_where_requested_calls_are_not_recorded(scenario: str) -> None:
    # Mastra's chat spans record the text but not the calls a response asked for.
    assert not FRAMEWORKS["mastra"].requested_calls
    result = check_efficiency(real_run("mastra", scenario), Efficiency(), TOOLS)
    assert (result.status, result.reason) == (
        "skipped",
        "model turns not linked to tool calls, requested calls not recorded",
    )


def test_writes_are_never_merged_and_read_only_follows_the_policy() -> None:
    traj = real_run("strands", "violating")
    writes = agent_policy(
        {"tools": {"contracts": {"list_invoices": {"side_effect": True}}}, "efficiency": {}}
    ).tools
    assert writes is not None
    assert check_efficiency(traj, Efficiency(), writes).status == "pass"
    assert the_call(traj, "list_invoices").turn == 2


@pytest.mark.parametrize(
    ("framework", "reason"),
    [
        ("autogen_agentchat", "arguments or results not captured"),
        ("autogen_core", "arguments or results not captured"),
        ("crewai_traceloop", "arguments or results not captured"),
        ("semantic_kernel", "model turns not linked to tool calls, responses not recorded"),
    ],
)
def test_skipped_when_turns_or_results_were_not_recorded(framework: str, reason: str) -> None:
    assert framework in FRAMEWORKS
    result = check_efficiency(without_results(real_run(framework, "violating")), Efficiency(), TOOLS)
    assert (result.status, result.reason) == ("skipped", reason)
