"""Failure stage: the earliest broken link of a failing run, on runs the real frameworks recorded,
in JSON, the table and the HTML report."""

from __future__ import annotations

import dataclasses
import json

import pytest
import yaml

from otel_traj.grader import Grader
from otel_traj.policy import parse_policy
from otel_traj.reports import render
from otel_traj.reports.html import render_html
from otel_traj.serialize import verdict_to_dict
from otel_traj.stages import CHECK_STAGES, STAGES, failure_stage
from otel_traj.steps import ToolCall
from otel_traj.trajectory import Trajectory
from otel_traj.verdict import CheckResult, Verdict
from tests.real_runs import WITH_RESULTS, real_run, with_call
from tests.support_trajectories import EXAMPLE_POLICY


def grader() -> Grader:
    """The example policy with the deeper checks on: the refund's postconditions and relation."""
    document = yaml.safe_load(EXAMPLE_POLICY.read_text())
    # Budgets judge no link of the chain; the retries below would exceed them.
    document["defaults"].pop("budget")
    document.pop("agents")
    refund = document["defaults"]["tools"]["contracts"]["create_refund_request"]
    refund["postconditions"] = [{"path": "status", "in": ["submitted", "pending"]}]
    refund["relations"] = [
        {
            "argument": "amount_yuan",
            "op": "<=",
            "earlier": "list_invoices",
            "path": "[?invoice_id=='{invoice_id}'].amount_yuan | [0]",
        }
    ]
    return Grader(parse_policy(document, str(EXAMPLE_POLICY)))


def grade(traj: Trajectory) -> Verdict:
    return grader().grade(traj)


@pytest.mark.parametrize("framework", WITH_RESULTS)
def test_a_clean_run_has_no_stage(framework: str) -> None:
    verdict = grade(real_run(framework))
    assert verdict.outcome == "pass", verdict.failed_checks
    assert verdict.stage is None and verdict_to_dict(verdict)["stage"] is None


@pytest.mark.parametrize("framework", WITH_RESULTS)
def test_each_broken_link_is_named(framework: str) -> None:
    # Another customer's invoices: the parameters were wrong.
    assert grade(real_run(framework, "violating")).stage == "parameters"
    # The refund reported "failed" with a 200: the terminal state is wrong.
    traj = with_call(real_run(framework), "create_refund_request", result=json.dumps({"status": "failed"}))
    assert grade(traj).stage == "terminal_state"
    # The refund failed and the answer claims it anyway: execution broke first.
    traj = with_call(
        real_run(framework), "create_refund_request", ok=False, result=None, error_type="RefundServiceDown"
    )
    verdict = grade(traj)
    assert {c.name for c in verdict.failed_checks} >= {"claims", "recovery"}
    assert verdict.stage == "execution"
    # The refund was never attempted, yet the answer claims it: only the statement is wrong.
    traj = real_run(framework)
    lookups = [c for c in traj.tool_calls if c.name in ("get_subscription", "list_invoices")]
    traj = dataclasses.replace(traj, tool_calls=lookups)
    verdict = grade(traj)
    assert [c.name for c in verdict.failed_checks] == ["claims"] and verdict.stage == "statement"


def test_retries_that_finally_succeed_break_recovery_not_execution() -> None:
    traj = real_run("openai_v2")
    [payment] = [c for c in traj.tool_calls if c.name == "check_payment"]
    retries = [payment, *(retry(payment, i) for i in range(1, 4))]
    retries.append(dataclasses.replace(retry(payment, 4), ok=True, error_type=None, result="{}"))
    index = traj.tool_calls.index(payment)
    traj = dataclasses.replace(
        traj, tool_calls=[*traj.tool_calls[:index], *retries, *traj.tool_calls[index + 1 :]]
    )
    verdict = grade(traj)
    assert [c.name for c in verdict.failed_checks] == ["recovery"]
    assert verdict.stage == "recovery"
    payment_never_succeeds = real_run("openai_v2")
    [payment] = [c for c in payment_never_succeeds.tool_calls if c.name == "check_payment"]
    calls = payment_never_succeeds.tool_calls
    index = calls.index(payment)
    retries = [payment, *(retry(payment, i) for i in range(1, 5))]
    payment_never_succeeds = dataclasses.replace(
        payment_never_succeeds, tool_calls=[*calls[:index], *retries, *calls[index + 1 :]]
    )
    assert grade(payment_never_succeeds).stage == "execution"


def retry(call: ToolCall, n: int) -> ToolCall:
    return dataclasses.replace(call, span_id=call.span_id + 1000 * n, step_id=f"retry{n}")


def test_warnings_do_not_break_the_chain_and_unknown_checks_are_other() -> None:
    traj = real_run("pydantic_ai")
    warning = CheckResult("budget", "fail", "warning", "total tokens 9/1")
    assert failure_stage([warning], traj) is None
    custom = CheckResult("refund_policy", "fail", "error", "custom says no")
    assert failure_stage([warning, custom], traj) == "other"
    scope = CheckResult("scope", "fail", "critical", "another customer")
    assert failure_stage([custom, scope], traj) == "parameters"
    assert set(CHECK_STAGES.values()) | {"execution", "other"} == set(STAGES)


def test_stage_in_the_table_and_the_html_report() -> None:
    verdicts = [grade(real_run("pydantic_ai")), grade(real_run("pydantic_ai", "violating"))]
    rows = render("table", verdicts).splitlines()
    assert rows[0].split()[:4] == ["TRACE", "AGENT", "OUTCOME", "STAGE"]
    assert [r.split()[2:4] for r in rows if r[:1] not in (" ", "T") and "trajectories" not in r] == [
        ["pass", "-"],
        ["unsafe", "parameters"],
    ]
    html = render_html([verdict_to_dict(v) for v in verdicts])
    assert html.count("broke at parameters") == 1 and "broke at" in html
