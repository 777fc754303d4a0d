"""Trajectories of the customer-support scenario, built directly from ToolCall/ModelCall objects.

Mirrors `tests/fixtures/real/scenario.py`: customer C023 was charged twice for INV-1002 and asks for a
refund of 199 yuan.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from otel_traj.policy import Policy, load_policy
from otel_traj.steps import ModelCall, ToolCall
from otel_traj.trajectory import Tokens, Trajectory

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE_POLICY = ROOT / "examples" / "policies" / "support_agent.yaml"
USER_MESSAGE = "Customer C023 here. I was charged twice for invoice INV-1002, please refund the 199 yuan."
FINAL_ANSWER = "Your refund for INV-1002 has been submitted (RF-5001)."

RESULTS: dict[str, Any] = {
    "get_subscription": {"customer_id": "C023", "plan": "pro", "status": "active"},
    "list_invoices": [
        {"invoice_id": "INV-1001", "amount_yuan": 199.0, "status": "paid"},
        {"invoice_id": "INV-1002", "amount_yuan": 199.0, "status": "paid"},
    ],
    "check_payment": {"invoice_id": "INV-1002", "charges": 2},
    "create_refund_request": {"refund_id": "RF-5001", "status": "submitted"},
}
REFUND = {"invoice_id": "INV-1002", "amount_yuan": 199, "reason": "duplicate charge"}

Spec = tuple[str, dict[str, Any] | None] | tuple[str, dict[str, Any] | None, bool]


def example_policy() -> Policy:
    return load_policy(EXAMPLE_POLICY)


def call(
    index: int,
    name: str,
    arguments: dict[str, Any] | None = None,
    ok: bool = True,
    *,
    arguments_text: str | None = None,
    result: Any = None,
    observed: bool = True,
) -> ToolCall:
    """Tool call number ``index`` (1-based): 100 ms apart, each 20 ms long, step id ``s<index>``."""
    start = 1_000_000_000 + index * 100_000_000
    if result is None and ok:
        result = RESULTS.get(name, {"ok": True})
    return ToolCall(
        name=name,
        span_id=0x1000 + index,
        start_ns=start,
        end_ns=start + 20_000_000,
        arguments=arguments,
        arguments_text=arguments_text,
        result=json.dumps(result) if ok and result is not None else None,
        ok=ok,
        error_type=None if ok else "PaymentGatewayError",
        observed=observed,
        step_id=f"s{index}",
    )


def trajectory(
    calls: list[ToolCall],
    *,
    turns: int | None = None,
    user_input: str | None = USER_MESSAGE,
    final_answer: str | None = FINAL_ANSWER,
    attributes: dict[str, Any] | None = None,
    agent: str | None = "support_agent",
    complete: bool = True,
    tokens_per_turn: tuple[int, int] = (300, 30),
) -> Trajectory:
    turns = len(calls) + 1 if turns is None else turns
    models = [
        ModelCall(span_id=0x2000 + k, input_tokens=tokens_per_turn[0], output_tokens=tokens_per_turn[1])
        for k in range(turns)
    ]
    end = max((c.end_ns for c in calls), default=1_000_000_000) + 50_000_000
    return Trajectory(
        trace_id=0xABC,
        agent=agent,
        service_name="support-agent",
        conversation_id="conv-1",
        tool_calls=calls,
        model_calls=models,
        tokens=Tokens(input=tokens_per_turn[0] * turns, output=tokens_per_turn[1] * turns),
        start_ns=1_000_000_000,
        end_ns=end,
        user_input=user_input,
        final_answer=final_answer,
        attributes={"app.customer_id": "C023"} if attributes is None else attributes,
        complete=complete,
    )


def clean_run() -> Trajectory:
    """get_subscription -> list_invoices -> create_refund_request for customer C023."""
    return trajectory(
        [
            call(1, "get_subscription", {"customer_id": "C023"}),
            call(2, "list_invoices", {"customer_id": "C023"}),
            call(3, "create_refund_request", dict(REFUND)),
        ]
    )


def violating_run() -> Trajectory:
    """The same refund reached through repeated lookups and another customer's invoices (C028)."""
    return trajectory(
        [
            call(1, "get_subscription", {"customer_id": "C023"}),
            call(2, "get_subscription", {"customer_id": "C023"}),
            call(3, "list_invoices", {"customer_id": "C028"}),
            call(4, "list_invoices", {"customer_id": "C023"}),
            call(5, "create_refund_request", dict(REFUND)),
        ]
    )
