"""``postconditions`` and ``relations`` on runs the real frameworks recorded (tests/fixtures/real):
what a tool reports about the state it left, and arguments against earlier results."""

from __future__ import annotations

import json

import pytest

from otel_traj.checks import check_postconditions, check_relations
from otel_traj.checks.base import step_id
from otel_traj.policy import Tools
from tests.real_runs import (
    WITH_RESULTS,
    agent_policy,
    real_run,
    the_call,
    with_call,
    without_results,
)

RELATION = {
    "argument": "amount_yuan",
    "op": "<=",
    "earlier": "list_invoices",
    "path": "[?invoice_id=='{invoice_id}'].amount_yuan | [0]",
}


def tools(contracts: dict[str, object]) -> Tools:
    section = agent_policy({"tools": {"contracts": contracts}}).tools
    assert section is not None
    return section


POSTCONDITIONS = tools(
    {
        "create_refund_request": {
            "postconditions": [
                {"path": "status", "in": ["created", "pending", "submitted"]},
                {"path": "refund_id"},
            ]
        },
        "get_subscription": {"postconditions": [{"path": "customer_id", "equals_argument": "customer_id"}]},
    }
)
RELATIONS = tools({"create_refund_request": {"relations": [RELATION]}})


@pytest.mark.parametrize("framework", WITH_RESULTS)
def test_postconditions_hold_on_what_the_tools_reported(framework: str) -> None:
    result = check_postconditions(real_run(framework), POSTCONDITIONS)
    assert (result.status, result.reason) == ("pass", "3 postconditions held")


@pytest.mark.parametrize("framework", WITH_RESULTS)
def test_a_false_success_fails_naming_path_value_and_rule(framework: str) -> None:
    failed = json.dumps({"refund_id": None, "status": "failed"})
    traj = with_call(real_run(framework), "create_refund_request", result=failed)
    refund = the_call(traj, "create_refund_request")
    result = check_postconditions(traj, POSTCONDITIONS)
    assert result.status == "fail"
    assert result.reason == (
        'create_refund_request result status="failed", expected one of '
        '["created", "pending", "submitted"]; create_refund_request result has no refund_id'
    )
    assert result.steps == (step_id(refund),)


@pytest.mark.parametrize("framework", WITH_RESULTS)
def test_a_result_about_another_subject_breaks_equals_argument(framework: str) -> None:
    # A Python literal, as BeeAI records.
    literal = repr({"customer_id": "C028", "plan": "pro"})
    traj = with_call(real_run(framework), "get_subscription", result=literal)
    lookup = the_call(traj, "get_subscription")
    result = check_postconditions(traj, POSTCONDITIONS)
    assert result.reason == 'get_subscription result customer_id="C028", expected argument customer_id="C023"'
    assert result.steps == (step_id(lookup),)


@pytest.mark.parametrize("framework", ["autogen_agentchat", "autogen_core", "crewai_traceloop", "openai_v2"])
def test_postconditions_skipped_when_results_not_captured(framework: str) -> None:
    result = check_postconditions(without_results(real_run(framework)), POSTCONDITIONS)
    assert result.status == "skipped" and (
        "result not captured" in result.reason or "no span" in result.reason
    )


def test_postconditions_ignore_failed_calls_and_text_results() -> None:
    traj = with_call(real_run("pydantic_ai"), "create_refund_request", ok=False, result=None)
    assert check_postconditions(traj, POSTCONDITIONS).reason == "1 postcondition held"
    traj = with_call(traj, "get_subscription", result="Subscription pro, active")
    result = check_postconditions(traj, POSTCONDITIONS)
    assert (result.status, result.reason) == ("skipped", "get_subscription result is not JSON")


def test_a_path_that_cannot_evaluate_is_a_failure() -> None:
    bad = tools({"get_subscription": {"postconditions": [{"path": "abs(plan)", "in": [1]}]}})
    result = check_postconditions(real_run("openai_v2"), bad)
    assert result.status == "fail" and result.reason.startswith("get_subscription result: abs(plan): ")


@pytest.mark.parametrize("framework", WITH_RESULTS)
def test_the_refund_is_within_the_invoice(framework: str) -> None:
    result = check_relations(real_run(framework), RELATIONS)
    assert (result.status, result.reason) == ("pass", "1 relation held")


@pytest.mark.parametrize("framework", WITH_RESULTS)
def test_a_refund_above_the_invoice_fails(framework: str) -> None:
    traj = real_run(framework)
    arguments = the_call(traj, "create_refund_request").arguments
    assert arguments is not None
    traj = with_call(traj, "create_refund_request", arguments={**arguments, "amount_yuan": 1990})
    refund = the_call(traj, "create_refund_request")
    result = check_relations(traj, RELATIONS)
    # JavaScript SDKs write the invoice's 199.0 as 199.
    assert result.reason.replace(" 199 from", " 199.0 from") == (
        "create_refund_request amount_yuan=1990 is not <= 199.0 from list_invoices "
        "([?invoice_id=='INV-1002'].amount_yuan | [0])"
    )
    assert result.steps == (step_id(refund),)


@pytest.mark.parametrize("framework", WITH_RESULTS)
def test_an_invoice_no_earlier_result_lists_fails(framework: str) -> None:
    traj = real_run(framework)
    arguments = the_call(traj, "create_refund_request").arguments
    assert arguments is not None
    traj = with_call(traj, "create_refund_request", arguments={**arguments, "invoice_id": "INV-9999"})
    result = check_relations(traj, RELATIONS)
    assert result.reason == "no earlier list_invoices result gives amount_yuan for INV-9999"


def test_a_relation_needs_the_earlier_call_to_have_ended_successfully() -> None:
    traj = real_run("pydantic_ai")
    failed = with_call(traj, "list_invoices", ok=False)
    assert check_relations(failed, RELATIONS).reason.startswith("no earlier list_invoices result")
    refund = the_call(traj, "create_refund_request")
    traj = with_call(
        traj, "list_invoices", end_ns=refund.start_ns + 1
    )  # still running when the refund started
    assert check_relations(traj, RELATIONS).status == "fail"


def test_relations_skipped_without_earlier_results_and_compare_numbers_only() -> None:
    result = check_relations(without_results(real_run("autogen_agentchat")), RELATIONS)
    assert (result.status, result.reason) == (
        "skipped",
        "create_refund_request amount_yuan: list_invoices results not captured",
    )
    traj = real_run("strands")
    arguments = the_call(traj, "create_refund_request").arguments
    assert arguments is not None
    traj = with_call(traj, "create_refund_request", arguments={**arguments, "amount_yuan": "all of it"})
    assert check_relations(traj, RELATIONS).reason == (
        'create_refund_request amount_yuan="all of it" cannot be compared (<=) with 199.0 from list_invoices'
    )


@pytest.mark.parametrize(
    "literal",
    ["{('C023', 1): 'pro'}", "{'customer_id': 'C023', 'plan': 1j}", "{'customer_id': {'C023'}}", "[b'C023']"],
    ids=["tuple-key", "complex", "set", "bytes"],
)
def test_a_python_literal_that_is_not_data_is_not_checkable(literal: str) -> None:
    traj = with_call(real_run("pydantic_ai"), "get_subscription", result=literal)
    traj = with_call(traj, "list_invoices", result=literal)
    whole = tools({"get_subscription": {"postconditions": [{"path": "@", "in": ["pro"]}]}})
    result = check_postconditions(traj, whole)
    assert (result.status, result.reason) == ("skipped", "get_subscription result is not JSON")
    result = check_relations(traj, RELATIONS)
    assert result.status == "skipped" and "results not captured" in result.reason
