"""Dialects of LLM observability SDKs without a recorded fixture: Langfuse (attributes from its own
builders) and Traceloop / OpenLLMetry's indexed prompt and completion attributes and decorated
tools and workflows. Spans are recorded through the real SDK."""

from __future__ import annotations

import json

from langfuse._client.attributes import create_generation_attributes, create_span_attributes

from otel_traj.dialects import to_step
from otel_traj.steps import RequestedTool
from tests.dialect_spans import record
from tests.dialect_steps import ANSWER, ARGS, USER, as_agent, as_model, as_tool


# Langfuse: attributes from the SDK's own builders (langfuse._client.attributes).
def test_langfuse_tool_observation() -> None:
    attributes = create_span_attributes(
        observation_type="tool",
        input={"args": (), "kwargs": {"customer_id": "C023"}},
        output={"plan": "pro"},
    )
    tool = as_tool(to_step(record("get_subscription", attributes, scope="langfuse-sdk")))
    assert (tool.name, tool.arguments, tool.result, tool.dialect) == (
        "get_subscription",
        {"customer_id": "C023"},
        '{"plan": "pro"}',
        "langfuse",
    )


def test_langfuse_positional_arguments_stay_text() -> None:
    attributes = create_span_attributes(observation_type="tool", input={"args": ("C023",), "kwargs": {}})
    tool = as_tool(to_step(record("get_subscription", attributes)))
    assert tool.arguments is None
    assert tool.arguments_text == '{"args": ["C023"], "kwargs": {}}'


def test_langfuse_failed_tool_observation() -> None:
    attributes = create_span_attributes(
        observation_type="tool",
        input={"args": (), "kwargs": {"invoice_id": "INV-1002"}},
        level="ERROR",
        status_message="payment gateway timeout",
    )
    tool = as_tool(to_step(record("check_payment", attributes)))
    assert (tool.ok, tool.error_message) == (False, "payment gateway timeout")


def test_langfuse_generation_with_usage_details_and_tool_calls() -> None:
    attributes = create_generation_attributes(
        model="gpt-4o-mini",
        input=[{"role": "system", "content": "be brief"}, {"role": "user", "content": USER}],
        output={
            "role": "assistant",
            "tool_calls": [{"id": "call_1", "function": {"name": "get_subscription", "arguments": ARGS}}],
        },
        usage_details={"input": 150, "output": 15, "total": 165, "cache_read_input_tokens": 100},
    )
    model = as_model(to_step(record("OpenAI-generation", attributes)))
    assert (model.model, model.input_tokens, model.output_tokens, model.cache_read_tokens) == (
        "gpt-4o-mini",
        150,
        15,
        100,
    )
    assert model.requested_tools == (
        RequestedTool(name="get_subscription", call_id="call_1", arguments_text=ARGS),
    )
    assert (model.input_text, model.dialect) == (USER, "langfuse")


def test_langfuse_agent_and_plain_spans() -> None:
    attributes = {
        **create_span_attributes(
            observation_type="agent", input={"args": (), "kwargs": {"question": USER}}, output=ANSWER
        ),
        "session.id": "conv-1",
    }
    agent = as_agent(to_step(record("support_agent", attributes)))
    assert (agent.agent_name, agent.input_text, agent.output_text, agent.conversation_id) == (
        "support_agent",
        USER,
        ANSWER,
        "conv-1",
    )
    assert to_step(record("step", create_span_attributes(observation_type="span", input="x"))) is None


# Traceloop / OpenLLMetry before the semconv attributes: indexed prompt and completion attributes.
def test_traceloop_indexed_llm_span() -> None:
    attributes = {
        "llm.request.type": "chat",
        "gen_ai.system": "OpenAI",
        "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.response.model": "gpt-4o-mini-2024-07-18",
        "gen_ai.prompt.0.role": "system",
        "gen_ai.prompt.0.content": "be brief",
        "gen_ai.prompt.1.role": "user",
        "gen_ai.prompt.1.content": USER,
        "gen_ai.completion.0.role": "assistant",
        "gen_ai.completion.0.finish_reason": "tool_calls",
        "gen_ai.completion.0.tool_calls.0.id": "call_1",
        "gen_ai.completion.0.tool_calls.0.name": "get_subscription",
        "gen_ai.completion.0.tool_calls.0.arguments": ARGS,
        "gen_ai.usage.prompt_tokens": 150,
        "gen_ai.usage.completion_tokens": 15,
        "llm.usage.total_tokens": 165,
    }
    model = as_model(to_step(record("openai.chat", attributes)))
    assert (model.model, model.input_tokens, model.output_tokens, model.finish_reasons) == (
        "gpt-4o-mini-2024-07-18",
        150,
        15,
        ("tool_calls",),
    )
    assert model.requested_tools == (
        RequestedTool(name="get_subscription", call_id="call_1", arguments_text=ARGS),
    )
    assert (model.input_text, model.dialect) == (USER, "traceloop")


def test_traceloop_decorated_tool_and_workflow() -> None:
    tool_attributes = {
        "traceloop.span.kind": "tool",
        "traceloop.entity.name": "get_subscription",
        "traceloop.entity.input": json.dumps({"args": [], "kwargs": {"customer_id": "C023"}}),
        "traceloop.entity.output": '{"plan": "pro"}',
    }
    tool = as_tool(to_step(record("get_subscription.tool", tool_attributes)))
    assert (tool.name, tool.arguments, tool.result) == (
        "get_subscription",
        {"customer_id": "C023"},
        '{"plan": "pro"}',
    )
    tool_attributes["traceloop.entity.input"] = json.dumps({"args": ["C023"], "kwargs": {}})
    tool = as_tool(to_step(record("get_subscription.tool", tool_attributes)))
    assert (tool.arguments, tool.arguments_text) == (None, '{"args": ["C023"], "kwargs": {}}')
    workflow = {
        "traceloop.span.kind": "workflow",
        "traceloop.entity.name": "support_flow",
        "traceloop.entity.input": json.dumps({"args": [USER], "kwargs": {}}),
        "traceloop.entity.output": json.dumps(ANSWER),
    }
    agent = as_agent(to_step(record("support_flow.workflow", workflow)))
    assert (agent.agent_name, agent.output_text) == ("support_flow", ANSWER)
    task = {"traceloop.span.kind": "task", "traceloop.entity.name": "step"}
    assert to_step(record("step.task", task)) is None


def test_openinference_tool_messages_without_ids_take_them_from_input_value() -> None:
    # openinference-instrumentation-litellm flattens a tool message to its role and content; the
    # request's `input.value` keeps the OpenAI messages with their `tool_call_id`.
    asked = {
        "role": "assistant",
        "tool_calls": [{"id": "call_1", "function": {"name": "f", "arguments": "{}"}}],
    }
    messages = [
        {"role": "user", "content": USER},
        asked,
        {"role": "tool", "tool_call_id": "call_1", "content": "42"},
    ]
    view = record(
        "completion",
        {
            "openinference.span.kind": "LLM",
            "llm.input_messages.0.message.role": "user",
            "llm.input_messages.0.message.content": USER,
            "llm.input_messages.1.message.role": "assistant",
            "llm.input_messages.1.message.tool_calls.0.tool_call.id": "call_1",
            "llm.input_messages.1.message.tool_calls.0.tool_call.function.name": "f",
            "llm.input_messages.2.message.role": "tool",
            "llm.input_messages.2.message.content": "42",
            "input.value": json.dumps({"messages": messages}),
            "input.mime_type": "application/json",
        },
    )
    assert as_model(to_step(view)).tool_results == (("call_1", "42"),)


def test_openinference_calls_without_arguments_take_them_from_output_value() -> None:
    # openinference-instrumentation-openai-agents leaves `tool_call.function.arguments` out of the
    # flattened response when a call's arguments are `{}` (the SDK's handoff tool); `output.value`
    # keeps the response's messages whole.
    response = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "transfer_to_b", "arguments": "{}"}},
            {"id": "call_2", "type": "function", "function": {"name": "f", "arguments": '{"x": 1}'}},
        ],
    }
    attributes = {
        "openinference.span.kind": "LLM",
        "llm.output_messages.0.message.role": "assistant",
        "llm.output_messages.0.message.tool_calls.0.tool_call.id": "call_1",
        "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "transfer_to_b",
        "llm.output_messages.0.message.tool_calls.1.tool_call.id": "call_2",
        "llm.output_messages.0.message.tool_calls.1.tool_call.function.name": "f",
        "llm.output_messages.0.message.tool_calls.1.tool_call.function.arguments": '{"x": 1}',
        "output.value": json.dumps([response]),
        "output.mime_type": "application/json",
    }
    model = as_model(to_step(record("generation", attributes)))
    assert model.requested_tools == (
        RequestedTool(name="transfer_to_b", call_id="call_1", arguments_text="{}"),
        RequestedTool(name="f", call_id="call_2", arguments_text='{"x": 1}'),
    )
    # Without `output.value`, or when it names other calls, the flattened calls stay as they are.
    flattened = {k: v for k, v in attributes.items() if not k.startswith("output.")}
    for other in ({}, {"output.value": json.dumps([response | {"tool_calls": []}])}):
        model = as_model(to_step(record("generation", {**flattened, **other})))
        assert model.requested_tools[0] == RequestedTool(name="transfer_to_b", call_id="call_1")


def test_a_chat_completion_in_output_value_gives_the_calls_it_requested() -> None:
    # LiteLLM's OpenInference span keeps the provider's whole response in `output.value`: its calls
    # are read there when no `llm.output_messages.*` holds them (Langfuse deletes those).
    call = {"id": "call_1", "type": "function", "function": {"name": "get_subscription", "arguments": ARGS}}
    message = {"role": "assistant", "content": None, "tool_calls": [call]}
    completion = {
        "object": "chat.completion",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": message}],
    }
    attributes = {"openinference.span.kind": "LLM", "output.value": json.dumps(completion)}
    model = as_model(to_step(record("completion", attributes)))
    assert model.requested_tools == (
        RequestedTool(name="get_subscription", call_id="call_1", arguments_text=ARGS),
    )


def test_a_langchain_llm_result_in_output_value_gives_the_calls_it_requested() -> None:
    # A LangChain chat model's OpenInference span keeps its LLMResult in `output.value`, the message
    # serialized by LangChain: its calls are read there when no `llm.output_messages.*` holds them.
    call = {"name": "get_subscription", "args": {"customer_id": "C023"}, "id": "call_1", "type": "tool_call"}
    message = {
        "lc": 1,
        "type": "constructor",
        "id": ["langchain", "schema", "messages", "AIMessage"],
        "kwargs": {"content": "", "type": "ai", "tool_calls": [call]},
    }
    generation = {"text": "", "generation_info": {"finish_reason": "tool_calls"}, "message": message}
    result = {"generations": [[generation]], "type": "LLMResult"}
    attributes = {"openinference.span.kind": "LLM", "output.value": json.dumps(result)}
    model = as_model(to_step(record("ChatOpenAI", attributes)))
    assert [(r.name, r.call_id, r.arguments_text) for r in model.requested_tools] == [
        ("get_subscription", "call_1", ARGS)
    ]
    assert model.finish_reasons == ("tool_calls",)


def test_litellm_calls_recorded_as_indexed_function_calls_beside_semconv_reasons() -> None:
    # LiteLLM's OpenTelemetry logger: `gen_ai.output.messages` keeps only the finish reason of a
    # response with calls; the calls are `gen_ai.completion.N.function_call.*`, one per call, no ids.
    view = record(
        "litellm_request",
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.system": "openai",
            "gen_ai.output.messages": json.dumps(
                [{"role": "assistant", "parts": [], "finish_reason": "tool_calls"}]
            ),
            "gen_ai.completion.0.function_call.name": "get_subscription",
            "gen_ai.completion.0.function_call.arguments": ARGS,
            "gen_ai.completion.1.function_call.name": "list_invoices",
            "gen_ai.completion.1.function_call.arguments": ARGS,
        },
    )
    model = as_model(to_step(view))
    assert model.requested_tools == (
        RequestedTool(name="get_subscription", arguments_text=ARGS),
        RequestedTool(name="list_invoices", arguments_text=ARGS),
    )
    assert model.finish_reasons == ("tool_calls",)
    assert model.output_text is None
