"""The six golden-case dimensions, each with a passing and a failing run of the refund scenario."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from otel_traj.cases import GoldenCase, grade_case, load_cases
from otel_traj.cases.dimensions import (
    error_recovery,
    parameter_extraction,
    plan_coherence,
    result_utilization,
    task_completion,
    tool_selection,
)
from otel_traj.steps import ToolCall
from otel_traj.trajectory import Trajectory

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "cases" / "golden_cases.jsonl"
USER = "Customer C023 here. I was charged twice for invoice INV-1002, please refund the 199 yuan."
ANSWER = "Your refund for INV-1002 has been submitted (RF-5001)."
RESULTS = {
    "get_subscription": {"customer_id": "C023", "plan": "pro", "status": "active"},
    "list_invoices": [
        {"invoice_id": "INV-1001", "amount_yuan": 199.0},
        {"invoice_id": "INV-1002", "amount_yuan": 199.0},
    ],
    "create_refund_request": {"refund_id": "RF-5001", "status": "submitted"},
}
SUB = ("get_subscription", {"customer_id": "C023"})
INVOICES = ("list_invoices", {"customer_id": "C023"})
PAYMENT = ("check_payment", {"invoice_id": "INV-1002"})
REFUND = (
    "create_refund_request",
    {"invoice_id": "INV-1002", "amount_yuan": 199.0, "reason": "duplicate charge"},
)


def run(
    *specs: tuple[str, dict[str, Any]] | tuple[str, dict[str, Any], bool], answer: str | None = ANSWER
) -> Trajectory:
    calls = []
    for index, spec in enumerate(specs, start=1):
        name, args = spec[0], spec[1]
        ok = spec[2] if len(spec) == 3 else name != "check_payment"  # type: ignore[misc]
        result = json.dumps(RESULTS[name]) if ok and name in RESULTS else None
        calls.append(
            ToolCall(
                name=name,
                span_id=index,
                step_id=f"s{index}",
                arguments=args,
                ok=ok,
                result=result,
                error_type=None if ok else "PaymentGatewayError",
            )
        )
    return Trajectory(trace_id=7, user_input=USER, final_answer=answer, tool_calls=calls)


@pytest.fixture(scope="module")
def refund_case() -> GoldenCase:
    return load_cases(EXAMPLES)[0]


CLEAN = run(SUB, INVOICES, PAYMENT, REFUND)


def test_clean_run_passes_every_dimension(refund_case: GoldenCase) -> None:
    result = grade_case(CLEAN, refund_case)
    assert [(c.name, c.status) for c in result.checks] == [
        ("case.trajectory_match", "pass"),
        ("case.tool_selection", "pass"),
        ("case.parameter_extraction", "pass"),
        ("case.result_utilization", "pass"),
        ("case.error_recovery", "pass"),
        ("case.plan_coherence", "pass"),
        ("case.task_completion", "pass"),
    ]
    assert result.passed and result.score == 1.0 and result.match.score == 1.0
    match_check = result.checks[0]
    assert match_check.score == 1.0 and match_check.detail is not None
    assert [m["name"] for m in match_check.detail["matched"]] == [
        "get_subscription",
        "list_invoices",
        "create_refund_request",
    ]


def test_tool_selection_fails_on_missing_and_unexpected_tools(refund_case: GoldenCase) -> None:
    check = tool_selection(run(SUB, ("delete_account", {"customer_id": "C023"}), REFUND), refund_case)
    assert check.status == "fail"
    assert check.reason == "missing list_invoices; unexpected delete_account"
    assert check.steps == ("s2",)


def test_tool_selection_in_superset_mode_allows_other_tools(refund_case: GoldenCase) -> None:
    superset = refund_case.model_copy(update={"match": "superset"})
    check = tool_selection(run(SUB, ("search_kb", {"q": "refund"}), INVOICES, REFUND), superset)
    assert check.status == "pass"


def test_parameter_extraction_fails_on_another_customers_lookup(refund_case: GoldenCase) -> None:
    violating = run(SUB, SUB, ("list_invoices", {"customer_id": "C028"}), INVOICES, REFUND)
    check = parameter_extraction(violating, refund_case)
    assert check.status == "fail"
    assert check.reason == "list_invoices (s3): customer_id expected C023, got C028"
    assert check.steps == ("s3",)
    wrong_amount = run(
        SUB, INVOICES, ("create_refund_request", {"invoice_id": "INV-1002", "amount_yuan": 99, "reason": "x"})
    )
    check = parameter_extraction(wrong_amount, refund_case)
    assert check.status == "fail" and check.steps == ("s3",)
    assert "amount_yuan expected 199, got 99" in check.reason


def test_parameter_extraction_is_skipped_without_captured_arguments(refund_case: GoldenCase) -> None:
    bare = Trajectory(
        trace_id=1, tool_calls=[ToolCall(name="get_subscription", span_id=1)], final_answer=ANSWER
    )
    check = parameter_extraction(bare, refund_case)
    assert check.status == "skipped" and "not captured" in check.reason


def test_result_utilization(refund_case: GoldenCase) -> None:
    check = result_utilization(CLEAN, refund_case)
    assert check.status == "pass"
    assert check.reason == "final answer uses RF-5001 from create_refund_request"
    # INV-1002 and 199 come from the user, so echoing them proves nothing about the tool results.
    vague = run(SUB, INVOICES, PAYMENT, REFUND, answer="Refund for INV-1002 (199 yuan) is on its way.")
    check = result_utilization(vague, refund_case)
    assert check.status == "fail"
    assert "RF-5001" in check.reason and "INV-1001" in check.reason
    assert check.steps == ("s2", "s4")


def test_result_utilization_skips_when_no_result_was_captured(refund_case: GoldenCase) -> None:
    no_results = Trajectory(
        trace_id=1,
        final_answer=ANSWER,
        tool_calls=[ToolCall(name="get_subscription", span_id=1, arguments={})],
    )
    assert result_utilization(no_results, refund_case).status == "skipped"


def test_error_recovery(refund_case: GoldenCase) -> None:
    assert error_recovery(CLEAN, refund_case).status == "pass"
    gave_up = run(SUB, INVOICES, PAYMENT, answer=None)
    check = error_recovery(gave_up, refund_case)
    assert check.status == "fail" and check.steps == ("s3",)
    assert "ended without an answer" in check.reason
    unexpected = run(SUB, ("list_invoices", {"customer_id": "C023"}, False), REFUND)
    check = error_recovery(unexpected, refund_case)
    assert check.status == "fail" and check.steps == ("s2",)
    assert check.reason == "list_invoices failed (PaymentGatewayError) and was never recovered"
    retried = run(SUB, ("list_invoices", {"customer_id": "C023"}, False), INVOICES, REFUND)
    assert error_recovery(retried, refund_case).status == "pass"


def test_error_recovery_is_skipped_when_the_expected_failure_did_not_happen(refund_case: GoldenCase) -> None:
    check = error_recovery(run(SUB, INVOICES, REFUND), refund_case)
    assert check.status == "skipped" and "check_payment not called" in check.reason
    no_expectation = refund_case.model_copy(update={"expect_error_from": ()})
    assert error_recovery(run(SUB, INVOICES, REFUND), no_expectation).status == "pass"


def test_plan_coherence_order(refund_case: GoldenCase) -> None:
    check = plan_coherence(run(SUB, REFUND, INVOICES), refund_case)
    assert check.status == "fail"
    assert "out of the order get_subscription -> list_invoices -> create_refund_request" in check.reason
    any_order = refund_case.model_copy(update={"order": "any"})
    assert plan_coherence(run(SUB, REFUND, INVOICES), any_order).status == "pass"


def test_plan_coherence_repeats_and_late_calls(refund_case: GoldenCase) -> None:
    check = plan_coherence(run(SUB, SUB, INVOICES, REFUND), refund_case)
    assert check.status == "fail" and check.steps == ("s2",)
    assert check.reason == "repeated identical call get_subscription"
    retry = run(SUB, ("list_invoices", {"customer_id": "C023"}, False), INVOICES, REFUND)
    assert plan_coherence(retry, refund_case).status == "pass"
    late = run(SUB, INVOICES, REFUND, ("search_kb", {"q": "refund policy"}))
    check = plan_coherence(late, refund_case)
    assert check.status == "fail" and check.steps == ("s4",)
    assert check.reason == "search_kb called after create_refund_request had produced the answer"


def test_task_completion(refund_case: GoldenCase) -> None:
    assert task_completion(CLEAN, refund_case).reason == "final answer contains 'INV-1002'"
    lower = run(SUB, INVOICES, REFUND, answer="refund for inv-1002 submitted")
    assert task_completion(lower, refund_case).status == "pass"
    wrong = task_completion(run(SUB, INVOICES, REFUND, answer="Refund submitted."), refund_case)
    assert wrong.status == "fail" and wrong.reason == "final answer does not contain 'INV-1002'"
    empty = task_completion(run(SUB, INVOICES, REFUND, answer="   "), refund_case)
    assert empty.status == "fail" and empty.reason == "no final answer"


def test_violating_run_fails_its_case(refund_case: GoldenCase) -> None:
    violating = run(SUB, SUB, ("list_invoices", {"customer_id": "C028"}), INVOICES, REFUND)
    result = grade_case(violating, refund_case)
    statuses = {c.name: c.status for c in result.checks}
    assert statuses["case.trajectory_match"] == "fail"
    assert statuses["case.parameter_extraction"] == "fail"
    assert statuses["case.plan_coherence"] == "fail"
    assert not result.passed
    assert result.match.score == pytest.approx(3 / 5)
    assert result.checks[0].steps == ("s2", "s3")
