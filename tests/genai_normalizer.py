"""The OpenTelemetry Collector's GenAI normalizer processor (opentelemetry-collector-contrib,
``processor/genainormalizerprocessor``), re-implemented over OTLP/JSON spans so the real fixtures can
be read as the Collector passes them on. Read at commit 1183d58dd00a01ff2ef201135bebb950547e228b
(``internal/openinference/{mappings,valuemappings}.go``, ``internal/openllmetry/{mappings,
valuemappings}.go``) and 16a60c1d40d58d7bd1f0c3321ded9d8d5574efa2 (``processor.go``,
``internal/openinference/messages.go``).

What the processor does to each span's attributes (its events are left alone), per source profile:
1. every attribute named in the profile's rename table is copied to its GenAI key, unless that key is
   already on the span (``overwrite`` off, the default); a string copied to ``gen_ai.operation.name``
   is folded onto the operation enum (case-insensitive, unknown values kept); a string finish reason
   becomes a one-element list; with ``remove_originals`` the source attribute is removed once copied;
2. OpenInference only: the flattened ``llm.{input,output}_messages.N.message.*`` attributes are
   rebuilt into ``gen_ai.{input,output}.messages`` JSON (role; ``content`` as one text part;
   ``tool_calls.M.tool_call.{id,function.name,function.arguments}`` as tool_call parts;
   ``tool_call_id`` as one tool_call_response part, role ``user`` becoming ``tool``), unless the target
   is already on the span; with ``remove_originals`` every ``N.message.*`` attribute under the prefix
   is removed, the fields it does not read (``name``, ``contents.*``) included.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

OPERATION = "gen_ai.operation.name"
FINISH_REASONS = "gen_ai.response.finish_reasons"

OPENINFERENCE = {
    "llm.token_count.prompt": "gen_ai.usage.input_tokens",
    "llm.token_count.completion": "gen_ai.usage.output_tokens",
    "llm.model_name": "gen_ai.request.model",
    "llm.provider": "gen_ai.provider.name",
    "llm.input_messages": "gen_ai.input.messages",
    "llm.output_messages": "gen_ai.output.messages",
    "embedding.model_name": "gen_ai.request.model",
    "tool.name": "gen_ai.tool.name",
    "tool.description": "gen_ai.tool.description",
    "tool_call.function.arguments": "gen_ai.tool.call.arguments",
    "tool_call.id": "gen_ai.tool.call.id",
    "reranker.model_name": "gen_ai.request.model",
    "agent.name": "gen_ai.agent.name",
    "session.id": "gen_ai.conversation.id",
    "openinference.span.kind": OPERATION,
}
OPENINFERENCE_OPERATIONS = {
    "llm": "chat",
    "embedding": "embeddings",
    "chain": "invoke_agent",
    "retriever": "retrieval",
    "reranker": "retrieval",
    "tool": "execute_tool",
    "agent": "invoke_agent",
    "prompt": "text_completion",
}

OPENLLMETRY = {
    "llm.usage.prompt_tokens": "gen_ai.usage.input_tokens",
    "llm.usage.completion_tokens": "gen_ai.usage.output_tokens",
    "llm.request.model": "gen_ai.request.model",
    "llm.response.model": "gen_ai.response.model",
    "llm.request.max_tokens": "gen_ai.request.max_tokens",
    "llm.request.temperature": "gen_ai.request.temperature",
    "llm.request.top_p": "gen_ai.request.top_p",
    "llm.top_k": "gen_ai.request.top_k",
    "llm.frequency_penalty": "gen_ai.request.frequency_penalty",
    "llm.presence_penalty": "gen_ai.request.presence_penalty",
    "llm.chat.stop_sequences": "gen_ai.request.stop_sequences",
    "llm.request.functions": "gen_ai.tool.definitions",
    "llm.response.finish_reason": FINISH_REASONS,
    "llm.response.stop_reason": FINISH_REASONS,
    "llm.request.type": OPERATION,
    "traceloop.span.kind": OPERATION,
    "traceloop.entity.name": "gen_ai.agent.name",
    "traceloop.entity.input": "gen_ai.input.messages",
    "traceloop.entity.output": "gen_ai.output.messages",
}
OPENLLMETRY_OPERATIONS = {
    "workflow": "invoke_workflow",
    "task": "invoke_agent",
    "agent": "invoke_agent",
    "tool": "execute_tool",
    "completion": "text_completion",
    "chat": "chat",
    "rerank": "retrieval",
    "embedding": "embeddings",
}


@dataclass(frozen=True)
class Profile:
    renames: dict[str, str]
    operations: dict[str, str]
    messages: bool


PROFILES = {
    "openinference": Profile(renames=OPENINFERENCE, operations=OPENINFERENCE_OPERATIONS, messages=True),
    "openllmetry": Profile(renames=OPENLLMETRY, operations=OPENLLMETRY_OPERATIONS, messages=False),
}

# Attributes as OTLP/JSON holds them: key -> AnyValue ({"stringValue": ...}, {"intValue": ...}, ...).
Attributes = dict[str, dict[str, Any]]


def normalize_otlp(document: dict[str, Any], profile: str, *, remove_originals: bool) -> dict[str, Any]:
    """The OTLP/JSON trace document with every span's attributes normalized by ``profile``."""
    chosen = PROFILES[profile]
    for resource in document["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            for span in scope["spans"]:
                attributes = {a["key"]: a["value"] for a in span.get("attributes", [])}
                normalize(attributes, chosen, remove_originals=remove_originals)
                span["attributes"] = [{"key": k, "value": v} for k, v in attributes.items()]
    return document


def normalize(attributes: Attributes, profile: Profile, *, remove_originals: bool) -> None:
    """One span's attributes normalized in place, the processor's ``overwrite`` off."""
    for source in [key for key in attributes if key in profile.renames]:
        target = profile.renames[source]
        if target in attributes:
            continue
        value = attributes[source]
        text = value.get("stringValue")
        if text is not None and target == OPERATION:
            value = {"stringValue": profile.operations.get(text.lower(), text)}
        elif text is not None and target == FINISH_REASONS:
            value = {"arrayValue": {"values": [{"stringValue": text}]}}
        attributes[target] = value
        if remove_originals:
            del attributes[source]
    if profile.messages:
        _rebuild(attributes, "llm.input_messages.", "gen_ai.input.messages", remove_originals)
        _rebuild(attributes, "llm.output_messages.", "gen_ai.output.messages", remove_originals)


_INDEXED = re.compile(r"(\d+)\.message\.(.+)")
_TOOL_CALL = re.compile(r"tool_calls\.(\d+)\.tool_call\.(id|function\.name|function\.arguments)")


def _rebuild(attributes: Attributes, prefix: str, target: str, remove_originals: bool) -> None:
    messages: dict[int, dict[str, Any]] = {}
    read: list[str] = []
    for key, value in attributes.items():
        matched = _INDEXED.fullmatch(key[len(prefix) :]) if key.startswith(prefix) else None
        if matched is None:
            continue
        fields = messages.setdefault(int(matched[1]), {"calls": {}})
        path, text = matched[2], _as_string(value)
        if path in ("role", "content", "tool_call_id"):
            fields[path] = text
        elif call := _TOOL_CALL.fullmatch(path):
            fields["calls"].setdefault(int(call[1]), {})[call[2]] = text
        read.append(key)
    if not messages or target in attributes:
        return
    rebuilt = [_message(messages[index]) for index in sorted(messages)]
    attributes[target] = {"stringValue": json.dumps(rebuilt)}
    if remove_originals:
        for key in read:
            del attributes[key]


def _message(fields: dict[str, Any]) -> dict[str, Any]:
    role = fields.get("role", "")
    content = fields.get("content", "")
    if fields.get("tool_call_id"):
        part: dict[str, Any] = {"type": "tool_call_response", "id": fields["tool_call_id"]}
        return {"role": "tool" if role == "user" else role, "parts": [{**part, "response": content}]}
    if fields["calls"]:
        return {"role": role, "parts": [_call(fields["calls"][i]) for i in sorted(fields["calls"])]}
    return {"role": role, "parts": [{"type": "text", "content": content}] if content else []}


def _call(call: dict[str, str]) -> dict[str, Any]:
    part: dict[str, Any] = {"type": "tool_call"}
    if call.get("id"):
        part["id"] = call["id"]
    part["name"] = call.get("function.name", "")
    arguments = call.get("function.arguments", "")
    if arguments:
        try:
            parsed = json.loads(arguments)
        except ValueError:
            parsed = arguments
        # Go's omitempty drops the JSON ``null`` it parses to nil.
        if parsed is not None:
            part["arguments"] = parsed
    return part


def _as_string(value: dict[str, Any]) -> str:
    """pcommon.Value.AsString for the scalar values the message attributes hold."""
    [(kind, inner)] = value.items()
    if kind == "boolValue":
        return "true" if inner else "false"
    return str(inner)
