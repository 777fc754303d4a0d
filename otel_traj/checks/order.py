"""``order``: partial-order rules "A must have succeeded before the first B". No rule invents a path."""

from __future__ import annotations

from collections.abc import Sequence

from otel_traj.checks.base import failure, one_line, passed, proven, skipped, step_id
from otel_traj.policy import OrderRule
from otel_traj.steps import ToolCall
from otel_traj.trajectory import Trajectory
from otel_traj.verdict import CheckResult, Severity

NAME = "order"


def finished_before(a: ToolCall, b: ToolCall) -> bool:
    """``a`` ended before ``b`` started; parallel siblings overlap, so neither precedes the other."""
    if a.end_ns and b.start_ns:
        return a.end_ns <= b.start_ns
    return True


def check_order(traj: Trajectory, rules: Sequence[OrderRule], severity: Severity = "error") -> CheckResult:
    calls = traj.tool_calls
    problems: list[str] = []
    steps: list[str] = []
    unknown: list[str] = []
    applied = 0
    for rule in rules:
        index = next((i for i, c in enumerate(calls) if c.name == rule.after), None)
        if index is None:
            continue
        applied += 1
        first = calls[index]
        done = proven(c for c in calls[:index] if c.name == rule.before and finished_before(c, first))
        if done is None:
            unknown.append(f"{rule.before} has no span before {rule.after}")
        elif not done:
            problems.append(f"{rule.after} before {rule.before} succeeded")
            steps.append(step_id(first))
    if problems:
        return failure(NAME, severity, problems, steps)
    if unknown:
        return skipped(NAME, severity, f"cannot tell success: {one_line(unknown)}")
    if not applied:
        return passed(NAME, severity, f"no rule applies ({len(rules)} rules, none of their tools called)")
    return passed(NAME, severity, f"{applied}/{len(rules)} order rules applied and held")
