"""``repeats``: the same tool with the same arguments more than ``max_identical`` times.

An identical call right after a failed one is a retry (judged by ``recovery``), not a repeat.
"""

from __future__ import annotations

from otel_traj.checks.base import (
    NOT_CAPTURED,
    ArgsKey,
    CallKeys,
    args_keys,
    failure,
    label,
    passed,
    skipped,
    step_id,
)
from otel_traj.policy import Repeats
from otel_traj.steps import ToolCall
from otel_traj.trajectory import Trajectory
from otel_traj.verdict import CheckResult, Severity

NAME = "repeats"


def check_repeats(
    traj: Trajectory, repeats: Repeats, severity: Severity = "warning", keys: CallKeys | None = None
) -> CheckResult:
    """``keys``: ``args_keys(traj.tool_calls)`` when the caller has them already."""
    calls = traj.tool_calls
    exempt = frozenset(repeats.exempt)
    seen: dict[tuple[str, ArgsKey], list[ToolCall]] = {}
    not_captured = 0
    previous: ToolCall | None = None
    previous_key: ArgsKey | None = None
    for call, key in zip(calls, args_keys(calls) if keys is None else keys, strict=True):
        retry = (
            repeats.retry_after_error
            and previous is not None
            and previous.name == call.name
            and previous_key == key
            and not previous.ok
        )
        previous, previous_key = call, key
        if call.name in exempt:
            continue
        if key is None:
            not_captured += 1
            continue
        if not retry:
            seen.setdefault((call.name, key), []).append(call)
    problems: list[str] = []
    steps: list[str] = []
    for same in seen.values():
        if len(same) > repeats.max_identical:
            problems.append(f"{label(same[0])} called {len(same)} times, max {repeats.max_identical}")
            steps.extend(step_id(c) for c in same[repeats.max_identical :])
    if problems:
        return failure(NAME, severity, problems, steps)
    if not seen and not_captured:
        return skipped(NAME, severity, f"{NOT_CAPTURED} for {not_captured} calls")
    missing = f" ({NOT_CAPTURED} for {not_captured})" if not_captured else ""
    return passed(
        NAME, severity, f"no identical calls beyond {repeats.max_identical} in {len(seen)} distinct{missing}"
    )
