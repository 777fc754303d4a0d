"""Traceloop / OpenLLMetry: ``traceloop.span.kind`` workflow/agent/task/tool, and LLM spans.

Entity spans record ``traceloop.entity.input`` / ``traceloop.entity.output`` as JSON wrappers:
decorated functions ``{"args": [...], "kwargs": {...}}``, LangChain tools ``{"input_str": "<Python
repr>", "inputs": {...}, ...}`` and ``{"output": <serialized ToolMessage>}``. Recent releases (0.5x+)
also set GenAI semconv attributes on the same spans and record chat spans in semconv only; older
LLM spans use indexed ``gen_ai.prompt.N.*`` / ``gen_ai.completion.N.*`` with ``llm.request.type``.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from typing import Any

from otel_traj.dialects import semconv
from otel_traj.dialects._base import PARSE_LIMIT, as_str, clip_text, first, loads, suffix
from otel_traj.dialects._messages import (
    MAX_MESSAGES,
    content_text,
    indexed_tool_calls,
    last_assistant_text,
    last_user_text,
    last_user_text_in,
)
from otel_traj.dialects._steps import Parser, agent_run, tool_call, unwrap_arguments
from otel_traj.dialects._usage import agent_usage
from otel_traj.spanview import SpanView
from otel_traj.steps import AgentRun, ModelCall, RequestedTool, ToolCall

DIALECT = "traceloop"
_INDEXED_CALL_KEYS = ("name", "id", "arguments")


def _python_literal(text: str, max_chars: int) -> Any:
    """LangChain's ``input_str`` is ``str(dict)``: a Python literal, read without evaluating code."""
    if len(text) > max_chars or text[:1] != "{":
        return text
    try:
        value = ast.literal_eval(text)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return text
    return value if isinstance(value, dict) else text


def _tool_output(output: Any) -> tuple[Any, Any]:
    """``(result, call_id)`` from ``{"output": <ToolMessage>}``; other outputs unchanged."""
    if not isinstance(output, str) or not output.startswith('{"output"'):
        return output, None
    data = loads(output, PARSE_LIMIT)
    message = data.get("output") if isinstance(data, dict) else None
    if not isinstance(message, dict):
        return output, None
    kwargs = message.get("kwargs")
    fields: dict[str, Any] = kwargs if isinstance(kwargs, dict) else message
    if fields.get("type") != "tool":
        return (message if message else output), None
    content = fields.get("content")
    return (content if content is not None else output), fields.get("tool_call_id")


def parse_tool(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> ToolCall:
    name = (
        as_str(attrs.get("traceloop.entity.name"))
        or as_str(attrs.get("gen_ai.tool.name"))
        or suffix(view.name, "execute_tool ")
        or view.name.removesuffix(".tool")
    )
    raw = first(attrs, ("traceloop.entity.input", "gen_ai.tool.call.arguments"))
    arguments, input_call_id = unwrap_arguments(raw, max_chars)
    if isinstance(arguments, str) and arguments.startswith("{'"):
        arguments = _python_literal(arguments, max_chars)
    result, output_call_id = _tool_output(
        first(attrs, ("traceloop.entity.output", "gen_ai.tool.call.result"))
    )
    call_id = attrs.get("gen_ai.tool.call.id") or input_call_id or output_call_id
    return tool_call(view, attrs, DIALECT, name, max_chars, call_id, arguments, result)


def _entity_messages(value: Any, key: str) -> list[Any]:
    """Messages inside ``{"inputs": {"messages": [...]}}`` / ``{"outputs": {"messages": [...]}}``."""
    data = loads(value) if isinstance(value, str) and value.startswith("{") else None
    if isinstance(data, dict):
        data = data.get(key, data)
    if isinstance(data, dict):
        data = data.get("messages")
    return data if isinstance(data, list) else []


def parse_agent(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> AgentRun:
    input_value = attrs.get("traceloop.entity.input")
    output_value = attrs.get("traceloop.entity.output")
    input_text = last_user_text(_entity_messages(input_value, "inputs"), max_chars)
    output_text = last_assistant_text(_entity_messages(output_value, "outputs"), max_chars)
    return agent_run(
        view,
        attrs,
        DIALECT,
        max_chars,
        name=first(attrs, ("gen_ai.agent.name", "traceloop.entity.name", "traceloop.workflow.name")),
        conversation_id=first(
            attrs, ("gen_ai.conversation.id", "traceloop.association.properties.session_id", "session.id")
        ),
        input_text=input_text,
        output_text=output_text if output_text is not None else _plain_output(output_value),
        usage=agent_usage(attrs),
    )


def _plain_output(value: Any) -> str | None:
    """A decorated function's return value, when it is text rather than a message list."""
    if not isinstance(value, str):
        return None
    if value.startswith('"'):
        data = loads(value)
        return data if isinstance(data, str) else None
    return value if value[:1] not in ("{", "[") else None


def _indexed_prompt(attrs: Mapping[str, Any], max_chars: int) -> str | None:
    found: Any = None
    for index in range(MAX_MESSAGES):
        role = attrs.get(f"gen_ai.prompt.{index}.role")
        if role is None:
            break
        if role == "user":
            found = attrs.get(f"gen_ai.prompt.{index}.content", found)
    return clip_text(content_text(found), max_chars)


def _indexed_completion(
    attrs: Mapping[str, Any], max_chars: int
) -> tuple[str | None, tuple[RequestedTool, ...], tuple[str, ...]]:
    texts: list[str] = []
    tools: list[RequestedTool] = []
    reasons: list[str] = []
    for index in range(MAX_MESSAGES):
        prefix = f"gen_ai.completion.{index}."
        role = attrs.get(prefix + "role")
        content = attrs.get(prefix + "content")
        reason = attrs.get(prefix + "finish_reason")
        if role is None and content is None and reason is None:
            break
        text = content_text(content)
        if text:
            texts.append(text)
        if isinstance(reason, str) and reason:
            reasons.append(reason)
        tools += indexed_tool_calls(attrs, prefix + "tool_calls.", _INDEXED_CALL_KEYS, max_chars)
    return clip_text("\n".join(texts), max_chars) if texts else None, tuple(tools), tuple(reasons)


def parse_model(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> ModelCall:
    if "gen_ai.input.messages" in attrs or "gen_ai.output.messages" in attrs:
        return semconv.parse_model(view, attrs, max_chars, DIALECT)
    input_text = _indexed_prompt(attrs, max_chars)
    output_text, requested, reasons = _indexed_completion(attrs, max_chars)
    if input_text is None and "gen_ai.prompt" in attrs:
        input_text = last_user_text_in(attrs.get("gen_ai.prompt"), max_chars)
    return semconv.model_step(view, attrs, DIALECT, max_chars, (input_text, output_text, requested, reasons))


PARSERS: dict[str, Parser] = {"tool": parse_tool, "workflow": parse_agent, "agent": parse_agent}
# Older LLM spans have no span kind, only ``llm.request.type``.
REQUEST_PARSERS: dict[str, Parser] = {"chat": parse_model, "completion": parse_model}
