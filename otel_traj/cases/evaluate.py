"""Grading runs against golden cases: one ``CaseResult`` per run, one ``CaseSummary`` per case."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from otel_traj.cases.dimensions import case_checks
from otel_traj.cases.lookup import CaseMatch, MatchedBy, find_case
from otel_traj.cases.match import MatchResult, case_matches
from otel_traj.cases.model import GoldenCase
from otel_traj.cases.passk import pass_at_k, pass_hat_k
from otel_traj.serialize import check_to_dict
from otel_traj.trajectory import Trajectory
from otel_traj.verdict import CheckResult

_BLOCKING = ("critical", "error")


@dataclass(frozen=True, slots=True)
class CaseResult:
    """One run graded against its case. ``passed``: no check of severity error or critical failed.
    ``score``: the share of checks that ran and passed; ``match.score`` is the partial credit of the
    trajectory match alone."""

    case_id: str
    trace_id: str
    checks: tuple[CheckResult, ...]
    match: MatchResult
    matched_by: MatchedBy | None = None

    @property
    def passed(self) -> bool:
        return not any(c.failed and c.severity in _BLOCKING for c in self.checks)

    @property
    def score(self) -> float:
        ran = [c for c in self.checks if c.status != "skipped"]
        return sum(c.status == "pass" for c in ran) / len(ran) if ran else 1.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "case_id": self.case_id,
            "trace_id": self.trace_id,
            "matched_by": self.matched_by,
            "passed": self.passed,
            "score": round(self.score, 4),
            "match_score": round(self.match.score, 4),
            "checks": [check_to_dict(c) for c in self.checks],
            "match": self.match.to_dict(),
        }


def grade_case(trajectory: Trajectory, case: GoldenCase, matched_by: MatchedBy | None = None) -> CaseResult:
    """Grade one run against one case: the trajectory match and the six dimensions."""
    matches = case_matches(trajectory, case)
    return CaseResult(
        case_id=case.case_id,
        trace_id=trajectory.trace_hex,
        checks=tuple(case_checks(trajectory, case, matches)),
        match=matches.chosen,
        matched_by=matched_by,
    )


@dataclass(frozen=True, slots=True)
class CaseSummary:
    """The k runs of one case. ``pass_at_k``: at least one passed; ``pass_hat_k``: all passed
    (both False when the case had no run)."""

    case: GoldenCase
    runs: tuple[CaseResult, ...]

    @property
    def k(self) -> int:
        return len(self.runs)

    @property
    def passes(self) -> int:
        return sum(r.passed for r in self.runs)

    @property
    def pass_at_k(self) -> bool:
        return self.passes > 0

    @property
    def pass_hat_k(self) -> bool:
        return self.k > 0 and self.passes == self.k

    def pass_at(self, k: int) -> float:
        """Unbiased pass@k estimate for k <= runs (see ``otel_traj.cases.passk``)."""
        return pass_at_k(self.k, self.passes, k)

    def pass_hat(self, k: int) -> float:
        """Unbiased pass^k estimate for k <= runs."""
        return pass_hat_k(self.k, self.passes, k)

    def to_dict(self) -> dict[str, Any]:
        return {
            "case_id": self.case.case_id,
            "k": self.k,
            "passes": self.passes,
            "pass@k": self.pass_at_k,
            "pass^k": self.pass_hat_k,
            "pass@1": round(self.pass_at(1), 4) if self.k else None,
            "runs": [r.to_dict() for r in self.runs],
        }


@dataclass(frozen=True, slots=True)
class CasesReport:
    """Every case with its runs. ``results`` is aligned with the trajectories passed to ``evaluate``
    (None where a trajectory matched no case); ``unmatched`` holds those trajectories' trace ids."""

    cases: tuple[CaseSummary, ...]
    results: tuple[CaseResult | None, ...]
    unmatched: tuple[str, ...] = field(default=())

    @property
    def passed(self) -> bool:
        """Every case that ran passed in all its runs."""
        return all(s.pass_hat_k for s in self.cases if s.k)

    def to_dict(self) -> dict[str, Any]:
        ran = [s for s in self.cases if s.k]
        return {
            "cases": [s.to_dict() for s in self.cases],
            "cases_run": len(ran),
            "cases_without_runs": [s.case.case_id for s in self.cases if not s.k],
            "pass@k": sum(s.pass_at_k for s in ran) / len(ran) if ran else None,
            "pass^k": sum(s.pass_hat_k for s in ran) / len(ran) if ran else None,
            "unmatched": list(self.unmatched),
        }


def evaluate(
    trajectories: Sequence[Trajectory], cases: Sequence[GoldenCase], match_on: str | None = None
) -> CasesReport:
    """Match each trajectory to its case (see ``find_case``) and grade it; runs of the same case
    make its k."""
    found: list[CaseMatch | None] = [find_case(t, cases, match_on) for t in trajectories]
    results = tuple(
        grade_case(t, m.case, m.matched_by) if m is not None else None
        for t, m in zip(trajectories, found, strict=True)
    )
    summaries = tuple(
        CaseSummary(case, tuple(r for r in results if r is not None and r.case_id == case.case_id))
        for case in cases
    )
    unmatched = tuple(t.trace_hex for t, r in zip(trajectories, results, strict=True) if r is None)
    return CasesReport(summaries, results, unmatched)
