"""Verdicts as ``gen_ai.evaluation.result`` events (pure: no I/O): one record per check and one for
the outcome, each parented to the span it evaluates.

GenAI semantic conventions v1.41.0 (event ``gen_ai.evaluation.result``, development): attributes
``gen_ai.evaluation.name`` (required), ``gen_ai.evaluation.score.value``,
``gen_ai.evaluation.score.label`` and ``gen_ai.evaluation.explanation``; the event SHOULD be parented
to the GenAI operation span being evaluated. A failed check is parented to its first offending step
(the tool call's span), everything else to the agent span of the run (its root span when no agent
span was recorded); a conversation's results to the offending step's trace, else the last trace.
An LLM judge's result (``otel_traj.judge.<name>``, marked ``otel_traj.evaluation.source=judge``) is
parented as the run's outcome is.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from otel_traj.cost import run_cost
from otel_traj.redact import TraceRedaction
from otel_traj.verdict import CheckResult, Verdict

if TYPE_CHECKING:
    from otel_traj.conversations import ConversationVerdict, TraceSummary
    from otel_traj.judge.result import JudgeResult
    from otel_traj.trajectory import Trajectory
    from otel_traj.versions import Versions

EVENT_NAME = "gen_ai.evaluation.result"
EVALUATION_NAME = "gen_ai.evaluation.name"
SCORE_VALUE = "gen_ai.evaluation.score.value"
SCORE_LABEL = "gen_ai.evaluation.score.label"
EXPLANATION = "gen_ai.evaluation.explanation"
CONVERSATION_ID = "gen_ai.conversation.id"
AGENT_NAME = "gen_ai.agent.name"
# Ours, beside the convention's: what was evaluated, how severe a failure is, the offending steps,
# the policy version, and (on a run's outcome in a conversation) the run's summary for the replica
# that grades the conversation.
TARGET = "otel_traj.evaluation.target"
SEVERITY = "otel_traj.check.severity"
STEPS = "otel_traj.check.steps"
POLICY_VERSION = "otel_traj.policy.version"
SUMMARY = "otel_traj.trace.summary"
PREFIX = "otel_traj."
OUTCOME = PREFIX + "outcome"
# Only on a judge's results: what gave the score (the checks' results are the policy's rules).
SOURCE = "otel_traj.evaluation.source"
JUDGE_MODEL = "otel_traj.judge.model"
# On every record of a verdict: the versions that produced it (``otel_traj.version.agent``, ``.models``,
# ``.prompt``, ``.policy``, ``.tool_contracts``, those known) and its cost in US dollars (absent when
# unknown), so a backend can split results by release.
VERSION_PREFIX = "otel_traj.version."
COST_USD = "otel_traj.cost_usd"
# The evaluator's provenance as proposed upstream (semantic-conventions-genai pull request 359, open):
# which evaluator definition gave the result, its revision, and its kind. Only when asked for
# (``EvaluationEventSink(provenance=True)``): the names may still change.
EVALUATOR_ID = "gen_ai.evaluation.evaluator.id"
EVALUATOR_VERSION = "gen_ai.evaluation.evaluator.version"
EVALUATOR_TYPE = "gen_ai.evaluation.evaluator.type"

AttributeValue = str | float | int | bool | Sequence[str]


@dataclass(slots=True, frozen=True)
class EvaluationRecord:
    """One event: the evaluated span (trace and span id) and the event's attributes."""

    trace_id: int
    span_id: int
    timestamp_ns: int
    attributes: dict[str, AttributeValue]


def _span(step: str | None) -> int | None:
    if step is None or len(step) != 16:
        return None
    try:
        return int(step, 16)
    except ValueError:
        return None


def _check_attributes(check: CheckResult, redaction: TraceRedaction | None) -> dict[str, AttributeValue]:
    attributes: dict[str, AttributeValue] = {
        EVALUATION_NAME: PREFIX + check.name,
        SCORE_LABEL: check.status,
        EXPLANATION: redaction.text(check.reason) if redaction is not None else check.reason,
        SEVERITY: check.severity,
    }
    if check.status != "skipped":
        # Partial credit where the check gives it; else 1 for a pass and 0 for a failure.
        attributes[SCORE_VALUE] = check.score if check.score is not None else float(check.status == "pass")
    if check.steps:
        attributes[STEPS] = list(check.steps)
    return attributes


def _common(
    target: str, agent: str, conversation_id: str | None, policy_version: str | None
) -> dict[str, AttributeValue]:
    common: dict[str, AttributeValue] = {TARGET: target, AGENT_NAME: agent}
    if conversation_id:
        common[CONVERSATION_ID] = conversation_id
    if policy_version:
        common[POLICY_VERSION] = policy_version
    return common


def _release(versions: Versions, cost_usd: float | None) -> dict[str, AttributeValue]:
    release: dict[str, AttributeValue] = {VERSION_PREFIX + k: v for k, v in versions.to_dict().items() if v}
    if cost_usd is not None:
        release[COST_USD] = cost_usd
    return release


def evaluated_span(traj: Trajectory) -> int | None:
    """The span a run's outcome is about: its agent span, else its root span."""
    return traj.agent_runs[0].span_id if traj.agent_runs else traj.root_span_id


def trajectory_records(
    verdict: Verdict, redaction: TraceRedaction | None = None, summary: TraceSummary | None = None
) -> list[EvaluationRecord]:
    traj = verdict.trajectory
    home = evaluated_span(traj) or 0
    common = _common("trajectory", traj.agent_label, traj.conversation_id, verdict.policy_version)
    common |= _release(verdict.versions, run_cost(traj).total_usd)
    when = verdict.graded_at_ns
    records: list[EvaluationRecord] = []
    for check in verdict.checks:
        span = _span(check.steps[0]) if check.failed and check.steps else None
        attributes = {**_check_attributes(check, redaction), **common}
        records.append(EvaluationRecord(traj.trace_id, span if span is not None else home, when, attributes))
    outcome: dict[str, AttributeValue] = {
        EVALUATION_NAME: OUTCOME,
        SCORE_VALUE: round(verdict.score, 4),
        SCORE_LABEL: verdict.outcome,
        EXPLANATION: _outcome_explanation(verdict.checks, verdict.outcome, redaction),
        **common,
    }
    if summary is not None:
        if redaction is not None:
            summary = _redacted(summary, redaction)
        outcome[SUMMARY] = json.dumps(summary.to_dict(), separators=(",", ":"), ensure_ascii=False)
    records.append(EvaluationRecord(traj.trace_id, home, when, outcome))
    return records


def _redacted(summary: TraceSummary, redaction: TraceRedaction) -> TraceSummary:
    """The summary leaves the process: its labels and messages masked as the explanations are (a
    summary masks only secret-looking keys, not the ones the sink is told to redact)."""
    calls = tuple(replace(c, label=redaction.text(c.label)) for c in summary.calls)
    messages = tuple(replace(m, text=redaction.text(m.text)) for m in summary.messages)
    return replace(summary, calls=calls, messages=messages)


def judgement_record(result: JudgeResult, redaction: TraceRedaction | None = None) -> EvaluationRecord:
    """An LLM judge's result, on the span the run's outcome is parented to."""
    explanation = redaction.text(result.explanation) if redaction is not None else result.explanation
    attributes: dict[str, AttributeValue] = {
        EVALUATION_NAME: f"{PREFIX}judge.{result.judge}",
        SCORE_VALUE: result.score,
        SCORE_LABEL: result.label,
        EXPLANATION: explanation,
        SOURCE: result.source,
        JUDGE_MODEL: result.model,
        SEVERITY: result.severity,
        **_common("trajectory", result.agent, None, result.policy_version),
    }
    return EvaluationRecord(result.trace_id, result.span_id or 0, result.judged_at_ns, attributes)


def conversation_records(
    verdict: ConversationVerdict, redaction: TraceRedaction | None = None
) -> list[EvaluationRecord]:
    last = verdict.traces[-1]
    common = _common("conversation", verdict.agent, verdict.conversation_id, verdict.policy_version)
    common |= _release(verdict.versions, verdict.total_cost_usd)
    when = verdict.graded_at_ns
    records: list[EvaluationRecord] = []
    for check in verdict.checks:
        trace, span = last, _span(last.parent_span)
        if check.failed and check.steps:
            offending = verdict.trace_of(check.steps[0])
            if offending is not None:
                trace, span = offending, _span(check.steps[0])
        attributes = {**_check_attributes(check, redaction), **common}
        records.append(EvaluationRecord(int(trace.trace_id, 16), span or 0, when, attributes))
    outcome: dict[str, AttributeValue] = {
        EVALUATION_NAME: OUTCOME,
        SCORE_VALUE: round(verdict.score, 4),
        SCORE_LABEL: verdict.outcome,
        EXPLANATION: _outcome_explanation(verdict.checks, verdict.outcome, redaction),
        **common,
    }
    records.append(EvaluationRecord(int(last.trace_id, 16), _span(last.parent_span) or 0, when, outcome))
    return records


def with_provenance(record: EvaluationRecord) -> EvaluationRecord:
    """``record`` with the evaluator's provenance: the evaluation's name identifies the evaluator (a
    check, the outcome or a judge), the policy that defines it is its revision, and a judge is an
    ``llm_judge`` where the checks are ``deterministic``."""
    attributes = record.attributes
    provenance: dict[str, AttributeValue] = {
        EVALUATOR_ID: attributes[EVALUATION_NAME],
        EVALUATOR_TYPE: "llm_judge" if SOURCE in attributes else "deterministic",
    }
    if POLICY_VERSION in attributes:
        provenance[EVALUATOR_VERSION] = attributes[POLICY_VERSION]
    return replace(record, attributes={**attributes, **provenance})


def _outcome_explanation(
    checks: Sequence[CheckResult], outcome: str, redaction: TraceRedaction | None
) -> str:
    failed = [f"{c.name}: {c.reason}" for c in checks if c.failed]
    text = "; ".join(failed) if failed else f"{outcome}: no check failed"
    return redaction.text(text) if redaction is not None else text
