"""A first policy from observed runs (``otel-traj policy suggest``): budgets from the distribution of
successful runs, and the tools, order, scope, contracts and repeats those runs show.

A run *succeeded* when it ended with a final answer and no failed tool call. Each budget is
``ceil(factor x percentile)`` of its measure over the successful runs, raised to the largest
successful run when that is higher, so grading the runs a policy was derived from never fails a
successful one on its budget. The measures are the budget check's own: tool calls, model turns,
total tokens (runs that recorded usage) and duration (runs that recorded an end), rounded as it
rounds them. Percentiles interpolate linearly between the closest ranks (``statistics.quantiles``,
inclusive), in exact arithmetic, so the same runs always give the same numbers.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from otel_traj.policy.models import Scope
from otel_traj.policy.suggest_rules import (
    OrderFinding,
    RepeatFinding,
    ScopeFinding,
    ToolUse,
    argument_schemas,
    order_findings,
    repeat_findings,
    scope_findings,
    tool_uses,
)
from otel_traj.trajectory import Trajectory


@dataclass(frozen=True, slots=True)
class SuggestSettings:
    """``percentile`` (1-99) of successful runs times ``factor`` is a budget; agents with fewer than
    ``min_runs`` successful runs are left out, and an order rule needs that many runs calling both
    tools; an argument is scoped when it equals the subject in ``min_support`` of its calls."""

    percentile: int = 90
    factor: float = 1.5
    min_runs: int = 20
    min_support: float = 0.95
    scope: Scope | None = None

    def __post_init__(self) -> None:
        problems = []
        if not 1 <= self.percentile <= 99:
            problems.append(f"percentile must be from 1 to 99 (got {self.percentile})")
        if not self.factor > 0:
            problems.append(f"factor must be above 0 (got {self.factor})")
        if self.min_runs < 1:
            problems.append(f"min_runs must be at least 1 (got {self.min_runs})")
        if not 0 < self.min_support <= 1:
            problems.append(f"min_support must be above 0 and at most 1 (got {self.min_support})")
        if problems:
            raise ValueError("; ".join(problems))


def succeeded(run: Trajectory) -> bool:
    return bool(run.final_answer) and all(call.ok for call in run.tool_calls)


def _usage_known(run: Trajectory) -> bool:
    # The budget check's rule: token limits are not judged when model calls recorded no usage.
    return not run.model_calls or any(m.has_usage for m in run.model_calls) or run.tokens.total > 0


# Budget field, what it measures (as the budget check measures it), whether a run recorded it.
Measure = tuple[str, Callable[[Trajectory], float], Callable[[Trajectory], bool]]
MEASURES: tuple[Measure, ...] = (
    ("max_tool_calls", lambda r: len(r.tool_calls), lambda r: True),
    ("max_model_turns", lambda r: r.model_turns, lambda r: True),
    ("max_total_tokens", lambda r: r.tokens.total, _usage_known),
    (
        "max_duration_s",
        lambda r: round(r.duration_s, 3),
        lambda r: r.end_ns > 0 and round(r.duration_s, 3) > 0,
    ),
)


def percentile(values: Sequence[Fraction], p: int) -> Fraction:
    """The ``p``-th percentile, linear between the closest ranks (numpy's default method)."""
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    return statistics.quantiles(ordered, n=100, method="inclusive")[p - 1]


@dataclass(frozen=True, slots=True)
class BudgetFinding:
    field: str
    limit: int
    formula: int  # ceil(factor x percentile); ``limit`` is higher when a successful run was
    runs: int
    p50: Fraction
    p90: Fraction
    chosen: Fraction  # the ``percentile``-th percentile
    largest: Fraction


def budget_findings(runs: Sequence[Trajectory], settings: SuggestSettings) -> list[BudgetFinding]:
    factor = Fraction(str(settings.factor))
    findings = []
    for name, measure, recorded in MEASURES:
        # str() first: a duration rounded to milliseconds is that decimal, not its binary float.
        values = [Fraction(str(measure(r))) for r in runs if recorded(r)]
        if not values:
            continue
        chosen = percentile(values, settings.percentile)
        formula = math.ceil(factor * chosen)
        largest = max(values)
        findings.append(
            BudgetFinding(
                field=name,
                limit=max(formula, math.ceil(largest)),
                formula=formula,
                runs=len(values),
                p50=percentile(values, 50),
                p90=percentile(values, 90),
                chosen=chosen,
                largest=largest,
            )
        )
    return findings


@dataclass(frozen=True, slots=True)
class AgentSuggestion:
    agent: str
    runs: int
    successful: int
    budgets: list[BudgetFinding]
    tools: list[ToolUse]
    order: list[OrderFinding]
    scope: list[ScopeFinding] | None  # None: no subject configured
    runs_with_subject: int
    contracts: dict[str, tuple[dict[str, Any], int]]
    repeats: list[RepeatFinding]


@dataclass(slots=True)
class Suggestion:
    settings: SuggestSettings
    agents: list[AgentSuggestion] = field(default_factory=list)
    # Why agents or runs were left out, one line each (the CLI prints them on stderr).
    notes: list[str] = field(default_factory=list)
    runs: int = 0


def suggest_agent(agent: str, runs: Sequence[Trajectory], settings: SuggestSettings) -> AgentSuggestion:
    """The suggestion for one agent's runs (whatever their number)."""
    good = [r for r in runs if succeeded(r)]
    scope = None
    runs_with_subject = 0
    if settings.scope is not None:
        scope, runs_with_subject = scope_findings(runs, settings.scope, settings.min_support)
    return AgentSuggestion(
        agent=agent,
        runs=len(runs),
        successful=len(good),
        budgets=budget_findings(good, settings),
        tools=tool_uses(runs),
        order=order_findings(good, settings.min_runs),
        scope=scope,
        runs_with_subject=runs_with_subject,
        contracts=argument_schemas(runs),
        repeats=repeat_findings(good),
    )


def suggest(runs: Sequence[Trajectory], settings: SuggestSettings | None = None) -> Suggestion:
    """Group ``runs`` by agent (the agent name, else the service name, as a policy resolves them)
    and suggest rules for each agent with at least ``min_runs`` successful runs."""
    settings = settings or SuggestSettings()
    result = Suggestion(settings, runs=len(runs))
    by_agent: dict[str, list[Trajectory]] = defaultdict(list)
    unnamed = 0
    for run in runs:
        name = run.agent or run.service_name
        if name:
            by_agent[name].append(run)
        else:
            unnamed += 1
    if unnamed:
        result.notes.append(f"{unnamed} runs name neither an agent nor a service: left out")
    for agent in sorted(by_agent):
        mine = by_agent[agent]
        successful = sum(succeeded(r) for r in mine)
        if successful < settings.min_runs:
            result.notes.append(
                f"agent {agent}: {successful} successful runs of {len(mine)}, fewer than "
                f"--min-runs {settings.min_runs}: left out"
            )
            continue
        result.agents.append(suggest_agent(agent, mine, settings))
    return result
