"""The recorded runs whose agent takes what it acts on from context, not from the user: a knowledge
base searched (tests/fixtures/real/retrieval) and a memory searched (tests/fixtures/real/memory),
each in the same three scenarios, read and graded with the example policy."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from otel_traj.adapters.files import read_trace_inputs
from otel_traj.grader import Grader
from otel_traj.offline import trajectories_from_views
from otel_traj.trajectory import Trajectory
from otel_traj.verdict import CheckResult
from tests.real_frameworks import REAL
from tests.support_trajectories import example_policy

RETRIEVAL = REAL / "retrieval" / "llamaindex_openinference"
MEMORY = REAL / "memory" / "mem0_loongsuite"
SCENARIOS = ("clean", "injected", "ungrounded")
GRADER = Grader(example_policy())


@cache
def recorded_run(runs: Path, scenario: str) -> Trajectory:
    [trajectory] = trajectories_from_views(read_trace_inputs([runs / f"{scenario}.otlp.pb"]).views)
    return trajectory


def recorded_facts(runs: Path, scenario: str) -> dict[str, Any]:
    facts: dict[str, Any] = json.loads((runs / f"{scenario}.facts.json").read_text())
    return facts


def checks_of(traj: Trajectory, grader: Grader = GRADER) -> dict[str, CheckResult]:
    return {check.name: check for check in grader.grade(traj).checks}
