"""``otel-traj grade --cases``: case checks in the report, pass@k on stderr, exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from otel_traj.cli import main

ROOT = Path(__file__).resolve().parent.parent
CASES = ROOT / "examples" / "cases" / "golden_cases.jsonl"
FIXTURES = ROOT / "tests" / "fixtures" / "real" / "openai_agents"
POLICY = ROOT / "examples" / "policies" / "support_agent.yaml"


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


def _attr(key: str, value: str) -> dict[str, object]:
    return {"key": key, "value": {"stringValue": value}}


ANSWER = {"type": "text", "content": "Sunny in Paris."}


def _tagged_run(path: Path, case_id: str) -> None:
    """An OTLP/JSON trace of one agent run whose root span carries ``eval.case_id``, an attribute no
    policy names; the user's message matches no case input, so only the attribute can find its case."""
    trace = "6b8efff798038103d269b633813fc60c"
    root = {
        "traceId": trace,
        "spanId": "aaa19b7ec3c1b173",
        "name": "invoke_agent weather_agent",
        "startTimeUnixNano": "1000000000",
        "endTimeUnixNano": "2000000000",
        "attributes": [
            _attr("gen_ai.operation.name", "invoke_agent"),
            _attr("gen_ai.agent.name", "weather_agent"),
            _attr("eval.case_id", case_id),
            _attr("gen_ai.output.messages", json.dumps([{"role": "assistant", "parts": [ANSWER]}])),
        ],
    }
    tool = {
        "traceId": trace,
        "spanId": "bbb19b7ec3c1b173",
        "parentSpanId": "aaa19b7ec3c1b173",
        "name": "execute_tool get_weather",
        "startTimeUnixNano": "1100000000",
        "endTimeUnixNano": "1200000000",
        "attributes": [
            _attr("gen_ai.operation.name", "execute_tool"),
            _attr("gen_ai.tool.name", "get_weather"),
            _attr("gen_ai.tool.call.arguments", '{"city": "Paris"}'),
        ],
    }
    spans = {"resourceSpans": [{"scopeSpans": [{"spans": [root, tool]}]}]}
    path.write_text(json.dumps(spans), encoding="utf-8")


def test_match_on_captures_an_attribute_the_policy_does_not_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "run.otlp.json"
    _tagged_run(trace, "weather-paris")
    cases = tmp_path / "cases.jsonl"
    expected = [{"name": "get_weather", "args": {"city": "Paris"}}]
    cases.write_text(
        json.dumps(
            {"case_id": "weather-paris", "input": "What is the weather in Paris?", "expected_tools": expected}
        )
        + "\n"
        + json.dumps({"case_id": "weather-rome", "input": "And in Rome?", "expected_tools": []})
        + "\n"
    )
    code = main(
        ["grade", str(trace), "--cases", str(cases), "--match-on", "eval.case_id", "--format", "json"]
    )
    out, err = capsys.readouterr()
    assert code == 0
    [trajectory] = json.loads(out)["trajectories"]
    checks = {c["name"]: c["status"] for c in trajectory["checks"]}
    assert checks["case.trajectory_match"] == "pass", checks
    assert "case weather-paris: 1/1 runs passed" in err
    # Also beside a policy whose scope captures other attributes only.
    main(["grade", str(trace), "--policy", str(POLICY), "--cases", str(cases), "--match-on", "eval.case_id"])
    assert "case weather-paris: 1/1 runs passed" in capsys.readouterr().err


def test_a_case_match_on_attribute_is_captured(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = tmp_path / "run.otlp.json"
    _tagged_run(trace, "weather-paris")
    cases = tmp_path / "cases.jsonl"
    case = {
        "case_id": "weather-paris",
        "input": "What is the weather in Paris?",
        "expected_tools": [{"name": "get_weather", "args": {"city": "Paris"}}],
        "match_on": "eval.case_id",
    }
    cases.write_text(json.dumps(case) + "\n")
    assert main(["grade", str(trace), "--cases", str(cases)]) == 0
    assert "case weather-paris: 1/1 runs passed" in capsys.readouterr().err
