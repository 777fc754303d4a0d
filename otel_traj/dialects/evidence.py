"""A classified span becomes a step: each field read through its table in ``fields``.

What is left to a dialect is the shape of its values: wrappers around call arguments, a serialized
ToolMessage around a result, an error recorded in its own attribute. Those are undone here, whichever
source the value came from.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

from otel_traj.dialects import (
    adk,
    agentops,
    claude_code,
    dspy,
    fields,
    genkit,
    haystack,
    langfuse,
    llamaindex,
    logfire,
    mlflow,
    openinference,
    printed,
    react,
    semconv,
    traceloop,
)
from otel_traj.dialects._base import PARSE_LIMIT, as_name, as_str, loads_once, parse_json
from otel_traj.dialects._messages import Output
from otel_traj.dialects._steps import agent_run, model_call, tool_call, unwrap_arguments
from otel_traj.dialects._usage import Usage, agent_usage, usage, usage_from_json
from otel_traj.dialects.sources import Source, UnreadableField, first_of, first_text_of
from otel_traj.spanview import KIND_SERVER, SpanView
from otel_traj.steps import AgentRun, ModelCall, RequestedTool, ToolCall

# Tool spans a framework writes for its own bookkeeping: no tool ran (Google ADK's span after a
# response with several calls).
NOT_TOOLS = frozenset({"(merged tools)"})


def tool_step(view: SpanView, attrs: Mapping[str, Any], dialect: str, max_chars: int) -> ToolCall | None:
    """The tool call a span records; None for a framework's bookkeeping span (``NOT_TOOLS``). Raises
    ``UnreadableField`` when no source names the tool."""
    # A name given as text wins over a number in a source of higher precedence; a number is a name
    # only when no source gives text.
    name = first_of(fields.TOOL_NAME, view, attrs, max_chars, as_name) or first_of(
        fields.TOOL_NAME, view, attrs, max_chars, as_str
    )
    if name is None:
        if not claude_code.is_call_part(attrs):
            raise UnreadableField("tool name", "no source names the tool")
        name = ""  # a part of a call: the builder joins it to its call (``joins.parts_joined``)
    if name in NOT_TOOLS:
        return None
    raw_arguments = first_of(fields.TOOL_ARGUMENTS, view, attrs, max_chars, _well_formed)
    if raw_arguments is None:
        # Only malformed values: the first is still what the span recorded (kept as text).
        raw_arguments = first_of(fields.TOOL_ARGUMENTS, view, attrs, max_chars)
    arguments, wrapper_id = unwrap_arguments(raw_arguments, max_chars)
    arguments = printed.python_literal(arguments, max_chars)
    result, message_id = _result(first_of(fields.TOOL_RESULT, view, attrs, max_chars), attrs, max_chars)
    call_id = first_of(fields.TOOL_CALL_ID, view, attrs, max_chars, as_name) or wrapper_id or message_id
    failed, message = _dialect_failure(attrs, max_chars)
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
        output=view.name == dspy.FINISH_SPAN,
        requested=agentops.is_request(view, attrs),
        served=view.kind == KIND_SERVER and attrs.get(semconv.MCP_METHOD) == semconv.MCP_TOOL_CALL,
    )


def _well_formed(value: Any) -> Any:
    """Arguments as a source may hold them: an object, or text that is not a broken JSON document.
    A number, a list of strings or ``{"a": `` in a source of higher precedence is no evidence of
    the arguments another source records whole."""
    if isinstance(value, dict):
        return value
    if not isinstance(value, str):
        return None
    # Parsed once: unwrapping a framework's wrapper reads the same text (``loads_once``).
    if value[:1] in ("{", "[") and len(value) <= PARSE_LIMIT and loads_once(value) is None:
        return None
    return value


def _result(raw: Any, attrs: Mapping[str, Any], max_chars: int) -> tuple[Any, Any]:
    """``(result, call_id)`` without a framework's wrapper: Strands' content blocks, a LangChain
    ToolMessage, serialized or printed (whose call id it also gives)."""
    if not isinstance(raw, str) or raw[:1] not in ("{", "["):
        return printed.tool_message(raw, max_chars)
    result, call_id = openinference.tool_message(semconv.strands_result(raw, attrs), max_chars)
    if call_id is None:
        result, call_id = traceloop.tool_output(result)
    if call_id is None:
        result, call_id = _message_dict(result, max_chars)
    if call_id is None:
        result, call_id = llamaindex.call_result(result)
    return llamaindex.tool_output(result, max_chars), call_id


def _message_dict(output: Any, max_chars: int) -> tuple[Any, Any]:
    """``(content, tool_call_id)`` of a tool message as a plain JSON object (a LangChain ToolMessage's
    fields, as Langfuse's LangChain integration records it; or OpenAI's ``role: tool``)."""
    if not isinstance(output, str) or '"tool_call_id"' not in output or len(output) > max_chars:
        return output, None
    message = parse_json(output)
    if not isinstance(message, dict) or "tool" not in (message.get("type"), message.get("role")):
        return output, None
    content = message.get("content")
    return (content if content is not None else output), message.get("tool_call_id")


def _dialect_failure(attrs: Mapping[str, Any], max_chars: int) -> tuple[bool, str | None]:
    """A failure a dialect records in its own attributes besides the span status (Langfuse's level,
    Logfire's ``error``, Haystack's ``haystack.tool.error``, LlamaIndex's ``is_error`` under
    OpenLLMetry, Claude Code's ``success``), with its message."""
    if langfuse.TYPE in attrs:
        return langfuse.failed(attrs), as_str(attrs.get("langfuse.observation.status_message"))
    if logfire.TEMPLATE in attrs:
        return logfire.failed(attrs), logfire.error_message(attrs)
    if haystack.TOOL_ERROR in attrs:
        return haystack.failed(attrs), haystack.error_message(attrs, max_chars)
    if llamaindex.TOOL_NAME in attrs and traceloop.ENTITY_OUTPUT in attrs:
        return llamaindex.failure(attrs[traceloop.ENTITY_OUTPUT])
    if claude_code.failed(attrs):
        return True, as_str(attrs.get("error"))
    return False, None


def _output(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> Output:
    """The response as the first source that records it has it (text and requested tools together).
    A source that records only the finish reasons gives those; the text and calls then come from the
    next source that has them (LiteLLM's ``gen_ai.output.messages`` drops the calls of a response
    that its ``gen_ai.completion.N.function_call.*`` keep). Calls recorded without their ids take
    them from a later source that records the same calls with ids (the Collector's GenAI normalizer
    rebuilds Haystack's messages without the ids its ``output.value`` keeps)."""
    reasons: tuple[str, ...] = ()
    for index, found in _outputs(fields.MODEL_OUTPUT, view, attrs, max_chars):
        if found[0] or found[1]:
            requested = found[1]
            if any(not call.call_id for call in requested):
                requested = _call_ids(requested, fields.MODEL_OUTPUT[index + 1 :], view, attrs, max_chars)
            return found[0], requested, found[2] or reasons
        reasons = reasons or found[2]
    return None, (), reasons


def _outputs(
    sources: Sequence[Source], view: SpanView, attrs: Mapping[str, Any], max_chars: int
) -> Iterator[tuple[int, Output]]:
    for index, source in enumerate(sources):
        if source.trigger is not None and source.trigger not in attrs:
            continue
        found: Output | None = source.read(view, attrs, max_chars)
        if found is not None:
            yield index, found


def _call_ids(
    requested: tuple[RequestedTool, ...],
    sources: Sequence[Source],
    view: SpanView,
    attrs: Mapping[str, Any],
    max_chars: int,
) -> tuple[RequestedTool, ...]:
    names = [call.name for call in requested]
    for _, (_, other, _) in _outputs(sources, view, attrs, max_chars):
        if [call.name for call in other] == names and all(call.call_id for call in other):
            return tuple(
                call if call.call_id else replace(call, call_id=with_id.call_id)
                for call, with_id in zip(requested, other, strict=True)
            )
    return requested


def _usage(view: SpanView, attrs: Mapping[str, Any]) -> Usage:
    """The usage attributes; else a usage JSON object (Langfuse, Logfire, Google ADK, Haystack, MLflow,
    Genkit); else the usage in LlamaIndex's chat event; else Claude Code's own counts."""
    counted = usage(attrs)
    if counted.input is not None or counted.output is not None:
        return counted
    details = usage_from_json(attrs.get("langfuse.observation.usage_details"))
    if details.input is not None or details.output is not None:
        return details
    return (
        logfire.json_usage(attrs)
        or adk.json_usage(attrs)
        or haystack.usage(attrs)
        or mlflow.usage(attrs)
        or genkit.usage(attrs)
        or llamaindex.usage(view, attrs)
        or claude_code.usage(attrs)
        or counted
    )


def model_step(view: SpanView, attrs: Mapping[str, Any], dialect: str, max_chars: int) -> ModelCall:
    text, requested, reasons = _output(view, attrs, max_chars)
    if not requested and isinstance(text, str):
        printed_message = printed.chat_message(text, max_chars)
        if printed_message is not None:
            text, requested = printed_message
        else:
            requested = dspy.requested_tools(text) or react.requested_tools(text)
    input_text = dspy.request_user_message(first_text_of(fields.MODEL_INPUT, view, attrs, max_chars))
    return model_call(
        view,
        attrs,
        dialect,
        max_chars,
        model=first_of(fields.MODEL_NAME, view, attrs, max_chars),
        provider=first_of(fields.PROVIDER, view, attrs, max_chars),
        usage=_usage(view, attrs),
        finish_reasons=first_of(fields.FINISH_REASONS, view, attrs, max_chars) or reasons,
        requested=requested,
        input_text=input_text,
        output_text=text,
        tool_results=first_of(fields.MODEL_TOOL_RESULTS, view, attrs, max_chars) or (),
        resent_calls=semconv.input_calls(attrs, max_chars),
        failed_results=first_of(fields.MODEL_FAILED_RESULTS, view, attrs, max_chars) or (),
        cumulative_usage=agentops.cumulative_usage(view, attrs),
        tool_definitions=semconv.tool_definitions(attrs, max_chars),
    )


def agent_step(view: SpanView, attrs: Mapping[str, Any], dialect: str, max_chars: int) -> AgentRun:
    return agent_run(
        view,
        attrs,
        dialect,
        max_chars,
        name=first_of(fields.AGENT_NAME, view, attrs, max_chars),
        conversation_id=first_of(fields.CONVERSATION_ID, view, attrs, max_chars),
        input_text=first_text_of(fields.AGENT_INPUT, view, attrs, max_chars),
        output_text=first_of(fields.AGENT_OUTPUT, view, attrs, max_chars),
        usage=agent_usage(attrs),
        workflow=attrs.get(traceloop.KIND) == "workflow"
        or attrs.get("gen_ai.operation.name") == "invoke_workflow"
        or genkit.is_flow(attrs)
        or agentops.is_workflow(attrs),
    )
