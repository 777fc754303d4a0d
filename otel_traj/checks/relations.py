"""``relations``: an argument compared with a value an earlier successful tool result gave.

A refund larger than the invoice it refunds, a transfer above the balance just read: each value
is grounded in an earlier result, but the relation between them is what the business rule says.
What a retrieval or memory search returned is an earlier result of ``retrieval:retrieval`` or
``memory:search_memory``.

Linear in the size of the trajectory: a call reads back through at most the last ``MAX_EARLIER``
successful results of the source tool, and each relation is evaluated on a result at most once per
value of the arguments it reads; re-evaluating every earlier result for each call was quadratic.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Callable
from typing import Any

from otel_traj.checks.base import step_id, tallied
from otel_traj.checks.order import finished_before
from otel_traj.checks.results import UNREADABLE, PathError, number, result_value, same, select, shown
from otel_traj.policy import Tools
from otel_traj.policy.rules import Relation
from otel_traj.steps import ToolCall
from otel_traj.trajectory import Trajectory
from otel_traj.verdict import CheckResult, Severity

NAME = "relations"

_ORDERED: dict[str, Callable[[float, float], bool]] = {
    "<": operator.lt,
    "<=": operator.le,
    ">=": operator.ge,
    ">": operator.gt,
}


def holds(value: Any, op: str, other: Any) -> bool | None:
    """``value op other``; ``None`` when an ordering compares values that are not numbers."""
    if op == "==":
        return same(value, other)
    if op == "!=":
        return not same(value, other)
    x, y = number(value), number(other)
    if x is None or y is None:
        return None
    return _ORDERED[op](x, y)


# Earlier results of the source tool a call reads back through, latest first: a value that none
# of them gives is not judged rather than searched for in every result of a long run.
MAX_EARLIER = 50


class _Earlier:
    """Successful calls seen so far, by tool, each result parsed at most once and each relation
    evaluated on it at most once per value of the arguments it reads."""

    def __init__(self) -> None:
        self.calls: dict[str, list[ToolCall]] = {}
        self.values: dict[int, Any] = {}
        self.found: dict[tuple[int, int, str], Any] = {}

    def add(self, call: ToolCall) -> None:
        if call.observed and call.ok:
            self.calls.setdefault(call.name, []).append(call)

    def value(self, call: ToolCall) -> Any:
        key = id(call)
        if key not in self.values:
            self.values[key] = result_value(call)
        return self.values[key]

    def select(self, rule: Relation, source: ToolCall, data: Any, arguments: dict[str, Any]) -> Any:
        """``rule.path`` on ``data``; a :class:`PathError` is returned, not raised."""
        key = _read(rule, arguments)
        cached = (id(rule), id(source), key) if key is not None else None
        if cached is not None and cached in self.found:
            return self.found[cached]
        try:
            found = select(rule.path, data, arguments)
        except PathError as exc:
            found = exc
        if cached is not None:
            self.found[cached] = found
        return found


def _read(rule: Relation, arguments: dict[str, Any]) -> str | None:
    """The values of the arguments ``rule.path`` reads, as a key; ``None`` when it may read others."""
    if "argument(" in rule.path.source:
        return None
    try:
        return json.dumps([arguments.get(name) for name in rule.path.arguments], sort_keys=True)
    except (TypeError, ValueError):
        return None


def _about(rule: Relation, arguments: dict[str, Any]) -> str:
    keys = [shown(arguments.get(name)).strip('"') for name in rule.path.arguments]
    return f"{rule.argument} for {', '.join(keys)}" if keys else rule.argument


def _judge(call: ToolCall, rule: Relation, earlier: _Earlier) -> tuple[str | None, str | None]:
    """(the problem or ``None``, why the rule could not be judged or ``None``)."""
    arguments = call.arguments or {}
    value = arguments[rule.argument]
    uncaptured = False
    sources = earlier.calls.get(rule.earlier, [])
    for source in reversed(sources[-MAX_EARLIER:]):
        if not finished_before(source, call):
            continue
        data = earlier.value(source)
        if data is None or data is UNREADABLE:
            uncaptured = True
            continue
        found = earlier.select(rule, source, data, arguments)
        if isinstance(found, PathError):
            return f"{call.name} {rule.argument}: {rule.earlier} result: {rule.path.source}: {found}", None
        if found is None:
            continue
        verdict = holds(value, rule.op, found)
        label = f"{call.name} {rule.argument}={shown(value)}"
        if verdict is None:
            return f"{label} cannot be compared ({rule.op}) with {shown(found)} from {rule.earlier}", None
        if verdict:
            return None, None
        where = rule.path.render(arguments)
        return f"{label} is not {rule.op} {shown(found)} from {rule.earlier} ({where})", None
    if uncaptured:
        return None, f"{call.name} {rule.argument}: {rule.earlier} results not captured"
    if len(sources) > MAX_EARLIER:
        return None, f"{call.name} {rule.argument}: not in the last {MAX_EARLIER} {rule.earlier} results"
    return f"no earlier {rule.earlier} result gives {_about(rule, arguments)}", None


def check_relations(traj: Trajectory, tools: Tools, severity: Severity = "error") -> CheckResult:
    problems: list[str] = []
    steps: list[str] = []
    unknown: list[str] = []
    checked = 0
    earlier = _Earlier()
    # Retrievals and memory searches are earlier results too, named ``retrieval:retrieval``,
    # ``memory:search_memory``; ``finished_before`` keeps those that ended before each call.
    for read in traj.context_reads:
        earlier.add(read.as_call())
    for call in traj.tool_calls:
        contract = tools.contracts.get(call.name)
        if contract is not None and contract.relations:
            if call.arguments is None:
                unknown.append(f"{call.name} arguments not captured")
            for rule in contract.relations:
                if call.arguments is None or rule.argument not in call.arguments:
                    continue
                problem, unjudged = _judge(call, rule, earlier)
                if unjudged is not None:
                    unknown.append(unjudged)
                    continue
                checked += 1
                if problem is not None:
                    problems.append(problem)
                    if step_id(call) not in steps:
                        steps.append(step_id(call))
        earlier.add(call)
    return tallied(
        NAME,
        severity,
        problems,
        steps,
        unknown,
        checked,
        "relation",
        nothing="no call with a related argument",
    )
