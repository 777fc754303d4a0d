"""Case files, matching runs to cases, pass@k and pass^k."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from otel_traj.cases import CaseFileError, GoldenCase, evaluate, find_case, load_cases, pass_at_k, pass_hat_k
from otel_traj.cases.verdicts import with_case_result
from otel_traj.steps import ToolCall
from otel_traj.trajectory import Trajectory
from otel_traj.verdict import CheckResult, Outcome, Verdict

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "cases" / "golden_cases.jsonl"
REFUND_INPUT = "Customer C023 here. I was charged twice for invoice INV-1002, please refund the 199 yuan."
MINIMAL = {"case_id": "a", "input": "hello", "expected_tools": []}


def write(tmp_path: Path, *lines: str | dict[str, Any]) -> Path:
    path = tmp_path / "cases.jsonl"
    path.write_text(
        "\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n", encoding="utf-8"
    )
    return path


def test_example_file_loads_in_the_golden_format() -> None:
    cases = load_cases(EXAMPLES)
    assert len(cases) == 4
    refund = cases[0]
    assert refund.case_id == "refund-duplicate-charge"
    assert refund.input == REFUND_INPUT
    assert [t.name for t in refund.expected_tools] == [
        "get_subscription",
        "list_invoices",
        "create_refund_request",
    ]
    assert refund.expect_error_from == ("check_payment",)
    assert refund.answer_must_contain == "INV-1002"
    assert refund.nonempty_for(refund.expected_tools[2]) == {"reason"}
    assert refund.nonempty_for(refund.expected_tools[0]) == frozenset()


def test_plain_golden_format_is_accepted_as_is(tmp_path: Path) -> None:
    line = {
        "case_id": "q1",
        "input": "Where is my order 42?",
        "expected_tools": [{"name": "lookup_order", "args": {"order_id": 42}}],
        "order": "strict",
        "expect_error_from": [],
        "answer_must_contain": None,
    }
    [case] = load_cases(write(tmp_path, "", line, "   "))
    assert case.match_mode == "strict" and case.args_mode == "exact"


@pytest.mark.parametrize(
    ("line", "field", "message"),
    [
        ({**MINIMAL, "order": "sometimes"}, "order", "'strict' or 'any'"),
        (
            {**MINIMAL, "expected_tools": [{"name": "x", "args": "customer"}]},
            "expected_tools.0.args",
            "dictionary",
        ),
        ({**MINIMAL, "expected_tools": [{"args": {}}]}, "expected_tools.0.name", "Field required"),
        ({**MINIMAL, "match": "fuzzy"}, "match", "'strict', 'unordered', 'subset' or 'superset'"),
        ({**MINIMAL, "args_mode": "loose"}, "args_mode", "'exact', 'ignore', 'subset' or 'superset'"),
        ({**MINIMAL, "answer_must_contians": "x"}, "answer_must_contians", "Extra inputs are not permitted"),
        ({"case_id": "a", "expected_tools": []}, "input", "Field required"),
        (
            {**MINIMAL, "tool_args": {"nope": "ignore"}},
            "(case)",
            "tool_args names tools not in expected_tools: nope",
        ),
        ({**MINIMAL, "nonempty": ["reason"]}, "(case)", "'reason' is in no expected tool's args"),
        (
            {**MINIMAL, "expected_tools": [{"name": "t"}], "tool_args": {"t": "loose"}},
            "tool_args.t",
            "Input should be 'exact', 'ignore', 'subset' or 'superset' (got \"loose\")",
        ),
    ],
)
def test_invalid_case_names_file_line_and_field(
    tmp_path: Path, line: dict[str, Any], field: str, message: str
) -> None:
    path = write(tmp_path, {**MINIMAL, "case_id": "ok"}, line)
    with pytest.raises(CaseFileError) as error:
        load_cases(path)
    assert error.value.line == 2
    assert error.value.field == field
    assert str(error.value).startswith(f"{path}:2: {field}: ")
    assert message in str(error.value)


def test_invalid_json_and_duplicates(tmp_path: Path) -> None:
    with pytest.raises(CaseFileError, match=r"cases.jsonl:3: invalid JSON"):
        load_cases(write(tmp_path, MINIMAL, "", '{"case_id": "b",'))
    with pytest.raises(
        CaseFileError, match=r"cases.jsonl:2: case_id: duplicate case_id 'a' \(first on line 1\)"
    ):
        load_cases(write(tmp_path, MINIMAL, MINIMAL))
    with pytest.raises(CaseFileError, match=r"cases.jsonl:1: expected a JSON object, got list"):
        load_cases(write(tmp_path, "[1, 2]"))
    with pytest.raises(CaseFileError, match="cannot read"):
        load_cases(tmp_path / "missing.jsonl")


def _case(case_id: str, text: str, **extra: Any) -> GoldenCase:
    return GoldenCase.model_validate({"case_id": case_id, "input": text, "expected_tools": [], **extra})


def _run(user: str | None = None, conversation: str | None = None, **attributes: Any) -> Trajectory:
    return Trajectory(trace_id=1, user_input=user, conversation_id=conversation, attributes=attributes)


def test_find_case_by_attribute_conversation_and_input() -> None:
    cases = [
        _case("refund", REFUND_INPUT),
        _case("plan", "Which plan am I on?", match_on="app.case"),
        _case("generic", "refund"),
    ]
    by_attr = find_case(_run(REFUND_INPUT, **{"eval.case_id": "generic"}), cases, match_on="eval.case_id")
    assert by_attr is not None and (by_attr.case.case_id, by_attr.matched_by) == ("generic", "attribute")
    # A case naming its own attribute is not matched through the global one.
    own = find_case(_run("Hello", **{"eval.case_id": "plan"}), cases, match_on="eval.case_id")
    assert own is None
    by_own_attr = find_case(_run(**{"app.case": "plan"}), cases)
    assert by_own_attr is not None and by_own_attr.case.case_id == "plan"
    by_conversation = find_case(_run("something else", conversation="refund"), cases)
    assert by_conversation is not None and by_conversation.matched_by == "conversation_id"
    spaced = "  customer c023 here.\n I was charged twice for invoice INV-1002,  please refund the 199 yuan. "
    by_input = find_case(_run(spaced), cases)
    assert by_input is not None and (by_input.case.case_id, by_input.matched_by) == ("refund", "input")
    # Containment: the most specific (longest) containing case wins.
    wrapped = find_case(_run("[channel: email] " + REFUND_INPUT + " Thanks!"), cases)
    assert wrapped is not None and (wrapped.case.case_id, wrapped.matched_by) == ("refund", "input_contains")
    assert find_case(_run("Hello there"), cases) is None
    # Containment is by whole words, and a short input is not a prefix of anything.
    assert find_case(_run("refunds"), cases) is None
    assert find_case(_run("Which"), cases) is None
    truncated = find_case(_run(REFUND_INPUT[:40]), cases)
    assert truncated is not None and truncated.case.case_id == "refund"
    assert find_case(_run(None), cases) is None


def test_pass_at_k_estimators() -> None:
    assert pass_at_k(5, 0, 1) == 0.0
    assert pass_at_k(5, 5, 3) == 1.0
    assert pass_at_k(10, 3, 1) == pytest.approx(0.3)
    # 1 - C(7,2)/C(10,2) = 1 - 21/45
    assert pass_at_k(10, 3, 2) == pytest.approx(24 / 45)
    # n - c < k: every k-subset holds a pass.
    assert pass_at_k(4, 3, 2) == 1.0
    # C(3,2)/C(10,2) = 3/45
    assert pass_hat_k(10, 3, 2) == pytest.approx(3 / 45)
    assert pass_hat_k(4, 4, 4) == 1.0
    with pytest.raises(ValueError, match="k=5"):
        pass_at_k(4, 1, 5)
    with pytest.raises(ValueError, match="passes c=5"):
        pass_hat_k(4, 5, 1)


def _refund_run(trace_id: int, answer: str) -> Trajectory:
    calls = [
        ToolCall(name="get_subscription", span_id=1, arguments={"customer_id": "C023"}),
        ToolCall(name="list_invoices", span_id=2, arguments={"customer_id": "C023"}),
        ToolCall(
            name="create_refund_request",
            span_id=3,
            arguments={"invoice_id": "INV-1002", "amount_yuan": 199, "reason": "duplicate charge"},
            result='{"refund_id": "RF-5001"}',
        ),
    ]
    return Trajectory(trace_id=trace_id, user_input=REFUND_INPUT, final_answer=answer, tool_calls=calls)


def test_evaluate_counts_runs_per_case() -> None:
    cases = load_cases(EXAMPLES)
    good = "Refund RF-5001 for INV-1002 submitted."
    runs = [
        _refund_run(1, good),
        _refund_run(2, "Refund RF-5001 submitted."),
        _refund_run(3, good),
        Trajectory(trace_id=4, user_input="unrelated question"),
    ]
    report = evaluate(runs, cases)
    refund = report.cases[0]
    assert (refund.k, refund.passes, refund.pass_at_k, refund.pass_hat_k) == (3, 2, True, False)
    assert refund.pass_at(1) == pytest.approx(2 / 3)
    assert refund.pass_hat(2) == pytest.approx(1 / 3)
    assert [r.passed if r else None for r in report.results] == [True, False, True, None]
    assert report.unmatched == (f"{4:032x}",)
    assert not report.passed
    data = report.to_dict()
    assert data["cases_run"] == 1
    assert data["cases_without_runs"] == [
        "subscription-plan",
        "invoice-history",
        "payment-status-gateway-down",
    ]
    assert (data["pass@k"], data["pass^k"]) == (1.0, 0.0)
    assert data["cases"][0]["runs"][1]["checks"][6]["reason"] == "final answer does not contain 'INV-1002'"
    json.dumps(data)
    all_good = evaluate([_refund_run(1, good), _refund_run(2, good)], cases)
    assert all_good.cases[0].pass_hat_k and all_good.passed


@pytest.mark.parametrize("outcome", ["unverified", "incomplete"])
def test_a_golden_case_never_makes_a_run_better_than_the_grader_found_it(outcome: Outcome) -> None:
    """What the grader knew beyond its checks (a run it could not fully read, or not grade within its
    budget) stands when the case results are folded in."""
    graded = Verdict(
        trajectory=Trajectory(trace_id=1, agent="a", tool_calls=[ToolCall(name="t", span_id=2)]),
        checks=(CheckResult("order", "pass", "error", ""),),
        outcome=outcome,
        score=1.0,
    )
    assert with_case_result(graded, None).outcome == outcome
