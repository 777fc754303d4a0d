"""Golden-case results folded into verdicts, so every report and sink shows them next to the policy's."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from otel_traj.cases.dimensions import TRAJECTORY_MATCH
from otel_traj.cases.evaluate import CaseResult, CasesReport, evaluate
from otel_traj.cases.model import GoldenCase
from otel_traj.grader import classify, score
from otel_traj.verdict import CheckResult, Verdict, worst

NO_CASE = CheckResult(TRAJECTORY_MATCH, "skipped", "info", "no golden case matches this run")


def with_case_result(verdict: Verdict, result: CaseResult | None) -> Verdict:
    """A copy of the verdict with the case checks appended and outcome and score recomputed. The
    outcome never improves: what the grader knew beyond the checks (a run it could not fully read, or
    not grade within its budget) stands."""
    checks = (*verdict.checks, *(result.checks if result is not None else (NO_CASE,)))
    return replace(
        verdict,
        checks=checks,
        outcome=worst(verdict.outcome, classify(checks, verdict.trajectory.complete)),
        score=score(checks),
    )


def apply_cases(
    verdicts: Sequence[Verdict], cases: Sequence[GoldenCase], match_on: str | None = None
) -> tuple[list[Verdict], CasesReport]:
    """Grade each verdict's trajectory against its golden case; returns the updated verdicts (same
    order) and the per-case report with pass@k and pass^k."""
    report = evaluate([v.trajectory for v in verdicts], cases, match_on)
    merged = [with_case_result(v, r) for v, r in zip(verdicts, report.results, strict=True)]
    return merged, report


def summary_lines(report: CasesReport) -> list[str]:
    """One line per case that ran: passes out of k runs, pass@k and pass^k; then unmatched runs."""
    lines = []
    for case in report.cases:
        if case.k:
            lines.append(
                f"case {case.case.case_id}: {case.passes}/{case.k} runs passed, "
                f"pass@{case.k}={'yes' if case.pass_at_k else 'no'}, "
                f"pass^{case.k}={'yes' if case.pass_hat_k else 'no'}"
            )
    if report.unmatched:
        lines.append(f"{len(report.unmatched)} run(s) matched no golden case")
    return lines
