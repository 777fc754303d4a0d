"""Trajectories rebuilt from real frameworks' own instrumentation (tests/fixtures/real).

Each fixture directory holds what a real framework emitted for the same scripted support-agent run;
``*.facts.json`` records what the run actually did. The rebuilt trajectory must match it exactly.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from otel_traj.adapters import read_trace_file
from otel_traj.offline import trajectories_from_views
from otel_traj.serialize import trajectory_to_dict
from otel_traj.trajectory import Trajectory

REAL = Path(__file__).parent / "fixtures" / "real"
CASES = sorted((p.parent.name, p.name.removesuffix(".facts.json")) for p in REAL.glob("*/*.facts.json"))


def load(framework: str, scenario: str, ext: str = "otlp.pb") -> Trajectory:
    [trajectory] = trajectories_from_views(read_trace_file(REAL / framework / f"{scenario}.{ext}").views)
    return trajectory


def facts(framework: str, scenario: str) -> dict[str, Any]:
    return json.loads((REAL / framework / f"{scenario}.facts.json").read_text())


def _norm(value: Any) -> Any:
    if isinstance(value, bool | str) or value is None:
        return value
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, dict):
        return {k: _norm(v) for k, v in value.items()}
    return [_norm(v) for v in value]


def test_every_framework_has_fixtures() -> None:
    frameworks = {f for f, _ in CASES}
    assert len(frameworks) >= 5, frameworks
    assert {s for _, s in CASES} == {"clean", "violating"}


@pytest.mark.parametrize(("framework", "scenario"), CASES)
def test_tool_sequence_arguments_and_outcomes(framework: str, scenario: str) -> None:
    expected = facts(framework, scenario)["tool_calls"]
    calls = load(framework, scenario).tool_calls
    assert [c.name for c in calls] == [e["name"] for e in expected]
    assert [c.ok for c in calls] == [e["ok"] for e in expected]
    assert all(c.observed for c in calls)
    for call, exp in zip(calls, expected, strict=True):
        if call.arguments is not None:
            assert _norm(call.arguments) == _norm(exp["arguments"]), call.name
        else:
            # A one-argument tool recorded with its bare value: kept as text, never guessed.
            [value] = exp["arguments"].values()
            assert call.arguments_text == value, call.name


@pytest.mark.parametrize(("framework", "scenario"), CASES)
def test_turns_tokens_answer_agent(framework: str, scenario: str) -> None:
    fact = facts(framework, scenario)
    t = load(framework, scenario)
    assert t.model_turns == fact["model_calls"]
    assert (t.tokens.input, t.tokens.output) == (
        fact["usage"]["input_tokens"],
        fact["usage"]["output_tokens"],
    )
    assert t.final_answer == fact["final_answer"]
    assert t.agent == fact["agent_name"]
    assert t.user_input is not None and "INV-1002" in t.user_input
    assert (t.service_name, t.service_version) == (f"support-agent-{framework}", "1.0.0")
    assert t.complete


@pytest.mark.parametrize(("framework", "scenario"), CASES)
def test_failed_tool_carries_its_error(framework: str, scenario: str) -> None:
    failed = [c for c in load(framework, scenario).tool_calls if not c.ok]
    assert len(failed) == (1 if scenario == "clean" else 0)
    for call in failed:
        assert call.name == "check_payment"
        assert call.error_type or call.error_message


@pytest.mark.parametrize("framework", sorted({f for f, _ in CASES}))
def test_parallel_calls_are_marked(framework: str) -> None:
    fact = facts(framework, "clean")
    calls = load(framework, "clean").tool_calls
    overlap = bool(fact["parallel_tool_spans_overlap"])
    assert [c.parallel for c in calls[:2]] == [overlap, overlap]
    assert not any(c.parallel for c in calls[2:])


@pytest.mark.parametrize(("framework", "scenario"), CASES)
def test_protobuf_and_json_files_give_the_same_trajectory(framework: str, scenario: str) -> None:
    assert trajectory_to_dict(load(framework, scenario)) == trajectory_to_dict(
        load(framework, scenario, "otlp.json")
    )
