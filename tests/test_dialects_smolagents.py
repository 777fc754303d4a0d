"""smolagents under openinference-instrumentation-smolagents (tests/fixtures/real/smolagents_openinference,
smolagents_code): its ``Tool.__call__`` wrapper records ``{"args": [...], "sanitize_inputs_outputs":
..., "kwargs": {...}}`` in ``input.value`` and the tool's ``inputs`` in ``tool.parameters``. A
CodeAgent's code calls tools as Python functions, positionally too. Spans are recorded through the
real SDK with the values openinference-instrumentation-smolagents 0.1.43 writes."""

from __future__ import annotations

import json
from typing import Any

from otel_traj.dialects import to_step
from tests.dialect_spans import record
from tests.dialect_steps import ANSWER, as_tool

INVOICE = {"type": "string", "description": "The invoice id, e.g. INV-1002."}
REFUND_INPUTS = {
    "invoice_id": INVOICE,
    "amount_yuan": {"type": "number", "description": "The amount to refund, in yuan."},
    "reason": {"type": "string", "description": "Why the refund is requested."},
}


def tool_span(name: str, inputs: dict[str, Any], *args: Any, **kwargs: Any) -> dict[str, Any]:
    call = {"args": list(args), "sanitize_inputs_outputs": False, "kwargs": kwargs}
    return {
        "openinference.span.kind": "TOOL",
        "tool.name": name,
        "tool.parameters": json.dumps(inputs),
        "input.value": json.dumps(call),
    }


def arguments(attributes: dict[str, Any]) -> Any:
    tool = as_tool(to_step(record("SimpleTool", attributes)))
    return tool.arguments if tool.arguments is not None else json.loads(tool.arguments_text or "null")


def test_positional_arguments_are_named_by_the_tool_parameters() -> None:
    answer = tool_span("final_answer", {"answer": {"type": "any", "description": "The final answer"}}, ANSWER)
    assert arguments(answer) == {"answer": ANSWER}
    # Positional values fill the parameters the keyword ones leave, in order.
    mixed = tool_span(
        "create_refund_request", REFUND_INPUTS, "INV-1002", reason="duplicate charge", amount_yuan=199
    )
    assert arguments(mixed) == {"invoice_id": "INV-1002", "amount_yuan": 199, "reason": "duplicate charge"}
    # A JSON schema names them by its properties.
    schema = {"type": "object", "properties": {"invoice_id": INVOICE}, "required": ["invoice_id"]}
    assert arguments(tool_span("check_payment", schema, "INV-1002")) == {"invoice_id": "INV-1002"}


def test_keyword_calls_and_unnamed_values_are_read_as_before() -> None:
    keywords = tool_span("check_payment", {"invoice_id": INVOICE}, invoice_id="INV-1002")
    assert arguments(keywords) == {"invoice_id": "INV-1002"}
    # More values than parameters (or no parameters to name them): the wrapper stays as recorded.
    extra = tool_span("check_payment", {"invoice_id": INVOICE}, "INV-1002", "INV-1003")
    assert arguments(extra)["args"] == ["INV-1002", "INV-1003"]
    unnamed = tool_span("check_payment", {"invoice_id": INVOICE}, "INV-1002") | {"tool.parameters": "{}"}
    assert arguments(unnamed)["args"] == ["INV-1002"]
