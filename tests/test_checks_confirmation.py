"""``confirmation`` on runs the real frameworks recorded: the refund needs the user's yes after the
agent's last question, or a successful approval tool, in this trace or an earlier one."""

from __future__ import annotations

import dataclasses

import pytest

from otel_traj.checks import check_confirmation
from otel_traj.checks.base import step_id
from otel_traj.checks.confirmation import Message, approvals, confirmed, trace_messages
from otel_traj.policy.rules import Confirmation
from otel_traj.trajectory import Trajectory
from tests.real_frameworks import FRAMEWORKS
from tests.real_runs import agent_policy, real_run, the_call, with_call, with_model

# The refund's turn is needed: its calls are joined to the response that requested them.
WITH_REQUESTS = sorted(
    name for name, kept in FRAMEWORKS.items() if kept.requests and kept.responses and kept.requested_calls
)


def policy(**section: object) -> Confirmation:
    confirmation = agent_policy(
        {"confirmation": {"tools": ["create_refund_request"], **section}}
    ).confirmation
    assert confirmation is not None
    return confirmation


CONFIRMATION = policy()
APPROVALS = policy(approval_tools=["request_approval"])
UNCONFIRMED = (
    "create_refund_request was not confirmed: no user message matching "
    f"{CONFIRMATION.user_pattern.pattern!r} after the agent's last question"
)


def asks_then_hears(traj: Trajectory, answer: str) -> Trajectory:
    """The agent asks before the refund's turn; the user's reply is the refund turn's request."""
    turn = the_call(traj, "create_refund_request").turn
    assert turn is not None and turn >= 1
    traj = with_model(traj, turn - 1, output_text="Shall I file a refund of 199 yuan for INV-1002?")
    return with_model(traj, turn, input_text=answer)


@pytest.mark.parametrize("framework", WITH_REQUESTS)
def test_a_refund_nobody_confirmed_is_unsafe(framework: str) -> None:
    traj = real_run(framework)
    result = check_confirmation(traj, CONFIRMATION)
    assert (result.status, result.reason) == ("fail", UNCONFIRMED)
    assert result.steps == (step_id(the_call(traj, "create_refund_request")),)


@pytest.mark.parametrize("framework", WITH_REQUESTS)
def test_a_yes_after_the_question_confirms(framework: str) -> None:
    traj = asks_then_hears(real_run(framework), "Yes, go ahead.")
    result = check_confirmation(traj, CONFIRMATION)
    assert (result.status, result.reason) == ("pass", "1 high-risk call confirmed")
    traj = asks_then_hears(real_run(framework), "Hmm, what would that cost me?")
    assert check_confirmation(traj, CONFIRMATION).status == "fail"


def test_a_yes_before_the_agents_last_question_does_not_count() -> None:
    traj = with_model(real_run("pydantic_ai"), 0, input_text="Yes, refund INV-1002, go ahead.")
    assert check_confirmation(traj, CONFIRMATION).status == "pass"  # nothing asked: the user said yes
    traj = with_model(traj, 1, output_text="Is this about the March invoice?")
    assert check_confirmation(traj, CONFIRMATION).reason == UNCONFIRMED


def test_a_successful_approval_tool_before_the_action_confirms() -> None:
    traj = real_run("openai_v2")
    refund = the_call(traj, "create_refund_request")
    lookup = the_call(traj, "list_invoices")
    approval = dataclasses.replace(lookup, name="request_approval", step_id="approval")
    at = traj.tool_calls.index(refund)
    traj = dataclasses.replace(traj, tool_calls=[*traj.tool_calls[:at], approval, *traj.tool_calls[at:]])
    assert check_confirmation(traj, APPROVALS).status == "pass"
    traj = with_call(traj, "request_approval", ok=False)
    result = check_confirmation(traj, APPROVALS)
    assert result.reason == UNCONFIRMED + " and no successful request_approval before it"


def test_earlier_traces_of_the_conversation_count() -> None:
    earlier = real_run("strands")
    earlier = dataclasses.replace(
        earlier, final_answer="I can refund 199 yuan for INV-1002. Shall I go ahead?"
    )
    now = real_run("strands")
    for at in range(len(now.model_calls)):
        now = with_model(now, at, input_text="yes please")
    assert check_confirmation(now, CONFIRMATION).status == "pass"
    messages = trace_messages(earlier)
    assert [m.role for m in messages] == ["user", "agent"]
    assert confirmed([*messages, Message("user", "yes please")], CONFIRMATION.user_pattern)
    assert not confirmed([Message("user", "yes"), messages[-1]], CONFIRMATION.user_pattern)
    unconfirmed = real_run("strands")
    assert check_confirmation(unconfirmed, CONFIRMATION).status == "fail"
    assert (
        check_confirmation(unconfirmed, CONFIRMATION, earlier=[Message("user", "Confirmed.")]).status
        == "pass"
    )
    approved = real_run("strands")
    approval = dataclasses.replace(the_call(approved, "list_invoices"), name="request_approval")
    approved = dataclasses.replace(approved, tool_calls=[*approved.tool_calls, approval])
    assert approvals(approved, APPROVALS) == frozenset({"request_approval"})
    result = check_confirmation(unconfirmed, APPROVALS, approved_earlier=approvals(approved, APPROVALS))
    assert result.status == "pass"


def test_skipped_when_no_user_message_was_captured() -> None:
    traj = dataclasses.replace(real_run("semantic_kernel"), user_input=None)
    result = check_confirmation(traj, CONFIRMATION)
    assert (result.status, result.reason) == ("skipped", "create_refund_request: user messages not captured")
