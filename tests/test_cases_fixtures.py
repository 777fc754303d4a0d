"""Golden cases on real traces: every framework's clean refund run passes the example case, every
violating run fails it for the reasons the scenario built in."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from otel_traj.adapters import read_trace_files
from otel_traj.cases import GoldenCase, apply_cases, evaluate, grade_case, load_cases, summary_lines
from otel_traj.grader import Grader
from otel_traj.offline import trajectories_from_views
from otel_traj.policy import load_policy
from otel_traj.trajectory import Trajectory
from tests.real_frameworks import FRAMEWORKS as FRAMEWORKS_RECORD
from tests.real_frameworks import run_files, with_framework_tools

ROOT = Path(__file__).resolve().parent.parent
REAL = ROOT / "tests" / "fixtures" / "real"
FRAMEWORKS = sorted(p.name for p in REAL.iterdir() if (p / "clean.otlp.pb").exists())
CASES = ROOT / "examples" / "cases" / "golden_cases.jsonl"


@pytest.fixture(scope="module")
def refund_case() -> GoldenCase:
    return load_cases(ROOT / "examples" / "cases" / "golden_cases.jsonl")[0]


def _trajectory(framework: str, scenario: str) -> Trajectory:
    [trajectory] = trajectories_from_views(read_trace_files(run_files(framework, scenario)))
    return trajectory


def _observed_agent_calls(framework: str) -> list[str]:
    """The calls that run another agent (handoffs, agents as tools) that tool spans record."""
    recorded = FRAMEWORKS_RECORD[framework]
    return [name for name in recorded.agent_calls if name not in recorded.unnamed_calls]


def test_fixtures_present() -> None:
    assert len(FRAMEWORKS) >= 8


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_clean_run_passes_the_refund_case(framework: str, tmp_path: Path) -> None:
    recorded = FRAMEWORKS_RECORD[framework]
    trajectory = _trajectory(framework, "clean")
    cases = load_cases(with_framework_tools(framework, CASES, tmp_path))
    report = evaluate([trajectory], cases)
    [result] = report.results
    assert result is not None and result.case_id == cases[0].case_id
    assert result.matched_by == ("input" if recorded.input_verbatim else "input_contains")
    failed = [(c.name, c.reason) for c in result.checks if c.status == "fail"]
    if recorded.tool is None:
        # No tool spans: the case sees no executed call (the requests alone prove nothing ran).
        assert dict(failed)["case.trajectory_match"].startswith("strict: 0/3 expected calls matched; missing")
        return
    # A call that runs another agent and has a tool span is a call the case does not expect.
    extra = _observed_agent_calls(framework)
    assert {name for name, _ in failed} == (
        {"case.trajectory_match", "case.tool_selection"} if extra else set()
    )
    assert all(any(name in reason for name in extra) for _, reason in failed)
    assert result.passed == (not extra) and result.match.score == pytest.approx(3 / (3 + len(extra)))
    p = recorded.tool_prefix
    assert [pair.name for pair in result.match.pairs] == [
        p + "get_subscription",
        p + "list_invoices",
        p + "create_refund_request",
    ]
    statuses = {c.name: c.status for c in result.checks}
    # The refund result and the failing check_payment must really be used (AutoGen's results come
    # from the model requests that sent them back).
    assert statuses["case.result_utilization"] == "pass"
    assert statuses["case.error_recovery"] == "pass"
    assert statuses["case.task_completion"] == "pass"
    assert report.cases[0].pass_hat_k == (not extra)


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_violating_run_fails_the_refund_case(framework: str, tmp_path: Path) -> None:
    recorded = FRAMEWORKS_RECORD[framework]
    trajectory = _trajectory(framework, "violating")
    [case] = load_cases(with_framework_tools(framework, CASES, tmp_path))[:1]
    result = grade_case(trajectory, case)
    checks = {c.name: c for c in result.checks}
    assert not result.passed
    assert checks["case.trajectory_match"].status == "fail"
    if recorded.tool is None:
        assert result.match.score == 0.0
        return
    assert result.match.score == pytest.approx(3 / (5 + len(_observed_agent_calls(framework))))
    assert checks["case.plan_coherence"].status == "fail"
    p = recorded.tool_prefix
    assert f"repeated identical call {p}get_subscription" in checks["case.plan_coherence"].reason
    calls = {c.step_id or f"{c.span_id:016x}": c for c in trajectory.tool_calls}
    extraction = checks["case.parameter_extraction"]
    assert extraction.status == "fail"
    assert "customer_id expected C023, got C028" in extraction.reason
    [step] = extraction.steps
    assert calls[step].name == p + "list_invoices"
    facts = json.loads((REAL / framework / "violating.facts.json").read_text())
    assert len(result.match.calls) == len(facts["tool_calls"]) + len(_observed_agent_calls(framework))


def test_runs_of_several_frameworks_count_as_k_runs_of_one_case(refund_case: GoldenCase) -> None:
    # Three frameworks that record tool spans (without them no run can pass the case).
    with_tools = [f for f in FRAMEWORKS if FRAMEWORKS_RECORD[f].tool is not None][:3]
    runs = [_trajectory(f, s) for f in with_tools for s in ("clean", "violating")]
    report = evaluate(runs, [refund_case])
    [summary] = report.cases
    assert (summary.k, summary.passes) == (6, 3)
    assert summary.pass_at_k and not summary.pass_hat_k
    assert summary.pass_at(2) == pytest.approx(1 - 3 / 15)


def test_case_checks_join_the_policy_verdict() -> None:
    grader = Grader(load_policy(ROOT / "examples" / "policies" / "support_agent.yaml"))
    runs = [_trajectory("pydantic_ai", "clean"), _trajectory("pydantic_ai", "violating")]
    runs.append(Trajectory(trace_id=99, user_input="What is the weather?"))
    verdicts = [grader.grade(t) for t in runs]
    cases = load_cases(ROOT / "examples" / "cases" / "golden_cases.jsonl")
    merged, report = apply_cases(verdicts, cases)
    clean, violating, unrelated = merged
    assert [c.name for c in clean.checks[len(verdicts[0].checks) :]] == [
        "case.trajectory_match",
        "case.tool_selection",
        "case.parameter_extraction",
        "case.result_utilization",
        "case.error_recovery",
        "case.plan_coherence",
        "case.task_completion",
    ]
    assert clean.outcome == verdicts[0].outcome
    assert clean.outcome in ("pass", "pass_with_warnings")
    assert violating.outcome in ("fail", "unsafe")
    assert violating.score < verdicts[1].score
    [no_case] = unrelated.checks[len(verdicts[2].checks) :]
    assert (no_case.name, no_case.status) == ("case.trajectory_match", "skipped")
    assert summary_lines(report) == [
        "case refund-duplicate-charge: 1/2 runs passed, pass@2=yes, pass^2=no",
        "1 run(s) matched no golden case",
    ]
