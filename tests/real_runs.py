"""Runs of the real trace fixtures as the deeper checks' tests use them: loaded once per test, with
the tools named as the scripted scenario names them (Semantic Kernel's ``support-`` prefix removed),
so one policy applies to every framework; a test changes a run with ``with_call`` and ``with_model``
(steps and trajectories are values)."""

from __future__ import annotations

import dataclasses
from functools import cache
from pathlib import Path
from typing import Any

from otel_traj.adapters.files import read_trace_inputs
from otel_traj.offline import trajectories_from_views
from otel_traj.policy import AgentPolicy, parse_policy
from otel_traj.steps import ToolCall
from otel_traj.trajectory import Trajectory
from tests.real_frameworks import FRAMEWORKS, run_files

REAL = Path(__file__).parent / "fixtures" / "real"
# Frameworks whose runs show their tool executions, with results (on the tool spans, or in the next
# model request that sent them back: AutoGen).
WITH_RESULTS = sorted(name for name, recorded in FRAMEWORKS.items() if recorded.tool)
# Frameworks whose tool calls are joined to the model turn that requested them.
WITH_TURNS = sorted(
    name for name, recorded in FRAMEWORKS.items() if recorded.responses and recorded.requested_calls
)


@cache
def _load(framework: str, scenario: str) -> Trajectory:
    [trajectory] = trajectories_from_views(read_trace_inputs(run_files(framework, scenario)).views)
    return trajectory


def real_run(framework: str, scenario: str = "clean") -> Trajectory:
    """The fixture's trajectory with the tools named as the scenario names them."""
    loaded = _load(framework, scenario)
    prefix = FRAMEWORKS[framework].tool_prefix

    def own(call: ToolCall) -> ToolCall:
        return dataclasses.replace(call, name=call.name.removeprefix(prefix))

    return dataclasses.replace(loaded, tool_calls=tuple(own(c) for c in loaded.tool_calls))


def without_results(traj: Trajectory) -> Trajectory:
    """The run as recorded with result content off: no call keeps its result."""
    return dataclasses.replace(
        traj,
        tool_calls=tuple(dataclasses.replace(call, result=None) for call in traj.tool_calls),
        model_calls=tuple(dataclasses.replace(model, tool_results=()) for model in traj.model_calls),
    )


def with_call(traj: Trajectory, name: str, index: int = 0, **changes: Any) -> Trajectory:
    """The run with the ``index``-th call of tool ``name`` changed."""
    target = the_call(traj, name, index)
    calls = tuple(dataclasses.replace(c, **changes) if c is target else c for c in traj.tool_calls)
    return dataclasses.replace(traj, tool_calls=calls)


def with_model(traj: Trajectory, at: int, **changes: Any) -> Trajectory:
    """The run with its ``at``-th model call changed (``input_text`` sets the request's message)."""
    if "input_text" in changes:
        changes["input_source"] = changes.pop("input_text")
    models = list(traj.model_calls)
    models[at] = dataclasses.replace(models[at], **changes)
    # The price is the old calls': priced again when read.
    return dataclasses.replace(traj, model_calls=tuple(models), cost=None)


def the_call(traj: Trajectory, name: str, index: int = 0) -> ToolCall:
    """The ``index``-th call of tool ``name``."""
    return [c for c in traj.tool_calls if c.name == name][index]


def agent_policy(section: dict[str, Any]) -> AgentPolicy:
    return parse_policy({"defaults": section}, "<test policy>").defaults
