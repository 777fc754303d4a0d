"""Recorded OTLP/JSON fixtures as the observations a Langfuse server that reads from its events table
gives back (Langfuse v4: ``GET /api/public/v2/observations`` reads only that table).

``OtelIngestionProcessor.processToEvent`` (``packages/shared/src/server/otel/OtelIngestionProcessor.ts``
of langfuse/langfuse, commit 0030ed8) writes each span as one event row whose metadata keeps no span
attribute (``attributes: filteredAttributes`` is commented out): only ``resourceAttributes``,
``scopeAttributes`` (the scope's own attributes; its name and version go to columns the public API
does not return) and the application's metadata (``langfuse.observation.metadata.*``,
``langfuse.trace.metadata.*``, the Vercel AI SDK's ``ai.telemetry.metadata.*``). What remains of the
span are the typed fields: the type (``ObservationTypeMapper``), the name (``extractName``), input and
output (``extractInputAndOutput``, as the ingestion path takes them), the model (``extractModelName``),
usage and cost (``extractUsageDetails``, ``extractCostDetails``), level and status message, session
and user. The tool definitions and calls it extracts (``toolDefinitions``, ``toolCalls``,
``toolCallNames``) are columns no field group of the public API selects (``FIELD_SETS`` in
``event-query-builder.ts``: ``core``, ``basic``, ``time``, ``model``, ``usage``, ``prompt``,
``metrics``), so they are not given back. The events table keeps metadata as names and string values:
an object is its JSON text.
"""

from __future__ import annotations

import json
from typing import Any

from tests.langfuse_reads import _attrs, _name, _text, each_span, ingested_io, span_fields, validated

# ``ObservationTypeMapperRegistry``'s direct mappings, in its priority order.
_DIRECT = (
    (
        "langfuse.observation.type",
        {k: k.upper() for k in ("span", "generation", "event", "embedding", "agent", "tool", "chain",
                                "retriever", "guardrail", "evaluator")},
    ),
    (
        "openinference.span.kind",
        {"CHAIN": "CHAIN", "RETRIEVER": "RETRIEVER", "LLM": "GENERATION", "EMBEDDING": "EMBEDDING",
         "AGENT": "AGENT", "TOOL": "TOOL", "GUARDRAIL": "GUARDRAIL", "EVALUATOR": "EVALUATOR"},
    ),
    (
        "gen_ai.operation.name",
        {"chat": "GENERATION", "completion": "GENERATION", "text_completion": "GENERATION",
         "generate_content": "GENERATION", "generate": "GENERATION", "embeddings": "EMBEDDING",
         "invoke_agent": "AGENT", "create_agent": "AGENT", "execute_tool": "TOOL"},
    ),
)  # fmt: skip
_VERCEL_MODEL_CALLS = (
    "ai.generateText.doGenerate",
    "ai.streamText.doStream",
    "ai.generateObject.doGenerate",
    "ai.streamObject.doStream",
)
_MODEL_KEYS = ("langfuse.observation.model.name", "gen_ai.request.model", "gen_ai.response.model")
_VERCEL_EMBEDDINGS = ("ai.embedMany.doEmbed", "ai.embed.doEmbed")
_USAGE_KEYS = {
    "prompt_tokens": "input",
    "completion_tokens": "output",
    "total_tokens": "total",
    "input_tokens": "input",
    "output_tokens": "output",
    "prompt": "input",
    "completion": "output",
}
_METADATA_PREFIXES = ("langfuse.observation.metadata", "langfuse.trace.metadata", "langfuse.metadata")
# The Vercel AI SDK's telemetry metadata keys ``extractMetadata`` leaves to the trace's fields.
_TRACE_KEYS = {f"ai.telemetry.metadata.{k}" for k in ("userId", "sessionId", "tags", "langfusePrompt")}
# ``extractSessionId`` and ``extractUserId``'s keys, in their order.
_SESSION_KEYS = (
    "langfuse.session.id",
    "session.id",
    "gen_ai.conversation.id",
    "langfuse.observation.metadata.langfuse_session_id",
    "langfuse.trace.metadata.langfuse_session_id",
    "ai.telemetry.metadata.sessionId",
)
_USER_KEYS = (
    "langfuse.user.id",
    "user.id",
    "langfuse.observation.metadata.langfuse_user_id",
    "langfuse.trace.metadata.langfuse_user_id",
    "ai.telemetry.metadata.userId",
)


def _vercel(attrs: dict[str, Any], prefixes: tuple[str, ...]) -> bool:
    operation, ident = attrs.get("operation.name"), attrs.get("ai.operationId")
    return (isinstance(operation, str) and operation.startswith(prefixes)) or ident in prefixes


def observation_type(attrs: dict[str, Any]) -> str:
    """``ObservationTypeMapperRegistry.mapToObservationType`` (the Python SDK 3.3 override aside: no
    recorded run is that old)."""
    for key, mapping in _DIRECT:
        if attrs.get(key) and attrs[key] in mapping:
            return mapping[attrs[key]]
    if any(attrs.get(k) for k in (*_MODEL_KEYS, "ai.model.id")):
        if _vercel(attrs, _VERCEL_MODEL_CALLS):
            return "GENERATION"
        if _vercel(attrs, _VERCEL_EMBEDDINGS):
            return "EMBEDDING"
    if _vercel(attrs, ("ai.toolCall",)):
        return "TOOL"
    if attrs.get("gen_ai.tool.name") or attrs.get("gen_ai.tool.call.id"):
        return "TOOL"
    if any(attrs.get(k) for k in (*_MODEL_KEYS, "llm.model_name", "model")):
        return "GENERATION"
    return "SPAN"


def _number(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if number != number else number


def usage_details(attrs: dict[str, Any], scope: str) -> dict[str, int]:
    """``extractUsageDetails``, counts only (the API's ``usageDetails`` is ``Dict[str, int]``)."""
    given = attrs.get("langfuse.observation.usage_details")
    if isinstance(given, str):
        found: dict[str, Any] = json.loads(given)
    elif scope == "ai":
        found = {
            "input": attrs.get("gen_ai.usage.prompt_tokens", attrs.get("gen_ai.usage.input_tokens")),
            "output": attrs.get("gen_ai.usage.completion_tokens", attrs.get("gen_ai.usage.output_tokens")),
            "total": attrs.get("ai.usage.tokens"),
        }
    elif scope == "pydantic-ai":
        found = {
            "input": attrs.get("gen_ai.usage.details.input_tokens"),
            "output": attrs.get("gen_ai.usage.details.output_tokens"),
            "input_cache_read": attrs.get("gen_ai.usage.details.cache_read_input_tokens"),
        }
    else:
        found = {}
        for key, value in attrs.items():
            counted = key.startswith("gen_ai.usage.") and key != "gen_ai.usage.cost"
            if counted or key.startswith("llm.token_count"):
                name = key.removeprefix("gen_ai.usage.").removeprefix("llm.token_count.")
                number = _number(value)
                if number is not None:
                    found[_USAGE_KEYS.get(name, name)] = number
    return {
        k: int(v)
        for k, v in found.items()
        if isinstance(v, int | float) and not isinstance(v, bool) and float(v).is_integer()
    }


def _model(attrs: dict[str, Any]) -> str | None:
    for key in (
        "langfuse.observation.model.name",
        "gen_ai.response.model",
        "ai.model.id",
        "gen_ai.request.model",
        "llm.response.model",
        "llm.model_name",
        "model",
    ):
        if attrs.get(key):
            return str(_text(attrs[key]))
    return None


def _first(attrs: dict[str, Any], *keys: str) -> str | None:
    value = next((attrs[k] for k in keys if attrs.get(k)), None)
    return None if value is None else str(_text(value))


def _metadata(attrs: dict[str, Any], resource: dict[str, Any], scope: dict[str, Any]) -> dict[str, Any]:
    """``resourceAttributes``, ``scopeAttributes`` and ``extractMetadata``'s keys (of the observation
    and of the trace: a JSON object under the prefix itself, then each prefixed key; the Vercel AI
    SDK's tools), each a string."""
    metadata: dict[str, Any] = {"resourceAttributes": resource, "scopeAttributes": _attrs(scope)}
    for prefix in _METADATA_PREFIXES:
        whole = attrs.get(prefix)
        if isinstance(whole, str) and whole[:1] == "{":
            metadata.update(json.loads(whole))
    for key, value in attrs.items():
        for prefix in (*_METADATA_PREFIXES, "ai.telemetry.metadata"):
            if key.startswith(prefix + ".") and key not in _TRACE_KEYS:
                metadata[key[len(prefix) + 1 :]] = value
    if attrs.get("ai.prompt.tools"):
        metadata["tools"] = attrs["ai.prompt.tools"]
    return {k: v if isinstance(v, str) else json.dumps(v) for k, v in metadata.items()}


def event_observation(
    span: dict[str, Any], resource: dict[str, Any], scope: dict[str, Any]
) -> dict[str, Any]:
    """One span as the events table gives it back, validated with ``ObservationV2``."""
    attrs = _attrs(span)
    scope_name = scope.get("name", "")
    value_in, value_out = ingested_io(attrs, scope_name, span.get("events") or [])
    status = span.get("status") or {}
    error = status.get("code") in (2, "STATUS_CODE_ERROR")
    usage = usage_details(attrs, scope_name)
    body = {
        **span_fields(span),
        "type": observation_type(attrs),
        "name": _name(span["name"], attrs),
        "level": attrs.get("langfuse.observation.level") or ("ERROR" if error else "DEFAULT"),
        "statusMessage": attrs.get("langfuse.observation.status_message") or status.get("message") or None,
        "sessionId": _first(attrs, *_SESSION_KEYS),
        "userId": _first(attrs, *_USER_KEYS),
        "input": _text(value_in),
        "output": _text(value_out),
        "metadata": _metadata(attrs, resource, scope),
        "model": _model(attrs),
        "usageDetails": usage or None,
    }
    return validated(body)


def event_observations_from_otlp(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """Every span of an OTLP/JSON document as the observation the events table gives back."""
    return each_span(doc, event_observation)
