"""Verdict: the grader's output for one trajectory."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from otel_traj.check_catalog import Severity as Severity  # re-exported: results carry it
from otel_traj.stages import Stage, failure_stage
from otel_traj.trajectory import Trajectory
from otel_traj.versions import Versions

Status = Literal["pass", "fail", "skipped"]
Outcome = Literal["unsafe", "fail", "pass_with_warnings", "pass", "incomplete", "unverified"]
# Every outcome, worst first (``otel_traj.grader`` says when each is given).
OUTCOMES: tuple[Outcome, ...] = ("unsafe", "incomplete", "fail", "unverified", "pass_with_warnings", "pass")


def worst(*outcomes: Outcome) -> Outcome:
    """The worst of ``outcomes`` (``OUTCOMES`` is worst first)."""
    return min(outcomes, key=OUTCOMES.index)


@dataclass(slots=True, frozen=True)
class CheckResult:
    """One check's result. ``reason`` is one line a human understands without opening the trace;
    ``steps`` are the offending step ids (span ids in 16 hex). ``score`` is an optional partial credit in
    [0, 1] and ``detail`` optional structured evidence (JSON-ready), for checks that have them."""

    name: str
    status: Status
    severity: Severity
    reason: str
    steps: tuple[str, ...] = ()
    score: float | None = None
    detail: Mapping[str, Any] | None = field(default=None, compare=False)

    @property
    def failed(self) -> bool:
        return self.status == "fail"


@dataclass(slots=True, frozen=True)
class Verdict:
    """A value: built once by the grader with every check it reports, its outcome and score
    computed from all of them."""

    trajectory: Trajectory
    checks: tuple[CheckResult, ...] = ()
    outcome: Outcome = "pass"
    score: float = 1.0
    policy_version: str | None = None
    graded_at_ns: int = 0
    # Which agent, models, prompt, policy and tool contracts produced it (``otel_traj.versions``).
    versions: Versions = field(default_factory=Versions)

    @property
    def failed_checks(self) -> list[CheckResult]:
        return [c for c in self.checks if c.failed]

    @property
    def stage(self) -> Stage | None:
        """The earliest broken link of a failing run (``otel_traj.stages``); ``None`` when nothing broke."""
        return failure_stage(self.checks, self.trajectory)
