"""Custom checks: functions of one's own, named in the policy's ``custom`` section.

A custom check is a function ``(trajectory, config) -> CheckResult`` with the contract of the
built-in checks: ``status`` pass, fail or skipped (with the reason it could not run), a one-line
``reason``, and the offending ``steps`` (``step_id`` of each call). ``config`` is the entry's
``config`` mapping. The grader names the result and sets its severity from the policy entry, so the
function builds it with ``check_passed``, ``check_failed`` or ``check_skipped``. An exception inside
the function, or a return value that is not a ``CheckResult``, makes the check ``skipped`` with the
error, counted in ``otel_traj_check_errors_total{check}``; the run is graded on.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from otel_traj.checks.base import failed, passed, skipped, step_id
from otel_traj.trajectory import Trajectory
from otel_traj.verdict import CheckResult, Severity

if TYPE_CHECKING:
    from otel_traj.policy.models import CustomCheckRule
    from otel_traj.stats import PipelineStats

CheckConfig = Mapping[str, Any]
"""The ``config`` mapping of the check's policy entry."""

CustomCheck = Callable[[Trajectory, CheckConfig], CheckResult]
"""The signature of a custom check."""

# Placeholders the grader replaces with the policy entry's name and severity.
_NAME = "custom"
_SEVERITY: Severity = "info"


def check_passed(reason: str) -> CheckResult:
    return passed(_NAME, _SEVERITY, reason)


def check_failed(reason: str, steps: Iterable[str] = ()) -> CheckResult:
    return failed(_NAME, _SEVERITY, reason, tuple(steps))


def check_skipped(reason: str) -> CheckResult:
    return skipped(_NAME, _SEVERITY, reason)


def check_custom(
    trajectory: Trajectory,
    *,
    rule: CustomCheckRule,
    severity: Severity,
    stats: PipelineStats | None = None,
) -> CheckResult:
    """Run one custom check; whatever it does, a ``CheckResult`` named and ranked by its entry."""
    try:
        result = rule.function.func(trajectory, rule.config)
    except Exception as exc:  # user code: any error costs this check only
        return _broken(rule, severity, stats, f"{type(exc).__name__}: {exc}")
    if not isinstance(result, CheckResult):
        return _broken(rule, severity, stats, f"returned {type(result).__name__}, not a CheckResult")
    return dataclasses.replace(result, name=rule.name, severity=severity)


def _broken(
    rule: CustomCheckRule, severity: Severity, stats: PipelineStats | None, error: str
) -> CheckResult:
    if stats is not None:
        stats.count_check_error(rule.name)
    result = skipped(rule.name, severity, f"custom check {rule.function.path} failed: {error}")
    return dataclasses.replace(result, detail={"error": error})


__all__ = [
    "CheckConfig",
    "CustomCheck",
    "check_custom",
    "check_failed",
    "check_passed",
    "check_skipped",
    "step_id",
]
