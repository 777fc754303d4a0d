"""Shared values and step checks for the vendor dialect tests: the customer's question, the tool
arguments and the final answer, and narrowing a converted span to the step type expected."""

from __future__ import annotations

from otel_traj.steps import AgentRun, ModelCall, ToolCall

ARGS = '{"customer_id": "C023"}'
USER = "Customer C023 here. I was charged twice for invoice INV-1002, please refund the 199 yuan."
ANSWER = "Your refund for INV-1002 has been submitted (RF-5001)."


def as_tool(step: object) -> ToolCall:
    assert isinstance(step, ToolCall), step
    return step


def as_model(step: object) -> ModelCall:
    assert isinstance(step, ModelCall), step
    return step


def as_agent(step: object) -> AgentRun:
    assert isinstance(step, AgentRun), step
    return step
