"""Trajectory building details that real SDKs' clocks expose."""

from __future__ import annotations

from otel_traj.builder import build_trajectory
from otel_traj.records import TraceContext
from otel_traj.steps import ModelCall, RequestedTool, ToolCall

MS = 1_000_000
T = 1_764_536_400_000 * MS  # a whole millisecond


def test_millisecond_starts_do_not_make_sequential_calls_parallel() -> None:
    # The JavaScript SDK's clock: starts to the millisecond, durations to the nanosecond. The second
    # call began after the first ended, in the same millisecond.
    first = ToolCall(name="get_subscription", span_id=1, start_ns=T, end_ns=T + 74_259)
    second = ToolCall(name="list_invoices", span_id=2, start_ns=T, end_ns=T + 108_661)
    trajectory = build_trajectory(TraceContext(trace_id=1), [first, second])
    assert [c.parallel for c in trajectory.tool_calls] == [False, False]


def test_calls_overlapping_beyond_the_clock_resolution_are_parallel() -> None:
    first = ToolCall(name="get_subscription", span_id=1, start_ns=T, end_ns=T + 30 * MS)
    second = ToolCall(name="list_invoices", span_id=2, start_ns=T + 1 * MS, end_ns=T + 35 * MS)
    fine = ToolCall(name="check_payment", span_id=3, start_ns=T + 40 * MS + 7, end_ns=T + 41 * MS)
    finer = ToolCall(name="check_payment", span_id=4, start_ns=T + 40 * MS + 500, end_ns=T + 42 * MS)
    trajectory = build_trajectory(TraceContext(trace_id=1), [first, second, fine, finer])
    assert [c.parallel for c in trajectory.tool_calls] == [True, True, True, True]


def test_a_layer_and_the_one_it_wraps_starting_in_one_millisecond_count_once() -> None:
    # Times kept to the millisecond (a backend's): the wrapping span and the one inside it start at
    # the same time, the inner one ends first. Each is still one call, with what the inner recorded.
    outer = ModelCall(span_id=9, start_ns=T, end_ns=T + 40 * MS, model="gpt-4o-mini")
    request = RequestedTool(name="get_subscription", call_id="call_1")
    inner = ModelCall(
        span_id=2,
        start_ns=T,
        end_ns=T + 39 * MS,
        input_tokens=300,
        output_tokens=20,
        requested_tools=(request,),
    )
    tool = ToolCall(name="get_subscription", span_id=8, start_ns=T + 41 * MS, end_ns=T + 60 * MS)
    tool_inner = ToolCall(name="get_subscription", span_id=3, start_ns=T + 41 * MS, end_ns=T + 59 * MS)
    trajectory = build_trajectory(TraceContext(trace_id=1), [inner, outer, tool_inner, tool])
    assert [(m.span_id, m.input_tokens, m.requested_tools) for m in trajectory.model_calls] == [
        (9, 300, (request,))
    ]
    assert [(c.span_id, c.turn) for c in trajectory.tool_calls] == [(8, 0)]


def test_of_two_layers_with_the_same_times_the_parent_is_the_call() -> None:
    # Both kept to the same milliseconds: only the parent says which wraps the other.
    outer = ModelCall(span_id=7, start_ns=T, end_ns=T + 40 * MS, model="gpt-4o-mini")
    inner = ModelCall(
        span_id=3, parent_id=7, start_ns=T, end_ns=T + 40 * MS, input_tokens=300, output_tokens=20
    )
    tool = ToolCall(name="get_subscription", span_id=8, start_ns=T + 41 * MS, end_ns=T + 60 * MS)
    tool_inner = ToolCall(
        name="get_subscription", span_id=4, parent_id=8, start_ns=T + 41 * MS, end_ns=T + 60 * MS
    )
    trajectory = build_trajectory(TraceContext(trace_id=1), [inner, outer, tool_inner, tool])
    assert [(m.span_id, m.input_tokens) for m in trajectory.model_calls] == [(7, 300)]
    assert [c.span_id for c in trajectory.tool_calls] == [8]
