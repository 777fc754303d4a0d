"""Failure stage: the earliest broken link of a failing run's chain.

    tool selection -> parameters -> execution -> recovery -> terminal state -> statement

A run fails for its ``critical`` and ``error`` checks; each check judges one link, and the stage is
the first link any of them broke. Execution breaks when a failed check points at a tool call that
failed and never succeeded afterwards (the tool itself did not do its part); a check that judges no
link of the chain (``repeats``, ``budget``, ``efficiency``, golden-case dimensions, custom checks)
gives ``other``. Warnings do not break the chain: a run that only has warnings has no stage.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Literal

from otel_traj.check_catalog import CATALOG

if TYPE_CHECKING:
    from otel_traj.trajectory import Trajectory
    from otel_traj.verdict import CheckResult

Stage = Literal[
    "tool_selection", "parameters", "execution", "recovery", "terminal_state", "statement", "other"
]

# In the chain's order; ``other`` last.
STAGES: tuple[Stage, ...] = (
    "tool_selection",
    "parameters",
    "execution",
    "recovery",
    "terminal_state",
    "statement",
    "other",
)

CHECK_STAGES: dict[str, Stage] = {c.name: c.stage for c in CATALOG if c.stage is not None}

_BREAKING = frozenset({"critical", "error"})


def _unresolved_errors(trajectory: Trajectory) -> set[str]:
    """Step ids of failed tool calls whose tool never succeeded after them."""
    unresolved: dict[str, list[str]] = {}
    for call in trajectory.tool_calls:
        if not call.observed:
            continue
        if call.ok:
            unresolved.pop(call.name, None)
        else:
            unresolved.setdefault(call.name, []).append(call.step_id or f"{call.span_id:016x}")
    return {step for steps in unresolved.values() for step in steps}


def failure_stage(checks: Iterable[CheckResult], trajectory: Trajectory) -> Stage | None:
    """The earliest link the run's failed ``critical``/``error`` checks broke; ``None`` if none did."""
    broken = [c for c in checks if c.status == "fail" and c.severity in _BREAKING]
    if not broken:
        return None
    stages = {CHECK_STAGES.get(c.name, "other") for c in broken}
    if not stages & {"tool_selection", "parameters"} and any(c.steps for c in broken):
        errors = _unresolved_errors(trajectory)
        if any(step in errors for c in broken for step in c.steps):
            return "execution"
    return min(stages, key=STAGES.index)
