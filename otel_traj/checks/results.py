"""What a tool result says, as data: the value JMESPath rules select from.

Frameworks record the same return value in several forms: JSON, a Python literal, or JSON inside a
wrapper of the framework's (``dialects.declarations.RESULT_WRAPPERS``). Each is read back to the
value the tool returned.
"""

from __future__ import annotations

import ast
import json
import math
from typing import Any

from jmespath import Options, functions
from jmespath import exceptions as jmespath_errors

from otel_traj.dialects.declarations import returned_value
from otel_traj.policy.rules import CompiledPath
from otel_traj.steps import ToolCall

# Results longer than this are not parsed: a rule never needs a megabyte of text to decide.
MAX_RESULT_CHARS = 1_000_000


class Unreadable:
    """The result was captured but is not data (free text, or too long)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "UNREADABLE"


UNREADABLE = Unreadable()


def _as_data(value: Any) -> Any:
    """A Python literal as JSON data (tuples as lists); ``UNREADABLE`` when it holds what JSON cannot
    (a set, bytes, a complex number, a key that is not a string): rules and reasons assume JSON."""
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    if isinstance(value, list | tuple):
        items = [_as_data(v) for v in value]
        return UNREADABLE if any(v is UNREADABLE for v in items) else items
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        data = {k: _as_data(v) for k, v in value.items()}
        return UNREADABLE if any(v is UNREADABLE for v in data.values()) else data
    return UNREADABLE


def _literal(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        pass
    if text[:1] in "[{(":
        try:
            return _as_data(ast.literal_eval(text))
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            pass
    return UNREADABLE


def result_value(call: ToolCall) -> Any:
    """The call's result as data; ``None`` when not captured, ``UNREADABLE`` when not data."""
    text = call.result
    if text is None:
        return None
    text = text.strip()
    if not text or len(text) > MAX_RESULT_CHARS:
        return UNREADABLE
    value = _literal(text)
    return value if value is UNREADABLE else returned_value(value)


class _ArgumentFunctions(functions.Functions):
    """``argument('name')``: the value of the call's argument ``name`` (placeholders ``'{name}'``)."""

    def __init__(self, arguments: dict[str, Any]) -> None:
        super().__init__()
        self.arguments = arguments

    @functions.signature({"types": ["string"]})
    def _func_argument(self, name: str) -> Any:
        return self.arguments.get(name)


class PathError(ValueError):
    """The expression cannot be evaluated on this value (a function given the wrong type)."""


def select(path: CompiledPath, data: Any, arguments: dict[str, Any] | None = None) -> Any:
    """``path`` evaluated on ``data``; raises :class:`PathError` naming the problem."""
    options = Options(custom_functions=_ArgumentFunctions(arguments or {}))
    try:
        return path.expression.search(data, options=options)
    except jmespath_errors.JMESPathError as exc:
        raise PathError(" ".join(str(exc).split())) from None


def number(value: Any) -> float | None:
    """``value`` as a number when it is one (or a numeric string); booleans are not numbers."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, str):
        try:
            parsed = float(value.strip())
        except ValueError:
            return None
        return parsed if math.isfinite(parsed) else None
    return None


def same(a: Any, b: Any) -> bool:
    """Equal as data: 199, 199.0 and "199" are the same amount; ``True`` is not 1."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    x, y = number(a), number(b)
    if x is not None and y is not None:
        return x == y
    return bool(a == b)


def shown(value: Any, limit: int = 40) -> str:
    """A value as a reason shows it: JSON, cut to ``limit`` characters."""
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"
