"""Custom checks that misbehave, for the grader's tests."""

from __future__ import annotations

from otel_traj import CheckConfig, CheckResult, Trajectory


def raises(trajectory: Trajectory, config: CheckConfig) -> CheckResult:
    raise ZeroDivisionError(config.get("message", "division by zero"))


def returns_text(trajectory: Trajectory, config: CheckConfig) -> CheckResult:
    return "looks fine"  # type: ignore[return-value]


def matcher_raises(expected: object, actual: object) -> bool:
    raise KeyError("amount_yuan")
