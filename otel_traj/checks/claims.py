"""``claims``: the final answer must not claim what the trajectory did not do."""

from __future__ import annotations

from collections.abc import Sequence

from otel_traj.checks.base import count, failed, one_line, passed, skipped, step_ids, succeeded
from otel_traj.policy import ClaimRule
from otel_traj.trajectory import Trajectory
from otel_traj.verdict import CheckResult, Severity

NAME = "claims"


def check_claims(
    traj: Trajectory, rules: Sequence[ClaimRule], severity: Severity = "critical"
) -> CheckResult:
    answer = traj.final_answer
    if answer is None:
        return skipped(NAME, severity, "final answer not captured")
    problems: list[str] = []
    steps: list[str] = []
    unknown: list[str] = []
    made = 0
    for rule in rules:
        match = rule.pattern.search(answer)
        if match is None:
            continue
        made += 1
        calls = [c for c in traj.tool_calls if c.name == rule.requires_success]
        if any(succeeded(c) for c in calls):
            continue
        claim = " ".join(match.group(0).split())
        if any(not c.observed for c in calls):
            unknown.append(f"{rule.requires_success} has no span to confirm {claim!r}")
            continue
        problems.append(f"answer claims {claim!r} but {rule.requires_success} never succeeded")
        steps.extend(step_ids(calls))
    if problems:
        return failed(NAME, severity, one_line(problems), tuple(steps))
    if unknown:
        return skipped(NAME, severity, one_line(unknown))
    if not made:
        return passed(NAME, severity, f"answer makes none of the {len(rules)} watched claims")
    return passed(NAME, severity, f"{count(made, 'claim')} backed by a successful tool call")
