"""``claims``: the final answer must not claim what the trajectory did not do."""

from __future__ import annotations

from collections.abc import Sequence

from otel_traj.checks.base import count, failure, one_line, passed, proven, skipped, step_ids
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
        backed = proven(calls)
        if backed:
            continue
        claim = " ".join(match.group(0).split())
        if backed is None:
            unknown.append(f"{rule.requires_success} has no span to confirm {claim!r}")
        else:
            problems.append(f"answer claims {claim!r} but {rule.requires_success} never succeeded")
            steps.extend(step_ids(calls))
    if problems:
        return failure(NAME, severity, problems, steps)
    if unknown:
        return skipped(NAME, severity, one_line(unknown))
    if not made:
        return passed(NAME, severity, f"answer makes none of the {len(rules)} watched claims")
    return passed(NAME, severity, f"{count(made, 'claim')} backed by a successful tool call")
