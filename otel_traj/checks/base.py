"""What every check shares: step ids, argument identity, success, and result constructors."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any

from otel_traj.redact import redact_arguments, redact_text
from otel_traj.steps import ToolCall, span_hex
from otel_traj.verdict import CheckResult, Severity

ArgsKey = tuple[str, Any]
# ``args_key`` of each tool call of a trajectory, in order.
CallKeys = Sequence[ArgsKey | None]
NOT_CAPTURED = "arguments not captured"


def step_id(call: ToolCall) -> str:
    return call.step_id or span_hex(call.span_id)


def step_ids(calls: Iterable[ToolCall]) -> tuple[str, ...]:
    return tuple(step_id(c) for c in calls)


# Values that freeze to themselves: most arguments are flat objects of these.
_PLAIN = frozenset({str, int, bool, type(None)})


def _freeze(value: Any) -> Any:
    # 199, 199.0 and "199" are different JSON but the same request; only int/float are unified so
    # that an argument typed differently by the model still counts as a different call.
    if isinstance(value, dict):
        items = [(str(k), v if type(v) in _PLAIN else _freeze(v)) for k, v in value.items()]
        items.sort()
        return tuple(items)
    if isinstance(value, list | tuple):
        return tuple(_freeze(v) for v in value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def args_key(call: ToolCall) -> ArgsKey | None:
    """A hashable identity of the call's arguments, ``None`` when they were not captured."""
    if call.arguments is not None:
        return ("json", _freeze(call.arguments))
    if call.arguments_text is not None:
        return ("text", call.arguments_text.strip())
    return None


def args_keys(calls: Sequence[ToolCall]) -> list[ArgsKey | None]:
    """``args_key`` of every call, in order: computed once per trajectory, shared by the checks."""
    return [args_key(call) for call in calls]


def proven(calls: Iterable[ToolCall]) -> bool | None:
    """True when one of ``calls`` succeeded; ``None`` when none did but one has no span to tell.

    Only an observed span shows a tool actually ran; a requested call's outcome is unknown.
    """
    unknown = False
    for call in calls:
        if call.observed:
            if call.ok:
                return True
        else:
            unknown = True
    return None if unknown else False


def render_args(call: ToolCall, limit: int = 60) -> str:
    """``customer_id=C023, amount=199`` — short enough for a one-line reason. Secret-looking values are
    masked first: once cut or its whitespace folded, a value no longer matches what a sink masks."""
    if call.arguments is not None:
        text = ", ".join(f"{k}={v}" for k, v in redact_arguments(call.name, call.arguments).items())
    else:
        text = redact_text(call.arguments_text or "")
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def label(call: ToolCall) -> str:
    return f"{call.name}({render_args(call)})"


def count(n: int, noun: str) -> str:
    """``1 call``, ``2 calls``."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def one_line(parts: list[str], limit: int = 3) -> str:
    """Join findings into one line; beyond ``limit`` say how many more there are."""
    shown = "; ".join(parts[:limit])
    return shown if len(parts) <= limit else f"{shown}; +{len(parts) - limit} more"


def _line(reason: str) -> str:
    # Reasons quote argument values and error messages, which may hold line breaks of their own.
    # Every whitespace character but the space is unprintable, so most reasons skip the split.
    if reason.isprintable() and "  " not in reason and reason[:1] != " " and reason[-1:] != " ":
        return reason
    return " ".join(reason.split())


# Results are immutable and most passes and skips repeat across trajectories (same counts, same
# subject), so each distinct one is built once: a CheckResult costs more than the rest of a check.
@lru_cache(maxsize=4096)
def passed(name: str, severity: Severity, reason: str) -> CheckResult:
    return CheckResult(name, "pass", severity, _line(reason))


def failed(name: str, severity: Severity, reason: str, steps: tuple[str, ...] = ()) -> CheckResult:
    return CheckResult(name, "fail", severity, _line(reason), steps)


def failure(name: str, severity: Severity, problems: list[str], steps: Iterable[str]) -> CheckResult:
    """A failed result naming the first problems, with the offending steps."""
    return failed(name, severity, one_line(problems), tuple(steps))


@lru_cache(maxsize=1024)
def skipped(name: str, severity: Severity, reason: str) -> CheckResult:
    return CheckResult(name, "skipped", severity, _line(reason))


def tallied(
    name: str,
    severity: Severity,
    problems: list[str],
    steps: Iterable[str],
    unknown: list[str],
    checked: int,
    noun: str,
    held: str = "held",
    nothing: str | None = None,
) -> CheckResult:
    """The result of a check that counts what it could check: failed on any problem, skipped when
    nothing was checkable, else passed (for the reason ``nothing`` when it is given and there was
    nothing to check), saying how many ``noun`` ``held`` and how many were not checkable."""
    if problems:
        return failure(name, severity, problems, steps)
    if unknown and not checked:
        return skipped(name, severity, one_line(unknown))
    if nothing is not None and not checked:
        return passed(name, severity, nothing)
    note = f" ({len(unknown)} not checkable)" if unknown else ""
    return passed(name, severity, f"{count(checked, noun)} {held}{note}")


def contains_token(text: str, needle: str) -> bool:
    """``needle`` occurs in ``text`` not as part of a longer id (``C02`` is not in ``C023``)."""
    start = text.find(needle)
    while start != -1:
        end = start + len(needle)
        before = text[start - 1] if start else " "
        after = text[end] if end < len(text) else " "
        if not (before.isalnum() or before in "-_") and not (after.isalnum() or after in "-_"):
            return True
        start = text.find(needle, start + 1)
    return False
