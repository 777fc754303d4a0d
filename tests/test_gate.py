"""``otel-traj gate`` on the real fixtures: an equal candidate passes, one that adds a scope violation
or doubles the tokens is blocked with the reason, bad input exits 2."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from otel_traj.cli import main
from otel_traj.gate import Run, decide

REAL = Path(__file__).parent / "fixtures" / "real"
POLICY = Path(__file__).parent.parent / "examples" / "policies" / "support_agent.yaml"
FRAMEWORKS = ("pydantic_ai", "openai_agents", "langgraph_openinference", "google_adk", "strands")


def gate(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, Any, str]:
    code = main(["gate", "--policy", str(POLICY), "--format", "json", *args])
    out, err = capsys.readouterr()
    return code, json.loads(out) if out else None, err


def graded(tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, *paths: Path) -> dict[str, Any]:
    out = tmp_path / f"{name}.json"
    main(["grade", "--policy", str(POLICY), "--format", "json", "--out", str(out), *map(str, paths)])
    capsys.readouterr()
    report: dict[str, Any] = json.loads(out.read_text())
    return report


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_a_candidate_equal_to_the_baseline_is_allowed(
    framework: str, capsys: pytest.CaptureFixture[str]
) -> None:
    clean = str(REAL / framework / "clean.otlp.pb")
    code, report, _ = gate(capsys, "--baseline", clean, "--candidate", clean)
    assert code == 0
    assert report["allowed"] is True
    assert report["reasons"] == []
    (case,) = report["cases"]
    assert case["baseline"]["outcomes"] == case["candidate"]["outcomes"] == ["pass"]
    assert case["candidate"]["cost_usd"] == case["baseline"]["cost_usd"] > 0


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_a_candidate_that_adds_a_scope_violation_is_blocked(
    framework: str, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = REAL / framework
    code, report, _ = gate(
        capsys, "--baseline", str(folder / "clean.otlp.pb"), "--candidate", str(folder / "violating.otlp.pb")
    )
    assert code == 1
    assert report["allowed"] is False
    assert any("is unsafe (scope" in r and "the baseline was not" in r for r in report["reasons"])
    assert "check scope (critical) fails on 1 runs, baseline 0" in report["reasons"]
    (case,) = report["cases"]
    assert case["paired_by"] == "input"
    assert case["candidate"]["outcomes"] == ["unsafe"]


def test_a_candidate_that_doubles_the_tokens_is_blocked_on_efficiency_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    clean = REAL / "pydantic_ai" / "clean.otlp.pb"
    report = graded(tmp_path, capsys, "candidate", clean)
    (run,) = report["trajectories"]
    run["total_tokens"] *= 2
    run["total_cost_usd"] *= 2
    candidate = tmp_path / "doubled.json"
    candidate.write_text(json.dumps(report))
    code, result, _ = gate(capsys, "--baseline", str(clean), "--candidate", str(candidate))
    assert code == 1
    tokens = run["total_tokens"]
    assert result["reasons"] == [
        f"median tokens {tokens} is more than 20% above the baseline's {tokens // 2}",
        f"median cost $ {run['total_cost_usd']:.6g} is more than 20% above the baseline's "
        f"{run['total_cost_usd'] / 2:.6g}",
    ]
    # Within a looser allowance it passes: only efficiency had changed.
    code, result, _ = gate(
        capsys, "--baseline", str(clean), "--candidate", str(candidate), "--max-regression", "1.5"
    )
    assert code == 0 and result["allowed"] is True


def test_unpaired_runs_are_listed_not_dropped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = REAL / "pydantic_ai" / "clean.otlp.pb"
    report = graded(tmp_path, capsys, "candidate", base, REAL / "openai_agents" / "clean.otlp.pb")
    other = report["trajectories"][1]
    other["user_input"] = "something nobody asked the baseline"
    other["conversation_id"] = None
    candidate = tmp_path / "candidate.json"
    candidate.write_text(json.dumps(report))
    code, result, _ = gate(capsys, "--baseline", str(base), "--candidate", str(candidate))
    assert result["unpaired"] == {"baseline": [], "candidate": [other["trace_id"]]}
    assert len(result["cases"]) == 1
    assert code == 0


def test_table_and_markdown_show_each_case_and_the_decision(capsys: pytest.CaptureFixture[str]) -> None:
    folder = REAL / "openai_agents"
    args = ["--baseline", str(folder / "clean.otlp.pb"), "--candidate", str(folder / "violating.otlp.pb")]
    assert main(["gate", "--policy", str(POLICY), *args]) == 1
    table = capsys.readouterr().out
    assert "pass -> unsafe" in table
    assert "release: BLOCKED" in table
    assert main(["gate", "--policy", str(POLICY), "--format", "markdown", *args]) == 1
    markdown = capsys.readouterr().out
    assert markdown.startswith("### Release gate: BLOCKED")
    assert "| pass -> unsafe |" in markdown


def test_bad_input_exits_2_naming_the_file_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    clean = str(REAL / "pydantic_ai" / "clean.otlp.pb")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"trajectories": [{"trace_id": "ab", "outcome": "great"}]}))
    code, _, err = gate(capsys, "--baseline", clean, "--candidate", str(bad))
    assert code == 2
    assert f"{bad}: trajectories[0]: field 'outcome' must be one of" in err
    assert "'great'" in err
    code, _, err = gate(capsys, "--baseline", clean, "--candidate", str(tmp_path / "missing"))
    assert code == 2 and "no such file or directory" in err
    empty = tmp_path / "empty"
    empty.mkdir()
    code, _, err = gate(capsys, "--baseline", clean, "--candidate", str(empty))
    assert code == 2


def run(
    trace: str, case: str, outcome: str, tokens: float = 100.0, failed: tuple[tuple[str, str], ...] = ()
) -> Run:
    figures = {
        "tool_calls": 2.0,
        "model_turns": 2.0,
        "total_tokens": tokens,
        "cost_usd": None,
        "duration_s": 1.0,
    }
    return Run(trace, "test", outcome, failed, figures, case_id=case)


def test_pass_hat_k_must_not_drop_and_error_checks_must_not_fail_on_more_runs() -> None:
    baseline = [
        run("b1", "c1", "pass"),
        run("b2", "c1", "pass"),
        run("b3", "c2", "fail", failed=(("order", "error"),)),
    ]
    candidate = [
        run("k1", "c1", "pass"),
        run("k2", "c1", "fail", failed=(("order", "error"),)),
        run("k3", "c2", "fail", failed=(("order", "error"),)),
    ]
    result = decide(baseline, candidate)
    assert result.reasons == [
        "2 runs fail, baseline 1",
        "check order (error) fails on 2 runs, baseline 1",
        "pass^k dropped: 0 of 2 cases pass every run, baseline 1",
    ]
    # An unknown cost is never compared (None on both sides) and blocks nothing.
    assert decide(baseline, baseline).allowed


def test_one_case_over_budget_blocks_even_when_the_median_holds() -> None:
    baseline = [run(f"b{i}", f"c{i}", "pass") for i in range(5)]
    candidate = [run(f"k{i}", f"c{i}", "pass", tokens=300.0 if i == 0 else 100.0) for i in range(5)]
    result = decide(baseline, candidate)
    assert result.reasons == ["case c0: tokens 100 -> 300, more than 20% above the baseline"]
