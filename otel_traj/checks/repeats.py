"""``repeats``: the same tool with the same arguments more than ``max_identical`` times.

An identical call right after a failed one is a retry (judged by ``recovery``), not a repeat.
"""

from __future__ import annotations

from otel_traj.checks.base import (
    NOT_CAPTURED,
    ArgsKey,
    args_key,
    failed,
    label,
    one_line,
    passed,
    skipped,
    step_id,
)
from otel_traj.policy import Repeats
from otel_traj.steps import ToolCall
from otel_traj.trajectory import Trajectory
from otel_traj.verdict import CheckResult, Severity

NAME = "repeats"


def check_repeats(traj: Trajectory, repeats: Repeats, severity: Severity = "warning") -> CheckResult:
    exempt = frozenset(repeats.exempt)
    seen: dict[tuple[str, ArgsKey], list[ToolCall]] = {}
    not_captured = 0
    previous: tuple[str, ArgsKey | None, bool] | None = None
    for call in traj.tool_calls:
        key = args_key(call)
        retry = (
            repeats.retry_after_error
            and previous is not None
            and previous[0] == call.name
            and previous[1] == key
            and not previous[2]
        )
        previous = (call.name, key, call.ok)
        if call.name in exempt:
            continue
        if key is None:
            not_captured += 1
            continue
        if not retry:
            seen.setdefault((call.name, key), []).append(call)
    problems: list[str] = []
    steps: list[str] = []
    for calls in seen.values():
        if len(calls) > repeats.max_identical:
            problems.append(f"{label(calls[0])} called {len(calls)} times, max {repeats.max_identical}")
            steps.extend(step_id(c) for c in calls[repeats.max_identical :])
    if problems:
        return failed(NAME, severity, one_line(problems), tuple(steps))
    if not seen and not_captured:
        return skipped(NAME, severity, f"{NOT_CAPTURED} for {not_captured} calls")
    missing = f" ({NOT_CAPTURED} for {not_captured})" if not_captured else ""
    return passed(
        NAME, severity, f"no identical calls beyond {repeats.max_identical} in {len(seen)} distinct{missing}"
    )
