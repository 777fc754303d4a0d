"""Properties of grading arbitrary trajectories: never raises, one-line reasons, consistent outcome."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from otel_traj.grader import Grader, classify, score
from otel_traj.steps import ToolCall
from otel_traj.trajectory import Trajectory
from tests.support_trajectories import example_policy, trajectory

GRADER = Grader(example_policy())
NAMES = ["get_subscription", "list_invoices", "check_payment", "create_refund_request", "delete_account", "x"]
MULTILINE = st.sampled_from(["C023", "C02\n8", " C028 ", "INV-1002\r\nx"])
KEYS = ["customer_id", "invoice_id", "amount_yuan", "reason", "request_key", "page"]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=12) | MULTILINE,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)


@st.composite
def tool_calls(draw: st.DrawFn, index: int) -> ToolCall:
    form = draw(st.sampled_from(["dict", "text", "none"]))
    arguments: dict[str, Any] | None = None
    text = None
    if form == "dict":
        arguments = draw(st.dictionaries(st.sampled_from(KEYS), json_values, max_size=4))
    elif form == "text":
        text = draw(st.text(max_size=20))
    start = draw(st.integers(0, 10**9))
    return ToolCall(
        name=draw(st.sampled_from(NAMES)),
        span_id=index + 1,
        start_ns=start,
        end_ns=start + draw(st.integers(0, 10**8)),
        arguments=arguments,
        arguments_text=text,
        result=draw(st.none() | st.text(max_size=30)),
        ok=(ok := draw(st.booleans())),
        error_message=None if ok else draw(st.sampled_from(["gateway\ntimeout", "boom"])),
        observed=draw(st.booleans()),
        step_id=f"s{index}",
    )


@st.composite
def trajectories(draw: st.DrawFn) -> Trajectory:
    n = draw(st.integers(0, 8))
    calls = [draw(tool_calls(i)) for i in range(n)]
    return trajectory(
        calls,
        user_input=draw(st.none() | st.text(max_size=40)),
        final_answer=draw(
            st.none() | st.sampled_from(["Your refund has been submitted.", "Sorry, error.", ""])
        ),
        attributes=draw(
            st.dictionaries(st.sampled_from(["app.customer_id", "enduser.id"]), json_values, max_size=2)
        ),
        complete=draw(st.booleans()),
        agent=draw(st.sampled_from(["support_agent", None])),
    )


@settings(max_examples=300, deadline=None)
@given(trajectories())
def test_grading_any_trajectory_is_total_and_consistent(traj: Trajectory) -> None:
    verdict = GRADER.grade(traj)
    step_ids = {c.step_id for c in traj.tool_calls}
    assert 0.0 <= verdict.score <= 1.0
    assert verdict.score == score(verdict.checks)
    assert verdict.outcome == classify(verdict.checks, traj.complete)
    for check in verdict.checks:
        assert check.reason and "\n" not in check.reason, check
        assert set(check.steps) <= step_ids
        if check.status != "fail":
            assert check.steps == ()
