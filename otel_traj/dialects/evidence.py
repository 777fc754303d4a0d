"""A classified span becomes a step: each field read through its table in ``fields``.

What is left to a dialect is the shape of its values: wrappers around call arguments, a serialized
ToolMessage around a result, an error recorded in its own attribute. Those are undone here, whichever
source the value came from.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from otel_traj.dialects import adk, fields, langfuse, logfire, openinference, semconv, traceloop
from otel_traj.dialects._base import as_str
from otel_traj.dialects._messages import Output
from otel_traj.dialects._steps import agent_run, model_call, tool_call, unwrap_arguments
from otel_traj.dialects._usage import Usage, agent_usage, usage, usage_from_json
from otel_traj.dialects.sources import first_of, python_literal
from otel_traj.spanview import SpanView
from otel_traj.steps import AgentRun, ModelCall, RequestedTool, ToolCall


def tool_step(view: SpanView, attrs: Mapping[str, Any], dialect: str, max_chars: int) -> ToolCall | None:
    """The tool call a span records; None when no source names the tool."""
    name = as_str(first_of(fields.TOOL_NAME, view, attrs, max_chars))
    if name is None or name in fields.NOT_TOOLS:
        return None
    raw_arguments = first_of(fields.TOOL_ARGUMENTS, view, attrs, max_chars)
    arguments, wrapper_id = unwrap_arguments(raw_arguments, max_chars)
    arguments = python_literal(arguments, max_chars)
    raw_result = semconv.strands_result(first_of(fields.TOOL_RESULT, view, attrs, max_chars), attrs)
    result, message_id = openinference.tool_message(raw_result, max_chars)
    if message_id is None:
        result, message_id = traceloop.tool_output(result)
    call_id = first_of(fields.TOOL_CALL_ID, view, attrs, max_chars) or wrapper_id or message_id
    failed = langfuse.failed(attrs) or logfire.failed(attrs)
    message = logfire.error_message(attrs) or as_str(attrs.get("langfuse.observation.status_message"))
    return tool_call(
        view,
        attrs,
        dialect,
        name,
        max_chars,
        call_id,
        arguments,
        result,
        failed=failed,
        error_message=message,
    )


def _output(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> Output:
    """Text, requested tools and finish reasons, each from the first output source that has it."""
    text: str | None = None
    requested: tuple[RequestedTool, ...] = ()
    reasons: tuple[str, ...] = ()
    for source in fields.MODEL_OUTPUT:
        found = source.read(view, attrs, max_chars)
        if found is None:
            continue
        found_text, found_requested, found_reasons = found
        text = text or found_text
        requested = requested or found_requested
        reasons = reasons or found_reasons
        if text and requested and reasons:
            break
    return text, requested, reasons


def _usage(attrs: Mapping[str, Any]) -> Usage:
    """The usage attributes; else a usage JSON object (Langfuse, Logfire, Google ADK)."""
    counted = usage(attrs)
    if counted.input is not None or counted.output is not None:
        return counted
    details = usage_from_json(attrs.get("langfuse.observation.usage_details"))
    if details.input is not None or details.output is not None:
        return details
    return logfire.json_usage(attrs) or adk.json_usage(attrs) or counted


def model_step(view: SpanView, attrs: Mapping[str, Any], dialect: str, max_chars: int) -> ModelCall:
    text, requested, reasons = _output(view, attrs, max_chars)
    return model_call(
        view,
        attrs,
        dialect,
        max_chars,
        model=first_of(fields.MODEL_NAME, view, attrs, max_chars),
        provider=first_of(fields.PROVIDER, view, attrs, max_chars),
        usage=_usage(attrs),
        finish_reasons=first_of(fields.FINISH_REASONS, view, attrs, max_chars) or reasons,
        requested=requested,
        input_text=first_of(fields.MODEL_INPUT, view, attrs, max_chars),
        output_text=text,
    )


def agent_step(view: SpanView, attrs: Mapping[str, Any], dialect: str, max_chars: int) -> AgentRun:
    return agent_run(
        view,
        attrs,
        dialect,
        max_chars,
        name=first_of(fields.AGENT_NAME, view, attrs, max_chars),
        conversation_id=first_of(fields.CONVERSATION_ID, view, attrs, max_chars),
        input_text=first_of(fields.AGENT_INPUT, view, attrs, max_chars),
        output_text=first_of(fields.AGENT_OUTPUT, view, attrs, max_chars),
        usage=agent_usage(attrs),
    )
