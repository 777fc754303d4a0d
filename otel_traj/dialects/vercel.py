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

from otel_traj.dialects._base import as_str, clip_text, first, loads
from otel_traj.dialects._messages import Output, as_messages, content_text, last_user_text, last_user_text_in
from otel_traj.dialects._results import ToolResults, request_results
from otel_traj.dialects.vocabulary import Vocabulary, not_steps
from otel_traj.spanview import SpanView
from otel_traj.steps import RequestedTool, StepKind

DIALECT = "vercel"
OPERATION = "ai.operationId"
KINDS: dict[str, StepKind] = {
    "ai.toolCall": "tool",
    # The provider calls: one model call each.
    "ai.generateText.doGenerate": "model",
    "ai.streamText.doStream": "model",
    "ai.generateObject.doGenerate": "model",
    "ai.streamObject.doStream": "model",
    # The calls of the application, whose usage sums their steps'.
    "ai.generateText": "agent",
    "ai.streamText": "agent",
    "ai.generateObject": "agent",
    "ai.streamObject": "agent",
}
VOCABULARY = Vocabulary(
    OPERATION,
    DIALECT,
    {**KINDS, **not_steps(("ai.embed", "ai.embedMany", "ai.embed.doEmbed", "ai.embedMany.doEmbed"))},
)
TEXT_KEYS = ("ai.response.text", "ai.result.text")


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


def response(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> Output | None:
    text = first(attrs, TEXT_KEYS)
    calls = first(attrs, ("ai.response.toolCalls", "ai.result.toolCalls"))
    if text is None and calls is None:
        return None
    return text, _tool_calls(calls, max_chars), ()


def prompt_messages(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> str | None:
    value = attrs.get("ai.prompt.messages")
    return last_user_text_in(value, max_chars) if value is not None else None


def prompt_results(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> ToolResults | None:
    value = attrs.get("ai.prompt.messages")
    return request_results(value, max_chars) or None if value is not None else None


def prompt_text(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> str | None:
    """``ai.prompt``: ``{"system", "prompt"}`` or ``{"system", "messages"}`` as JSON."""
    value = attrs.get("ai.prompt")
    prompt = loads(value) if isinstance(value, str) else None
    if not isinstance(prompt, Mapping):
        return None
    if isinstance(prompt.get("prompt"), str | list):
        return clip_text(content_text(prompt["prompt"]), max_chars)
    return last_user_text(as_messages(prompt.get("messages")), max_chars)
