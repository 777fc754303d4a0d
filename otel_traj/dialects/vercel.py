"""Vercel AI SDK telemetry (``experimental_telemetry``), classified by ``ai.operationId``.

``ai.toolCall`` spans carry ``ai.toolCall.name/id/args/result``. The provider-call spans
(``ai.generateText.doGenerate``, ``ai.streamText.doStream``, ...) are the model calls, with
``ai.usage.*`` (``promptTokens``/``completionTokens``, newer ``inputTokens``/``outputTokens``),
``ai.response.toolCalls`` (JSON), ``ai.response.text`` and ``ai.prompt.messages``. The outer
``ai.generateText`` / ``ai.streamText`` span sums the usage of its steps: it becomes an AgentRun, so
those tokens are never counted as one more model call.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from otel_traj.dialects._base import as_str, clip_text, first, loads, str_tuple
from otel_traj.dialects._messages import as_messages, content_text, last_user_text, last_user_text_in
from otel_traj.dialects._steps import Parser, ToolKeys, agent_run, keyed_tool_call, model_call
from otel_traj.dialects._usage import usage
from otel_traj.spanview import SpanView
from otel_traj.steps import AgentRun, ModelCall, RequestedTool, ToolCall

DIALECT = "vercel"
_TOOL_KEYS: ToolKeys = (
    ("ai.toolCall.id", "gen_ai.tool.call.id"),
    ("ai.toolCall.args", "ai.toolCall.input", "gen_ai.tool.call.arguments"),
    ("ai.toolCall.result", "ai.toolCall.output", "gen_ai.tool.call.result"),
)


def parse_tool(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> ToolCall:
    name = as_str(first(attrs, ("ai.toolCall.name", "gen_ai.tool.name"))) or "unknown"
    return keyed_tool_call(view, attrs, DIALECT, name, max_chars, _TOOL_KEYS)


def _tool_calls(value: Any, max_chars: int) -> tuple[RequestedTool, ...]:
    """``ai.response.toolCalls``: ``[{toolCallId, toolName, args}]`` (v5+: ``input``)."""
    calls = loads(value) if isinstance(value, str) else None
    if not isinstance(calls, list):
        return ()
    found: list[RequestedTool] = []
    for call in calls:
        if not isinstance(call, Mapping) or as_str(call.get("toolName")) is None:
            continue
        arguments = call.get("input", call.get("args"))
        found.append(
            RequestedTool(
                name=str(call["toolName"]),
                call_id=as_str(call.get("toolCallId")),
                arguments_text=clip_text(arguments, max_chars),
            )
        )
    return tuple(found)


def parse_model(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> ModelCall:
    return model_call(
        view,
        attrs,
        DIALECT,
        max_chars,
        model=first(attrs, ("ai.response.model", "gen_ai.response.model", "ai.model.id")),
        provider=first(attrs, ("ai.model.provider", "gen_ai.system")),
        usage=usage(attrs),
        finish_reasons=str_tuple(
            first(attrs, ("ai.response.finishReason", "gen_ai.response.finish_reasons"))
        ),
        requested=_tool_calls(first(attrs, ("ai.response.toolCalls", "ai.result.toolCalls")), max_chars),
        input_text=last_user_text_in(attrs.get("ai.prompt.messages"), max_chars),
        output_text=first(attrs, ("ai.response.text", "ai.result.text")),
    )


def _prompt_text(value: Any, max_chars: int) -> str | None:
    """``ai.prompt``: ``{"system", "prompt"}`` or ``{"system", "messages"}`` as JSON."""
    prompt = loads(value) if isinstance(value, str) else None
    if not isinstance(prompt, Mapping):
        return None
    if isinstance(prompt.get("prompt"), str | list):
        return clip_text(content_text(prompt["prompt"]), max_chars)
    return last_user_text(as_messages(prompt.get("messages")), max_chars)


def parse_agent(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> AgentRun:
    return agent_run(
        view,
        attrs,
        DIALECT,
        max_chars,
        name=first(attrs, ("ai.telemetry.functionId", "resource.name")),
        conversation_id=first(
            attrs, ("ai.telemetry.metadata.sessionId", "ai.telemetry.metadata.conversationId")
        ),
        input_text=_prompt_text(attrs.get("ai.prompt"), max_chars),
        output_text=first(attrs, ("ai.response.text", "ai.result.text")),
        usage=usage(attrs),
    )


PARSERS: dict[str, Parser] = {
    "ai.toolCall": parse_tool,
    # The provider calls: one model call each.
    "ai.generateText.doGenerate": parse_model,
    "ai.streamText.doStream": parse_model,
    "ai.generateObject.doGenerate": parse_model,
    "ai.streamObject.doStream": parse_model,
    # The calls of the application, whose usage sums their steps'.
    "ai.generateText": parse_agent,
    "ai.streamText": parse_agent,
    "ai.generateObject": parse_agent,
    "ai.streamObject": parse_agent,
}
