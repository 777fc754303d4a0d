"""Spans written by the Langfuse SDK (v3+, OTel based): ``langfuse.observation.type``.

``tool`` / ``generation`` / ``agent`` observations map to steps; ``span``, ``chain``, ``event``,
``retriever`` and the rest do not. Input and output are JSON text (``observe`` records a function's
call as ``{"args": [...], "kwargs": {...}}``); a generation's usage is the JSON object
``langfuse.observation.usage_details`` (``input``/``output`` plus provider-specific keys). A failed
observation has ``level=ERROR`` and its message in ``status_message``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from otel_traj.dialects._base import as_str, first, loads
from otel_traj.dialects._messages import (
    as_messages,
    assistant_output,
    content_text,
    last_assistant_text,
    last_user_text,
)
from otel_traj.dialects._steps import Parser, agent_run, model_call, tool_call, unwrap_arguments
from otel_traj.dialects._usage import NO_USAGE, usage_from_json
from otel_traj.spanview import SpanView
from otel_traj.steps import AgentRun, ModelCall, RequestedTool, ToolCall

DIALECT = "langfuse"
_INPUT = "langfuse.observation.input"
_OUTPUT = "langfuse.observation.output"
_SESSION_KEYS = ("session.id", "gen_ai.conversation.id")


def _failed(attrs: Mapping[str, Any]) -> bool:
    return attrs.get("langfuse.observation.level") == "ERROR"


def _json_string(value: Any) -> Any:
    """Langfuse serializes a returned string as JSON (``"\\"text\\""``): the string itself."""
    if isinstance(value, str) and value.startswith('"'):
        decoded = loads(value)
        if isinstance(decoded, str):
            return decoded
    return value


def parse_tool(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> ToolCall:
    arguments, _ = unwrap_arguments(attrs.get(_INPUT), max_chars)
    return tool_call(
        view,
        attrs,
        DIALECT,
        view.name or "unknown",
        max_chars,
        arguments=_json_string(arguments),
        result=_json_string(attrs.get(_OUTPUT)),
        failed=_failed(attrs),
        error_message=as_str(attrs.get("langfuse.observation.status_message")),
    )


def _output(value: Any, max_chars: int) -> tuple[str | None, tuple[RequestedTool, ...], tuple[str, ...]]:
    """A generation's output: a message, a list of messages, or text."""
    decoded = _json_string(value)
    if isinstance(decoded, str) and decoded[:1] not in ("{", "["):
        return decoded, (), ()
    messages = as_messages(decoded)
    if messages and isinstance(messages[0], Mapping) and "role" not in messages[0]:
        return content_text(decoded), (), ()
    return assistant_output(messages, max_chars)


def parse_generation(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> ModelCall:
    raw_input = _json_string(attrs.get(_INPUT))
    input_text = (
        raw_input
        if isinstance(raw_input, str) and raw_input[:1] not in ("{", "[")
        else last_user_text(as_messages(raw_input), max_chars)
    )
    output_text, requested, reasons = _output(attrs.get(_OUTPUT), max_chars)
    counted = usage_from_json(attrs.get("langfuse.observation.usage_details"))
    return model_call(
        view,
        attrs,
        DIALECT,
        max_chars,
        model=attrs.get("langfuse.observation.model.name"),
        provider=None,
        usage=counted,
        finish_reasons=reasons,
        requested=requested,
        input_text=input_text,
        output_text=output_text,
    )


def parse_agent(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> AgentRun:
    raw_input, _ = unwrap_arguments(attrs.get(_INPUT), max_chars)
    raw_input = _json_string(raw_input)
    if isinstance(raw_input, Mapping):
        raw_input = next((v for v in raw_input.values() if isinstance(v, str)), None)
    elif not isinstance(raw_input, str) or raw_input[:1] in ("{", "["):
        raw_input = last_user_text(as_messages(raw_input), max_chars)
    output = _json_string(attrs.get(_OUTPUT))
    if isinstance(output, str) and output[:1] in ("{", "["):
        output = last_assistant_text(as_messages(output), max_chars)
    return agent_run(
        view,
        attrs,
        DIALECT,
        max_chars,
        name=view.name,
        conversation_id=first(attrs, _SESSION_KEYS),
        input_text=raw_input,
        output_text=output,
        usage=NO_USAGE,
    )


PARSERS: dict[str, Parser] = {"tool": parse_tool, "generation": parse_generation, "agent": parse_agent}
