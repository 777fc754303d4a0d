"""LlamaIndex's own OpenTelemetry integration (``llama-index-observability-otel``), as it records an
agent workflow (tests/fixtures/real/llamaindex_otel): spans ``<class>.<method>`` whose only attributes
are LlamaIndex's instrument tags, the content in span events (each instrumentation event's fields
flattened with ``.``, lists as JSON). Spans are recorded through the real SDK with the tags and events
llama-index-observability-otel 0.7 writes for llama-index-core 0.14."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from otel_traj.dialects import to_step
from otel_traj.steps import RequestedTool
from tests.dialect_spans import record
from tests.dialect_steps import ANSWER, USER, as_model, as_tool

SCOPE = "llamaindex.opentelemetry.tracer"
SYSTEM = {"role": "system", "additional_kwargs": {}, "blocks": [{"block_type": "text", "text": "Be brief."}]}
ASKED = {"role": "user", "additional_kwargs": {}, "blocks": [{"block_type": "text", "text": USER}]}
CALLED = {
    "role": "assistant",
    "additional_kwargs": {
        "tool_calls": [
            {
                "id": "call_3",
                "function": {"arguments": '{"invoice_id": "INV-1002"}', "name": "check_payment"},
                "type": "function",
            }
        ]
    },
    "blocks": [
        {
            "block_type": "tool_call",
            "tool_call_id": "call_3",
            "tool_name": "check_payment",
            "tool_kwargs": '{"invoice_id": "INV-1002"}',
        }
    ],
}
FAILED = {
    "role": "tool",
    "additional_kwargs": {"tool_call_id": "call_3"},
    "blocks": [{"block_type": "text", "text": "payment gateway timeout"}],
}


def tags(summary: str, event: str = "ToolCall") -> dict[str, str]:
    """The instrument tags a workflow step's spans carry (``session.id`` from the user's own tags)."""
    return {
        "session.id": "conv-1",
        "llamaindex.run_id": "DICg43InF4",
        "llamaindex.step.input_event": event,
        "llamaindex.step.input_summary": summary,
    }


SETUP = tags(
    "AgentSetup(input=[ChatMessage(role=<MessageRole.SYSTEM: 'system'>, additional_kwargs={}, "
    "blocks=[TextBlock(block_type='text', text='Be brief.')])], current_agent_name='support_agent')",
    "AgentSetup",
)
CALL = "ToolCall(tool_name='check_payment', tool_kwargs={'invoice_id': 'INV-1002'}, tool_id='call_3')"


def chat_start(messages: list[Any]) -> dict[str, Any]:
    return {
        "class_name": "LLMChatStartEvent",
        "messages": json.dumps(messages),
        "additional_kwargs.tool_choice": "auto",
        "model_dict.class_name": "openai_llm",
        "model_dict.model_name": "gpt-4o-mini",
    }


def chat_end(messages: list[Any], response: Mapping[str, Any], **raw: Any) -> dict[str, Any]:
    """``LLMChatEndEvent``: the request again, the response message and the provider's response."""
    calls = response["additional_kwargs"].get("tool_calls")
    return {
        "class_name": "LLMChatEndEvent",
        "messages": json.dumps(messages),
        "response.message.role": "assistant",
        **({"response.message.additional_kwargs.tool_calls": json.dumps(calls)} if calls else {}),
        "response.message.blocks": json.dumps(response["blocks"]),
        "response.raw.id": "chatcmpl-2",
        "response.raw.model": "gpt-4o-mini-2024-07-18",
        "response.delta": "null",
        **raw,
    }


def test_tool_span_named_by_its_step_summary() -> None:
    tool = as_tool(to_step(record("FunctionTool.acall", tags(CALL), scope=SCOPE)))
    assert (tool.name, tool.arguments, tool.call_id, tool.result, tool.ok, tool.dialect) == (
        "check_payment",
        {"invoice_id": "INV-1002"},
        "call_3",
        None,
        True,
        "llamaindex",
    )


def test_failed_tool_span() -> None:
    span = record(
        "FunctionTool.acall",
        tags(CALL),
        scope=SCOPE,
        events=[("SpanDropEvent", {"class_name": "SpanDropEvent", "err_str": "payment gateway timeout"})],
        error=RuntimeError("payment gateway timeout"),
    )
    tool = as_tool(to_step(span))
    assert (tool.ok, tool.error_type, tool.error_message) == (
        False,
        "RuntimeError",
        "payment gateway timeout",
    )


def test_a_cut_summary_still_names_the_tool() -> None:
    """Workflows write a dict of more than 3 items as a count and cut the summary at 200 characters:
    the name comes first, the arguments and the id are then the request's."""
    many = "ToolCall(tool_name='create_refund_request', tool_kwargs={4 keys}, tool_id='call_4')"
    cut = "ToolCall(tool_name=\"it's\", tool_kwargs={'note': '" + "x" * 160 + "..."
    for summary, name in ((many, "create_refund_request"), (cut, "it's")):
        tool = as_tool(to_step(record("FunctionTool.acall", tags(summary))))
        assert (tool.name, tool.arguments, tool.arguments_text, tool.call_id) == (name, None, None, None)


def test_the_steps_and_the_root_are_no_steps() -> None:
    """The ``call_tool`` step span has the same tags as the tool inside it; the request-building span
    has no event; the root workflow span no attribute; a tool span needs the ToolCall summary."""
    assert to_step(record("BaseWorkflowAgent.call_tool", tags(CALL))) is None
    assert to_step(record("OpenAI._prepare_chat_with_tools", SETUP)) is None
    assert to_step(record("BaseWorkflowAgent.run_agent_step", SETUP)) is None
    assert to_step(record("FunctionAgent.run", {})) is None
    assert to_step(record("FunctionTool.acall", SETUP)) is None


def test_model_call_with_requested_calls_usage_and_results_sent_back() -> None:
    request = [SYSTEM, ASKED, CALLED, FAILED]
    response = {
        "additional_kwargs": {
            "tool_calls": [
                {
                    "id": "call_4",
                    "function": {"arguments": '{"invoice_id": "INV-1002"}', "name": "create_refund_request"},
                    "type": "function",
                }
            ]
        },
        "blocks": [
            {
                "block_type": "tool_call",
                "tool_call_id": "call_4",
                "tool_name": "create_refund_request",
                "tool_kwargs": '{"invoice_id": "INV-1002"}',
            }
        ],
    }
    raw = {
        "response.raw.choices": json.dumps([{"finish_reason": "tool_calls", "index": 0}]),
        "response.raw.usage.prompt_tokens": 350,
        "response.raw.usage.completion_tokens": 35,
        "response.raw.usage.total_tokens": 385,
        "response.raw.usage.prompt_tokens_details": "null",
        "response.additional_kwargs.prompt_tokens": 1,
        "response.additional_kwargs.completion_tokens": 1,
    }
    events = [
        ("LLMChatStartEvent", chat_start(request)),
        ("LLMChatEndEvent", chat_end(request, response, **raw)),
    ]
    model = as_model(to_step(record("OpenAI.achat", SETUP, scope=SCOPE, events=events)))
    assert (model.model, model.input_tokens, model.output_tokens, model.finish_reasons, model.dialect) == (
        "gpt-4o-mini-2024-07-18",
        350,
        35,
        ("tool_calls",),
        "llamaindex",
    )
    assert model.requested_tools == (
        RequestedTool(
            name="create_refund_request", call_id="call_4", arguments_text='{"invoice_id": "INV-1002"}'
        ),
    )
    assert (model.input_text, model.tool_results, model.output_text) == (
        USER,
        (("call_3", "payment gateway timeout"),),
        None,
    )


def test_answer_and_usage_copied_by_the_llm() -> None:
    """Without the provider's usage in ``response.raw``, the counts LlamaIndex's LLM copies into the
    response's ``additional_kwargs``; the provider's calls when the message has no call blocks."""
    request = [SYSTEM, ASKED]
    response = {"additional_kwargs": {}, "blocks": [{"block_type": "text", "text": ANSWER}]}
    usage = {
        "response.additional_kwargs.prompt_tokens": 150,
        "response.additional_kwargs.completion_tokens": 15,
    }
    events = [("LLMChatEndEvent", chat_end(request, response, **usage))]
    model = as_model(to_step(record("Anthropic.achat", SETUP, events=events)))
    assert (model.output_text, model.requested_tools, model.input_tokens, model.output_tokens) == (
        ANSWER,
        (),
        150,
        15,
    )
    called = {"additional_kwargs": CALLED["additional_kwargs"], "blocks": []}
    model = as_model(
        to_step(record("OpenAI.achat", SETUP, events=[("LLMChatEndEvent", chat_end(request, called))]))
    )
    assert [(r.name, r.call_id) for r in model.requested_tools] == [("check_payment", "call_3")]


def test_streamed_call_records_the_request_only() -> None:
    """A streamed response is read after its span ended: the integration drops its end event."""
    events = [("LLMChatStartEvent", chat_start([SYSTEM, ASKED]))]
    model = as_model(to_step(record("OpenAI.astream_chat", SETUP, events=events)))
    assert (model.model, model.input_text, model.output_text, model.input_tokens, model.requested_tools) == (
        "gpt-4o-mini",
        USER,
        None,
        None,
        (),
    )
