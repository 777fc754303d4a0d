"""Trajectory match: the actual tool calls of a run against a case's ``expected_tools``.

Modes (after the reference-trajectory evaluators users already know):

- ``strict``: the same calls in the same order, nothing missing, nothing extra;
- ``unordered``: the same calls in any order;
- ``subset``: every actual call is an expected one (expected calls may be missing);
- ``superset``: every expected call was made (extra calls are allowed).

Calls to a tool listed only in ``expect_error_from`` are tolerated: neither missing nor extra;
structured-output calls (``ToolCall.output``) are left out unless the case lists their tool. Pairs
are found by an optimal assignment on the arguments, never first-fit, in every mode; ``strict`` then
keeps the longest run of pairs in the expected order and reports the rest as out of order. Calls of
one model turn, or whose spans overlapped, have no order among themselves (``order``).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from otel_traj.cases.assignment import max_weight_assignment
from otel_traj.cases.model import ExpectedTool, GoldenCase, MatchMode
from otel_traj.cases.order import longest_in_order, unordered_groups
from otel_traj.cases.values import ArgComparison, compare_args
from otel_traj.steps import ToolCall, span_hex
from otel_traj.trajectory import Trajectory

_LISTED = 3


def step_id(call: ToolCall) -> str:
    return call.step_id or span_hex(call.span_id)


def _matchable(call: ToolCall, case: GoldenCase) -> bool:
    """Executed calls only; a structured-output call (``final_result``) is how the framework returns
    the answer, not an action, so it counts only where the case lists that tool."""
    return call.observed and (not call.output or call.name in case.expected_names)


def observed_groups(trajectory: Trajectory, case: GoldenCase) -> tuple[list[ToolCall], list[int]]:
    """The calls to match, in trajectory order, and for each its unordered group (see ``order``).
    The calls of a group are listed together, as the case lists their tools."""
    calls = [c for c in trajectory.tool_calls if _matchable(c, case)]
    group_of = unordered_groups(calls)
    position: dict[str, int] = {}
    for index, tool in enumerate(case.expected_tools):
        position.setdefault(tool.name, index)
    ordered = sorted(
        range(len(calls)), key=lambda i: (group_of[i], position.get(calls[i].name, len(position)))
    )
    return [calls[i] for i in ordered], [group_of[i] for i in ordered]


def observed_calls(trajectory: Trajectory, case: GoldenCase) -> list[ToolCall]:
    """The calls to match, in trajectory order, a group of unordered calls listed together."""
    return observed_groups(trajectory, case)[0]


def call_arguments(call: ToolCall, keys: Collection[str]) -> Mapping[str, Any] | None:
    """The call's arguments as a mapping, None when they were not captured."""
    if call.arguments is not None:
        return call.arguments
    text = call.arguments_text
    if text is None:
        return None
    try:
        value: Any = json.loads(text)
    except json.JSONDecodeError:
        value = text
    if isinstance(value, dict):
        return value
    # Single-argument tools may record the bare value (some instrumentations do); that is unambiguous only
    # when the case expects exactly one argument.
    if len(keys) == 1:
        return {next(iter(keys)): value}
    return {"<text>": text}


def compare_call(case: GoldenCase, expected: ExpectedTool, call: ToolCall) -> ArgComparison | None:
    """Compare one call's arguments with an expected call; None when arguments were not captured."""
    nonempty = case.nonempty_for(expected)
    actual = call_arguments(call, set(expected.args) | nonempty)
    if actual is None:
        return None
    return compare_args(expected.args, actual, case.args_rule(expected.name), nonempty)


@dataclass(frozen=True, slots=True)
class CallPair:
    """An expected call matched to an actual one. ``args`` is None when arguments were not captured."""

    expected_index: int
    actual_index: int
    name: str
    step_id: str
    args: ArgComparison | None

    @property
    def args_ok(self) -> bool:
        return self.args is None or self.args.ok

    @property
    def credit(self) -> float:
        """1 for a right call; a call to the right tool with wrong arguments earns half, plus half in
        proportion to the arguments that were right."""
        if self.args is None or self.args.ok:
            return 1.0
        return 0.5 + 0.5 * self.args.similarity

    def describe_args(self) -> str:
        if self.args is None:
            return ""
        return ", ".join(m.describe() for m in self.args.mismatches)


def _pair(case: GoldenCase, calls: Sequence[ToolCall], e: int, a: int) -> CallPair:
    call = calls[a]
    return CallPair(e, a, call.name, step_id(call), compare_call(case, case.expected_tools[e], call))


def assign_unordered(
    case: GoldenCase, calls: Sequence[ToolCall], expected: Sequence[int], actual: Sequence[int]
) -> list[CallPair]:
    """Optimal pairs between expected and actual indices of the same tool name: the most calls with
    right arguments first, then the most similar arguments."""
    pairs: list[CallPair] = []
    for name in sorted({case.expected_tools[e].name for e in expected}):
        group_e = [e for e in expected if case.expected_tools[e].name == name]
        group_a = [a for a in actual if calls[a].name == name]
        if not group_a:
            continue
        candidates = [[_pair(case, calls, e, a) for a in group_a] for e in group_e]
        # One right call must outweigh any amount of partial similarity elsewhere in the group; the
        # tiny term breaks ties towards pairing the k-th expected call with the k-th actual one, so
        # equal calls never cross (strict mode would see them out of order) and a repeated call is
        # the later one.
        full = len(group_e) + 1.0
        weight = [
            [(full if p.args_ok else 0.5 * p.credit) - 1e-9 * abs(rank - row) for rank, p in enumerate(line)]
            for row, line in enumerate(candidates)
        ]
        pairs += [candidates[r][c] for r, c in max_weight_assignment(weight)]
    return sorted(pairs, key=lambda p: p.expected_index)


@dataclass(frozen=True, slots=True)
class MatchResult:
    """Which expected calls were matched (``pairs``), ``missing`` (expected indices), ``extra``
    (actual indices), ``out_of_order`` (strict mode: expected/actual pairs that match only if order is
    ignored) and ``tolerated`` (calls to tools expected to fail). ``score`` is partial credit in [0, 1]."""

    mode: MatchMode
    passed: bool
    score: float
    pairs: tuple[CallPair, ...]
    missing: tuple[int, ...]
    extra: tuple[int, ...]
    out_of_order: tuple[CallPair, ...]
    tolerated: tuple[int, ...]
    calls: tuple[ToolCall, ...]
    expected: tuple[ExpectedTool, ...]

    @property
    def wrong_args(self) -> tuple[CallPair, ...]:
        """Matched calls with wrong arguments, in order or not."""
        return tuple(p for p in (*self.pairs, *self.out_of_order) if not p.args_ok)

    @property
    def arguments_checked(self) -> bool:
        """False when some matched call had no captured arguments, so only its name was compared."""
        return all(p.args is not None for p in (*self.pairs, *self.out_of_order))

    def offending_steps(self) -> tuple[str, ...]:
        indices = {*self.extra, *(p.actual_index for p in self.wrong_args)}
        indices |= {p.actual_index for p in self.out_of_order}
        return tuple(step_id(self.calls[a]) for a in sorted(indices))

    def reason(self) -> str:
        matched = sum(p.args_ok for p in self.pairs)
        parts = [f"{self.mode}: {matched}/{len(self.expected)} expected calls matched"]
        if self.missing:
            parts.append("missing " + _listing([self.expected[e].name for e in self.missing]))
        if self.extra:
            parts.append(
                "extra " + _listing([f"{self.calls[a].name} ({step_id(self.calls[a])})" for a in self.extra])
            )
        if self.out_of_order:
            parts.append(
                "out of order "
                + _listing(
                    [
                        f"{p.name} ({p.step_id}, expected call {p.expected_index + 1})"
                        for p in self.out_of_order
                    ]
                )
            )
        if self.wrong_args:
            parts.append(
                "wrong arguments " + _listing([f"{p.name} ({p.describe_args()})" for p in self.wrong_args])
            )
        if not self.arguments_checked:
            parts.append("arguments not captured for some calls: compared tool names only")
        return "; ".join(parts) + f"; score {self.score:.2f}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "passed": self.passed,
            "score": round(self.score, 4),
            "matched": [
                {
                    "expected": p.expected_index,
                    "name": p.name,
                    "step_id": p.step_id,
                    "arguments_ok": p.args_ok,
                    "arguments_checked": p.args is not None,
                    "mismatches": [m.describe() for m in p.args.mismatches] if p.args else [],
                }
                for p in self.pairs
            ],
            "missing": [{"expected": e, "name": self.expected[e].name} for e in self.missing],
            "extra": [{"step_id": step_id(self.calls[a]), "name": self.calls[a].name} for a in self.extra],
            "out_of_order": [
                {
                    "expected": p.expected_index,
                    "step_id": p.step_id,
                    "name": p.name,
                    "arguments_ok": p.args_ok,
                    "mismatches": [m.describe() for m in p.args.mismatches] if p.args else [],
                }
                for p in self.out_of_order
            ],
            "tolerated": [
                {"step_id": step_id(self.calls[a]), "name": self.calls[a].name} for a in self.tolerated
            ],
        }


def _listing(items: Sequence[str]) -> str:
    shown = ", ".join(items[:_LISTED])
    return shown + (f" (+{len(items) - _LISTED} more)" if len(items) > _LISTED else "")


def _score(mode: MatchMode, pairs: Sequence[CallPair], expected: int, actual: int) -> float:
    if mode == "subset":
        denominator = actual
    elif mode == "superset":
        denominator = expected
    else:
        denominator = expected + actual - len(pairs)
    if denominator == 0:
        return 1.0
    return sum(p.credit for p in pairs) / denominator


def match_trajectory(trajectory: Trajectory, case: GoldenCase, mode: MatchMode | None = None) -> MatchResult:
    """Match a trajectory's observed tool calls against the case (``mode`` defaults to the case's)."""
    mode = mode or case.match_mode
    calls, groups = observed_groups(trajectory, case)
    tolerated = tuple(i for i, c in enumerate(calls) if c.name in case.tolerated_names)
    actual = [i for i, c in enumerate(calls) if c.name not in case.tolerated_names]
    expected = list(range(len(case.expected_tools)))
    pairs = assign_unordered(case, calls, expected, actual)
    out_of_order: list[CallPair] = []
    if mode == "strict":
        # Which call answers which expected call is decided on the arguments alone; order is judged
        # afterwards, so swapped calls read "out of order", never "wrong arguments".
        kept = set(longest_in_order([groups[p.actual_index] for p in pairs], [p.actual_index for p in pairs]))
        out_of_order = [p for k, p in enumerate(pairs) if k not in kept]
        pairs = [p for k, p in enumerate(pairs) if k in kept]
    used_e = {p.expected_index for p in (*pairs, *out_of_order)}
    used_a = {p.actual_index for p in (*pairs, *out_of_order)}
    missing = tuple(e for e in expected if e not in used_e)
    extra = tuple(a for a in actual if a not in used_a)
    wrong = any(not p.args_ok for p in pairs)
    if mode == "subset":
        passed = not extra and not wrong
    elif mode == "superset":
        passed = not missing and not wrong
    else:
        passed = not missing and not extra and not out_of_order and not wrong
    return MatchResult(
        mode=mode,
        passed=passed,
        score=_score(mode, pairs, len(expected), len(actual)),
        pairs=tuple(pairs),
        missing=missing,
        extra=extra,
        out_of_order=tuple(out_of_order),
        tolerated=tolerated,
        calls=tuple(calls),
        expected=case.expected_tools,
    )


@dataclass(frozen=True, slots=True)
class CaseMatches:
    """The matches the case checks share: the case's own mode, the unordered one (tool selection and
    parameters) and, for ``order: strict``, the ordered one (plan coherence)."""

    chosen: MatchResult
    unordered: MatchResult
    ordered: MatchResult | None


def case_matches(trajectory: Trajectory, case: GoldenCase) -> CaseMatches:
    chosen = match_trajectory(trajectory, case)
    unordered = chosen if chosen.mode == "unordered" else match_trajectory(trajectory, case, "unordered")
    ordered = None
    if case.order == "strict":
        ordered = chosen if chosen.mode == "strict" else match_trajectory(trajectory, case, "strict")
    return CaseMatches(chosen, unordered, ordered)
