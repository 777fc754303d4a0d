"""The rules ``policy suggest`` reads out of observed runs: tools, order, scope, contracts, repeats.

Each function takes one agent's runs and returns what held in them with its support, so the
rendered policy can say why each rule is there. Budgets are in ``otel_traj.policy.suggest``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from otel_traj.checks.base import args_keys, proven
from otel_traj.checks.order import finished_before
from otel_traj.checks.scope import resolve_subject
from otel_traj.policy.models import Scope
from otel_traj.steps import ToolCall
from otel_traj.trajectory import Trajectory

# Verbs whose tools usually change something outside the agent: candidates for ``side_effect``.
_WRITE_VERBS = frozenset(
    {
        "add",
        "approve",
        "book",
        "cancel",
        "charge",
        "create",
        "delete",
        "drop",
        "insert",
        "modify",
        "patch",
        "pay",
        "post",
        "publish",
        "purchase",
        "put",
        "refund",
        "remove",
        "reset",
        "revoke",
        "save",
        "send",
        "set",
        "submit",
        "transfer",
        "update",
        "upload",
        "upsert",
        "write",
    }
)
_WORDS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
# A tool is exempt from ``repeats`` when at least this share of the successful runs that call it
# call it more than once with the same arguments: polling, not a loop.
ROUTINE_SHARE = 0.5


@dataclass(frozen=True, slots=True)
class ToolUse:
    name: str
    runs: int  # runs that call it
    side_effect_candidate: bool


@dataclass(frozen=True, slots=True)
class OrderFinding:
    before: str
    after: str
    support: int  # successful runs calling both in which it could be told


@dataclass(frozen=True, slots=True)
class ScopeFinding:
    tool: str
    argument: str
    matching: int  # calls whose value equals the run's subject
    carrying: int  # calls that carry the argument, in runs whose subject is known


@dataclass(frozen=True, slots=True)
class RepeatFinding:
    tool: str
    repeating: int  # successful runs calling it twice or more with the same arguments
    calling: int  # successful runs calling it


def looks_like_a_write(tool: str) -> bool:
    """``create_refund_request``, ``sendEmail``, ``Delete-User``: a word of the name is a write verb."""
    return any(word.lower() in _WRITE_VERBS for word in _WORDS.findall(tool))


def tool_uses(runs: Sequence[Trajectory]) -> list[ToolUse]:
    """Every tool the runs call, by name, with the number of runs calling it."""
    counts = Counter(name for run in runs for name in {c.name for c in run.tool_calls})
    return [ToolUse(name, counts[name], looks_like_a_write(name)) for name in sorted(counts)]


def _held(calls: Sequence[ToolCall], before: str, after: str) -> bool | None:
    """``before`` succeeded, in an earlier model turn when turns are known, and ended before the
    first ``after`` started; ``None`` when only calls without a span could tell (as the order check,
    which skips then). Calls requested in one turn were independent to the model, so a run that ran
    them one after the other shows no order."""
    index = next(i for i, c in enumerate(calls) if c.name == after)
    first = calls[index]
    candidates = [
        c
        for c in calls[:index]
        if c.name == before
        and finished_before(c, first)
        and (c.turn is None or first.turn is None or c.turn != first.turn)
    ]
    return proven(candidates) if candidates else False


def order_findings(runs: Sequence[Trajectory], min_support: int) -> list[OrderFinding]:
    """ "A succeeded before the first B" for every pair that held in every run calling B where it can
    be told, when at least ``min_support`` such runs exist. A run calling B without A breaks the
    rule, as the order check would fail that run."""
    tools = sorted({c.name for run in runs for c in run.tool_calls})
    support: Counter[tuple[str, str]] = Counter()
    broken: set[tuple[str, str]] = set()
    for run in runs:
        names = {c.name for c in run.tool_calls}
        for after in sorted(names):
            for before in tools:
                if before == after or (before, after) in broken:
                    continue
                held = _held(run.tool_calls, before, after) if before in names else False
                if held is False:
                    broken.add((before, after))
                elif held:
                    support[before, after] += 1
    return [
        OrderFinding(before, after, n)
        for (before, after), n in sorted(support.items())
        if n >= min_support and (before, after) not in broken
    ]


def _scalar(value: Any) -> bool:
    return isinstance(value, str | int | float) and not isinstance(value, bool)


def scope_findings(
    runs: Sequence[Trajectory], scope: Scope, min_share: float
) -> tuple[list[ScopeFinding], int]:
    """The arguments equal to the run's subject in at least ``min_share`` of the calls carrying them,
    and the number of runs whose subject was found."""
    matching: Counter[tuple[str, str]] = Counter()
    carrying: Counter[tuple[str, str]] = Counter()
    with_subject = 0
    for run in runs:
        found = resolve_subject(scope, run.attributes, run.conversation_id, run.user_input)
        if found is None:
            continue
        with_subject += 1
        subject = found[0]
        for call in run.tool_calls:
            for key, value in (call.arguments or {}).items():
                if _scalar(value):
                    carrying[call.name, key] += 1
                    matching[call.name, key] += str(value).strip() == subject
    findings = [
        ScopeFinding(tool, argument, matching[tool, argument], n)
        for (tool, argument), n in sorted(carrying.items())
        if matching[tool, argument] and matching[tool, argument] >= min_share * n
    ]
    return findings, with_subject


def declared_schemas(runs: Sequence[Trajectory]) -> dict[str, dict[str, Any]]:
    """Per tool, the parameters schema the runs' model requests declared for it
    (``gen_ai.tool.definitions``), the latest run's."""
    declared: dict[str, dict[str, Any]] = {}
    for run in runs:
        declared.update({name: dict(schema) for name, schema in run.tool_definitions.items()})
    return declared


def argument_schemas(runs: Sequence[Trajectory]) -> dict[str, tuple[dict[str, Any], int]]:
    """Per tool, the JSON Schema its model requests declared (``declared_schemas``), else the one
    ``genson`` infers from the arguments of its successful calls (the keys present in every call are
    ``required``), and the number of calls it saw."""
    from genson import SchemaBuilder

    declared = declared_schemas(runs)
    builders: dict[str, SchemaBuilder] = {}
    seen: Counter[str] = Counter()
    for run in runs:
        for call in run.tool_calls:
            if call.observed and call.ok and call.arguments is not None:
                builders.setdefault(call.name, SchemaBuilder(schema_uri=None)).add_object(call.arguments)
                seen[call.name] += 1
    return {name: (declared.get(name) or builders[name].to_schema(), seen[name]) for name in sorted(builders)}


def repeat_findings(runs: Sequence[Trajectory]) -> list[RepeatFinding]:
    """Tools that most successful runs calling them call again with the same arguments."""
    calling: Counter[str] = Counter()
    repeating: Counter[str] = Counter()
    for run in runs:
        pairs = Counter(
            (c.name, key) for c, key in zip(run.tool_calls, args_keys(run.tool_calls), strict=True)
        )
        calling.update({c.name for c in run.tool_calls})
        repeating.update({name for (name, key), n in pairs.items() if key is not None and n > 1})
    return [
        RepeatFinding(name, repeating[name], calling[name])
        for name in sorted(repeating)
        if repeating[name] >= ROUTINE_SHARE * calling[name]
    ]
