"""Where an observation's input and output came from: Langfuse's OpenTelemetry ingestion, read backwards.

When Langfuse ingests a span over OTLP it moves one pair of the span's attributes into the
observation's ``input`` and ``output`` and deletes every candidate key from the attributes it keeps
in ``metadata.attributes`` (``traceloop.entity.input``, ``input.value``, ``gen_ai.input.messages``,
``gen_ai.prompt.*``, ...; Langfuse's ``OtelIngestionProcessor.extractInputAndOutput``). The key is not
recorded. :func:`restore_io` puts the two values back under the key the span's remaining evidence
names (its instrumentation scope, its vendor's kind key, its operation), so the dialects read them
where the instrumentation wrote them. Flattened messages (``gen_ai.prompt.0.role``) that Langfuse
nested into one object are flattened again.

Before any attribute, Langfuse takes a span's per-message events (``gen_ai.system.message``,
``gen_ai.user.message``, ``gen_ai.assistant.message``, ``gen_ai.tool.message``: the input, each event's
attributes with ``role`` from its name; ``gen_ai.choice``: the output, one choice's attributes or a
list of them) and drops every other event. :func:`restore_events` gives those events back.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

_TOOL_OPERATION = "execute_tool"
# The roles Langfuse names its input messages after the per-message events they came from.
_EVENT_ROLES = frozenset({"system", "user", "assistant", "tool"})
_CHOICE = "gen_ai.choice"


def _decoded(value: str) -> Any:
    try:
        return orjson.loads(value)
    except orjson.JSONDecodeError:
        return None


def _parts(value: str) -> bool:
    """Whether the value is a list of the conventions' messages (``{role, parts}``)."""
    decoded = _decoded(value) if value[:1] == "[" else None
    return (
        isinstance(decoded, list)
        and bool(decoded)
        and all(isinstance(i, Mapping) and "parts" in i for i in decoded)
    )


def _flatten(prefix: str, value: Any, out: dict[str, Any]) -> None:
    """``{prefix}.0.role = ...`` from Langfuse's nested form of flattened attributes."""
    if isinstance(value, Mapping):
        for key, inner in value.items():
            _flatten(f"{prefix}.{key}", inner, out)
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            if inner is not None:
                _flatten(f"{prefix}.{index}", inner, out)
    else:
        out[prefix] = value


def _messages_key(value: str, keys: tuple[str, str, str], conventions: bool, out: dict[str, Any]) -> None:
    """Messages back where Langfuse could have taken them from, by their shape and the span's
    conventions. ``keys``: the conventions' key, the older flattened prefix, the plain key. A list
    of ``{role, parts}`` goes under the conventions' key; a list of other messages under that key
    when ``conventions`` (the span names its operation), else flattened under the older prefix
    (Langfuse nests ``gen_ai.prompt.0.role`` keys into such a list); anything else under the plain
    key (``input``, ``output``) and the older prefix itself (a bare ``gen_ai.prompt``, which
    Langfuse keeps as it is). Langfuse deleted every candidate key, so none of these overwrites an
    attribute it kept."""
    new, flat, plain = keys
    decoded = _decoded(value)
    if not isinstance(decoded, list):
        out[plain] = out[flat] = value
    elif conventions or not all(isinstance(i, Mapping) and "parts" not in i for i in decoded):
        out[new] = value
    else:
        _flatten(flat, decoded, out)


def _keys(attrs: Mapping[str, Any], scope_name: str, name: str) -> tuple[str, str] | None:
    """The input and output keys the span's evidence names, or None for the message forms."""
    operation = attrs.get("gen_ai.operation.name")
    if scope_name == "ai":
        if "ai.toolCall.name" in attrs:
            return "ai.toolCall.args", "ai.toolCall.result"
        return "ai.prompt.messages", "ai.response.text"
    if any(key.startswith("gcp.vertex.agent.") for key in attrs):
        if operation == _TOOL_OPERATION:
            return "gcp.vertex.agent.tool_call_args", "gcp.vertex.agent.tool_response"
        return "gcp.vertex.agent.llm_request", "gcp.vertex.agent.llm_response"
    if "mlflow.spanType" in attrs:
        return "mlflow.spanInputs", "mlflow.spanOutputs"
    if "traceloop.span.kind" in attrs:
        return "traceloop.entity.input", "traceloop.entity.output"
    if "openinference.span.kind" in attrs:
        return "input.value", "output.value"
    if name == "running tool":
        return "tool_arguments", "tool_response"
    if scope_name == "pydantic-ai" and operation is None and "gen_ai.tool.name" not in attrs:
        return "pydantic_ai.all_messages", "final_result"
    if operation == _TOOL_OPERATION or "gen_ai.tool.name" in attrs:
        return "gen_ai.tool.call.arguments", "gen_ai.tool.call.result"
    if operation is not None or any(key.startswith("gen_ai.") for key in attrs):
        return None
    return "input", "output"


def restore_io(
    attrs: dict[str, Any], scope_name: str, name: str, value_in: str | None, value_out: str | None
) -> None:
    """Puts an OTel-ingested observation's ``input`` and ``output`` back into ``attrs``."""
    keys = _keys(attrs, scope_name, name)
    if keys is None:
        # Langfuse's path for flattened keys (``gen_ai.prompt.*``, ``llm.input_messages.*``) always
        # stores both sides, an empty one as ``{}``: such a pair is flattened back.
        conventions = "gen_ai.operation.name" in attrs and "{}" not in (value_in, value_out)
        if value_in is not None:
            _messages_key(value_in, ("gen_ai.input.messages", "gen_ai.prompt", "input"), conventions, attrs)
        if value_out is not None:
            keys_out = ("gen_ai.output.messages", "gen_ai.completion", "output")
            _messages_key(value_out, keys_out, conventions, attrs)
        return
    key_in, key_out = keys
    # Only the conventions' messages are lists of ``{role, parts}``: a vendor's span that also
    # carries them (Google ADK's model calls) had its own keys empty, and Langfuse took these.
    if value_in is not None and _parts(value_in):
        key_in = "gen_ai.input.messages"
    if value_out is not None and _parts(value_out):
        key_out = "gen_ai.output.messages"
    if value_in is not None:
        attrs[key_in] = value_in
    if value_out is None:
        return
    decoded = _decoded(value_out) if scope_name == "ai" else None
    if isinstance(decoded, Mapping) and "tool_calls" in decoded:
        # The Vercel AI SDK's text and requested calls, joined into one message by Langfuse (the
        # calls as the attribute held them, JSON text; decoded by a server that parsed it).
        calls = decoded["tool_calls"]
        attrs["ai.response.text"] = decoded.get("content") or ""
        attrs["ai.response.toolCalls"] = calls if isinstance(calls, str) else orjson.dumps(calls).decode()
    elif isinstance(decoded, list) and key_out == "ai.response.text":
        attrs["ai.response.toolCalls"] = value_out
    else:
        attrs[key_out] = value_out


def _message_events(decoded: Any) -> list[tuple[str, dict[str, Any]]] | None:
    """``(event name, attributes)`` of Langfuse's input made of per-message events, else None."""
    if not isinstance(decoded, list) or not decoded:
        return None
    events: list[tuple[str, dict[str, Any]]] = []
    for item in decoded:
        if not isinstance(item, Mapping) or item.get("role") not in _EVENT_ROLES or "parts" in item:
            return None
        attributes = {k: v for k, v in item.items() if k != "role"}
        events.append((f"gen_ai.{item['role']}.message", attributes))
    return events


def _choice_events(decoded: Any) -> list[tuple[str, dict[str, Any]]] | None:
    """``(gen_ai.choice, attributes)`` of Langfuse's output made of choice events, else None: a
    choice's attributes name no role (a message would) and hold its ``message`` or finish reason."""
    choices = decoded if isinstance(decoded, list) else [decoded]
    if not choices or not all(
        isinstance(c, Mapping) and "role" not in c and ("message" in c or "finish_reason" in c)
        for c in choices
    ):
        return None
    return [(_CHOICE, dict(choice)) for choice in choices]


def restore_events(
    attrs: Mapping[str, Any], value_in: str | None, value_out: str | None
) -> list[tuple[str, dict[str, Any]]] | None:
    """The per-message events a GenAI span's ``input`` and ``output`` were taken from, ``(name,
    attributes)`` in order, or None when they were not taken from events: an input of such messages,
    with choices or nothing for output, on a span that names its GenAI operation or system (the
    events' conventions). An output alone is left to the attributes: a value of some key may look
    like a choice."""
    if ("gen_ai.operation.name" not in attrs and "gen_ai.system" not in attrs) or value_in is None:
        return None
    messages = _message_events(_decoded(value_in))
    choices = _choice_events(_decoded(value_out)) if value_out is not None else []
    if messages is None or choices is None:
        return None
    return messages + choices
