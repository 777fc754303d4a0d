"""``budget``: tool calls, model turns, input/output/total tokens and duration against their limits."""

from __future__ import annotations

from functools import lru_cache

from otel_traj.checks.base import failed, passed, skipped
from otel_traj.policy import Budget
from otel_traj.trajectory import Trajectory
from otel_traj.verdict import CheckResult, Severity

NAME = "budget"


# Limits repeat for every trajectory of an agent; ``typed`` keeps 5 and 5.0 apart ("5" vs "5.00").
@lru_cache(maxsize=1024, typed=True)
def _fmt(value: float) -> str:
    return f"{value:g}" if isinstance(value, int) or value >= 10 else f"{value:.2f}"


def check_budget(traj: Trajectory, budget: Budget, severity: Severity = "warning") -> CheckResult:
    # Token limits cannot be judged when model calls exist but none recorded usage.
    usage_known = not traj.model_calls or any(m.has_usage for m in traj.model_calls) or traj.tokens.total > 0
    measures: list[tuple[str, float, float | None, bool]] = [
        ("tool calls", len(traj.tool_calls), budget.max_tool_calls, True),
        ("model turns", traj.model_turns, budget.max_model_turns, True),
        ("total tokens", traj.tokens.total, budget.max_total_tokens, usage_known),
        ("input tokens", traj.tokens.input, budget.max_input_tokens, usage_known),
        ("output tokens", traj.tokens.output, budget.max_output_tokens, usage_known),
        ("duration s", round(traj.duration_s, 3), budget.max_duration_s, traj.end_ns > 0),
    ]
    over: list[str] = []
    within: list[str] = []
    unknown: list[str] = []
    for what, value, limit, known in measures:
        if limit is None:
            continue
        if not known:
            unknown.append(what)
            continue
        text = f"{what} {_fmt(value)}/{_fmt(limit)}"
        (over if value > limit else within).append(text)
    if over:
        return failed(NAME, severity, ", ".join(over))
    if not within:
        what = ", ".join(unknown) if unknown else "no limits configured"
        return skipped(NAME, severity, f"not measurable: {what}")
    note = f" ({', '.join(unknown)} not recorded)" if unknown else ""
    return passed(NAME, severity, ", ".join(within) + note)
