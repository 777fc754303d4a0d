"""``otel-traj grade --cases``: case checks in the report, pass@k on stderr, exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from otel_traj.cli import main

ROOT = Path(__file__).resolve().parent.parent
CASES = ROOT / "examples" / "cases" / "golden_cases.jsonl"
FIXTURES = ROOT / "tests" / "fixtures" / "real" / "openai_agents"


def test_grade_with_cases(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["grade", str(FIXTURES / "clean.otlp.pb"), "--cases", str(CASES), "--format", "json"])
    out, err = capsys.readouterr()
    assert code == 0
    [trajectory] = json.loads(out)["trajectories"]
    checks = {c["name"]: c["status"] for c in trajectory["checks"]}
    assert checks["case.trajectory_match"] == "pass" and checks["case.task_completion"] == "pass"
    assert trajectory["outcome"] == "pass"
    assert "case refund-duplicate-charge: 1/1 runs passed, pass@1=yes, pass^1=yes" in err


def test_grade_fails_on_a_violating_run(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["grade", str(FIXTURES), "--cases", str(CASES), "--format", "json"])
    out, err = capsys.readouterr()
    assert code == 1
    outcomes = sorted(t["outcome"] for t in json.loads(out)["trajectories"])
    assert outcomes == ["fail", "pass"]
    assert "1/2 runs passed, pass@2=yes, pass^2=no" in err


def test_invalid_case_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "cases.jsonl"
    bad.write_text('{"case_id": "a", "input": "x", "expected_tools": [], "order": "later"}\n')
    assert main(["grade", str(FIXTURES / "clean.otlp.pb"), "--cases", str(bad)]) == 2
    assert f"{bad}:1: order: Input should be 'strict' or 'any'" in capsys.readouterr().err
