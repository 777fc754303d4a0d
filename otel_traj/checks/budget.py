"""``budget``: tool calls, model turns, input/output/total tokens, duration and cost against their limits.

A cost that cannot be computed (an unknown model, a call without tokens) is not measurable: the
limit is reported as such with the reason, never judged on a partial sum."""

from __future__ import annotations

from functools import lru_cache

from otel_traj.checks.base import failed, passed, skipped
from otel_traj.cost import run_cost
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
            unknown.append(f"{what} not recorded")
            continue
        text = f"{what} {_fmt(value)}/{_fmt(limit)}"
        (over if value > limit else within).append(text)
    if budget.max_cost_usd is not None:
        cost = run_cost(traj)
        limit_usd = budget.max_cost_usd
        if cost.total_usd is None:
            unknown.append(f"cost unknown: {cost.reason}")
        else:
            text = f"cost ${cost.total_usd:.6g}/${limit_usd:.6g}"
            (over if cost.total_usd > limit_usd else within).append(text)
    if over:
        return failed(NAME, severity, ", ".join(over))
    if not within:
        what = "; ".join(unknown) if unknown else "no limits configured"
        return skipped(NAME, severity, f"not measurable: {what}")
    note = f" ({'; '.join(unknown)})" if unknown else ""
    return passed(NAME, severity, ", ".join(within) + note)
