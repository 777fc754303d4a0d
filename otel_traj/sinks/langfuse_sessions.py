"""Conversation verdict -> Langfuse scores on the session (pure: no I/O).

A conversation's scores go to the Langfuse session whose id is the conversation id (``sessionId``
instead of ``traceId``; the traces of one ``session.id`` / ``langfuse.session.id`` form that session
in Langfuse): one BOOLEAN ``traj.<check>`` per conversation check that ran and the CATEGORICAL
``traj.conversation_outcome``. The outcome has a name of its own so that Langfuse's score analytics,
which group by name, never mix conversations with runs (``traj.outcome``).

Ids are derived from (session, score name) and the timestamp is the conversation's last trace's end:
re-sent or re-graded, a conversation's scores overwrite instead of duplicating.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any

from otel_traj.redact import Redactor, TraceRedaction
from otel_traj.sinks.langfuse_scores import (
    SCORE_PREFIX,
    WireScore,
    clean_comment,
    score_id,
    wire_timestamp,
)

if TYPE_CHECKING:
    from otel_traj.conversations import ConversationVerdict

OUTCOME_NAME = SCORE_PREFIX + "conversation_outcome"
# Trace ids (the last ones) and step ids listed in a score's metadata: a long conversation has hundreds.
MAX_TRACE_IDS = 20


def session_score_id(conversation_id: str, name: str) -> str:
    """Apart from every trace's ids: a session id may be any string, even 32 hex digits."""
    return score_id(f"session:{conversation_id}", None, name)


def _outcome_comment(verdict: ConversationVerdict) -> str:
    failed = verdict.failed_checks
    traces = f"{len(verdict.traces)} traces"
    if not failed:
        return f"{verdict.outcome}: all {len(verdict.checks)} checks passed over {traces}"
    names = ", ".join(c.name for c in failed)
    return f"{verdict.outcome}: {len(failed)} of {len(verdict.checks)} checks failed over {traces} ({names})"


def conversation_scores(
    verdict: ConversationVerdict, redactor: Redactor, environment: str | None = None
) -> list[WireScore]:
    """One BOOLEAN per conversation check that ran and the CATEGORICAL outcome, on the session.
    Reasons quote scoped values and call labels: redacted like a trajectory's comments."""
    session = verdict.conversation_id
    end_ns = verdict.end_ns or verdict.graded_at_ns
    timestamp = wire_timestamp(dt.datetime.fromtimestamp(end_ns / 1e9, tz=dt.UTC))
    redaction = TraceRedaction(redactor.sensitive, (), ())
    base: dict[str, Any] = {
        "policy_version": verdict.policy_version,
        "agent": verdict.agent,
        "traces": len(verdict.traces),
        "trace_ids": verdict.trace_ids[-MAX_TRACE_IDS:],
        # As on a run's scores: what produced the conversation, and what it cost (None when unknown).
        "versions": verdict.versions.to_dict(),
        "total_cost_usd": verdict.total_cost_usd,
    }

    def make(name: str, value: float | str, data_type: str, text: str, extra: dict[str, Any]) -> WireScore:
        score: WireScore = {
            "id": session_score_id(session, name),
            "sessionId": session,
            "name": name,
            "value": value,
            "dataType": data_type,
            "metadata": {**base, **extra},
            "timestamp": timestamp,
        }
        optional = {"comment": clean_comment(text, redaction), "environment": environment}
        score.update((k, v) for k, v in optional.items() if v is not None)
        return score

    scores = [
        make(
            SCORE_PREFIX + check.name,
            0.0 if check.failed else 1.0,
            "BOOLEAN",
            check.reason,
            {"severity": check.severity, "steps": list(check.steps[:MAX_TRACE_IDS])},
        )
        for check in verdict.checks
        if check.status != "skipped"
    ]
    outcome_extra: dict[str, Any] = {
        "score": round(verdict.score, 4),
        "complete": verdict.complete,
        "tool_calls": verdict.tool_calls,
        "total_tokens": verdict.input_tokens + verdict.output_tokens,
        "duration_s": round(verdict.duration_s, 3),
    }
    skipped = [c.name for c in verdict.checks if c.status == "skipped"]
    if skipped:
        outcome_extra["skipped_checks"] = skipped
    scores.append(
        make(OUTCOME_NAME, verdict.outcome, "CATEGORICAL", _outcome_comment(verdict), outcome_extra)
    )
    return scores
