"""``efficiency``: model turns that need not have happened.

- A turn whose calls are all read-only and could have been requested one turn earlier, beside the
  previous turn's read-only calls: none of their argument values appears in the previous turn's
  results or in a user message new since. Read-only means not ``side_effect`` in the policy.
- A turn that produced neither a tool call nor answer text (judged only when responses were
  recorded).

The time that could have been saved is the wall time of those model calls.
"""

from __future__ import annotations

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


def _independent(calls: list[ToolCall], sources: list[str]) -> bool | None:
    """No argument of ``calls`` appears in ``sources``; ``None`` when arguments were not captured."""
    for call in calls:
        if call.arguments is None:
            return None
        for value in _values(call.arguments):
            if any(contains_token(source, value) for source in sources):
                return False
    return True


def _since(
    calls: list[ToolCall], previous: ModelCall, current: ModelCall, earlier: list[ToolCall]
) -> list[ToolCall]:
    """The previous turn's calls and every call that ended between the two requests (a call whose
    turn is unknown still brought news)."""
    window = [c for c in calls if c.turn is None and previous.start_ns <= c.end_ns <= current.start_ns]
    return [*earlier, *window]


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
    if not by_turn and not responses:
        return skipped(NAME, severity, "model turns not linked to tool calls, responses not recorded")

    def read_only(calls: list[ToolCall]) -> bool:
        return all(not (c := tools.contracts.get(call.name)) or not c.side_effect for call in calls)

    wasted: list[tuple[int, str]] = []
    unknown = judged = 0
    for turn in range(1, len(models)):
        earlier, later = by_turn.get(turn - 1), by_turn.get(turn)
        if earlier and later and read_only(earlier) and read_only(later):
            since = _since(traj.tool_calls, models[turn - 1], models[turn], earlier)
            previous, current = models[turn - 1].input_text, models[turn].input_text
            sources = [c.result for c in since if c.result]
            if current and current != previous:
                sources.append(current)
            captured = all(c.result is not None for c in since if c.ok or not c.observed)
            independent = _independent(later, sources) if captured else None
            if independent is None:
                unknown += 1
                continue
            judged += 1
            if independent:
                names = " & ".join(c.name for c in later)
                wasted.append((turn, f"turn {turn} ({names}) could have run in turn {turn - 1}"))
    if responses:
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
