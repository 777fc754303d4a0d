"""``postconditions``: what a successful call's result says about the state it left.

A tool that answers 200 with ``{"status": "failed"}`` or a refund of another amount than asked
did not do what the run goes on to rely on.
"""

from __future__ import annotations

from otel_traj.checks.base import step_id, tallied
from otel_traj.checks.results import UNREADABLE, PathError, result_value, same, select, shown
from otel_traj.policy import Tools
from otel_traj.policy.rules import Postcondition
from otel_traj.steps import ToolCall
from otel_traj.trajectory import Trajectory
from otel_traj.verdict import CheckResult, Severity

NAME = "postconditions"


def _violation(call: ToolCall, rule: Postcondition, data: object) -> str | None:
    """What the result breaks (``None``: it holds); raises ``LookupError`` when it cannot tell."""
    path = rule.path.source
    try:
        value = select(rule.path, data, call.arguments)
    except PathError as exc:
        return f"{call.name} result: {path}: {exc}"
    if rule.in_ is not None:
        if any(same(value, allowed) for allowed in rule.in_):
            return None
        return f"{call.name} result {path}={shown(value)}, expected one of {shown(list(rule.in_), 60)}"
    if rule.equals_argument is not None:
        if call.arguments is None or rule.equals_argument not in call.arguments:
            raise LookupError(f"{call.name} argument {rule.equals_argument} not captured")
        expected = call.arguments[rule.equals_argument]
        if same(value, expected):
            return None
        return (
            f"{call.name} result {path}={shown(value)}, expected argument "
            f"{rule.equals_argument}={shown(expected)}"
        )
    return None if value is not None else f"{call.name} result has no {path}"


def check_postconditions(traj: Trajectory, tools: Tools, severity: Severity = "error") -> CheckResult:
    problems: list[str] = []
    steps: list[str] = []
    unknown: list[str] = []
    checked = 0
    for call in traj.tool_calls:
        contract = tools.contracts.get(call.name)
        if contract is None or not contract.postconditions or not call.ok:
            continue
        if not call.observed:
            unknown.append(f"{call.name} has no span")
            continue
        data = result_value(call)
        if data is None:
            unknown.append(f"{call.name} result not captured")
            continue
        if data is UNREADABLE:
            unknown.append(f"{call.name} result is not JSON")
            continue
        broken = False
        for rule in contract.postconditions:
            try:
                problem = _violation(call, rule, data)
            except LookupError as exc:
                unknown.append(str(exc))
                continue
            checked += 1
            if problem is not None:
                problems.append(problem)
                broken = True
        if broken:
            steps.append(step_id(call))
    return tallied(
        NAME,
        severity,
        problems,
        steps,
        unknown,
        checked,
        "postcondition",
        nothing="no successful call with postconditions",
    )
