"""Grading what real frameworks emitted (tests/fixtures/real), through `otel-traj grade` too.

Every framework ran the same scripted support-agent scenario: the clean run must pass the example
policy; the violating run (repeated lookups, another customer's invoices) must fail scope and repeats.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from otel_traj.adapters import read_trace_files
from otel_traj.cli import main
from otel_traj.grader import Grader
from otel_traj.offline import trajectories_from_views
from otel_traj.policy import load_policy
from otel_traj.verdict import Verdict
from tests.real_frameworks import FRAMEWORKS as REAL_FRAMEWORKS
from tests.real_frameworks import run_files, with_framework_tools
from tests.support_trajectories import EXAMPLE_POLICY, example_policy

REAL = Path(__file__).parent / "fixtures" / "real"
FRAMEWORKS = sorted(p.parent.name for p in REAL.glob("*/violating.otlp.pb"))
GRADER = Grader(example_policy())


def grader_for(framework: str, tmp: Path) -> Grader:
    """The example policy, with the tools named as the framework names them."""
    policy = with_framework_tools(framework, EXAMPLE_POLICY, tmp)
    return GRADER if policy == EXAMPLE_POLICY else Grader(load_policy(policy))


def grade_fixture(framework: str, scenario: str, tmp: Path) -> Verdict:
    [trajectory] = trajectories_from_views(read_trace_files(run_files(framework, scenario)))
    return grader_for(framework, tmp).grade(trajectory)


def test_fixtures_present() -> None:
    assert {"pydantic_ai", "pydantic_ai_v1"} <= set(FRAMEWORKS)


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_clean_run_passes(framework: str, tmp_path: Path) -> None:
    verdict = grade_fixture(framework, "clean", tmp_path)
    checks = {c.name: c for c in verdict.checks}
    assert checks["scope"].status == "pass" and "subject C023" in checks["scope"].reason
    assert checks["repeats"].status == "pass"
    assert verdict.outcome == "pass", verdict.checks


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_violating_run_fails_scope_and_repeats(framework: str, tmp_path: Path) -> None:
    verdict = grade_fixture(framework, "violating", tmp_path)
    checks = {c.name: c for c in verdict.checks}
    calls = {c.step_id or f"{c.span_id:016x}": c for c in verdict.trajectory.tool_calls}
    prefix = REAL_FRAMEWORKS[framework].tool_prefix
    scope = checks["scope"]
    assert scope.status == "fail"
    assert scope.reason == f"{prefix}list_invoices used customer_id=C028, subject is C023"
    [step] = scope.steps
    assert calls[step].name == prefix + "list_invoices"
    repeats = checks["repeats"]
    assert repeats.status == "fail" and repeats.reason.endswith("called 2 times, max 1")
    assert [calls[s].name for s in repeats.steps] == [prefix + "get_subscription"]
    assert {c.name for c in verdict.failed_checks} == {"scope", "repeats"}
    assert verdict.outcome == "unsafe"


def cli(*argv: str) -> int:
    return main(list(argv))


def test_grade_cli_exit_codes_and_formats(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    clean = str(REAL / "pydantic_ai" / "clean.otlp.pb")
    violating = str(REAL / "pydantic_ai" / "violating.otlp.pb")
    policy = str(EXAMPLE_POLICY)
    assert cli("grade", "--policy", policy, clean) == 0
    assert "support_agent  pass" in capsys.readouterr().out
    assert cli("grade", "--policy", policy, "--format", "json", clean, violating) == 1
    data = json.loads(capsys.readouterr().out)
    assert sorted(t["outcome"] for t in data["trajectories"]) == ["pass", "unsafe"]
    out = tmp_path / "report.xml"
    assert cli("grade", "--policy", policy, "--format", "junit", "--out", str(out), violating) == 1
    assert capsys.readouterr().out == ""
    assert ET.parse(out).getroot().get("failures") == "2"
    assert cli("grade", "--policy", policy, "--format", "markdown", violating) == 1
    assert "| scope | ❌ fail | critical |" in capsys.readouterr().out


def test_grade_cli_without_policy_never_fails(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli("grade", str(REAL / "pydantic_ai" / "violating.otlp.pb")) == 0
    assert "list_invoices" in capsys.readouterr().out


def test_grade_cli_exit_2_on_bad_policy_or_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad_policy = tmp_path / "policy.yaml"
    bad_policy.write_text("defaults: {budget: {max_tool_calls: many}}\n")
    clean = str(REAL / "pydantic_ai" / "clean.otlp.pb")
    assert cli("grade", "--policy", str(bad_policy), clean) == 2
    assert f"{bad_policy}: defaults.budget.max_tool_calls:" in capsys.readouterr().err
    garbage = tmp_path / "trace.json"
    garbage.write_text("{not json")
    assert cli("grade", "--policy", str(EXAMPLE_POLICY), str(garbage)) == 2
    assert cli("grade", str(tmp_path / "missing.otlp.pb")) == 2
