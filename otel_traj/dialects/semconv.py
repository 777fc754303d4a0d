"""GenAI semantic conventions, old and new names (openai-v2 + util-genai, pydantic-ai 2.x, Strands).

Classified by ``gen_ai.operation.name``. Messages come from ``gen_ai.input.messages`` /
``gen_ai.output.messages`` when content capture records them as attributes, else from span events:
the older per-message events (``gen_ai.user.message``, ``gen_ai.choice``, ``gen_ai.tool.message``),
``gen_ai.client.inference.operation.details`` (messages as event attributes) and the oldest
``gen_ai.content.prompt`` / ``gen_ai.content.completion``. Strands records tool arguments and results
in events unless ``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental`` is set.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any

from otel_traj.dialects._base import as_str, first, str_tuple, suffix
from otel_traj.dialects._messages import (
    as_messages,
    assistant_output,
    content_text,
    last_user_text,
    last_user_text_in,
)
from otel_traj.dialects._steps import Parser, agent_run, model_call, tool_call
from otel_traj.dialects._usage import Usage, agent_usage, usage
from otel_traj.spanview import SpanView
from otel_traj.steps import AgentRun, LazyText, ModelCall, RequestedTool, ToolCall

DIALECT = "semconv"
MODEL_OPERATIONS = frozenset({"chat", "generate_content", "text_completion"})
AGENT_OPERATIONS = frozenset({"invoke_agent", "invoke_workflow"})

MODEL_KEYS = ("gen_ai.response.model", "gen_ai.request.model")
PROVIDER_KEYS = ("gen_ai.provider.name", "gen_ai.system")
# ``(last user text, assistant text, requested tools, finish reasons)`` of a model span.
Messages = tuple[LazyText, str | None, tuple[RequestedTool, ...], tuple[str, ...]]

_ARGUMENT_KEYS = ("gen_ai.tool.call.arguments", "tool_arguments")
_RESULT_KEYS = ("gen_ai.tool.call.result", "tool_response")
_DETAILS_EVENT = "gen_ai.client.inference.operation.details"
# Strands records a tool's result as Bedrock content blocks ``[{"text": ...}]``: the text is the result.
_STRANDS_TEXT_BLOCKS = '[{"text": '


def _is_strands(attrs: Mapping[str, Any]) -> bool:
    return bool(first(attrs, PROVIDER_KEYS) == "strands-agents")


def _details(view: SpanView) -> Mapping[str, Any] | None:
    """Message attributes of the ``operation.details`` events (Strands records one per message list)."""
    merged: dict[str, Any] | None = None
    for event in view.events:
        if event.name == _DETAILS_EVENT:
            merged = merged if merged is not None else {}
            merged.update(event.attributes or {})
    return merged


def parse_tool(view: SpanView, attrs: Mapping[str, Any], max_chars: int, dialect: str = DIALECT) -> ToolCall:
    name = as_str(attrs.get("gen_ai.tool.name")) or suffix(view.name, "execute_tool ") or "unknown"
    arguments = first(attrs, _ARGUMENT_KEYS)
    result = first(attrs, _RESULT_KEYS)
    if (arguments is None or result is None) and view.events:
        event_arguments, event_result = _tool_events(view)
        arguments = event_arguments if arguments is None else arguments
        result = event_result if result is None else result
    if isinstance(result, str) and result.startswith(_STRANDS_TEXT_BLOCKS) and _is_strands(attrs):
        result = content_text(result) or result
    return tool_call(
        view, attrs, dialect, name, max_chars, attrs.get("gen_ai.tool.call.id"), arguments, result
    )


def _tool_events(view: SpanView) -> tuple[Any, Any]:
    """Strands: arguments in ``gen_ai.tool.message.content``, result in ``gen_ai.choice.message``."""
    arguments = result = None
    for event in view.events:
        event_attrs = event.attributes or {}
        if event.name == "gen_ai.tool.message" and arguments is None:
            arguments = event_attrs.get("content")
        elif event.name == "gen_ai.choice" and result is None:
            result = event_attrs.get("message")
    return arguments, result


def parse_model(
    view: SpanView, attrs: Mapping[str, Any], max_chars: int, dialect: str = DIALECT
) -> ModelCall:
    model = first(attrs, MODEL_KEYS)
    if model is None:
        model = suffix(view.name, "chat ") or suffix(view.name, "generate_content ")
    return model_step(view, attrs, dialect, max_chars, messages(view, attrs, max_chars), model)


def model_step(
    view: SpanView,
    attrs: Mapping[str, Any],
    dialect: str,
    max_chars: int,
    found: Messages,
    model: Any = None,
    counted: Usage | None = None,
) -> ModelCall:
    """A model call whose model, provider, usage and finish reasons are the GenAI semconv attributes.

    ``found`` is what the dialect read from the messages; the span's own finish reasons win over
    theirs, and ``model`` / ``counted`` replace the attributes when given.
    """
    input_text, output_text, requested, reasons = found
    return model_call(
        view,
        attrs,
        dialect,
        max_chars,
        model=first(attrs, MODEL_KEYS) if model is None else model,
        provider=first(attrs, PROVIDER_KEYS),
        usage=usage(attrs) if counted is None else counted,
        finish_reasons=str_tuple(attrs.get("gen_ai.response.finish_reasons")) or reasons,
        requested=requested,
        input_text=input_text,
        output_text=output_text,
    )


def messages(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> Messages:
    """``(last user text, assistant text, requested tools, finish reasons)`` of a model span."""
    source: Mapping[str, Any] = attrs
    if "gen_ai.input.messages" not in attrs and "gen_ai.output.messages" not in attrs and view.events:
        details = _details(view)
        if details is None:
            return _from_message_events(view, max_chars)
        source = details
    raw_input = source.get("gen_ai.input.messages")
    # Deferred: the input is the whole conversation so far; only one call's message is usually read.
    input_text = partial(last_user_text_in, raw_input, max_chars) if raw_input is not None else None
    output_text, requested, reasons = assistant_output(
        as_messages(source.get("gen_ai.output.messages")), max_chars
    )
    return input_text, output_text, requested, reasons


def _from_message_events(view: SpanView, max_chars: int) -> Messages:
    user_text: str | None = None
    outputs: list[Any] = []
    reasons: list[str] = []
    for event in view.events:
        event_attrs = event.attributes or {}
        name = event.name
        if name == "gen_ai.user.message":
            user_text = content_text(event_attrs.get("content")) or user_text
        elif name == "gen_ai.choice":
            message = event_attrs.get("message")
            parsed = as_messages(message) if isinstance(message, str) and message[:1] in ("[", "{") else []
            if parsed and isinstance(parsed[0], Mapping) and ("role" in parsed[0] or "content" in parsed[0]):
                outputs += parsed
            elif parsed:
                outputs.append({"role": "assistant", "content": parsed})
            elif isinstance(message, str):
                outputs.append({"role": "assistant", "content": message})
            reason = as_str(event_attrs.get("finish_reason"))
            if reason:
                reasons.append(reason)
        elif name == "gen_ai.content.prompt":
            prompt = as_messages(event_attrs.get("gen_ai.prompt"))
            user_text = last_user_text(prompt, max_chars) or user_text
        elif name == "gen_ai.content.completion":
            outputs += as_messages(event_attrs.get("gen_ai.completion"))
    output_text, requested, message_reasons = assistant_output(outputs, max_chars)
    return user_text, output_text, requested, tuple(reasons) or message_reasons


def parse_agent(view: SpanView, attrs: Mapping[str, Any], max_chars: int, dialect: str = DIALECT) -> AgentRun:
    name = first(attrs, ("gen_ai.agent.name", "agent_name")) or suffix(view.name, "invoke_agent ")
    input_text, output_text, _, _ = messages(view, attrs, max_chars)
    return agent_run(
        view,
        attrs,
        dialect,
        max_chars,
        name=name,
        conversation_id=first(attrs, ("gen_ai.conversation.id", "session.id")),
        input_text=input_text,
        output_text=output_text if output_text is not None else attrs.get("final_result"),
        usage=agent_usage(attrs),
    )


PARSERS: dict[str, Parser] = {
    "execute_tool": parse_tool,
    **dict.fromkeys(MODEL_OPERATIONS, parse_model),
    **dict.fromkeys(AGENT_OPERATIONS, parse_agent),
}
