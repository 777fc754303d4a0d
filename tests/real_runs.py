"""Runs of the real trace fixtures as the deeper checks' tests use them: loaded once per test, with
the tools named as the scripted scenario names them (Semantic Kernel's ``support-`` prefix removed),
so one policy applies to every framework and a test may change a call's result or arguments."""

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
    """A fresh copy of the fixture's trajectory, its tool and model calls copied too (tests change them)."""
    loaded = _load(framework, scenario)
    prefix = FRAMEWORKS[framework].tool_prefix

    def own(call: ToolCall) -> ToolCall:
        arguments = dict(call.arguments) if call.arguments is not None else None
        return dataclasses.replace(call, name=call.name.removeprefix(prefix), arguments=arguments)

    copy = dataclasses.replace(loaded, tool_calls=[own(c) for c in loaded.tool_calls])
    copy.model_calls = [dataclasses.replace(m) for m in loaded.model_calls]
    return copy


def without_results(traj: Trajectory) -> Trajectory:
    """The run as recorded with result content off: no call keeps its result."""
    for call in traj.tool_calls:
        call.result = None
    for model in traj.model_calls:
        model.tool_results = ()
    return traj


def the_call(traj: Trajectory, name: str, index: int = 0) -> ToolCall:
    """The ``index``-th call of tool ``name``."""
    return [c for c in traj.tool_calls if c.name == name][index]


def agent_policy(section: dict[str, Any]) -> AgentPolicy:
    return parse_policy({"defaults": section}, "<test policy>").defaults
