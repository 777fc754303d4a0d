"""Traceloop / OpenLLMetry: ``traceloop.span.kind`` workflow/agent/task/tool, and LLM spans.

Entity spans record ``traceloop.entity.input`` / ``traceloop.entity.output`` as JSON wrappers:
decorated functions ``{"args": [...], "kwargs": {...}}``, LangChain tools ``{"input_str": "<Python
repr>", "inputs": {...}, ...}`` and ``{"output": <serialized ToolMessage>}``. Recent releases (0.5x+)
also set GenAI semconv attributes on the same spans and record chat spans in semconv only; older
LLM spans use indexed ``gen_ai.prompt.N.*`` / ``gen_ai.completion.N.*`` with ``llm.request.type``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from otel_traj.dialects import printed
from otel_traj.dialects._base import PARSE_LIMIT, clip_text, loads
from otel_traj.dialects._messages import (
    ASSISTANT_ROLES,
    MAX_MESSAGES,
    Output,
    content_text,
    indexed_tool_calls,
    last_assistant_text,
    last_user_text,
    last_user_text_in,
    requested_tool,
)
from otel_traj.dialects._results import ToolResults, results_of
from otel_traj.dialects.vocabulary import NOT_A_STEP, Meaning, Vocabulary, not_steps
from otel_traj.spanview import SpanView
from otel_traj.steps import RequestedTool

DIALECT = "traceloop"
KIND = "traceloop.span.kind"
ENTITY_INPUT = "traceloop.entity.input"
ENTITY_OUTPUT = "traceloop.entity.output"
REQUEST_TYPE = "llm.request.type"
PROMPT_KEYS: tuple[tuple[str | None, str], ...] = (("traceloop.prompt.key", "traceloop.prompt.version"),)
# A LlamaIndex workflow step that calls a tool: OpenLLMetry marks it a task and names the tool.
_TASK_TOOL = "tool.name"


def _task(view: SpanView, attrs: Mapping[str, Any]) -> Meaning:
    return "tool" if isinstance(attrs.get(_TASK_TOOL), str) else NOT_A_STEP


VOCABULARY = Vocabulary(KIND, DIALECT, {"tool": "tool", "workflow": "agent", "agent": "agent", "task": _task})
REQUEST_VOCABULARY = Vocabulary(
    REQUEST_TYPE, DIALECT, {"chat": "model", "completion": "model", **not_steps(("embedding", "rerank"))}
)
_INDEXED_CALL_KEYS = ("name", "id", "arguments")
_FUNCTION_NAME = "function_call.name"
_FUNCTION_ARGUMENTS = "function_call.arguments"


def tool_output(output: Any) -> tuple[Any, Any]:
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


def _entity_messages(value: Any, key: str) -> list[Any]:
    """Messages inside ``{"inputs": {"messages": [...]}}`` / ``{"outputs": {"messages": [...]}}``."""
    data = loads(value) if isinstance(value, str) and value.startswith("{") else None
    if isinstance(data, dict):
        data = data.get(key, data)
    if isinstance(data, dict):
        data = data.get("messages")
    return data if isinstance(data, list) else []


def entity_input(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> str | None:
    return last_user_text(_entity_messages(attrs.get(ENTITY_INPUT), "inputs"), max_chars)


def entity_answer(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> str | None:
    """An entity's answer: its last assistant message, else the text a decorated function returned."""
    value = attrs.get(ENTITY_OUTPUT)
    text = last_assistant_text(_entity_messages(value, "outputs"), max_chars)
    if text is not None or not isinstance(value, str):
        return text
    if value.startswith('"'):
        data = loads(value)
        return data if isinstance(data, str) else None
    return value if value[:1] not in ("{", "[") else None


def indexed_prompt(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> str | None:
    found: Any = None
    for index in range(MAX_MESSAGES):
        role = attrs.get(f"gen_ai.prompt.{index}.role")
        if role is None:
            break
        if role == "user":
            found = attrs.get(f"gen_ai.prompt.{index}.content", found)
    if found is None and "gen_ai.prompt" in attrs:
        return last_user_text_in(attrs.get("gen_ai.prompt"), max_chars)
    return clip_text(content_text(found), max_chars)


def indexed_results(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> ToolResults | None:
    """The tool messages a flattened request sends back after its last assistant message
    (``gen_ai.prompt.N.{role, content, tool_call_id}``: the results of the previous response's calls)."""
    roles: list[Any] = []
    for index in range(MAX_MESSAGES):
        role = attrs.get(f"gen_ai.prompt.{index}.role")
        if role is None:
            break
        roles.append(role)
    last = max((index for index, role in enumerate(roles) if role in ASSISTANT_ROLES), default=None)
    if last is None:
        return None
    keys = ("role", "content", "tool_call_id")
    tail = [
        {key: attrs.get(f"gen_ai.prompt.{index}.{key}") for key in keys}
        for index in range(last + 1, len(roles))
    ]
    return results_of(tail, max_chars) or None


def indexed_completion(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> Output | None:
    """``gen_ai.completion.N.{role, content, finish_reason, tool_calls.M.*}``; a legacy function call
    ``gen_ai.completion.N.function_call.{name, arguments}`` (LiteLLM's OpenTelemetry logger writes
    one per requested call, N counting the calls, without ids) is a requested call too, and so are the
    calls of a content that is the printed list of tool-call objects (AgentOps' CrewAI ``LLM.call``
    spans: ``str()`` of what the call returned)."""
    texts: list[str] = []
    tools: list[RequestedTool] = []
    reasons: list[str] = []
    for index in range(MAX_MESSAGES):
        prefix = f"gen_ai.completion.{index}."
        role = attrs.get(prefix + "role")
        content = attrs.get(prefix + "content")
        reason = attrs.get(prefix + "finish_reason")
        function = attrs.get(prefix + _FUNCTION_NAME)
        if role is None and content is None and reason is None and function is None:
            if index == 0:
                return None
            break
        printed_calls = printed.tool_call_objects(content, max(max_chars, PARSE_LIMIT))
        text = content_text(content) if printed_calls is None else None
        if text:
            texts.append(text)
        tools += printed_calls or ()
        if isinstance(reason, str) and reason:
            reasons.append(reason)
        tools += indexed_tool_calls(attrs, prefix + "tool_calls.", _INDEXED_CALL_KEYS, max_chars)
        call = requested_tool(function, None, attrs.get(prefix + _FUNCTION_ARGUMENTS), max_chars)
        if call is not None:
            tools.append(call)
    return clip_text("\n".join(texts), max_chars) if texts else None, tuple(tools), tuple(reasons)
