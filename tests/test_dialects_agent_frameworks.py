"""Dialects of agent frameworks without a recorded fixture: the OpenAI Agents SDK as Logfire records
it, the Vercel AI SDK and Google ADK. Spans are recorded through the real SDK with the attribute
layout each framework's source writes."""

from __future__ import annotations

import json

from otel_traj.dialects import to_step
from otel_traj.steps import RequestedTool
from tests.dialect_spans import record
from tests.dialect_steps import ANSWER, ARGS, USER, as_agent, as_model, as_tool


class PaymentGatewayError(Exception):
    pass


# Logfire: logfire/_internal/integrations/openai_agents.py names spans by their message template.
LOGFIRE = {"logfire.span_type": "span", "gen_ai.system": "openai", "gen_ai.provider.name": "openai"}


def test_logfire_function_span_is_a_tool_call() -> None:
    view = record(
        "Function: {name}",
        {
            **LOGFIRE,
            "logfire.msg_template": "Function: {name}",
            "logfire.msg": "Function: get_subscription",
            "name": "get_subscription",
            "input": ARGS,
            "output": "{'customer_id': 'C023', 'plan': 'pro'}",
            "mcp_data": "null",
        },
    )
    tool = as_tool(to_step(view))
    assert (tool.name, tool.arguments_text, tool.ok, tool.dialect) == (
        "get_subscription",
        ARGS,
        True,
        "logfire",
    )
    assert tool.result == "{'customer_id': 'C023', 'plan': 'pro'}"


def test_logfire_failed_function_span() -> None:
    error = {
        "message": "Error running tool (non-fatal)",
        "data": {"tool_name": "check_payment", "error": "boom"},
    }
    view = record(
        "Function: {name}",
        {
            **LOGFIRE,
            "logfire.msg_template": "Function: {name}",
            "name": "check_payment",
            "input": '{"invoice_id": "INV-1002"}',
            "error": json.dumps(error),
            "logfire.level_num": 17,
        },
    )
    tool = as_tool(to_step(view))
    assert (tool.ok, tool.error_message) == (False, "boom")


def test_logfire_chat_completion_counts_usage_once() -> None:
    output = [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_subscription", "arguments": ARGS},
                }
            ],
        }
    ]
    attributes = {
        **LOGFIRE,
        "logfire.msg_template": "Chat completion with {gen_ai.request.model!r}",
        "logfire.tags": ("LLM",),
        "input": json.dumps([{"role": "system", "content": "be brief"}, {"role": "user", "content": USER}]),
        "output": json.dumps(output),
        "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.response.model": "gpt-4o-mini",
        "usage": json.dumps({"input_tokens": 150, "output_tokens": 15}),
        "gen_ai.usage.input_tokens": 150,
        "gen_ai.usage.output_tokens": 15,
    }
    model = as_model(to_step(record("Chat completion with {gen_ai.request.model!r}", attributes)))
    assert (model.input_tokens, model.output_tokens, model.model) == (150, 15, "gpt-4o-mini")
    assert model.requested_tools == (
        RequestedTool(name="get_subscription", call_id="call_1", arguments_text=ARGS),
    )
    assert model.input_text == USER
    only_json = {k: v for k, v in attributes.items() if not k.startswith("gen_ai.usage.")}
    model = as_model(to_step(record("Chat completion with {gen_ai.request.model!r}", only_json)))
    assert (model.input_tokens, model.output_tokens) == (150, 15)


def test_logfire_responses_span_reads_function_calls_from_the_response() -> None:
    response = {
        "model": "gpt-4o-2024-08-06",
        "output": [
            {
                "id": "fc_1",
                "type": "function_call",
                "call_id": "call_9",
                "name": "list_invoices",
                "arguments": ARGS,
            }
        ],
        "usage": {"input_tokens": 90, "output_tokens": 9, "input_tokens_details": {"cached_tokens": 40}},
    }
    view = record(
        "chat gpt-4o",
        {
            **LOGFIRE,
            "logfire.msg_template": "Responses API with {gen_ai.request.model!r}",
            "gen_ai.request.model": "gpt-4o",
            "gen_ai.response.model": "gpt-4o-2024-08-06",
            "gen_ai.operation.name": "chat",
            "raw_input": json.dumps([{"role": "user", "content": USER}]),
            "response": json.dumps(response),
        },
    )
    model = as_model(to_step(view))
    assert model.requested_tools == (
        RequestedTool(name="list_invoices", call_id="call_9", arguments_text=ARGS),
    )
    assert (model.input_tokens, model.output_tokens, model.cache_read_tokens) == (90, 9, 40)
    assert (model.model, model.input_text) == ("gpt-4o-2024-08-06", USER)


def test_logfire_agent_span() -> None:
    view = record(
        "Agent run: {name!r}",
        {
            **LOGFIRE,
            "logfire.msg_template": "Agent run: {name!r}",
            "name": "support_agent",
            "tools": ("a", "b"),
        },
    )
    assert as_agent(to_step(view)).agent_name == "support_agent"


def test_logfire_spans_of_other_kinds_are_not_steps() -> None:
    handoff = {**LOGFIRE, "logfire.msg_template": "Handoff: {from_agent} → {to_agent}", "from_agent": "a"}
    assert to_step(record("Handoff: {from_agent} → {to_agent}", handoff)) is None
    http = {"logfire.msg_template": "GET /x", "http.request.method": "GET"}
    assert to_step(record("GET /x", http)) is None


# Vercel AI SDK: packages/ai/core/generate-text (recordSpan with selectTelemetryAttributes).
def test_vercel_tool_call() -> None:
    attributes = {
        "operation.name": "ai.toolCall support_agent",
        "ai.operationId": "ai.toolCall",
        "ai.telemetry.functionId": "support_agent",
        "ai.toolCall.name": "get_subscription",
        "ai.toolCall.id": "call_1",
        "ai.toolCall.args": ARGS,
        "ai.toolCall.result": '{"plan":"pro"}',
    }
    tool = as_tool(to_step(record("ai.toolCall", attributes, scope="ai")))
    assert (tool.name, tool.call_id, tool.arguments_text, tool.result, tool.dialect) == (
        "get_subscription",
        "call_1",
        ARGS,
        '{"plan":"pro"}',
        "vercel",
    )
    failed = {k: v for k, v in attributes.items() if k != "ai.toolCall.result"}
    tool = as_tool(
        to_step(record("ai.toolCall", failed, error=PaymentGatewayError("payment gateway timeout")))
    )
    assert (tool.ok, tool.error_type, tool.error_message) == (
        False,
        f"{__name__}.PaymentGatewayError",
        "payment gateway timeout",
    )


def test_vercel_do_generate_is_the_model_call_and_generate_text_the_agent() -> None:
    calls = [
        {"toolCallType": "function", "toolCallId": "call_1", "toolName": "get_subscription", "args": ARGS}
    ]
    do_generate = {
        "operation.name": "ai.generateText.doGenerate",
        "ai.operationId": "ai.generateText.doGenerate",
        "ai.model.id": "gpt-4o-mini",
        "ai.model.provider": "openai.chat",
        "ai.prompt.messages": json.dumps(
            [
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": [{"type": "text", "text": USER}]},
            ]
        ),
        "ai.response.toolCalls": json.dumps(calls),
        "ai.response.finishReason": "tool-calls",
        "ai.usage.promptTokens": 150,
        "ai.usage.completionTokens": 15,
        "gen_ai.system": "openai.chat",
        "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.usage.input_tokens": 150,
        "gen_ai.usage.output_tokens": 15,
    }
    model = as_model(to_step(record("ai.generateText.doGenerate", do_generate)))
    assert (model.model, model.provider, model.input_tokens, model.output_tokens) == (
        "gpt-4o-mini",
        "openai.chat",
        150,
        15,
    )
    assert model.requested_tools == (
        RequestedTool(name="get_subscription", call_id="call_1", arguments_text=ARGS),
    )
    assert (model.input_text, model.finish_reasons) == (USER, ("tool-calls",))
    v5 = {k: v for k, v in do_generate.items() if not k.startswith(("ai.usage", "gen_ai.usage"))}
    v5 |= {"ai.usage.inputTokens": 7, "ai.usage.outputTokens": 3}
    v5["ai.response.toolCalls"] = json.dumps([{"toolCallId": "c", "toolName": "t", "input": {"a": 1}}])
    model = as_model(
        to_step(record("ai.streamText.doStream", v5 | {"ai.operationId": "ai.streamText.doStream"}))
    )
    assert (model.input_tokens, model.output_tokens) == (7, 3)
    assert model.requested_tools == (RequestedTool(name="t", call_id="c", arguments_text='{"a": 1}'),)

    outer = {
        "operation.name": "ai.generateText support_agent",
        "ai.operationId": "ai.generateText",
        "ai.telemetry.functionId": "support_agent",
        "ai.prompt": json.dumps({"system": "be brief", "prompt": USER}),
        "ai.response.text": ANSWER,
        "ai.usage.promptTokens": 400,
        "ai.usage.completionTokens": 40,
    }
    agent = as_agent(to_step(record("ai.generateText", outer)))
    assert (agent.agent_name, agent.input_text, agent.output_text) == ("support_agent", USER, ANSWER)
    assert (agent.input_tokens, agent.output_tokens) == (400, 40)


# Google ADK: src/google/adk/telemetry/tracing.py (trace_tool_call, trace_call_llm).
def test_adk_tool_call_with_unspecified_id() -> None:
    attributes = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.description": "Look up the subscription.",
        "gen_ai.tool.name": "get_subscription",
        "gen_ai.tool.type": "FunctionTool",
        "gcp.vertex.agent.llm_request": "{}",
        "gcp.vertex.agent.llm_response": "{}",
        "gcp.vertex.agent.tool_call_args": ARGS,
        "gen_ai.tool.call.id": "<not specified>",
        "gcp.vertex.agent.event_id": "e-1",
        "gcp.vertex.agent.tool_response": '{"result": "<not specified>"}',
    }
    tool = as_tool(to_step(record("execute_tool get_subscription", attributes, scope="gcp.vertex.agent")))
    assert (tool.name, tool.call_id, tool.arguments_text, tool.dialect) == (
        "get_subscription",
        None,
        ARGS,
        "adk",
    )
    attributes["gen_ai.tool.call.id"] = "adk-7"
    assert as_tool(to_step(record("execute_tool get_subscription", attributes))).call_id == "adk-7"


def test_adk_call_llm() -> None:
    request = {
        "model": "gemini-2.0-flash",
        "config": {"system_instruction": "be brief"},
        "contents": [{"role": "user", "parts": [{"text": USER}]}],
    }
    response = {
        "content": {
            "role": "model",
            "parts": [
                {
                    "function_call": {
                        "id": "adk-1",
                        "name": "get_subscription",
                        "args": {"customer_id": "C023"},
                    }
                }
            ],
        },
        "usage_metadata": {"prompt_token_count": 120, "candidates_token_count": 12},
    }
    attributes = {
        "gen_ai.system": "gcp.vertex.agent",
        "gen_ai.request.model": "gemini-2.0-flash",
        "gcp.vertex.agent.invocation_id": "inv-1",
        "gcp.vertex.agent.session_id": "s-1",
        "gcp.vertex.agent.event_id": "e-2",
        "gcp.vertex.agent.llm_request": json.dumps(request),
        "gcp.vertex.agent.llm_response": json.dumps(response),
        "gen_ai.usage.input_tokens": 120,
        "gen_ai.usage.output_tokens": 12,
    }
    model = as_model(to_step(record("call_llm", attributes)))
    assert (model.model, model.provider, model.input_tokens, model.output_tokens) == (
        "gemini-2.0-flash",
        "gcp.vertex.agent",
        120,
        12,
    )
    assert model.requested_tools == (
        RequestedTool(name="get_subscription", call_id="adk-1", arguments_text=ARGS),
    )
    assert (model.input_text, model.dialect) == (USER, "adk")


def test_adk_invoke_agent() -> None:
    attributes = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.description": "support",
        "gen_ai.agent.name": "support_agent",
        "gen_ai.conversation.id": "s-1",
    }
    agent = as_agent(to_step(record("invoke_agent support_agent", attributes)))
    assert (agent.agent_name, agent.conversation_id) == ("support_agent", "s-1")


# Mastra: @mastra/otel-exporter writes GenAI span names, the run's input and output in its own
# `mastra.agent_run.*` attributes and the tracing metadata as `mastra.metadata.<key>`.
def test_mastra_agent_span_input_output_and_session() -> None:
    attributes = {
        "gen_ai.operation.name": "invoke_agent",
        "mastra.span.type": "agent_run",
        "gen_ai.agent.name": "support_agent",
        "mastra.agent_run.input": USER,
        "mastra.agent_run.output": json.dumps({"text": ANSWER, "files": []}),
        "mastra.metadata.sessionId": "conv-1",
    }
    agent = as_agent(to_step(record("invoke_agent support_agent", attributes)))
    assert (agent.agent_name, agent.input_text, agent.output_text, agent.conversation_id) == (
        "support_agent",
        USER,
        ANSWER,
        "conv-1",
    )
    # `generate` given a message list records the list: the last user message is the input.
    messages = [
        {"role": "user", "content": "Hello"},
        {"role": "user", "content": [{"type": "text", "text": USER}]},
    ]
    attributes["mastra.agent_run.input"] = json.dumps(messages)
    agent = as_agent(to_step(record("invoke_agent support_agent", attributes)))
    assert agent.input_text == USER
