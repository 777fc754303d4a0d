"""The six dimensions of a golden case, plus the trajectory match, each a pure ``CheckResult``.

- tool selection: the expected tools were called, and no other tool where the match mode forbids extras;
- parameter extraction: the calls to expected tools carry the expected arguments;
- result utilization: a fact (id, amount) a tool returned reached the final answer;
- error recovery: expected failures happened and the run still answered; unexpected failures were
  recovered by a later successful call of the same tool;
- plan coherence: order kept when ``order`` is strict, nothing called after the answer was ready,
  no repeated identical call (a retry after a failure is not a repeat);
- task completion: a non-empty answer containing ``answer_must_contain`` (case-insensitive).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from otel_traj.cases.facts import Facts, facts_in_result, facts_in_text
from otel_traj.cases.match import (
    CaseMatches,
    MatchResult,
    call_arguments,
    case_matches,
    compare_call,
    match_trajectory,
    observed_calls,
    step_id,
)
from otel_traj.cases.model import GoldenCase
from otel_traj.cases.values import values_equal
from otel_traj.steps import ToolCall
from otel_traj.trajectory import Trajectory
from otel_traj.verdict import CheckResult, Severity, Status

TRAJECTORY_MATCH = "case.trajectory_match"
TOOL_SELECTION = "case.tool_selection"
PARAMETER_EXTRACTION = "case.parameter_extraction"
RESULT_UTILIZATION = "case.result_utilization"
ERROR_RECOVERY = "case.error_recovery"
PLAN_COHERENCE = "case.plan_coherence"
TASK_COMPLETION = "case.task_completion"

# A run passes its case when no error-level check fails; the two judgement calls that a better path
# can legitimately trip (paraphrased answers, an extra confirming lookup) only warn.
SEVERITY: Mapping[str, Severity] = {
    TRAJECTORY_MATCH: "error",
    TOOL_SELECTION: "error",
    PARAMETER_EXTRACTION: "error",
    RESULT_UTILIZATION: "warning",
    ERROR_RECOVERY: "error",
    PLAN_COHERENCE: "warning",
    TASK_COMPLETION: "error",
}


def _result(
    name: str,
    status: Status,
    reason: str,
    steps: Sequence[str] = (),
    score: float | None = None,
    detail: Mapping[str, Any] | None = None,
) -> CheckResult:
    return CheckResult(name, status, SEVERITY[name], reason, tuple(dict.fromkeys(steps)), score, detail)


def _names(names: Sequence[str]) -> str:
    return ", ".join(names)


def trajectory_match_check(match: MatchResult) -> CheckResult:
    status: Status = "pass" if match.passed else "fail"
    steps = () if match.passed else match.offending_steps()
    return _result(TRAJECTORY_MATCH, status, match.reason(), steps, match.score, match.to_dict())


def tool_selection(trajectory: Trajectory, case: GoldenCase) -> CheckResult:
    calls = observed_calls(trajectory, case)
    called = {c.name for c in calls}
    mode = case.match_mode
    missing = sorted(case.expected_names - called) if mode != "subset" else []
    allowed = case.expected_names | set(case.expect_error_from)
    unexpected = sorted(called - allowed) if mode != "superset" else []
    if missing or unexpected:
        parts = [f"missing {_names(missing)}"] if missing else []
        parts += [f"unexpected {_names(unexpected)}"] if unexpected else []
        return _result(
            TOOL_SELECTION, "fail", "; ".join(parts), [step_id(c) for c in calls if c.name in unexpected]
        )
    if not case.expected_tools:
        return _result(TOOL_SELECTION, "pass", "no tool expected" + (", none called" if not calls else ""))
    expected = [t.name for t in case.expected_tools]
    return _result(
        TOOL_SELECTION, "pass", f"called the expected tools ({_names(list(dict.fromkeys(expected)))})"
    )


def parameter_extraction(
    trajectory: Trajectory, case: GoldenCase, unordered: MatchResult | None = None
) -> CheckResult:
    """``unordered``: the trajectory's unordered match, when the caller already has it."""
    match = unordered or match_trajectory(trajectory, case, mode="unordered")
    if not match.pairs:
        return _result(PARAMETER_EXTRACTION, "skipped", "no expected tool was called")
    problems: list[str] = []
    steps: list[str] = []
    for pair in match.wrong_args:
        problems.append(f"{pair.name}: {pair.describe_args()}")
        steps.append(pair.step_id)
    # A further call to an expected tool whose arguments fit no expected call is a wrong extraction
    # too (a lookup of another customer), even where the match mode allows extra calls.
    for index in match.extra:
        call = match.calls[index]
        comparisons = [compare_call(case, t, call) for t in case.expected_tools if t.name == call.name]
        known = [c for c in comparisons if c is not None]
        if known and not any(c.ok for c in known):
            closest = max(known, key=lambda c: c.similarity)
            problems.append(
                f"{call.name} ({step_id(call)}): " + ", ".join(m.describe() for m in closest.mismatches)
            )
            steps.append(step_id(call))
    if problems:
        return _result(PARAMETER_EXTRACTION, "fail", "; ".join(problems), steps)
    checked = [p for p in match.pairs if p.args is not None]
    if not checked:
        return _result(PARAMETER_EXTRACTION, "skipped", "arguments were not captured")
    reason = f"arguments of {len(checked)} expected call(s) match"
    if len(checked) < len(match.pairs):
        reason += f"; {len(match.pairs) - len(checked)} call(s) without captured arguments"
    return _result(PARAMETER_EXTRACTION, "pass", reason)


def _new_facts(trajectory: Trajectory, case: GoldenCase, calls: Sequence[ToolCall]) -> dict[int, Facts]:
    """Facts each successful call returned that the user had not already given."""
    known = facts_in_text(trajectory.user_input) | facts_in_text(case.input)
    found: dict[int, Facts] = {}
    for index, call in enumerate(calls):
        if call.ok and call.result:
            facts = {k: v for k, v in facts_in_result(call.result).items() if k not in known}
            if facts:
                found[index] = facts
    return found


def _used_facts(trajectory: Trajectory, new: Mapping[int, Facts]) -> dict[int, list[str]]:
    answer = facts_in_text(trajectory.final_answer)
    used = {i: [facts[k] for k in facts if k in answer] for i, facts in new.items()}
    return {i: names for i, names in used.items() if names}


def _answer(trajectory: Trajectory) -> str:
    return (trajectory.final_answer or "").strip()


def result_utilization(trajectory: Trajectory, case: GoldenCase) -> CheckResult:
    calls = observed_calls(trajectory, case)
    if not any(c.ok and c.result for c in calls):
        return _result(RESULT_UTILIZATION, "skipped", "no successful tool result was captured")
    new = _new_facts(trajectory, case, calls)
    if not new:
        return _result(
            RESULT_UTILIZATION, "skipped", "tool results hold no ids or amounts beyond the user's input"
        )
    if not _answer(trajectory):
        return _result(RESULT_UTILIZATION, "fail", "no final answer", [step_id(calls[i]) for i in new])
    used = _used_facts(trajectory, new)
    if used:
        shown = "; ".join(f"{_names(names)} from {calls[i].name}" for i, names in used.items())
        return _result(RESULT_UTILIZATION, "pass", f"final answer uses {shown}")
    offered = list(dict.fromkeys(v for facts in new.values() for v in facts.values()))
    reason = f"final answer uses none of the facts the tools returned ({_names(offered[:5])})"
    return _result(RESULT_UTILIZATION, "fail", reason, [step_id(calls[i]) for i in new])


def error_recovery(trajectory: Trajectory, case: GoldenCase) -> CheckResult:
    calls = observed_calls(trajectory, case)
    answered = bool(_answer(trajectory))
    expected_failures = set(case.expect_error_from)
    recovered: list[str] = []
    problems: list[str] = []
    steps: list[str] = []
    for index, call in enumerate(calls):
        if call.ok:
            continue
        error = call.error_type or "error"
        if call.name in expected_failures:
            if answered:
                recovered.append(f"{call.name} ({error})")
                continue
            problems.append(f"{call.name} failed as expected ({error}) but the run ended without an answer")
        elif any(c.name == call.name and c.ok for c in calls[index + 1 :]):
            recovered.append(f"{call.name} ({error}, retried)")
            continue
        else:
            problems.append(f"{call.name} failed ({error}) and was never recovered")
        steps.append(step_id(call))
    if problems:
        return _result(ERROR_RECOVERY, "fail", "; ".join(problems), steps)
    if recovered:
        return _result(ERROR_RECOVERY, "pass", f"recovered from {_names(recovered)} and answered")
    if expected_failures:
        called = sorted(expected_failures & {c.name for c in calls})
        detail = (
            f"{_names(called)} did not fail" if called else f"{_names(sorted(expected_failures))} not called"
        )
        return _result(ERROR_RECOVERY, "skipped", f"{detail}: recovery not exercised")
    return _result(ERROR_RECOVERY, "pass", "no tool failed")


def _repeats(calls: Sequence[ToolCall]) -> list[int]:
    """Indices of calls identical (same tool, equal arguments) to an earlier successful call. An
    identical call after a failed one is a retry, not a repeat."""
    repeated: list[int] = []
    for index, call in enumerate(calls):
        args = call_arguments(call, ())
        if args is None:
            continue
        for earlier in reversed(calls[:index]):
            other = call_arguments(earlier, ())
            if earlier.name == call.name and other is not None and values_equal(dict(other), dict(args)):
                if earlier.ok:
                    repeated.append(index)
                break
    return repeated


def _overlaps(a: ToolCall, b: ToolCall) -> bool:
    return a.start_ns < b.end_ns and b.start_ns < a.end_ns


def plan_coherence(
    trajectory: Trajectory, case: GoldenCase, matches: CaseMatches | None = None
) -> CheckResult:
    calls = observed_calls(trajectory, case)
    if not calls:
        return _result(PLAN_COHERENCE, "skipped", "no tool calls")
    problems: list[str] = []
    steps: list[str] = []
    matches = matches or case_matches(trajectory, case)
    strict = matches.ordered
    if strict is not None and strict.out_of_order:
        plan = " -> ".join(t.name for t in case.expected_tools)
        problems.append(f"{_names([p.name for p in strict.out_of_order])} out of the order {plan}")
        steps += [p.step_id for p in strict.out_of_order]
    # The answer is ready after the last expected call or the last call whose facts the answer uses;
    # anything started later (and not running in parallel with it) served nothing.
    anchors = [p.actual_index for p in matches.unordered.pairs]
    if _answer(trajectory):
        anchors += list(_used_facts(trajectory, _new_facts(trajectory, case, calls)))
    if anchors:
        last = calls[max(anchors)]
        late = [c for c in calls[max(anchors) + 1 :] if not _overlaps(c, last)]
        if late:
            problems.append(
                f"{_names([c.name for c in late])} called after {last.name} had produced the answer"
            )
            steps += [step_id(c) for c in late]
    repeated = _repeats(calls)
    if repeated:
        problems.append(f"repeated identical call {_names([calls[i].name for i in repeated])}")
        steps += [step_id(calls[i]) for i in repeated]
    if problems:
        return _result(PLAN_COHERENCE, "fail", "; ".join(problems), steps)
    checked = ["no late calls", "no repeated identical call"]
    if case.order == "strict":
        checked.insert(0, "order kept")
    if not any(c.arguments_captured for c in calls):
        checked[-1] = "repeats not checked (arguments not captured)"
    return _result(PLAN_COHERENCE, "pass", _names(checked))


def task_completion(trajectory: Trajectory, case: GoldenCase) -> CheckResult:
    answer = _answer(trajectory)
    if not answer:
        return _result(TASK_COMPLETION, "fail", "no final answer")
    needle = case.answer_must_contain
    if needle is None:
        return _result(TASK_COMPLETION, "pass", "final answer is non-empty")
    if needle.strip().casefold() in answer.casefold():
        return _result(TASK_COMPLETION, "pass", f"final answer contains {needle!r}")
    return _result(TASK_COMPLETION, "fail", f"final answer does not contain {needle!r}")


def case_checks(
    trajectory: Trajectory, case: GoldenCase, matches: CaseMatches | None = None
) -> list[CheckResult]:
    """All case checks for one run: the trajectory match first, then the six dimensions."""
    matches = matches or case_matches(trajectory, case)
    return [
        trajectory_match_check(matches.chosen),
        tool_selection(trajectory, case),
        parameter_extraction(trajectory, case, matches.unordered),
        result_utilization(trajectory, case),
        error_recovery(trajectory, case),
        plan_coherence(trajectory, case, matches),
        task_completion(trajectory, case),
    ]
