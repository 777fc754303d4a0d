"""OpenInference (Arize): OpenAI Agents, LangChain/LangGraph, LlamaIndex and others.

Classified by ``openinference.span.kind``: TOOL, LLM and AGENT map to steps; CHAIN, RETRIEVER,
EMBEDDING and the rest do not. ``tool.parameters`` is the tool's JSON schema, never the call's
arguments: those are ``input.value``, which single-argument LangChain tools record as the bare value
(kept as text). LangChain tool spans carry no call id, but their ``output.value`` is the serialized
ToolMessage, which holds both the id and the result content.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from otel_traj.dialects._base import as_str, clip_text, first, loads, str_tuple
from otel_traj.dialects._messages import (
    MAX_MESSAGES,
    as_messages,
    assistant_output,
    content_text,
    indexed_tool_calls,
    last_assistant_text,
    last_user_text,
    last_user_text_in,
)
from otel_traj.dialects._steps import Parser, agent_run, model_call, tool_call
from otel_traj.dialects._usage import usage
from otel_traj.spanview import SpanView
from otel_traj.steps import AgentRun, ModelCall, RequestedTool, ToolCall

DIALECT = "openinference"
_FLAT_CALL_KEYS = ("tool_call.function.name", "tool_call.id", "tool_call.function.arguments")


def _tool_message(output: Any, max_chars: int) -> tuple[Any, Any]:
    """``(result, call_id)`` from LangChain's serialized ToolMessage ``{"type": "tool", "data": ...}``."""
    if not isinstance(output, str) or len(output) > max_chars or not output.startswith('{"type": "tool"'):
        return output, None
    message = loads(output)
    data = message.get("data") if isinstance(message, dict) else None
    if not isinstance(data, dict):
        return output, None
    content = data.get("content")
    return (content if content is not None else output), data.get("tool_call_id")


def parse_tool(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> ToolCall:
    name = as_str(attrs.get("tool.name")) or view.name or "unknown"
    result, call_id = _tool_message(attrs.get("output.value"), max_chars)
    call_id = first(attrs, ("tool_call.id", "tool.id")) or call_id
    return tool_call(view, attrs, DIALECT, name, max_chars, call_id, attrs.get("input.value"), result)


def _flat_last_user(attrs: Mapping[str, Any], max_chars: int) -> str | None:
    """Last user text of ``llm.input_messages.N.message.*`` (contiguous indices from 0)."""
    found: Any = None
    for index in range(MAX_MESSAGES):
        prefix = f"llm.input_messages.{index}.message."
        role = attrs.get(prefix + "role")
        if role is None:
            break
        if role == "user":
            text = attrs.get(prefix + "content")
            if text is None:
                text = attrs.get(prefix + "contents.0.message_content.text")
            found = text if text is not None else found
    return clip_text(found, max_chars)


def _flat_output(attrs: Mapping[str, Any], max_chars: int) -> tuple[str | None, tuple[RequestedTool, ...]]:
    texts: list[str] = []
    tools: list[RequestedTool] = []
    for index in range(MAX_MESSAGES):
        prefix = f"llm.output_messages.{index}.message."
        if prefix + "role" not in attrs:
            break
        text = attrs.get(prefix + "content")
        if isinstance(text, str) and text:
            texts.append(text)
        tools += indexed_tool_calls(attrs, prefix + "tool_calls.", _FLAT_CALL_KEYS, max_chars)
    return clip_text("\n".join(texts), max_chars) if texts else None, tuple(tools)


def parse_model(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> ModelCall:
    input_text = _flat_last_user(attrs, max_chars)
    if input_text is None and attrs.get("input.mime_type") == "application/json":
        input_text = last_user_text_in(attrs.get("input.value"), max_chars)
    output_text, requested = _flat_output(attrs, max_chars)
    reasons = str_tuple(attrs.get("llm.finish_reason"))
    if output_text is None and not requested and attrs.get("output.mime_type") == "application/json":
        output_text, requested, reasons_from_messages = assistant_output(
            as_messages(attrs.get("output.value")), max_chars
        )
        reasons = reasons or reasons_from_messages
    return model_call(
        view,
        attrs,
        DIALECT,
        max_chars,
        model=attrs.get("llm.model_name"),
        provider=first(attrs, ("llm.provider", "llm.system")),
        usage=usage(attrs),
        finish_reasons=reasons,
        requested=requested,
        input_text=input_text,
        output_text=output_text,
    )


def _messages_of(value: Any) -> list[Any]:
    """Messages of an agent's ``input.value``/``output.value``: a list or ``{"messages": [...]}``."""
    data = loads(value) if isinstance(value, str) and value[:1] in ("[", "{") else None
    if isinstance(data, dict):
        data = data.get("messages")
    return data if isinstance(data, list) else []


def parse_agent(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> AgentRun:
    input_value = attrs.get("input.value")
    input_text = last_user_text(_messages_of(input_value), max_chars)
    if input_text is None and input_value is not None and attrs.get("input.mime_type") != "application/json":
        input_text = content_text(input_value)
    output_value = attrs.get("output.value")
    output_text = last_assistant_text(_messages_of(output_value), max_chars)
    if (
        output_text is None
        and output_value is not None
        and attrs.get("output.mime_type") != "application/json"
    ):
        output_text = content_text(output_value)
    return agent_run(
        view,
        attrs,
        DIALECT,
        max_chars,
        name=first(attrs, ("agent.name", "graph.node.id")) or view.name,
        conversation_id=attrs.get("session.id"),
        input_text=input_text,
        output_text=output_text,
        usage=usage(attrs),
    )


PARSERS: dict[str, Parser] = {"TOOL": parse_tool, "LLM": parse_model, "AGENT": parse_agent}
