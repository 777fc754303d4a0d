"""Runs that could not be fully read: which passing checks no longer hold, and why.

A span with GenAI evidence that yielded no complete step (``steps.Unreadable``) may hide a tool call,
its arguments or the model's request for it, so a check that passed did so on part of the run. Such a
check is reported ``skipped`` with the reason, a check that failed stays failed (a violation seen is a
fact), and the ``unreadable_steps`` result lists the spans. The grader then gives the run the outcome
``unverified`` instead of ``pass`` or ``pass_with_warnings``.

Steps the assembler dropped unread (the worker was behind, ``max_backlog``) leave the run incomplete:
the ``dropped_steps`` result says which cap dropped how many, among the checks the outcome and the
score are computed from.
"""

from __future__ import annotations

from collections.abc import Sequence

from otel_traj.check_catalog import TOOLS_ONLY
from otel_traj.checks.base import skipped
from otel_traj.steps import Unreadable
from otel_traj.trajectory import Trajectory
from otel_traj.verdict import CheckResult

NAME = "unreadable_steps"
DROPPED = "dropped_steps"
_LISTED = 3


def describe(step: Unreadable) -> str:
    kind = f" ({step.expected})" if step.expected else ""
    return f"span {step.step_id} {step.span_name!r}{kind}: {step.field}: {step.reason}"


def _listed(items: Sequence[str]) -> str:
    more = f"; and {len(items) - _LISTED} more" if len(items) > _LISTED else ""
    return "; ".join(items[:_LISTED]) + more


def unreadable_result(steps: Sequence[Unreadable]) -> CheckResult:
    noun = "span" if len(steps) == 1 else "spans"
    # A malformed span (``Unreadable.malformed``) could not be decoded: what it held is unknown.
    evidence = "" if any(s.malformed for s in steps) else " with GenAI evidence"
    return CheckResult(
        name=NAME,
        status="fail",
        severity="info",
        reason=f"{len(steps)} {noun}{evidence} could not be read: " + _listed([describe(s) for s in steps]),
        steps=tuple(s.step_id for s in steps),
    )


def unverified(checks: Sequence[CheckResult], steps: Sequence[Unreadable]) -> list[CheckResult]:
    """``checks`` with the passes that the unreadable ``steps`` may have hidden a failure from
    reported skipped, and the ``unreadable_steps`` result last."""
    # A check that reads tool calls only (``CheckInfo.tools_only``) stands when only agent spans
    # (their input, answer or usage) could not be read; a model span may hide the calls it requested.
    agents_only = all(s.expected == "agent" for s in steps)
    noun = "span" if len(steps) == 1 else "spans"
    reason = f"not verified: {len(steps)} {noun} of the run could not be read (see {NAME})"
    result = [
        skipped(c.name, c.severity, reason)
        if c.status == "pass" and not (agents_only and c.name in TOOLS_ONLY)
        else c
        for c in checks
    ]
    result.append(unreadable_result(steps))
    return result


def unverified_traces(checks: Sequence[CheckResult], trace_ids: Sequence[str]) -> list[CheckResult]:
    """A conversation's ``checks`` when some of its traces held unreadable spans: every pass reported
    skipped (a conversation check reads every trace), and the ``unreadable_steps`` result naming them."""
    noun = "trace" if len(trace_ids) == 1 else "traces"
    reason = f"not verified: {len(trace_ids)} {noun} of the conversation held spans that could not be read"
    result = [skipped(c.name, c.severity, reason) if c.status == "pass" else c for c in checks]
    listed = _listed(list(trace_ids))
    result.append(CheckResult(name=NAME, status="fail", severity="info", reason=f"{reason}: {listed}"))
    return result


def dropped_result(trajectory: Trajectory) -> CheckResult | None:
    """Why a run that lost steps unread to the caps is graded ``incomplete``: which cap dropped how
    many; None when the worker read every step of it."""
    if not trajectory.backlog_steps:
        return None
    lost = [f"{trajectory.backlog_steps} dropped unread (max_backlog: the worker was behind)"]
    if trajectory.dropped_steps:
        lost.append(f"{trajectory.dropped_steps} beyond max_steps")
    return CheckResult(
        name=DROPPED,
        status="fail",
        severity="info",
        reason="steps missing from the trajectory: " + "; ".join(lost),
        detail={"backlog": trajectory.backlog_steps, "max_steps": trajectory.dropped_steps},
    )
