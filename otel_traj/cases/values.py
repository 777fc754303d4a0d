"""Semantic comparison of tool-call arguments.

Instrumentations record the same argument differently (``199`` from the model's JSON, ``199.0`` after a
framework validated it as a float, ``"199"`` from a flattened attribute), so equality is semantic:
numbers compare as numbers whatever their spelling, strings are trimmed, JSON text compares with the
structure it encodes, and containers compare recursively.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from otel_traj.cases.model import ArgMatcher, ArgsRule

# Decimal numbers without leading zeros: "007" stays an identifier, not the number 7.
_NUMBER = re.compile(r"[+-]?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")

Problem = Literal["different", "missing", "unexpected", "empty", "rejected"]


def as_number(value: Any) -> float | None:
    """The numeric value of an int, float or decimal string; None for anything else (bools too)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        number = float(value)
        return number if math.isfinite(number) else None
    if isinstance(value, str) and _NUMBER.fullmatch(value.strip()):
        return float(value.strip())
    return None


def _as_bool(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    return None


def _decode(value: Any) -> Any:
    """JSON text holding an object or array becomes that structure; anything else is unchanged."""
    if isinstance(value, str) and value.strip()[:1] in ("{", "["):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def values_equal(expected: Any, actual: Any) -> bool:
    if expected is None or actual is None:
        return expected is None and actual is None
    if isinstance(expected, bool) or isinstance(actual, bool):
        left, right = _as_bool(expected), _as_bool(actual)
        return left is not None and left == right
    left_number, right_number = as_number(expected), as_number(actual)
    if left_number is not None and right_number is not None:
        return math.isclose(left_number, right_number, rel_tol=1e-9, abs_tol=1e-12)
    if isinstance(expected, Mapping | list | tuple) or isinstance(actual, Mapping | list | tuple):
        expected, actual = _decode(expected), _decode(actual)
    if isinstance(expected, Mapping) and isinstance(actual, Mapping):
        left_map = {str(k).strip(): v for k, v in expected.items()}
        right_map = {str(k).strip(): v for k, v in actual.items()}
        return left_map.keys() == right_map.keys() and all(
            values_equal(v, right_map[k]) for k, v in left_map.items()
        )
    if isinstance(expected, list | tuple) and isinstance(actual, list | tuple):
        return len(expected) == len(actual) and all(
            values_equal(a, b) for a, b in zip(expected, actual, strict=True)
        )
    if isinstance(expected, str) and isinstance(actual, str):
        return expected.strip() == actual.strip()
    return False


def is_nonempty(value: Any) -> bool:
    if value is None:
        return False
    if isinstance(value, str):
        return bool(value.strip())
    if isinstance(value, Mapping | Sequence):
        return len(value) > 0
    return True


@dataclass(frozen=True, slots=True)
class ArgMismatch:
    """One argument that did not satisfy the case: ``problem`` says how."""

    key: str
    problem: Problem
    expected: Any = None
    actual: Any = None

    def describe(self) -> str:
        if self.problem == "missing":
            return f"{self.key} missing from the call (expected {_show(self.expected)})"
        if self.problem == "unexpected":
            return f"{self.key}={_show(self.actual)} not in the expected args"
        if self.problem == "empty":
            return f"{self.key} is empty"
        if self.problem == "rejected":
            return f"arguments rejected by {self.key}: {_show(self.actual)}"
        return f"{self.key} expected {_show(self.expected)}, got {_show(self.actual)}"


_NONEMPTY_MARK = "<non-empty>"


def _show(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


@dataclass(frozen=True, slots=True)
class ArgComparison:
    """The outcome of comparing one call's arguments: ``similarity`` is the share of compared keys
    that satisfied the rule (1.0 when nothing needed comparing)."""

    mismatches: tuple[ArgMismatch, ...] = ()
    compared: int = 0

    @property
    def ok(self) -> bool:
        return not self.mismatches

    @property
    def similarity(self) -> float:
        if self.compared == 0:
            return 1.0
        return (self.compared - len(self.mismatches)) / self.compared


class _Absent:
    """The value of a key or path that an argument mapping does not hold (``None`` is a value)."""


ABSENT = _Absent()


def value_at(value: Any, path: str) -> Any:
    """The value at a dotted ``path`` (``time.start``, ``items.0.id``) in arguments, ``ABSENT`` if
    there is none. A key that itself holds the dot wins; JSON text is read as the structure it encodes."""
    value = _decode(value)
    if isinstance(value, Mapping):
        if path in value:
            return value[path]
        for index, char in enumerate(path):
            if char == "." and path[:index] in value:
                found = value_at(value[path[:index]], path[index + 1 :])
                if found is not ABSENT:
                    return found
        return ABSENT
    if isinstance(value, list | tuple):
        head, dot, rest = path.partition(".")
        if head.isdigit() and int(head) < len(value):
            return value_at(value[int(head)], rest) if dot else value[int(head)]
    return ABSENT


def _check_key(
    key: str, expected: Mapping[str, Any], actual: Mapping[str, Any], nonempty: frozenset[str], paths: bool
) -> ArgMismatch | None:
    if paths:
        want, got = value_at(expected, key), value_at(actual, key)
    else:
        want, got = expected.get(key, ABSENT), actual.get(key, ABSENT)
    if key in nonempty:
        if got is ABSENT:
            return ArgMismatch(key, "missing", _NONEMPTY_MARK)
        return None if is_nonempty(got) else ArgMismatch(key, "empty", _NONEMPTY_MARK, got)
    if want is ABSENT and got is ABSENT:
        return None
    if got is ABSENT:
        return ArgMismatch(key, "missing", want)
    if want is ABSENT:
        return ArgMismatch(key, "unexpected", None, got)
    if values_equal(want, got):
        return None
    return ArgMismatch(key, "different", want, got)


def compare_args(
    expected: Mapping[str, Any],
    actual: Mapping[str, Any],
    rule: ArgsRule,
    nonempty: frozenset[str] = frozenset(),
) -> ArgComparison:
    """Compare actual arguments with expected ones under a rule.

    - ``exact``: the same keys, equal values;
    - ``superset``: every expected key present and equal, extra actual keys allowed;
    - ``subset``: every actual key expected and equal, expected keys may be absent;
    - ``ignore``: arguments are not compared;
    - a tuple of keys: only those keys are compared, each a key or a dotted path into nested values
      (``time.start``); present in both with equal values, or absent from both (the expected call
      gives no value, and the call has none); present on one side only is a mismatch.

    - a matcher: its function decides for the whole call (an exception is a mismatch saying so).

    Keys in ``nonempty`` need a non-empty actual value instead of an equal one.
    """
    if isinstance(rule, ArgMatcher):
        return _matched(rule, expected, actual)
    if rule == "ignore":
        return ArgComparison()
    declared = set(expected) | nonempty
    if isinstance(rule, tuple):
        keys = list(rule)
    elif rule == "exact":
        keys = sorted(declared | set(actual))
    elif rule == "superset":
        keys = sorted(declared)
    else:
        keys = sorted(set(actual))
    paths = isinstance(rule, tuple)
    mismatches = [m for key in keys if (m := _check_key(key, expected, actual, nonempty, paths)) is not None]
    return ArgComparison(tuple(mismatches), len(keys))


def _matched(matcher: ArgMatcher, expected: Mapping[str, Any], actual: Mapping[str, Any]) -> ArgComparison:
    path = matcher.function.path
    try:
        ok = bool(matcher.function.func(expected, actual))
    except Exception as exc:  # user code: a failing matcher fails this comparison only
        return ArgComparison(
            (ArgMismatch(path, "rejected", None, f"<raised {type(exc).__name__}: {exc}>"),), 1
        )
    return ArgComparison(() if ok else (ArgMismatch(path, "rejected", dict(expected), dict(actual)),), 1)
