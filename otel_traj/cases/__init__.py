"""Golden cases: grade offline runs against expected tool calls and answers.

``load_cases`` reads a JSONL case file, ``evaluate`` matches trajectories to cases and grades every
run (``grade_case`` grades one run against one case), and ``match_trajectory`` is the trajectory match
on its own. ``apply_cases`` folds the case checks into verdicts (``otel-traj grade --cases``).
"""

from otel_traj.cases.dimensions import SEVERITY, case_checks
from otel_traj.cases.evaluate import CaseResult, CasesReport, CaseSummary, evaluate, grade_case
from otel_traj.cases.lookup import CaseMatch, find_case
from otel_traj.cases.match import MatchResult, match_trajectory
from otel_traj.cases.model import CaseFileError, ExpectedTool, GoldenCase, load_cases, parse_cases
from otel_traj.cases.passk import pass_at_k, pass_hat_k
from otel_traj.cases.verdicts import apply_cases, summary_lines, with_case_result

__all__ = [
    "SEVERITY",
    "CaseFileError",
    "CaseMatch",
    "CaseResult",
    "CaseSummary",
    "CasesReport",
    "ExpectedTool",
    "GoldenCase",
    "MatchResult",
    "apply_cases",
    "case_checks",
    "evaluate",
    "find_case",
    "grade_case",
    "load_cases",
    "match_trajectory",
    "parse_cases",
    "pass_at_k",
    "pass_hat_k",
    "summary_lines",
    "with_case_result",
]
