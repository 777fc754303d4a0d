"""``tools``: allow-list and deny-list of tool names. Needs only names, so it always runs.

A memory write is no tool call, but a deny-list may name it as ``memory:<operation>``
(``memory:delete_memory``): it fails as a denied tool does. The allow-list lists tools only: a
memory write is never outside it."""

from __future__ import annotations

from itertools import chain

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
    # Only denied writes are taken: the allow-list never sees a write.
    writes = [write.as_call() for write in traj.memory_writes if write.name in deny]
    calls = sorted(chain(traj.tool_calls, writes), key=lambda c: c.start_ns) if writes else traj.tool_calls
    for call in calls:
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
