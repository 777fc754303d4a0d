"""``efficiency``: model turns that need not have happened.

- A turn whose calls are all read-only and could have been requested one turn earlier, beside the
  previous turn's read-only calls: none of their argument values appears in the previous turn's
  results or in a user message new since. Read-only means not ``side_effect`` in the policy.
- A turn that produced neither a tool call nor answer text (judged only when responses were
  recorded, requested calls included).

The time that could have been saved is the wall time of those model calls.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from typing import Any

from otel_traj.checks.base import contains_token, count, failure, one_line, passed, skipped, step_id
from otel_traj.policy import Tools
from otel_traj.policy.rules import Efficiency
from otel_traj.steps import ModelCall, ToolCall
from otel_traj.trajectory import Trajectory
from otel_traj.verdict import CheckResult, Severity

NAME = "efficiency"


def _values(value: Any) -> list[str]:
    """The scalar argument values, as text, that a result would have to show for a dependency."""
    if isinstance(value, dict):
        return [text for v in value.values() for text in _values(v)]
    if isinstance(value, list):
        return [text for v in value for text in _values(v)]
    if isinstance(value, bool) or value is None:
        return []
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    text = str(value).strip()
    return [text] if text else []


# ``str.isalnum()`` plus ``_`` and ``-``: a one-word value is in a text iff it is one of its words.
_WORD = re.compile(r"[\w-]+")


class _Sources:
    """The texts a turn's calls could have depended on, split into words once: a one-word value is
    looked up, a longer one searched only in the texts holding its rarest word."""

    def __init__(self, texts: list[str]) -> None:
        self.texts = texts
        self.postings: dict[str, list[int]] = {}
        for index, text in enumerate(texts):
            for word in set(_WORD.findall(text)):
                self.postings.setdefault(word, []).append(index)

    def holds(self, value: str) -> bool:
        if _WORD.fullmatch(value):
            return value in self.postings
        words = _WORD.findall(value)
        if not words:
            return any(contains_token(text, value) for text in self.texts)
        rarest = min(words, key=lambda w: len(self.postings.get(w, ())))
        return any(contains_token(self.texts[i], value) for i in self.postings.get(rarest, ()))


def _independent(calls: list[ToolCall], sources: _Sources) -> bool | None:
    """No argument of ``calls`` appears in ``sources``; ``None`` when arguments were not captured."""
    for call in calls:
        if call.arguments is None:
            return None
        if any(sources.holds(value) for value in _values(call.arguments)):
            return False
    return True


class _Unlinked:
    """The calls whose turn is unknown, by end: those that ended between two requests, found by
    bisection instead of a scan of every call for every turn."""

    def __init__(self, calls: Sequence[ToolCall]) -> None:
        self.calls = sorted((c for c in calls if c.turn is None), key=lambda c: c.end_ns)
        self.ends = [c.end_ns for c in self.calls]

    def between(self, previous: ModelCall, current: ModelCall) -> list[ToolCall]:
        low = bisect_left(self.ends, previous.start_ns)
        return self.calls[low : bisect_right(self.ends, current.start_ns, lo=low)]


def _seconds(model: ModelCall) -> float:
    return max(0, model.end_ns - model.start_ns) / 1e9


def check_efficiency(
    traj: Trajectory, efficiency: Efficiency, tools: Tools, severity: Severity = "warning"
) -> CheckResult:
    models = traj.model_calls
    by_turn: dict[int, list[ToolCall]] = {}
    for call in traj.tool_calls:
        if call.turn is not None:
            by_turn.setdefault(call.turn, []).append(call)
    responses = any(m.output_text or m.requested_tools for m in models)
    # A turn that asked for tools shows it only where the model spans record requested calls: a run
    # with tool calls but no requested call anywhere (chat spans that record the text only) cannot
    # tell an empty turn.
    judge_empty = responses and (any(m.requested_tools for m in models) or not traj.tool_calls)
    if not by_turn and not judge_empty:
        missing = "requested calls" if responses else "responses"
        return skipped(NAME, severity, f"model turns not linked to tool calls, {missing} not recorded")

    def read_only(calls: list[ToolCall]) -> bool:
        return all(not (c := tools.contracts.get(call.name)) or not c.side_effect for call in calls)

    wasted: list[tuple[int, str]] = []
    unknown = judged = 0
    unlinked = _Unlinked(traj.tool_calls)
    for turn in range(1, len(models)):
        earlier, later = by_turn.get(turn - 1), by_turn.get(turn)
        if earlier and later and read_only(earlier) and read_only(later):
            # The previous turn's calls and every call that ended between the two requests (a call
            # whose turn is unknown still brought news).
            since = [*earlier, *unlinked.between(models[turn - 1], models[turn])]
            previous, current = models[turn - 1].input_text, models[turn].input_text
            sources = [c.result for c in since if c.result]
            if current and current != previous:
                sources.append(current)
            captured = all(c.result is not None for c in since if c.ok or not c.observed)
            independent = _independent(later, _Sources(sources)) if captured else None
            if independent is None:
                unknown += 1
                continue
            judged += 1
            if independent:
                names = " & ".join(c.name for c in later)
                wasted.append((turn, f"turn {turn} ({names}) could have run in turn {turn - 1}"))
    if judge_empty:
        output = {call.turn for call in traj.output_calls}
        for turn, model in enumerate(models):
            empty = not (model.output_text or model.requested_tools or by_turn.get(turn) or turn in output)
            if model.ok and empty:
                wasted.append((turn, f"turn {turn} produced neither a tool call nor text"))
    if len(wasted) > efficiency.max_wasted_turns:
        saved = sum(_seconds(models[turn]) for turn in {turn for turn, _ in wasted})
        problems = [text for _, text in sorted(wasted)]
        steps = [step_id(c) for turn, _ in sorted(wasted) for c in by_turn.get(turn, ())]
        summary = f"{count(len(wasted), 'wasted turn')}, {saved:.2f} s could have been saved: "
        return failure(NAME, severity, [summary + one_line(problems)], steps)
    if unknown and not judged and not wasted:
        return skipped(NAME, severity, "arguments or results not captured")
    note = f" ({unknown} turns not checkable)" if unknown else ""
    return passed(
        NAME, severity, f"{count(len(wasted), 'wasted turn')}, max {efficiency.max_wasted_turns}{note}"
    )
