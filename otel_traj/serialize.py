"""The JSON shape of trajectories and verdicts, shared by ``grade``, ``report`` and the store."""

from __future__ import annotations

from typing import Any

from otel_traj.steps import ModelCall, ToolCall, span_hex
from otel_traj.trajectory import Trajectory
from otel_traj.verdict import CheckResult, Verdict


def tool_call_to_dict(call: ToolCall) -> dict[str, Any]:
    return {
        "step_id": call.step_id or span_hex(call.span_id),
        "name": call.name,
        "call_id": call.call_id,
        "arguments": call.arguments if call.arguments is not None else call.arguments_text,
        "result": call.result,
        "ok": call.ok,
        "error": call.error_message or call.error_type if not call.ok else None,
        "error_type": call.error_type,
        "observed": call.observed,
        "parallel": call.parallel,
        "start_ns": call.start_ns,
        "end_ns": call.end_ns,
    }


def model_call_to_dict(call: ModelCall) -> dict[str, Any]:
    return {
        "step_id": span_hex(call.span_id),
        "model": call.model,
        "provider": call.provider,
        "input_tokens": call.input_tokens,
        "output_tokens": call.output_tokens,
        "finish_reasons": list(call.finish_reasons),
        "requested_tools": [t.name for t in call.requested_tools],
        "start_ns": call.start_ns,
        "end_ns": call.end_ns,
    }


def trajectory_to_dict(traj: Trajectory) -> dict[str, Any]:
    return {
        "trace_id": traj.trace_hex,
        "agent": traj.agent_label,
        "service_name": traj.service_name,
        "service_version": traj.service_version,
        "conversation_id": traj.conversation_id,
        "tool_calls": [tool_call_to_dict(t) for t in traj.tool_calls],
        "model_calls": [model_call_to_dict(m) for m in traj.model_calls],
        "model_turns": traj.model_turns,
        "input_tokens": traj.tokens.input,
        "output_tokens": traj.tokens.output,
        "total_tokens": traj.tokens.total,
        "cache_read_tokens": traj.tokens.cache_read,
        "cache_write_tokens": traj.tokens.cache_write,
        "reasoning_tokens": traj.tokens.reasoning,
        "duration_s": round(traj.duration_s, 6),
        "start_ns": traj.start_ns,
        "end_ns": traj.end_ns,
        "user_input": traj.user_input,
        "final_answer": traj.final_answer,
        "attributes": dict(traj.attributes),
        "errors": list(traj.errors),
        "complete": traj.complete,
    }


def check_to_dict(check: CheckResult) -> dict[str, Any]:
    """The documented keys always; ``score`` (partial credit) and ``detail`` only when the check has them."""
    data: dict[str, Any] = {
        "name": check.name,
        "status": check.status,
        "severity": check.severity,
        "reason": check.reason,
        "steps": list(check.steps),
    }
    if check.score is not None:
        data["score"] = round(check.score, 4)
    if check.detail is not None:
        data["detail"] = dict(check.detail)
    return data


def verdict_to_dict(verdict: Verdict) -> dict[str, Any]:
    data = trajectory_to_dict(verdict.trajectory)
    data["outcome"] = verdict.outcome
    data["score"] = round(verdict.score, 4)
    data["policy_version"] = verdict.policy_version
    data["checks"] = [check_to_dict(c) for c in verdict.checks]
    return data
