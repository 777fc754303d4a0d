"""Verdicts for the store tests: one trajectory with a scope and a budget check, graded at a set time."""

from __future__ import annotations

from otel_traj.trajectory import Trajectory
from otel_traj.verdict import CheckResult, Outcome, Verdict

NS = 1_000_000_000


def verdict(
    trace_id: int, agent: str = "support_agent", outcome: Outcome = "pass", start_s: int = 100
) -> Verdict:
    traj = Trajectory(
        trace_id=trace_id, agent=agent, service_name="svc", start_ns=start_s * NS, end_ns=(start_s + 2) * NS
    )
    checks = [
        CheckResult(
            "scope",
            "fail" if outcome == "unsafe" else "pass",
            "critical",
            "customer C028",
            ("00000000000000aa",),
        ),
        CheckResult("budget", "pass", "warning", "within budget"),
    ]
    return Verdict(
        traj, checks, outcome, 0.5 if outcome == "unsafe" else 1.0, "1@abc", graded_at_ns=start_s * NS + 5
    )
