"""The JSON shape of trajectories and verdicts, shared by ``grade``, ``report`` and the store.

With a ``Redactor`` (the store's default), sensitive argument values are masked in the arguments,
results, error messages, reasons and texts written out; without one, everything is written as it is.
"""

from __future__ import annotations

from typing import Any

from otel_traj.cost import CallCost, run_cost
from otel_traj.redact import Redactor, TraceRedaction
from otel_traj.steps import ContextOperation, ModelCall, ToolCall, span_hex
from otel_traj.trajectory import Trajectory
from otel_traj.verdict import CheckResult, Verdict


def _text(redaction: TraceRedaction | None, text: str | None) -> str | None:
    return text if redaction is None or text is None else redaction.text(text)


def tool_call_to_dict(call: ToolCall, redaction: TraceRedaction | None = None) -> dict[str, Any]:
    arguments: Any = call.arguments
    if arguments is None:
        arguments = _text(redaction, call.arguments_text)
    elif redaction is not None:
        arguments = redaction.value(call.name, arguments)
    return {
        "step_id": call.step_id or span_hex(call.span_id),
        "name": call.name,
        "kind": "output" if call.output else "tool",
        "call_id": call.call_id,
        "arguments": arguments,
        "arguments_source": call.arguments_source,
        "turn": call.turn,
        "result": _text(redaction, call.result),
        "ok": call.ok,
        "error": _text(redaction, call.error_message or call.error_type) if not call.ok else None,
        "error_type": call.error_type,
        "observed": call.observed,
        "parallel": call.parallel,
        "start_ns": call.start_ns,
        "end_ns": call.end_ns,
    }


def context_operation_to_dict(
    operation: ContextOperation, redaction: TraceRedaction | None = None
) -> dict[str, Any]:
    return {
        "step_id": operation.step_id,
        "name": operation.name,
        "operation": operation.operation,
        "source": operation.source,
        "query": _text(redaction, operation.query),
        "text": _text(redaction, operation.text),
        "ok": operation.ok,
        "error_type": operation.error_type,
        "start_ns": operation.start_ns,
        "end_ns": operation.end_ns,
    }


def model_call_to_dict(call: ModelCall, cost: CallCost | None = None) -> dict[str, Any]:
    """With ``cost``, the call's ``cost_usd`` and, when it is unknown, ``cost_reason``."""
    data: dict[str, Any] = {
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
    if cost is not None:
        data["cost_usd"] = cost.usd
        data["cost_reason"] = cost.reason
    return data


def trajectory_to_dict(traj: Trajectory, redaction: TraceRedaction | None = None) -> dict[str, Any]:
    attributes = dict(traj.attributes)
    cost = run_cost(traj)
    return {
        "trace_id": traj.trace_hex,
        "agent": traj.agent_label,
        "service_name": traj.service_name,
        "service_version": traj.service_version,
        "conversation_id": traj.conversation_id,
        # The agent's calls, then the structured-output calls (``kind: "output"``) that returned its answer.
        "tool_calls": [tool_call_to_dict(t, redaction) for t in (*traj.tool_calls, *traj.output_calls)],
        "model_calls": [model_call_to_dict(m, c) for m, c in zip(traj.model_calls, cost.calls, strict=True)],
        # Retrievals and memory searches (context for later arguments), memory writes (side effects).
        "context_reads": [context_operation_to_dict(op, redaction) for op in traj.context_reads],
        "memory_writes": [context_operation_to_dict(op, redaction) for op in traj.memory_writes],
        # The parameters schema of each tool the model was offered (``gen_ai.tool.definitions``).
        "tool_definitions": dict(traj.tool_definitions),
        "model_turns": traj.model_turns,
        "input_tokens": traj.tokens.input,
        "output_tokens": traj.tokens.output,
        "total_tokens": traj.tokens.total,
        "cache_read_tokens": traj.tokens.cache_read,
        "cache_write_tokens": traj.tokens.cache_write,
        "reasoning_tokens": traj.tokens.reasoning,
        # null with ``cost_reason`` when any model call's cost is unknown: never a partial sum.
        "total_cost_usd": cost.total_usd,
        "cost_reason": cost.reason,
        "duration_s": round(traj.duration_s, 6),
        "start_ns": traj.start_ns,
        "end_ns": traj.end_ns,
        "user_input": _text(redaction, traj.user_input),
        "final_answer": _text(redaction, traj.final_answer),
        "attributes": attributes if redaction is None else redaction.value("", attributes),
        "errors": [_text(redaction, e) for e in traj.errors],
        "complete": traj.complete,
        # Spans with GenAI evidence that could not be read (the run is then ``unverified``).
        "unreadable": [
            {
                "span_id": s.step_id,
                "span_name": s.span_name,
                "expected": s.expected,
                "field": s.field,
                "reason": _text(redaction, s.reason),
                "dialect": s.dialect,
            }
            for s in traj.unreadable
        ],
    }


def check_to_dict(check: CheckResult, redaction: TraceRedaction | None = None) -> dict[str, Any]:
    """The documented keys always; ``score`` (partial credit) and ``detail`` only when the check has them."""
    data: dict[str, Any] = {
        "name": check.name,
        "status": check.status,
        "severity": check.severity,
        "reason": _text(redaction, check.reason),
        "steps": list(check.steps),
    }
    if check.score is not None:
        data["score"] = round(check.score, 4)
    if check.detail is not None:
        detail = dict(check.detail)
        data["detail"] = detail if redaction is None else redaction.value("", detail)
    return data


def verdict_to_dict(verdict: Verdict, redactor: Redactor | None = None) -> dict[str, Any]:
    """The verdict's JSON; with ``redactor``, sensitive values masked (see the module's docstring)."""
    redaction = redactor.scope(verdict.trajectory) if redactor is not None else None
    data = trajectory_to_dict(verdict.trajectory, redaction)
    data["outcome"] = verdict.outcome
    data["stage"] = verdict.stage
    data["score"] = round(verdict.score, 4)
    data["policy_version"] = verdict.policy_version
    data["versions"] = verdict.versions.to_dict()
    data["checks"] = [check_to_dict(c, redaction) for c in verdict.checks]
    return data
