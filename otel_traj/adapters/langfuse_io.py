"""Where an observation's input and output came from: Langfuse's OpenTelemetry ingestion, read backwards.

When Langfuse ingests a span over OTLP it moves one pair of the span's attributes into the
observation's ``input`` and ``output`` and deletes every candidate key from the attributes it keeps
in ``metadata.attributes`` (``traceloop.entity.input``, ``input.value``, ``gen_ai.input.messages``,
``gen_ai.prompt.*``, ...; Langfuse's ``OtelIngestionProcessor.extractInputAndOutput``). The key is not
recorded. :func:`restore_io` puts the two values back under the key the span's remaining evidence
names (its instrumentation scope, its vendor's kind key, its operation), so the dialects read them
where the instrumentation wrote them. Flattened messages (``gen_ai.prompt.0.role``) that Langfuse
nested into one object are flattened again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

_TOOL_OPERATION = "execute_tool"


def _decoded(value: str) -> Any:
    try:
        return orjson.loads(value)
    except orjson.JSONDecodeError:
        return None


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


def _messages_key(value: str, new: str, flat: str, plain: str, out: dict[str, Any]) -> None:
    """Messages under the conventions' key (``parts``), else flattened under the older prefix; a
    value that is no list of messages under ``plain`` (``input``, ``output``): Langfuse took it from
    there, the one key before the message keys in its order that holds anything."""
    decoded = _decoded(value)
    items = decoded if isinstance(decoded, list) else None
    if items is None:
        out[plain] = value
    elif items and all(isinstance(i, Mapping) and "parts" not in i for i in items):
        _flatten(flat, items, out)
    else:
        out[new] = value


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
        if value_in is not None:
            _messages_key(value_in, "gen_ai.input.messages", "gen_ai.prompt", "input", attrs)
        if value_out is not None:
            _messages_key(value_out, "gen_ai.output.messages", "gen_ai.completion", "output", attrs)
        return
    key_in, key_out = keys
    if value_in is not None:
        attrs[key_in] = value_in
    if value_out is None:
        return
    decoded = _decoded(value_out) if scope_name == "ai" else None
    if isinstance(decoded, Mapping) and "tool_calls" in decoded:
        # The Vercel AI SDK's text and requested calls, joined into one message by Langfuse.
        attrs["ai.response.text"] = decoded.get("content") or ""
        attrs["ai.response.toolCalls"] = orjson.dumps(decoded["tool_calls"]).decode()
    elif isinstance(decoded, list) and key_out == "ai.response.text":
        attrs["ai.response.toolCalls"] = value_out
    else:
        attrs[key_out] = value_out
