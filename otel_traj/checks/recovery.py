"""``recovery``: blind retries, and runs that end on an unresolved tool error without saying so."""

from __future__ import annotations

from otel_traj.checks.base import ArgsKey, CallKeys, args_key, count, failure, label, passed, skipped, step_id
from otel_traj.policy import Recovery
from otel_traj.steps import ToolCall
from otel_traj.trajectory import Trajectory
from otel_traj.verdict import CheckResult, Severity

NAME = "recovery"


def _failing_runs(calls: list[tuple[ToolCall, ArgsKey | None]]) -> list[list[ToolCall]]:
    """Maximal runs of consecutive identical failing calls (nothing new tried in between)."""
    runs: list[list[ToolCall]] = []
    current: list[ToolCall] = []
    current_key: ArgsKey | None = None
    for call, key in calls:
        if call.ok:
            key = None  # only failures form a run
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
    traj: Trajectory,
    recovery: Recovery,
    max_retries: int,
    severity: Severity = "error",
    keys: CallKeys | None = None,
) -> CheckResult:
    """``keys``: ``args_keys(traj.tool_calls)`` when the caller has them already."""
    if keys is None:
        # Only failures can form a run, so successful calls never pay for an argument key.
        keys = [None if c.ok else args_key(c) for c in traj.tool_calls]
    keyed = [(c, key) for c, key in zip(traj.tool_calls, keys, strict=True) if c.observed]
    problems: list[str] = []
    steps: list[str] = []
    for run in _failing_runs(keyed):
        if len(run) - 1 > max_retries:
            problems.append(f"{label(run[0])} failed {len(run)} times in a row, max retries {max_retries}")
            steps.extend(map(step_id, run[max_retries + 1 :]))
    unacknowledged = None
    if keyed and not keyed[-1][0].ok:
        last = keyed[-1][0]
        error = last.error_type or last.error_message or "error"
        if traj.final_answer is None:
            unacknowledged = f"run ended after {last.name} failed ({error}); final answer not captured"
        elif recovery.acknowledgement.search(traj.final_answer) is None:
            problems.append(f"run ended after {last.name} failed ({error}) and the answer does not say so")
            steps.append(step_id(last))
    if problems:
        return failure(NAME, severity, problems, steps)
    if unacknowledged is not None:
        return skipped(NAME, severity, unacknowledged)
    errors = sum(1 for c, _ in keyed if not c.ok)
    return passed(NAME, severity, f"{count(errors, 'tool error')}, none retried blindly or left unresolved")
