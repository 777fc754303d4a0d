"""``grounded``: listed arguments must appear in the user's input or an earlier tool result.

Catches made-up ids: a refund for an invoice nobody mentioned and no lookup returned.
"""

from __future__ import annotations

from typing import Any

from otel_traj.checks.base import (
    NOT_CAPTURED,
    contains_token,
    count,
    failure,
    one_line,
    passed,
    skipped,
    step_id,
)
from otel_traj.checks.order import finished_before
from otel_traj.policy import Tools
from otel_traj.trajectory import Trajectory
from otel_traj.verdict import CheckResult, Severity

NAME = "grounded"


def _text(value: Any) -> str | None:
    """The text a scalar argument would appear as; containers and booleans are not grounded."""
    if isinstance(value, bool) or value is None or isinstance(value, dict | list):
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    text = str(value).strip()
    return text or None


def check_grounded(traj: Trajectory, tools: Tools, severity: Severity = "error") -> CheckResult:
    calls = traj.tool_calls
    problems: list[str] = []
    steps: list[str] = []
    unknown: list[str] = []
    checked = 0
    for index, call in enumerate(calls):
        contract = tools.contracts.get(call.name)
        if contract is None or not contract.grounded:
            continue
        if call.arguments is None:
            unknown.append(f"{call.name} {NOT_CAPTURED}")
            continue
        sources = [traj.user_input] if traj.user_input else []
        sources += [c.result for c in calls[:index] if c.result and finished_before(c, call)]
        for name in contract.grounded:
            value = _text(call.arguments.get(name))
            if value is None:
                continue
            if not sources:
                unknown.append(f"{call.name} {name}: user input and tool results not captured")
                continue
            checked += 1
            if not any(contains_token(text, value) for text in sources):
                problems.append(
                    f"{call.name} {name}={value} is in neither the user's input nor an earlier result"
                )
                steps.append(step_id(call))
    if problems:
        return failure(NAME, severity, problems, steps)
    if unknown and not checked:
        return skipped(NAME, severity, one_line(unknown))
    note = f" ({len(unknown)} not checkable)" if unknown else ""
    return passed(NAME, severity, f"{count(checked, 'grounded argument')} found in earlier context{note}")
