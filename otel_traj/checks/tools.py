"""``tools``: allow-list and deny-list of tool names. Needs only names, so it always runs."""

from __future__ import annotations

from otel_traj.checks.base import count, failed, one_line, passed, step_id
from otel_traj.policy import Tools
from otel_traj.trajectory import Trajectory
from otel_traj.verdict import CheckResult, Severity

NAME = "tools"


def check_tools(traj: Trajectory, tools: Tools, severity: Severity = "critical") -> CheckResult:
    problems: dict[str, str] = {}
    steps: list[str] = []
    deny = frozenset(tools.deny)
    allow = frozenset(tools.allow)
    for call in traj.tool_calls:
        if call.name in deny:
            problems.setdefault(call.name, f"{call.name} is denied")
        elif allow and call.name not in allow:
            problems.setdefault(call.name, f"{call.name} is not in the allow-list")
        else:
            continue
        steps.append(step_id(call))
    if problems:
        return failed(NAME, severity, one_line(list(problems.values())), tuple(steps))
    names = len({c.name for c in traj.tool_calls})
    return passed(NAME, severity, f"{count(names, 'distinct tool')}, all permitted")
