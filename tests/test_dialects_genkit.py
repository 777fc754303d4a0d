"""Genkit's own tracing (tests/fixtures/real/genkit): every action a span of ``genkit:*`` attributes.
Spans are recorded through the real SDK with the values Genkit 1.42 writes (``genkit:input`` /
``genkit:output`` as JSON, Genkit's message shape, the subtype of each action), from the recording
and from a flow (``ai.defineFlow``) around ``ai.generate``."""

from __future__ import annotations

import json
from typing import Any

from otel_traj.dialects import to_step
from otel_traj.steps import RequestedTool
from tests.dialect_spans import record
from tests.dialect_steps import ANSWER, ARGS, USER, as_agent, as_model, as_tool

SYSTEM = {"role": "system", "content": [{"text": "You are a customer-support agent."}]}
ASKED = {
    "role": "model",
    "content": [
        {"toolRequest": {"name": "get_subscription", "ref": "call_1", "input": {"customer_id": "C023"}}}
    ],
}
ANSWERED = {
    "role": "tool",
    "content": [{"toolResponse": {"name": "get_subscription", "ref": "call_1", "output": {"plan": "pro"}}}],
}


class PaymentGatewayError(Exception):
    pass


def action(subtype: str, name: str, path: str, **values: Any) -> dict[str, Any]:
    """The attributes Genkit sets on an action's span: input and output as JSON."""
    attributes: dict[str, Any] = {
        "genkit:type": "action",
        "genkit:metadata:subtype": subtype,
        "genkit:key": f"/{subtype}/{name}",
        "genkit:name": name,
        "genkit:path": path,
        "genkit:state": "success",
    }
    for key in ("input", "output"):
        if key in values:
            attributes[f"genkit:{key}"] = json.dumps(values.pop(key))
    return {**attributes, **values}


def test_tool_span_arguments_and_result() -> None:
    attributes = action(
        "tool",
        "get_subscription",
        "/{support_agent,t:action}/{runTurn-1,t:flowStep}/{generate,t:util}/{get_subscription,t:action,s:tool}",
        input={"customer_id": "C023"},
        output={"plan": "pro"},
    )
    tool = as_tool(to_step(record("get_subscription", attributes, scope="genkit-tracer")))
    assert (tool.name, tool.arguments_text, tool.result, tool.call_id, tool.ok, tool.dialect) == (
        "get_subscription",
        ARGS,
        '{"plan": "pro"}',
        None,
        True,
        "genkit",
    )


def test_failed_tool_span() -> None:
    attributes = action(
        "tool",
        "check_payment",
        "/{support_agent,t:flow}/{generate,t:util}/{check_payment,t:action,s:tool}",
        input={"invoice_id": "INV-1002"},
        **{"genkit:state": "error", "genkit:isFailureSource": True},
    )
    # OpenTelemetry JS's exception event (the error's `name`), recorded before Python's own.
    event = {"exception.type": "PaymentGatewayError", "exception.message": "payment gateway timeout"}
    span = record(
        "check_payment",
        attributes,
        events=[("exception", event)],
        error=PaymentGatewayError("payment gateway timeout"),
    )
    tool = as_tool(to_step(span))
    assert (tool.ok, tool.error_type, tool.error_message, tool.result) == (
        False,
        "PaymentGatewayError",
        "payment gateway timeout",
        None,
    )


def test_model_span_request_response_and_usage() -> None:
    """A model action: the request in Genkit's messages (a result sent back as ``toolResponse``), the
    response's ``toolRequest`` with its ``ref``, Genkit's ``finishReason`` and usage."""
    request = {
        "messages": [SYSTEM, {"role": "user", "content": [{"text": USER}]}, ASKED, ANSWERED],
        "config": {},
    }
    response = {
        "finishReason": "stop",
        "message": {
            "role": "model",
            "content": [
                {
                    "toolRequest": {
                        "name": "get_subscription",
                        "ref": "call_2",
                        "input": {"customer_id": "C023"},
                    }
                }
            ],
        },
        "usage": {"inputTokens": 250, "outputTokens": 25, "totalTokens": 275, "cachedContentTokens": 200},
        "raw": {"object": "chat.completion", "model": "gpt-4o-mini"},
        "latencyMs": 3.4,
    }
    attributes = action(
        "model",
        "openai/gpt-4o-mini",
        "/{support_agent,t:flow}/{generate,t:util}/{generate,t:util}/{openai/gpt-4o-mini,t:action,s:model}",
        input=request,
        output=response,
    )
    model = as_model(to_step(record("openai/gpt-4o-mini", attributes)))
    assert (
        model.model,
        model.provider,
        model.input_tokens,
        model.output_tokens,
        model.cache_read_tokens,
    ) == (
        "openai/gpt-4o-mini",
        "openai",
        250,
        25,
        200,
    )
    assert model.requested_tools == (
        RequestedTool(name="get_subscription", call_id="call_2", arguments_text=ARGS),
    )
    assert (model.finish_reasons, model.input_text, model.dialect) == (("stop",), USER, "genkit")
    assert model.tool_results == (("call_1", '{"plan": "pro"}'),)


def test_model_answer() -> None:
    response = {"finishReason": "stop", "message": {"role": "model", "content": [{"text": ANSWER}]}}
    attributes = action("model", "openai/gpt-4o-mini", "/{generate,t:util}", output=response)
    model = as_model(to_step(record("openai/gpt-4o-mini", attributes)))
    assert (model.output_text, model.requested_tools, model.input_tokens) == (ANSWER, (), None)


def test_agent_span_answer_and_session() -> None:
    """``ai.defineAgent``: the session id as Genkit's agent metadata; no input (a stream), the answer
    in the output's message."""
    attributes = action(
        "agent",
        "support_agent",
        "/{support_agent,t:action}",
        output={"sessionId": "conv-1", "message": {"role": "model", "content": [{"text": ANSWER}]}},
        **{
            "genkit:isRoot": True,
            "genkit:metadata:agent:sessionId": "conv-1",
            "genkit:init": json.dumps({"sessionId": "conv-1"}),
        },
    )
    agent = as_agent(to_step(record("support_agent", attributes)))
    assert (agent.agent_name, agent.input_text, agent.output_text, agent.conversation_id, agent.workflow) == (
        "support_agent",
        None,
        ANSWER,
        "conv-1",
        False,
    )


def test_flow_span_is_a_workflow_agent() -> None:
    """``ai.defineFlow``: its input and output as JSON strings; a flow names the run only when no
    agent inside names it."""
    attributes = action(
        "flow",
        "support_agent",
        "/{support_agent,t:flow}",
        input=USER,
        output=ANSWER,
        **{"genkit:isRoot": True},
    )
    agent = as_agent(to_step(record("support_agent", attributes)))
    assert (agent.agent_name, agent.input_text, agent.output_text, agent.conversation_id, agent.workflow) == (
        "support_agent",
        USER,
        ANSWER,
        None,
        True,
    )


def test_genkit_bookkeeping_spans_are_no_steps() -> None:
    """The ``generate`` util spans repeat the request and the last response (with that call's usage),
    the agent's turn is a ``flowStep``, its prompt a ``promptTemplate``: none is a step."""
    response = {"message": {"role": "model", "content": [{"text": ANSWER}]}, "usage": {"inputTokens": 450}}
    util = {"genkit:type": "util", "genkit:name": "generate", "genkit:output": json.dumps(response)}
    step = {
        "genkit:type": "flowStep",
        "genkit:name": "runTurn-1",
        "genkit:input": json.dumps({"message": {}}),
    }
    render = {"genkit:type": "promptTemplate", "genkit:name": "render", "genkit:metadata:promptName": "a"}
    for name, attributes in (("generate", util), ("runTurn-1", step), ("render", render)):
        assert to_step(record(name, attributes)) is None
    # Other actions (an embedder, a retriever) are no steps either.
    assert to_step(record("embed", action("embedder", "openai/text-embedding-3-small", "/{embed}"))) is None
