"""Verdict: the grader's output for one trajectory."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from otel_traj.trajectory import Trajectory

Status = Literal["pass", "fail", "skipped"]
Severity = Literal["critical", "error", "warning", "info"]
Outcome = Literal["unsafe", "fail", "pass_with_warnings", "pass", "incomplete"]


@dataclass(slots=True, frozen=True)
class CheckResult:
    """One check's result. ``reason`` is one line a human understands without opening the trace;
    ``steps`` are the offending step ids (span ids in 16 hex)."""

    name: str
    status: Status
    severity: Severity
    reason: str
    steps: tuple[str, ...] = ()

    @property
    def failed(self) -> bool:
        return self.status == "fail"


@dataclass(slots=True)
class Verdict:
    trajectory: Trajectory
    checks: list[CheckResult] = field(default_factory=list)
    outcome: Outcome = "pass"
    score: float = 1.0
    policy_version: str | None = None
    graded_at_ns: int = 0

    @property
    def failed_checks(self) -> list[CheckResult]:
        return [c for c in self.checks if c.failed]
