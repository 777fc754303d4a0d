"""A first policy from observed runs (``otel-traj policy suggest``): budgets from the distribution of
successful runs, and the tools, order, scope, contracts and repeats those runs show.

A run *succeeded* when it ended with a final answer and no failed tool call. Each budget is
``ceil(factor x percentile)`` of its measure over the successful runs, raised to the largest
successful run when that is higher, so grading the runs a policy was derived from never fails a
successful one on its budget. The measures are the budget check's own: tool calls, model turns,
total tokens (runs that recorded usage), duration (runs that recorded an end), rounded as it
rounds them, and cost (runs whose every model call has a price), rounded up to a millionth of a
dollar instead of a whole one. Percentiles interpolate linearly between the closest ranks
(``statistics.quantiles``, inclusive), in exact arithmetic, so the same runs give the same numbers.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from otel_traj.cost import run_cost
from otel_traj.policy.models import Scope
from otel_traj.policy.suggest_rules import (
    OrderFinding,
    RepeatFinding,
    ScopeFinding,
    ToolUse,
    argument_schemas,
    declared_schemas,
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


def _duration(run: Trajectory) -> Fraction | None:
    seconds = round(run.duration_s, 3)
    # str() first: a duration rounded to milliseconds is that decimal, not its binary float.
    return Fraction(str(seconds)) if run.end_ns > 0 and seconds > 0 else None


def _cost(run: Trajectory) -> Fraction | None:
    total = run_cost(run).total_usd
    return None if total is None else Fraction(total)


# Budget field, the run's measure as the budget check takes it (``None``: not recorded), and the
# unit its limit is rounded up to (a millionth of a dollar: runs cost fractions of a cent).
Measure = tuple[str, Callable[[Trajectory], Fraction | None], Fraction]
MEASURES: tuple[Measure, ...] = (
    ("max_tool_calls", lambda r: Fraction(len(r.tool_calls)), Fraction(1)),
    ("max_model_turns", lambda r: Fraction(r.model_turns), Fraction(1)),
    ("max_total_tokens", lambda r: Fraction(r.tokens.total) if _usage_known(r) else None, Fraction(1)),
    ("max_duration_s", _duration, Fraction(1)),
    ("max_cost_usd", _cost, Fraction(1, 10**6)),
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
    limit: Fraction
    formula: Fraction  # ceil(factor x percentile); ``limit`` is higher when a successful run was
    runs: int
    p50: Fraction
    p90: Fraction
    chosen: Fraction  # the ``percentile``-th percentile
    largest: Fraction


def _ceil(value: Fraction, unit: Fraction) -> Fraction:
    return math.ceil(value / unit) * unit


def budget_findings(runs: Sequence[Trajectory], settings: SuggestSettings) -> list[BudgetFinding]:
    factor = Fraction(str(settings.factor))
    findings = []
    for name, measure, unit in MEASURES:
        values = [v for v in map(measure, runs) if v is not None]
        if not values:
            continue
        chosen = percentile(values, settings.percentile)
        formula = _ceil(factor * chosen, unit)
        largest = max(values)
        findings.append(
            BudgetFinding(
                field=name,
                limit=max(formula, _ceil(largest, unit)),
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
    # Tools whose schema is the one the runs declared (``gen_ai.tool.definitions``), not inferred.
    declared: frozenset[str] = frozenset()


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
        declared=frozenset(declared_schemas(runs)),
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
