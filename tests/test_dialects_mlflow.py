"""MLflow Tracing's own attributes, as its OTLP export carries them (tests/fixtures/real/mlflow_openai):
every ``mlflow.*`` value is JSON text, strings included. Spans are recorded through the real SDK with
the values MLflow 3.17 writes (``json.dumps`` of the span type, the function's arguments, its return
value, an autologged client's request and response)."""

from __future__ import annotations

import json
from typing import Any

from otel_traj.dialects import to_step
from otel_traj.steps import ContextOperation, RequestedTool
from tests.dialect_spans import record
from tests.dialect_steps import ANSWER, ARGS, USER, as_agent, as_model, as_tool


class PaymentGatewayError(Exception):
    pass


def mlflow_span(span_type: str, inputs: Any = None, outputs: Any = None, **more: Any) -> dict[str, str]:
    """The attributes MLflow sets on a span: each value ``json.dumps``-ed."""
    attributes = {"mlflow.traceRequestId": "tr-1", "mlflow.spanType": span_type, **more}
    if inputs is not None:
        attributes["mlflow.spanInputs"] = inputs
    if outputs is not None:
        attributes["mlflow.spanOutputs"] = outputs
    return {key: json.dumps(value) for key, value in attributes.items()}


def test_tool_span_arguments_and_result() -> None:
    attributes = mlflow_span(
        "TOOL", {"customer_id": "C023"}, {"plan": "pro"}, **{"mlflow.spanFunctionName": "get_subscription"}
    )
    tool = as_tool(to_step(record("get_subscription", attributes, scope="mlflow.tracing.provider")))
    assert (tool.name, tool.arguments_text, tool.result, tool.call_id, tool.ok, tool.dialect) == (
        "get_subscription",
        ARGS,
        '{"plan": "pro"}',
        None,
        True,
        "mlflow",
    )


def test_a_returned_string_is_the_result_not_its_json() -> None:
    tool = as_tool(to_step(record("lookup", mlflow_span("TOOL", {"q": "x"}, "pro plan"))))
    assert tool.result == "pro plan"


def test_failed_tool_span() -> None:
    """MLflow's ``exception`` event names the class alone; the status holds ``type: message``."""
    event = {"exception.message": "payment gateway timeout", "exception.type": "PaymentGatewayError"}
    span = record(
        "check_payment",
        {**mlflow_span("TOOL", {"invoice_id": "INV-1002"}), "mlflow.spanLogLevel": "40"},
        events=[("exception", event)],
        error=PaymentGatewayError("payment gateway timeout"),
        status_message="PaymentGatewayError: payment gateway timeout",
    )
    tool = as_tool(to_step(span))
    assert (tool.ok, tool.error_type, tool.error_message, tool.result) == (
        False,
        "PaymentGatewayError",
        "payment gateway timeout",
        None,
    )


def _openai_request(*after: dict[str, Any]) -> dict[str, Any]:
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": USER}, *after]
    return {"model": "gpt-4o-mini", "messages": messages, "tools": [{"type": "function"}]}


def test_autologged_chat_completion() -> None:
    called = {
        "role": "assistant",
        "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "a", "arguments": "{}"}}],
    }
    request = _openai_request(called, {"role": "tool", "tool_call_id": "call_1", "content": '{"ok": 1}'})
    response = {
        "id": "chatcmpl-2",
        "choices": [
            {
                "finish_reason": "tool_calls",
                "index": 0,
                "message": {
                    "content": None,
                    "role": "assistant",
                    "tool_calls": [
                        {
                            "id": "call_2",
                            "function": {"arguments": ARGS, "name": "get_subscription"},
                            "type": "function",
                        }
                    ],
                },
            }
        ],
        "model": "gpt-4o-mini",
        "usage": {"completion_tokens": 25, "prompt_tokens": 250, "total_tokens": 275},
    }
    usage = {"input_tokens": 250, "output_tokens": 25, "total_tokens": 275, "cache_read_input_tokens": 200}
    attributes = mlflow_span(
        "CHAT_MODEL",
        request,
        response,
        **{
            "mlflow.llm.model": "gpt-4o-mini",
            "mlflow.chat.tokenUsage": usage,
            "mlflow.message.format": "openai",
        },
    )
    model = as_model(to_step(record("Completions", attributes)))
    assert (model.model, model.input_tokens, model.output_tokens, model.cache_read_tokens) == (
        "gpt-4o-mini",
        250,
        25,
        200,
    )
    assert model.requested_tools == (
        RequestedTool(name="get_subscription", call_id="call_2", arguments_text=ARGS),
    )
    assert (model.finish_reasons, model.input_text, model.dialect) == (("tool_calls",), USER, "mlflow")
    assert model.tool_results == (("call_1", '{"ok": 1}'),)


def test_autologged_final_answer() -> None:
    response = {"choices": [{"finish_reason": "stop", "message": {"role": "assistant", "content": ANSWER}}]}
    model = as_model(to_step(record("Completions", mlflow_span("CHAT_MODEL", _openai_request(), response))))
    assert (model.output_text, model.requested_tools, model.finish_reasons) == (ANSWER, (), ("stop",))


def test_anthropic_message_and_a_result_sent_back_as_a_failure() -> None:
    """Another client's response object (content blocks) and request (``is_error`` on a result)."""
    failed = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "timeout", "is_error": True}
    request = {
        "model": "claude-sonnet-4-5",
        "messages": [
            {"role": "user", "content": USER},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "toolu_1", "name": "a", "input": {}}],
            },
            {"role": "user", "content": [failed]},
        ],
    }
    response = {
        "role": "assistant",
        "content": [
            {
                "type": "tool_use",
                "id": "toolu_2",
                "name": "get_subscription",
                "input": {"customer_id": "C023"},
            }
        ],
        "stop_reason": "tool_use",
    }
    model = as_model(to_step(record("Messages.create", mlflow_span("CHAT_MODEL", request, response))))
    assert model.requested_tools == (
        RequestedTool(name="get_subscription", call_id="toolu_2", arguments_text=ARGS),
    )
    assert (model.finish_reasons, model.input_text, model.failed_results) == (
        ("tool_use",),
        USER,
        ("toolu_1",),
    )


def test_agent_span_input_answer_and_session() -> None:
    attributes = mlflow_span(
        "AGENT", {"question": USER}, ANSWER, **{"mlflow.spanFunctionName": "support_agent"}
    )
    agent = as_agent(to_step(record("support_agent", attributes)))
    assert (agent.agent_name, agent.input_text, agent.output_text, agent.conversation_id, agent.dialect) == (
        "support_agent",
        USER,
        ANSWER,
        None,
        "mlflow",
    )
    # The session on the root span, where MLflow's other exporters copy it from the trace metadata.
    attributes = {
        **mlflow_span("AGENT", {"messages": [{"role": "user", "content": USER}]}),
        "session.id": "c-1",
    }
    agent = as_agent(to_step(record("run", attributes)))
    assert (agent.input_text, agent.conversation_id) == (USER, "c-1")


def test_other_span_types_are_no_steps() -> None:
    for span_type in ("CHAIN", "EMBEDDING", "MEMORY", "UNKNOWN"):
        assert to_step(record("step", mlflow_span(span_type, {"x": 1}, "y"))) is None
    # A RETRIEVER is a read of what it returned (``tests/test_retrievers.py``).
    read = to_step(record("step", mlflow_span("RETRIEVER", {"x": 1}, "y")))
    assert isinstance(read, ContextOperation) and (read.operation, read.text) == ("retrieval", "y")
    # The bare type names too (an exporter that writes them as plain strings).
    bare = {"mlflow.spanType": "TOOL", "mlflow.spanInputs": ARGS}
    assert as_tool(to_step(record("get_subscription", bare))).arguments_text == ARGS
