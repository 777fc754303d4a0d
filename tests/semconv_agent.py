"""A hand-instrumented agent run emitting OpenTelemetry GenAI semantic-convention spans.

Tests use it where they need a precise, controllable trace shape (parallel calls, failures, open
spans); the real frameworks' own traces live in ``tests/fixtures/real``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Status, StatusCode, Tracer

MS = 1_000_000


@dataclass
class Call:
    name: str
    arguments: dict[str, Any]
    result: Any = None
    error: str | None = None


@dataclass
class Turn:
    """One model call followed by the tool calls it requested (run in parallel when several)."""

    calls: Sequence[Call] = ()
    text: str | None = None
    input_tokens: int = 100
    output_tokens: int = 10


@dataclass
class Run:
    user: str
    turns: Sequence[Turn]
    agent: str = "support_agent"
    conversation_id: str | None = None
    root_attributes: dict[str, Any] = field(default_factory=dict)
    start_ns: int = 1_000_000_000_000


def emit(tracer: Tracer, run: Run) -> int:
    """Emit the run with explicit timestamps; returns the trace id."""
    t = run.start_ns
    root_attrs = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": run.agent,
        "gen_ai.input.messages": json.dumps(
            [{"role": "user", "parts": [{"type": "text", "content": run.user}]}]
        ),
        **run.root_attributes,
    }
    if run.conversation_id:
        root_attrs["gen_ai.conversation.id"] = run.conversation_id
    root = tracer.start_span(f"invoke_agent {run.agent}", attributes=root_attrs, start_time=t)
    ctx = trace.set_span_in_context(root)
    history: list[dict[str, Any]] = [{"role": "user", "parts": [{"type": "text", "content": run.user}]}]
    answer = None
    for n, turn in enumerate(run.turns):
        t += 10 * MS
        parts: list[dict[str, Any]] = [
            {"type": "tool_call", "id": f"call_{n}_{i}", "name": c.name, "arguments": c.arguments}
            for i, c in enumerate(turn.calls)
        ]
        if turn.text:
            parts.append({"type": "text", "content": turn.text})
            answer = turn.text
        chat = tracer.start_span(
            "chat gpt-4o-mini",
            context=ctx,
            start_time=t,
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.provider.name": "openai",
                "gen_ai.request.model": "gpt-4o-mini",
                "gen_ai.response.model": "gpt-4o-mini",
                "gen_ai.usage.input_tokens": turn.input_tokens,
                "gen_ai.usage.output_tokens": turn.output_tokens,
                "gen_ai.response.finish_reasons": ["tool_calls" if turn.calls else "stop"],
                "gen_ai.input.messages": json.dumps(history),
                "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": parts}]),
            },
        )
        t += 50 * MS
        chat.end(end_time=t)
        start = t + MS
        for i, c in enumerate(turn.calls):
            # Parallel calls: every call of the turn starts together and overlaps the others.
            span = tracer.start_span(
                f"execute_tool {c.name}",
                context=ctx,
                start_time=start + i * 1000,
                attributes={
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": c.name,
                    "gen_ai.tool.call.id": f"call_{n}_{i}",
                    "gen_ai.tool.call.arguments": json.dumps(c.arguments),
                },
            )
            if c.error:
                span.set_attribute("error.type", "ToolError")
                span.set_status(Status(StatusCode.ERROR, c.error))
            else:
                span.set_attribute("gen_ai.tool.call.result", json.dumps(c.result))
            span.end(end_time=start + 20 * MS + i * 1000)
        t = start + 30 * MS
    root.set_attribute(
        "gen_ai.output.messages",
        json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": answer or ""}]}]),
    )
    root.end(end_time=t + MS)
    return root.get_span_context().trace_id


REFUND_USER = "Customer C023 here. I was charged twice for invoice INV-1002, please refund the 199 yuan."
INVOICES = [
    {"invoice_id": "INV-1001", "amount_yuan": 199.0},
    {"invoice_id": "INV-1002", "amount_yuan": 199.0},
]


def clean_refund(conversation_id: str = "conv-clean") -> Run:
    return Run(
        user=REFUND_USER,
        conversation_id=conversation_id,
        root_attributes={"app.customer_id": "C023"},
        turns=[
            Turn(
                calls=[
                    Call("get_subscription", {"customer_id": "C023"}, {"plan": "pro"}),
                    Call("list_invoices", {"customer_id": "C023"}, INVOICES),
                ]
            ),
            Turn(calls=[Call("check_payment", {"invoice_id": "INV-1002"}, error="payment gateway timeout")]),
            Turn(
                calls=[
                    Call(
                        "create_refund_request",
                        {"invoice_id": "INV-1002", "amount_yuan": 199, "reason": "duplicate charge"},
                        {"refund_id": "RF-5001", "status": "submitted"},
                    )
                ]
            ),
            Turn(text="Your refund for INV-1002 has been submitted (RF-5001)."),
        ],
    )
