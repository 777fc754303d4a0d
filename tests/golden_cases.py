"""Small golden cases and the trajectories they are matched against, for the trajectory-match tests."""

from __future__ import annotations

from typing import Any

from otel_traj.cases import GoldenCase
from otel_traj.steps import ToolCall
from otel_traj.trajectory import Trajectory


def call(index: int, name: str, args: dict[str, Any] | None = None, **kw: Any) -> ToolCall:
    return ToolCall(name=name, span_id=index, arguments=args, step_id=f"s{index}", **kw)


def traj(*calls: ToolCall) -> Trajectory:
    return Trajectory(trace_id=1, tool_calls=list(calls))


def case(*expected: tuple[str, dict[str, Any]], **extra: Any) -> GoldenCase:
    tools = [{"name": name, "args": args} for name, args in expected]
    return GoldenCase.model_validate({"case_id": "c", "input": "x", "expected_tools": tools, **extra})
