"""Trajectory match: modes, argument modes, overrides, optimal assignment and what is reported."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from otel_traj.cases import match_trajectory
from otel_traj.cases.model import MatchMode
from otel_traj.trajectory import Trajectory
from tests.golden_cases import call, case, traj
from tests.properties import examples

REFUND = {"invoice_id": "INV-1002", "amount_yuan": 199}
EXPECTED = (("get_subscription", {"customer_id": "C023"}), ("list_invoices", {"customer_id": "C023"}))
IN_ORDER = traj(
    call(1, "get_subscription", {"customer_id": "C023"}), call(2, "list_invoices", {"customer_id": "C023"})
)
REVERSED = traj(
    call(1, "list_invoices", {"customer_id": "C023"}), call(2, "get_subscription", {"customer_id": "C023"})
)
WITH_EXTRA = traj(
    call(1, "get_subscription", {"customer_id": "C023"}),
    call(2, "search_kb", {"query": "refund"}),
    call(3, "list_invoices", {"customer_id": "C023"}),
)
ONLY_FIRST = traj(call(1, "get_subscription", {"customer_id": "C023"}))


@pytest.mark.parametrize(
    ("mode", "trajectory", "passed"),
    [
        ("strict", IN_ORDER, True),
        ("strict", REVERSED, False),
        ("strict", WITH_EXTRA, False),
        ("strict", ONLY_FIRST, False),
        ("unordered", REVERSED, True),
        ("unordered", WITH_EXTRA, False),
        ("unordered", ONLY_FIRST, False),
        ("subset", ONLY_FIRST, True),
        ("subset", REVERSED, True),
        ("subset", WITH_EXTRA, False),
        ("superset", WITH_EXTRA, True),
        ("superset", REVERSED, True),
        ("superset", ONLY_FIRST, False),
    ],
)
def test_match_modes(mode: MatchMode, trajectory: Trajectory, passed: bool) -> None:
    result = match_trajectory(trajectory, case(*EXPECTED, match=mode))
    assert result.passed is passed, result.reason()


def test_default_mode_follows_order() -> None:
    assert case(*EXPECTED, order="strict").match_mode == "strict"
    assert case(*EXPECTED).match_mode == "unordered"
    assert not match_trajectory(REVERSED, case(*EXPECTED, order="strict")).passed
    assert match_trajectory(REVERSED, case(*EXPECTED, order="any")).passed


def test_strict_reports_out_of_order_calls() -> None:
    result = match_trajectory(REVERSED, case(*EXPECTED, match="strict"))
    assert len(result.pairs) == 1
    # Either call could be kept in order; ties keep the earliest actual call in the alignment.
    assert [p.name for p in result.pairs] == ["list_invoices"]
    assert [(p.name, p.step_id) for p in result.out_of_order] == [("get_subscription", "s2")]
    assert not result.missing and not result.extra
    assert "out of order" in result.reason()
    assert result.score == pytest.approx(1 / 3)


def test_parallel_calls_have_no_order_among_themselves() -> None:
    parallel = traj(
        call(1, "list_invoices", {"customer_id": "C023"}, start_ns=10, end_ns=50, parallel=True),
        call(2, "get_subscription", {"customer_id": "C023"}, start_ns=12, end_ns=40, parallel=True),
    )
    assert match_trajectory(parallel, case(*EXPECTED, match="strict")).passed
    # Overlap decides, not the builder's flag (it marks only sibling spans).
    unflagged = traj(
        call(1, "list_invoices", {"customer_id": "C023"}, start_ns=10, end_ns=50),
        call(2, "get_subscription", {"customer_id": "C023"}, start_ns=12, end_ns=40),
    )
    assert match_trajectory(unflagged, case(*EXPECTED, match="strict")).passed
    one_after_the_other = traj(
        call(1, "list_invoices", {"customer_id": "C023"}, start_ns=10, end_ns=50),
        call(2, "get_subscription", {"customer_id": "C023"}, start_ns=60, end_ns=90),
    )
    assert not match_trajectory(one_after_the_other, case(*EXPECTED, match="strict")).passed


@pytest.mark.parametrize(
    ("args_mode", "actual", "passed"),
    [
        ("exact", {**REFUND, "amount_yuan": "199.0"}, True),
        ("exact", {**REFUND, "note": "x"}, False),
        ("superset", {**REFUND, "note": "x"}, True),
        ("superset", {"invoice_id": "INV-1002"}, False),
        ("subset", {"invoice_id": "INV-1002"}, True),
        ("subset", {**REFUND, "note": "x"}, False),
        ("ignore", {"anything": 1}, True),
    ],
)
def test_argument_modes(args_mode: str, actual: dict[str, Any], passed: bool) -> None:
    result = match_trajectory(
        traj(call(1, "create_refund_request", actual)),
        case(("create_refund_request", REFUND), args_mode=args_mode),
    )
    assert result.passed is passed, result.reason()


def test_per_tool_overrides() -> None:
    expected = (
        ("get_subscription", {"customer_id": "C023"}),
        ("create_refund_request", {**REFUND, "reason": "dup"}),
    )
    run = traj(
        call(1, "get_subscription", {"customer_id": "C023", "verbose": True}),
        call(
            2, "create_refund_request", {"invoice_id": "INV-1002", "amount_yuan": 5, "reason": "other words"}
        ),
    )
    assert not match_trajectory(run, case(*expected)).passed
    overridden = case(
        *expected, tool_args={"get_subscription": "superset", "create_refund_request": ["invoice_id"]}
    )
    assert match_trajectory(run, overridden).passed
    keys_only = case(
        *expected, tool_args={"get_subscription": "superset", "create_refund_request": ["amount_yuan"]}
    )
    result = match_trajectory(run, keys_only)
    assert not result.passed
    assert [m.key for m in result.wrong_args[0].args.mismatches] == ["amount_yuan"]  # type: ignore[union-attr]


def test_optimal_assignment_beats_first_fit() -> None:
    # First fit gives the first expected call ({id: 1}, superset) the first actual call
    # ({id: 1, verbose: true}); the second expected call then finds only {id: 1} and fails.
    expected = (("lookup", {"id": 1}), ("lookup", {"id": 1, "verbose": True}))
    run = traj(call(1, "lookup", {"id": 1, "verbose": True}), call(2, "lookup", {"id": "1"}))
    for mode in ("unordered", "superset", "subset"):
        result = match_trajectory(run, case(*expected, match=mode, args_mode="superset"))
        assert result.passed, result.reason()
        assert {(p.expected_index, p.step_id) for p in result.pairs} == {(0, "s2"), (1, "s1")}


def test_reports_missing_extra_and_wrong_arguments() -> None:
    expected = (*EXPECTED, ("create_refund_request", REFUND))
    run = traj(
        call(1, "get_subscription", {"customer_id": "C023"}),
        call(2, "list_invoices", {"customer_id": "C028"}),
        call(3, "delete_account", {"customer_id": "C023"}),
    )
    result = match_trajectory(run, case(*expected, match="unordered"))
    assert not result.passed
    assert [result.expected[e].name for e in result.missing] == ["create_refund_request"]
    assert [result.calls[a].name for a in result.extra] == ["delete_account"]
    [wrong] = result.wrong_args
    assert wrong.name == "list_invoices" and wrong.step_id == "s2"
    assert wrong.describe_args() == "customer_id expected C023, got C028"
    assert result.offending_steps() == ("s2", "s3")
    # get_subscription 1 + list_invoices half credit (0 of 1 args right) over 3 expected + 1 extra.
    assert result.score == pytest.approx(1.5 / 4)
    reason = result.reason()
    for text in (
        "missing create_refund_request",
        "extra delete_account (s3)",
        "customer_id expected C023, got C028",
    ):
        assert text in reason
    detail = result.to_dict()
    assert detail["missing"] == [{"expected": 2, "name": "create_refund_request"}]
    assert detail["extra"] == [{"step_id": "s3", "name": "delete_account"}]


def test_partial_credit_scores() -> None:
    expected = (*EXPECTED, ("create_refund_request", REFUND))
    assert match_trajectory(IN_ORDER, case(*expected, match="superset")).score == pytest.approx(2 / 3)
    assert match_trajectory(WITH_EXTRA, case(*EXPECTED, match="unordered")).score == pytest.approx(2 / 3)
    assert match_trajectory(WITH_EXTRA, case(*EXPECTED, match="superset")).score == 1.0
    assert match_trajectory(WITH_EXTRA, case(*EXPECTED, match="subset")).score == pytest.approx(2 / 3)
    half_right = traj(call(1, "create_refund_request", {"invoice_id": "INV-1002", "amount_yuan": 1}))
    assert match_trajectory(half_right, case(("create_refund_request", REFUND))).score == pytest.approx(0.75)


def test_tools_expected_to_fail_are_tolerated() -> None:
    run = traj(
        call(1, "get_subscription", {"customer_id": "C023"}),
        call(2, "check_payment", {"invoice_id": "INV-1002"}, ok=False),
        call(3, "list_invoices", {"customer_id": "C023"}),
    )
    result = match_trajectory(run, case(*EXPECTED, match="strict", expect_error_from=["check_payment"]))
    assert result.passed, result.reason()
    assert [result.calls[a].name for a in result.tolerated] == ["check_payment"]
    assert not match_trajectory(run, case(*EXPECTED, match="strict")).passed


def test_arguments_as_text() -> None:
    as_json = traj(call(1, "get_subscription", arguments_text='{"customer_id": "C023"}'))
    assert match_trajectory(as_json, case(EXPECTED[0])).passed
    bare = traj(call(1, "get_subscription", arguments_text="C023"))
    assert match_trajectory(bare, case(EXPECTED[0])).passed
    bare_two_keys = traj(call(1, "create_refund_request", arguments_text="INV-1002 199"))
    assert not match_trajectory(bare_two_keys, case(("create_refund_request", REFUND))).passed


def test_uncaptured_arguments_compare_names_only_and_say_so() -> None:
    result = match_trajectory(traj(call(1, "get_subscription")), case(EXPECTED[0]))
    assert result.passed
    assert not result.arguments_checked
    assert "compared tool names only" in result.reason()


def test_ignores_calls_no_span_shows() -> None:
    run = traj(
        call(1, "get_subscription", {"customer_id": "C023"}),
        call(2, "list_invoices", {"customer_id": "C023"}, observed=False),
    )
    assert not match_trajectory(run, case(*EXPECTED)).passed


def test_repeated_call_is_reported_as_the_later_one() -> None:
    run = traj(
        call(1, "get_subscription", {"customer_id": "C023"}),
        call(2, "get_subscription", {"customer_id": "C023"}),
        call(3, "list_invoices", {"customer_id": "C023"}),
    )
    for mode in ("strict", "unordered"):
        result = match_trajectory(run, case(*EXPECTED, match=mode))
        assert [result.calls[a].step_id for a in result.extra] == ["s2"]


_CALLS = st.lists(st.tuples(st.sampled_from(["a", "b", "c"]), st.integers(0, 2)), max_size=6)


@settings(max_examples=examples(200), deadline=None)
@given(expected=_CALLS, actual=_CALLS, mode=st.sampled_from(["strict", "unordered", "subset", "superset"]))
def test_match_invariants(
    expected: list[tuple[str, int]], actual: list[tuple[str, int]], mode: MatchMode
) -> None:
    golden = case(*((name, {"x": x}) for name, x in expected), match=mode)
    run = traj(*(call(i, name, {"x": x}) for i, (name, x) in enumerate(actual, start=1)))
    result = match_trajectory(run, golden)
    assert 0.0 <= result.score <= 1.0
    assert result.passed == (result.score == 1.0)
    # Every expected and every actual call is accounted for exactly once.
    used_e = [p.expected_index for p in (*result.pairs, *result.out_of_order)] + list(result.missing)
    used_a = [p.actual_index for p in (*result.pairs, *result.out_of_order)] + list(result.extra)
    assert sorted(used_e) == list(range(len(expected)))
    assert sorted(used_a) == list(range(len(actual)))
    if mode != "strict":
        # The optimal assignment pairs as many same-name calls as exist, and the most right ones.
        for name in "abc":
            pairs = [p for p in result.pairs if p.name == name]
            assert len(pairs) == min(sum(n == name for n, _ in expected), sum(n == name for n, _ in actual))
            exact = sum(min(expected.count((name, x)), actual.count((name, x))) for x in range(3))
            assert sum(p.args_ok for p in pairs) == exact


def test_per_tool_override_with_a_dotted_path() -> None:
    expected = ("book_room", {"room": "A1", "time": {"start": "09:00", "end": "10:00"}})
    golden = case(expected, tool_args={"book_room": ["room", "time.start"]})
    longer = traj(call(1, "book_room", {"room": "A1", "time": {"start": "09:00", "end": "11:00"}}))
    assert match_trajectory(longer, golden).passed
    no_start = traj(call(1, "book_room", {"room": "A1", "time": {"end": "10:00"}}))
    result = match_trajectory(no_start, golden)
    assert not result.passed
    assert "time.start missing from the call (expected 09:00)" in result.reason()
