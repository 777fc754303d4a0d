"""GenAI semantic conventions, old and new names (openai-v2 + util-genai, pydantic-ai 2.x, Strands).

Classified by ``gen_ai.operation.name``. Messages come from ``gen_ai.input.messages`` /
``gen_ai.output.messages`` when content capture records them as attributes, else from span events:
the older per-message events (``gen_ai.user.message``, ``gen_ai.choice``, ``gen_ai.tool.message``),
``gen_ai.client.inference.operation.details`` (messages as event attributes) and the oldest
``gen_ai.content.prompt`` / ``gen_ai.content.completion``. Strands records tool arguments and results
in events unless ``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental`` is set.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

from otel_traj.dialects import operations
from otel_traj.dialects._base import PARSE_LIMIT, as_str, dumps, loads
from otel_traj.dialects._messages import (
    Output,
    as_messages,
    assistant_output,
    content_text,
    last_user_text,
    last_user_text_in,
)
from otel_traj.dialects._results import ToolResults, request_failures, request_results, resent_calls
from otel_traj.dialects.vocabulary import Vocabulary, not_steps
from otel_traj.spanview import SpanView
from otel_traj.steps import LazyText, RequestedTool

DIALECT = "semconv"
MODEL_OPERATIONS = frozenset({"chat", "generate_content", "text_completion"})
AGENT_OPERATIONS = frozenset({"invoke_agent", "invoke_workflow"})
OPERATION = "gen_ai.operation.name"
# The operations the conventions define that run no step of a trajectory. Retrieval and memory
# operations are context operations (``operations``).
_NOT_STEPS = ("embeddings", "create_agent", "plan", "create_memory_store")
VOCABULARY = Vocabulary(
    OPERATION,
    DIALECT,
    {
        "execute_tool": "tool",
        **dict.fromkeys(sorted(MODEL_OPERATIONS), "model"),
        **dict.fromkeys(sorted(AGENT_OPERATIONS), "agent"),
        **operations.meanings(),
        **not_steps(_NOT_STEPS),
    },
)
INPUT = "gen_ai.input.messages"
OUTPUT = "gen_ai.output.messages"
DETAILS_EVENT = "gen_ai.client.inference.operation.details"
PROVIDER_KEYS = ("gen_ai.provider.name", "gen_ai.system")
STRANDS_PROVIDER = "strands-agents"
# Providers that serve Gemini models: their ``tool_call_response`` parts are the function responses
# as the Gemini API takes them, where an ``error`` key reports a failure (``_results._failed``). The
# conventions' values and the older ``gemini`` / ``vertex_ai`` (OpenTelemetry's google-genai
# instrumentation); not pydantic-ai's ``google-gla`` / ``google-vertex``, whose parts hold the
# tool's own return value.
GEMINI_PROVIDERS = frozenset({"gcp.gemini", "gcp.vertex_ai", "gcp.gen_ai", "gemini", "vertex_ai"})
# MCP's conventions: the method of an MCP request, ``tools/call`` for a tool call.
MCP_METHOD = "mcp.method.name"
MCP_TOOL_CALL = "tools/call"
# Strands records a tool's result as Bedrock content blocks ``[{"text": ...}]``: the text is the result.
_STRANDS_TEXT_BLOCKS = '[{"text": '


TOOL_DEFINITIONS = "gen_ai.tool.definitions"
# Tools kept per request: a request offers a handful; a span listing thousands is cut, not kept.
MAX_DEFINITIONS = 128


def tool_definitions(attrs: Mapping[str, Any], max_chars: int) -> tuple[tuple[str, str], ...]:
    """``(name, parameters schema as JSON)`` of the tools ``gen_ai.tool.definitions`` offers (a list
    of ``{type, name, description, parameters}``, structured or a JSON string); a schema longer than
    ``max_chars`` is left out rather than cut into JSON that no longer parses."""
    raw = attrs.get(TOOL_DEFINITIONS)
    if raw is None:
        return ()
    definitions = loads(raw, PARSE_LIMIT) if isinstance(raw, str) else raw
    if isinstance(definitions, tuple):
        definitions = [loads(d) if isinstance(d, str) else d for d in definitions]
    if not isinstance(definitions, list):
        return ()
    found: list[tuple[str, str]] = []
    for definition in definitions[:MAX_DEFINITIONS]:
        if not isinstance(definition, Mapping):
            continue
        name, parameters = definition.get("name"), definition.get("parameters")
        if not isinstance(name, str) or not name or not isinstance(parameters, Mapping):
            continue
        text = dumps(parameters)
        if text is not None and len(text) <= max_chars and len(name) <= max_chars:
            found.append((name, text))
    return tuple(found)


def _strands(attrs: Mapping[str, Any]) -> bool:
    return any(attrs.get(key) == STRANDS_PROVIDER for key in PROVIDER_KEYS)


def strands_messages_in_events(name: str, attrs: Mapping[str, Any]) -> str | None:
    """What a Strands model call keeps in its span events only: its messages (the per-message events,
    or ``operation.details`` with the latest conventions), when no attribute holds them."""
    if (
        attrs.get(OPERATION) in MODEL_OPERATIONS
        and _strands(attrs)
        and INPUT not in attrs
        and OUTPUT not in attrs
    ):
        return "Strands' model messages (the calls the model requested)"
    return None


def strands_result(value: Any, attrs: Mapping[str, Any]) -> Any:
    """A Strands tool result without its content-block wrapper."""
    if not isinstance(value, str) or not value.startswith(_STRANDS_TEXT_BLOCKS):
        return value
    if _strands(attrs):
        return content_text(value) or value
    return value


def _details(view: SpanView) -> Mapping[str, Any] | None:
    """Message attributes of the ``operation.details`` events (Strands records one per message list)."""
    merged: dict[str, Any] | None = None
    for event in view.events:
        if event.name == DETAILS_EVENT:
            merged = merged if merged is not None else {}
            merged.update(event.attributes or {})
    return merged


def _lazy_input(raw: Any, max_chars: int) -> LazyText:
    # Deferred: the input is the whole conversation so far; only one call's message is usually read.
    return partial(last_user_text_in, raw, max_chars) if raw is not None else None


def input_messages(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> LazyText:
    return _lazy_input(attrs.get(INPUT), max_chars)


def input_results(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> ToolResults | None:
    raw = attrs.get(INPUT)
    return request_results(raw, max_chars) or None if raw is not None else None


def input_calls(attrs: Mapping[str, Any], max_chars: int) -> Callable[[], tuple[RequestedTool, ...]] | None:
    """The previous response's calls as ``gen_ai.input.messages`` repeats them, ids included: read
    when first needed (the request is the whole conversation so far)."""
    raw = attrs.get(INPUT)
    return partial(resent_calls, raw, max_chars) if raw is not None else None


def _gemini(attrs: Mapping[str, Any]) -> bool:
    """Whether the span records a call to a Gemini model (its provider is one of Google's)."""
    return any(attrs.get(key) in GEMINI_PROVIDERS for key in PROVIDER_KEYS)


def input_failures(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> tuple[str, ...] | None:
    raw = attrs.get(INPUT)
    return request_failures(raw, max_chars, _gemini(attrs)) or None if raw is not None else None


def details_failures(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> tuple[str, ...] | None:
    """Call ids the ``operation.details`` event's input messages send back as failures (the capture
    mode that records the messages as events, not attributes)."""
    details = _details(view) if view.events else None
    raw = details.get(INPUT) if details else None
    return request_failures(raw, max_chars, _gemini(attrs)) or None if raw is not None else None


def details_results(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> ToolResults | None:
    details = _details(view) if view.events else None
    raw = details.get(INPUT) if details else None
    return request_results(raw, max_chars) or None if raw is not None else None


def output_messages(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> Output | None:
    raw = attrs.get(OUTPUT)
    return assistant_output(as_messages(raw), max_chars) if raw is not None else None


def details_input(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> LazyText:
    details = _details(view) if view.events else None
    return _lazy_input(details.get(INPUT), max_chars) if details else None


def details_output(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> Output | None:
    details = _details(view) if view.events else None
    raw = details.get(OUTPUT) if details else None
    return assistant_output(as_messages(raw), max_chars) if raw is not None else None


def events_input(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> str | None:
    """The user's text in ``gen_ai.user.message`` / ``gen_ai.content.prompt`` events."""
    user_text: str | None = None
    for event in view.events:
        event_attrs = event.attributes or {}
        if event.name == "gen_ai.user.message":
            user_text = content_text(event_attrs.get("content")) or user_text
        elif event.name == "gen_ai.content.prompt":
            prompt = as_messages(event_attrs.get("gen_ai.prompt"))
            user_text = last_user_text(prompt, max_chars) or user_text
    return user_text


def events_output(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> Output | None:
    """The response in ``gen_ai.choice`` / ``gen_ai.content.completion`` events."""
    outputs: list[Any] = []
    reasons: list[str] = []
    for event in view.events:
        event_attrs = event.attributes or {}
        name = event.name
        if name == "gen_ai.choice":
            message = event_attrs.get("message")
            # A JSON string on a span event; a map when the event came as a log record.
            structured = isinstance(message, Mapping | list | tuple) or (
                isinstance(message, str) and message[:1] in ("[", "{")
            )
            parsed = as_messages(message) if structured else []
            if parsed and isinstance(parsed[0], Mapping) and ("role" in parsed[0] or "content" in parsed[0]):
                outputs += parsed
            elif parsed:
                outputs.append({"role": "assistant", "content": parsed})
            elif isinstance(message, str):
                outputs.append({"role": "assistant", "content": message})
            reason = as_str(event_attrs.get("finish_reason"))
            if reason:
                reasons.append(reason)
        elif name == "gen_ai.content.completion":
            outputs += as_messages(event_attrs.get("gen_ai.completion"))
    if not outputs and not reasons:
        return None
    text, requested, message_reasons = assistant_output(outputs, max_chars)
    return text, requested, tuple(reasons) or message_reasons


# The request's messages as per-message events, by event name: the role each stands for.
_MESSAGE_EVENTS = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}


def _event_message(name: str, event_attrs: Mapping[str, Any]) -> dict[str, Any]:
    message = {"role": _MESSAGE_EVENTS[name], **event_attrs}
    if name == "gen_ai.tool.message":
        message["tool_call_id"] = event_attrs.get("id")
    return message


def _event_messages(view: SpanView) -> list[dict[str, Any]]:
    return [
        _event_message(event.name, event.attributes or {})
        for event in view.events
        if event.name in _MESSAGE_EVENTS
    ]


def events_results(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> ToolResults | None:
    """The results sent back after the last assistant message of the per-message events (a
    ``gen_ai.tool.message`` each, or result blocks in a ``gen_ai.user.message``, as Bedrock sends them)."""
    messages = _event_messages(view) if view.events else []
    return request_results(messages, max_chars) or None if messages else None


def events_failures(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> tuple[str, ...] | None:
    """Call ids whose results the per-message events send back as failures (Bedrock's ``toolResult``
    with ``status: error``; ``gen_ai.tool.message`` keeps no status)."""
    messages = _event_messages(view) if view.events else []
    return request_failures(messages, max_chars, _gemini(attrs)) or None if messages else None
