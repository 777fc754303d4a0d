"""Checks over a conversation's traces (summaries in start order): pure functions, one result each.
Reasons name the trace (32 hex) and, where one is to blame, the step (16 hex)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from otel_traj.checks.base import count, failure, passed, skipped
from otel_traj.checks.confirmation import Message, confirming
from otel_traj.conversations.summary import TraceSummary
from otel_traj.policy import ConversationBudget, ConversationRepeats
from otel_traj.verdict import CheckResult, Severity

BUDGET = "conversation_budget"
SCOPE = "conversation_scope"
REPEATS = "conversation_repeats"
CONFIRMATION = "conversation_confirmation"
NAMES = (BUDGET, SCOPE, REPEATS, CONFIRMATION)
# Characters of the confirming message quoted in a reason.
QUOTE_CHARS = 60

_Measure = Callable[[TraceSummary], int]
_TOTALS: tuple[tuple[str, str, _Measure], ...] = (
    ("max_traces", "traces", lambda t: 1),
    ("max_tool_calls", "tool calls", lambda t: t.tool_calls),
    ("max_model_turns", "model turns", lambda t: t.model_turns),
    ("max_total_tokens", "total tokens", lambda t: t.input_tokens + t.output_tokens),
    ("max_input_tokens", "input tokens", lambda t: t.input_tokens),
    ("max_output_tokens", "output tokens", lambda t: t.output_tokens),
)


def where(trace: TraceSummary, step: str | None = None) -> str:
    return f"trace {trace.trace_id}" + (f" step {step}" if step else "")


def _cost(traces: Sequence[TraceSummary], limit: float) -> tuple[str | None, str | None]:
    """(the overrun, why the cost is unknown): a trace whose cost is unknown makes the total unknown,
    never judged on a partial sum, as the trace's own budget check does."""
    unknown = next((t for t in traces if t.cost_usd is None), None)
    if unknown is not None:
        return None, f"cost unknown: {where(unknown)}: {unknown.cost_reason or 'cost not recorded'}"
    total = 0.0
    crossed: TraceSummary | None = None
    for trace in traces:
        total += trace.cost_usd or 0.0
        if crossed is None and total > limit:
            crossed = trace
    if crossed is None:
        return None, None
    return f"cost ${total:.6g} > ${limit:.6g} (crossed in {where(crossed)})", None


def check_budget(
    traces: Sequence[TraceSummary], budget: ConversationBudget, severity: Severity
) -> CheckResult:
    """Totals over the traces; each overrun names the trace (and tool call) that crossed the limit."""
    problems: list[str] = []
    steps: list[str] = []
    for field, noun, measure in _TOTALS:
        limit = getattr(budget, field)
        if limit is None:
            continue
        total = 0
        crossed: tuple[TraceSummary, int] | None = None
        for trace in traces:
            before, total = total, total + measure(trace)
            if crossed is None and total > limit:
                crossed = (trace, limit - before)
        if crossed is not None:
            trace, within = crossed
            step = (
                trace.calls[within].step_id
                if field == "max_tool_calls" and within < len(trace.calls)
                else None
            )
            problems.append(f"{total} {noun} > {limit} (crossed in {where(trace, step)})")
            if step:
                steps.append(step)
    if budget.max_duration_s is not None and traces:
        duration = (max(t.end_ns for t in traces) - min(t.start_ns for t in traces)) / 1e9
        if duration > budget.max_duration_s:
            last = max(traces, key=lambda t: t.end_ns)
            problems.append(f"{duration:.1f} s > {budget.max_duration_s:g} s (until {where(last)})")
    unknown: str | None = None
    if budget.max_cost_usd is not None:
        overrun, unknown = _cost(traces, budget.max_cost_usd)
        if overrun is not None:
            problems.append(overrun)
    if problems:
        return failure(BUDGET, severity, problems, steps)
    measured = [f for f, _, _ in _TOTALS if getattr(budget, f) is not None] + (
        ["max_duration_s"] if budget.max_duration_s is not None else []
    )
    if unknown is not None and not measured:
        return skipped(BUDGET, severity, f"not measurable: {unknown}")
    note = f" ({unknown})" if unknown is not None else ""
    return passed(BUDGET, severity, f"within budget over {count(len(traces), 'trace')}{note}")


def check_scope(traces: Sequence[TraceSummary], severity: Severity, scoped: bool) -> CheckResult:
    """The first trace's subject is the conversation's: a later trace serving another subject, or a
    scoped call using another value, fails. ``scoped``: the agent's policy has a ``scope`` section."""
    if not scoped:
        return skipped(SCOPE, severity, "the agent's policy has no scope section to find the subject")
    pinned: tuple[str, TraceSummary] | None = None
    problems: list[str] = []
    steps: list[str] = []
    for trace in traces:
        if pinned is None:
            if trace.subject is not None:
                pinned = (trace.subject, trace)
            continue
        subject, first = pinned
        bad = [(call, arg, value) for call in trace.calls for arg, value in call.scoped if value != subject]
        for call, arg, value in bad:
            problems.append(
                f"{where(trace, call.step_id)}: {call.name} used {arg}={value}, "
                f"conversation subject is {subject} (from {where(first)})"
            )
            steps.append(call.step_id)
        if not bad and trace.subject is not None and trace.subject != subject:
            problems.append(
                f"{where(trace)} serves subject {trace.subject} ({trace.subject_source}), "
                f"conversation subject is {subject} (from {where(first)})"
            )
    if problems:
        return failure(SCOPE, severity, problems, steps)
    if pinned is None:
        return passed(SCOPE, severity, "no subject found in any trace")
    return passed(SCOPE, severity, f"{count(len(traces), 'trace')} keep subject {pinned[0]}")


def check_repeats(
    traces: Sequence[TraceSummary], repeats: ConversationRepeats, severity: Severity
) -> CheckResult:
    """The same call (tool and arguments) in more than ``max_identical`` traces. Repeats inside one
    trace are the trace's own ``repeats`` check."""
    exempt = frozenset(repeats.exempt)
    seen: dict[tuple[str, str], list[tuple[TraceSummary, str, str]]] = {}
    not_captured = 0
    for trace in traces:
        in_trace: set[tuple[str, str]] = set()
        for call in trace.calls:
            if call.name in exempt:
                continue
            if call.key is None:
                not_captured += 1
                continue
            key = (call.name, call.key)
            if key not in in_trace:
                in_trace.add(key)
                seen.setdefault(key, []).append((trace, call.step_id, call.label))
    problems: list[str] = []
    steps: list[str] = []
    for uses in seen.values():
        if len(uses) > repeats.max_identical:
            later = uses[repeats.max_identical :]
            problems.append(
                f"{uses[0][2]} called in {len(uses)} traces, max {repeats.max_identical} "
                f"(again in {', '.join(where(t, s) for t, s, _ in later)})"
            )
            steps.extend(s for _, s, _ in later)
    if problems:
        return failure(REPEATS, severity, problems, steps)
    if not seen and not_captured:
        return skipped(REPEATS, severity, f"arguments not captured for {count(not_captured, 'call')}")
    return passed(REPEATS, severity, f"no call repeated across {count(len(traces), 'trace')}")


def _quote(text: str) -> str:
    text = " ".join(text.split())
    return repr(text if len(text) <= QUOTE_CHARS else text[: QUOTE_CHARS - 1] + "…")


def check_confirmation(
    traces: Sequence[TraceSummary], pattern: re.Pattern[str], severity: Severity
) -> CheckResult:
    """The trace-level ``confirmation`` check again, for each high-risk call its own trace left
    unconfirmed, with the earlier traces of the conversation: a successful approval tool in one of
    them, or (when the agent did not ask again in the call's trace) a user message matching
    ``pattern`` after the agent's last question there, confirms the call."""
    said: list[Message] = []
    said_in: list[TraceSummary] = []
    approved: dict[str, TraceSummary] = {}
    problems: list[str] = []
    steps: list[str] = []
    earlier: list[str] = []
    for trace in traces:
        for step, tool, asked in trace.unconfirmed:
            if approved:
                name, by = next(iter(approved.items()))
                earlier.append(f"{tool} in {where(trace, step)} by {name} in {where(by)}")
                continue
            index = None if asked else confirming(said, pattern)
            if index is not None:
                quote = _quote(said[index].text)
                earlier.append(f"{tool} in {where(trace, step)} by {quote} in {where(said_in[index])}")
                continue
            why = "the agent asked again before it" if asked else "no earlier trace confirmed it"
            problems.append(f"{where(trace, step)}: {tool} was not confirmed ({why})")
            steps.append(step)
        said.extend(trace.messages)
        said_in.extend(trace for _ in trace.messages)
        for name in trace.approvals:
            approved.setdefault(name, trace)
    if problems:
        return failure(CONFIRMATION, severity, problems, steps)
    if earlier:
        return passed(CONFIRMATION, severity, "confirmed in an earlier trace: " + "; ".join(earlier))
    return passed(CONFIRMATION, severity, "no high-risk call left unconfirmed by its own trace")
