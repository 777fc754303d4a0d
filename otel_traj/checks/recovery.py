"""``recovery``: blind retries, and runs that end on an unresolved tool error without saying so."""

from __future__ import annotations

from otel_traj.checks.base import (
    ArgsKey,
    args_key,
    count,
    failed,
    label,
    one_line,
    passed,
    skipped,
    step_id,
    step_ids,
)
from otel_traj.policy import Recovery
from otel_traj.steps import ToolCall
from otel_traj.trajectory import Trajectory
from otel_traj.verdict import CheckResult, Severity

NAME = "recovery"


def _failing_runs(calls: list[ToolCall]) -> list[list[ToolCall]]:
    """Maximal runs of consecutive identical failing calls (nothing new tried in between)."""
    runs: list[list[ToolCall]] = []
    current: list[ToolCall] = []
    current_key: ArgsKey | None = None
    for call in calls:
        # Only failures can form a run, so successful calls never pay for an argument key.
        key = None if call.ok else args_key(call)
        if key is not None and current and current[-1].name == call.name and key == current_key:
            current.append(call)
            continue
        if len(current) > 1:
            runs.append(current)
        current, current_key = ([call], key) if key is not None else ([], None)
    if len(current) > 1:
        runs.append(current)
    return runs


def check_recovery(
    traj: Trajectory, recovery: Recovery, max_retries: int, severity: Severity = "error"
) -> CheckResult:
    calls = [c for c in traj.tool_calls if c.observed]
    problems: list[str] = []
    steps: list[str] = []
    for run in _failing_runs(calls):
        if len(run) - 1 > max_retries:
            problems.append(f"{label(run[0])} failed {len(run)} times in a row, max retries {max_retries}")
            steps.extend(step_ids(run[max_retries + 1 :]))
    unacknowledged = None
    if calls and not calls[-1].ok:
        last = calls[-1]
        error = last.error_type or last.error_message or "error"
        if traj.final_answer is None:
            unacknowledged = f"run ended after {last.name} failed ({error}); final answer not captured"
        elif recovery.acknowledgement.search(traj.final_answer) is None:
            problems.append(f"run ended after {last.name} failed ({error}) and the answer does not say so")
            steps.append(step_id(last))
    if problems:
        return failed(NAME, severity, one_line(problems), tuple(steps))
    if unacknowledged is not None:
        return skipped(NAME, severity, unacknowledged)
    errors = sum(1 for c in calls if not c.ok)
    return passed(NAME, severity, f"{count(errors, 'tool error')}, none retried blindly or left unresolved")
