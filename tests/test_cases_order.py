"""Order in strict mode: unordered groups (one model turn, overlapping spans), same-name calls paired
on their arguments whatever their span order, failures caused by order alone, structured output."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from otel_traj.cases import match_trajectory
from otel_traj.cases.dimensions import plan_coherence, tool_selection
from otel_traj.cases.order import longest_in_order, unordered_groups
from otel_traj.steps import ToolCall
from tests import golden_cases
from tests.golden_cases import case, traj


def call(index: int, name: str, args: dict[str, Any] | None = None, **kw: Any) -> ToolCall:
    """Call ``index`` (1-based) runs from 100*index to 100*index + 20 ns unless told otherwise."""
    kw.setdefault("start_ns", 100 * index)
    kw.setdefault("end_ns", 100 * index + 20)
    return golden_cases.call(index, name, args, **kw)


PARIS = {"city": "Paris"}
BERLIN = {"city": "Berlin"}
WEATHER = case(("get_weather", PARIS), ("get_weather", BERLIN), match="strict")


def test_parallel_same_name_calls_match_whatever_their_span_order() -> None:
    # Berlin's span started first but overlapped Paris's: neither waited for the other.
    run = traj(
        call(1, "get_weather", BERLIN, start_ns=10, end_ns=50),
        call(2, "get_weather", PARIS, start_ns=12, end_ns=40),
    )
    result = match_trajectory(run, WEATHER)
    assert result.passed, result.reason()
    assert {(p.expected_index, p.step_id) for p in result.pairs} == {(0, "s2"), (1, "s1")}


def test_parallel_calls_interleaved_with_other_tools_match_optimally() -> None:
    expected = case(
        ("get_weather", PARIS),
        ("get_time", PARIS),
        ("get_weather", BERLIN),
        ("book", {"city": "Paris"}),
        match="strict",
    )
    run = traj(
        call(1, "get_weather", BERLIN, start_ns=10, end_ns=60),
        call(2, "get_time", PARIS, start_ns=11, end_ns=30),
        call(3, "get_weather", PARIS, start_ns=12, end_ns=50),
        call(4, "book", {"city": "Paris"}, start_ns=100, end_ns=120),
    )
    assert match_trajectory(run, expected).passed, match_trajectory(run, expected).reason()
    # The call that came after the parallel ones still has to come after them.
    late_first = traj(
        call(1, "book", {"city": "Paris"}, start_ns=0, end_ns=5),
        call(2, "get_weather", BERLIN, start_ns=10, end_ns=60),
        call(3, "get_time", PARIS, start_ns=11, end_ns=30),
        call(4, "get_weather", PARIS, start_ns=12, end_ns=50),
    )
    result = match_trajectory(late_first, expected)
    assert not result.passed
    assert [(p.name, p.step_id) for p in result.out_of_order] == [("book", "s1")]


def test_calls_requested_in_one_turn_are_unordered() -> None:
    # One after the other (no overlap), but the model asked for both in turn 0.
    same_turn = traj(call(1, "get_weather", BERLIN, turn=0), call(2, "get_weather", PARIS, turn=0))
    assert match_trajectory(same_turn, WEATHER).passed
    names = case(("get_subscription", {}), ("list_invoices", {}), match="strict")
    mixed = traj(call(1, "list_invoices", {}, turn=3), call(2, "get_subscription", {}, turn=3))
    assert match_trajectory(mixed, names).passed
    # Two turns: the later request came after the earlier one's result.
    two_turns = traj(call(1, "get_weather", BERLIN, turn=0), call(2, "get_weather", PARIS, turn=1))
    assert not match_trajectory(two_turns, WEATHER).passed


def test_overlap_still_groups_calls_whose_turn_is_unknown() -> None:
    unknown = traj(
        call(1, "get_weather", BERLIN, start_ns=10, end_ns=50, turn=0),
        call(2, "get_weather", PARIS, start_ns=12, end_ns=40),
    )
    assert match_trajectory(unknown, WEATHER).passed
    # Known, different turns keep their order even when a slow call outlived its turn.
    known = traj(
        call(1, "get_weather", BERLIN, start_ns=10, end_ns=50, turn=0),
        call(2, "get_weather", PARIS, start_ns=12, end_ns=40, turn=1),
    )
    assert not match_trajectory(known, WEATHER).passed


def test_unordered_groups() -> None:
    calls = [
        call(1, "a", turn=0),
        call(2, "b", start_ns=150, end_ns=400),
        call(3, "c", turn=1, start_ns=300, end_ns=310),
        call(4, "d", turn=0),
        call(5, "e", start_ns=900, end_ns=950),
    ]
    # a and d share turn 0; b (turn unknown) overlaps c; e stands alone.
    assert unordered_groups(calls) == [0, 1, 1, 0, 4]


def test_longest_in_order_keeps_the_earliest_calls() -> None:
    assert longest_in_order([1, 0], [1, 0]) == [1]
    assert longest_in_order([0, 2, 1, 2], [0, 3, 1, 2]) == [0, 2, 3]
    assert longest_in_order([0, 0], [1, 0]) == [0, 1]
    assert longest_in_order([], []) == []


def test_failure_caused_only_by_order_says_out_of_order() -> None:
    swapped = traj(call(1, "get_weather", BERLIN), call(2, "get_weather", PARIS))
    result = match_trajectory(swapped, WEATHER)
    assert not result.passed
    assert not result.wrong_args and not result.missing and not result.extra
    reason = result.reason()
    assert "wrong arguments" not in reason
    assert "out of order get_weather (s2, expected call 1)" in reason
    # Three calls, two of one tool swapped around a third.
    expected = case(("search", {"q": "a"}), ("fetch", {}), ("search", {"q": "b"}), match="strict")
    run = traj(call(1, "search", {"q": "b"}), call(2, "fetch", {}), call(3, "search", {"q": "a"}))
    result = match_trajectory(run, expected)
    assert not result.passed and not result.wrong_args
    assert "out of order" in result.reason() and "wrong arguments" not in result.reason()
    assert len(result.out_of_order) == 2


def test_wrong_arguments_in_order_are_still_wrong_arguments() -> None:
    run = traj(call(1, "get_weather", PARIS), call(2, "get_weather", {"city": "Rome"}))
    result = match_trajectory(run, WEATHER)
    assert not result.out_of_order
    assert "wrong arguments get_weather (city expected Berlin, got Rome)" in result.reason()
    # Out of order and wrong: both are said.
    run = traj(call(1, "fetch", {}), call(2, "search", {"q": "z"}))
    result = match_trajectory(run, case(("search", {"q": "a"}), ("fetch", {}), match="strict"))
    reason = result.reason()
    assert "out of order" in reason and "q expected a, got z" in reason


def test_structured_output_calls_are_left_out_of_matching() -> None:
    run = traj(
        call(1, "get_weather", PARIS),
        call(2, "get_weather", BERLIN),
        call(3, "final_result", {"answer": "sunny"}, output=True),
    )
    for mode in ("strict", "unordered", "subset"):
        result = match_trajectory(run, case(("get_weather", PARIS), ("get_weather", BERLIN), match=mode))
        assert result.passed, result.reason()
        assert "final_result" not in {c.name for c in result.calls}
        assert not result.extra
    golden = case(("get_weather", PARIS), ("get_weather", BERLIN))
    assert tool_selection(run, golden).status == "pass"
    # Not a call "after the answer was ready" either.
    assert plan_coherence(run, golden).status == "pass"
    # The same tool as an action (not flagged as output) is an extra call.
    as_action = traj(call(1, "get_weather", PARIS), call(2, "final_result", {"answer": "x"}))
    assert match_trajectory(as_action, case(("get_weather", PARIS))).extra == (1,)


def test_structured_output_call_the_case_lists_is_matched() -> None:
    run = traj(call(1, "get_weather", PARIS), call(2, "final_result", {"answer": "sunny"}, output=True))
    result = match_trajectory(
        run, case(("get_weather", PARIS), ("final_result", {"answer": "sunny"}), match="strict")
    )
    assert result.passed, result.reason()


_NAMES = st.sampled_from(["a", "b"])
_EXPECTED = st.lists(st.tuples(_NAMES, st.integers(0, 2)), min_size=1, max_size=6)


@settings(max_examples=200, deadline=None)
@given(expected=_EXPECTED, data=st.data())
def test_permutations_fail_on_order_only(expected: list[tuple[str, int]], data: st.DataObject) -> None:
    actual = data.draw(st.permutations(expected))
    golden = case(*((name, {"x": x}) for name, x in expected), match="strict")
    result = match_trajectory(traj(*(call(i, n, {"x": x}) for i, (n, x) in enumerate(actual, 1))), golden)
    assert not result.wrong_args and not result.missing and not result.extra
    assert result.passed == (list(actual) == expected)
    # In one turn the same calls pass whatever their order.
    one_turn = traj(*(call(i, n, {"x": x}, turn=0) for i, (n, x) in enumerate(actual, 1)))
    assert match_trajectory(one_turn, golden).passed
