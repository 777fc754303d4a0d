"""The JSON shape of a conversation verdict, shared by ``grade``, the store and ``report``: the
trajectory verdict's keys (``outcome``, ``score``, ``checks``, ``policy_version``) plus the
conversation's id, traces, totals, cost and versions."""

from __future__ import annotations

from typing import Any

from otel_traj.conversations.verdict import ConversationVerdict
from otel_traj.redact import Redactor, TraceRedaction
from otel_traj.serialize import check_to_dict


def conversation_to_dict(verdict: ConversationVerdict, redactor: Redactor | None = None) -> dict[str, Any]:
    """With ``redactor``, secret-looking values in the reasons are masked (labels of calls are
    redacted when a trace is summarised)."""
    redaction = TraceRedaction(redactor.sensitive, (), ()) if redactor is not None else None
    return {
        "conversation_id": verdict.conversation_id,
        "agent": verdict.agent,
        "trace_ids": verdict.trace_ids,
        "outcome": verdict.outcome,
        "score": round(verdict.score, 4),
        "policy_version": verdict.policy_version,
        "complete": verdict.complete,
        "tool_calls": verdict.tool_calls,
        "model_turns": verdict.model_turns,
        "input_tokens": verdict.input_tokens,
        "output_tokens": verdict.output_tokens,
        "total_tokens": verdict.input_tokens + verdict.output_tokens,
        "duration_s": round(verdict.duration_s, 6),
        "start_ns": verdict.start_ns,
        "end_ns": verdict.end_ns,
        "total_cost_usd": verdict.total_cost_usd,
        "cost_reason": verdict.cost_reason,
        "versions": verdict.versions.to_dict(),
        "traces": [
            {
                "trace_id": t.trace_id,
                "outcome": t.outcome,
                "score": t.score,
                "tool_calls": t.tool_calls,
                "cost_usd": t.cost_usd,
            }
            for t in verdict.traces
        ],
        "checks": [check_to_dict(c, redaction) for c in verdict.checks],
    }
