"""Spans written by the Langfuse SDK (v3+, OTel based): ``langfuse.observation.type``.

``tool`` / ``generation`` / ``agent`` observations map to steps, a ``retriever`` to a retrieval
(``operations``): its output is what it returned (the LangChain integration's ``on_retriever_end``
records the ``Document`` list, dumped as ``{id, metadata, page_content, type}``), its input the query;
``span``, ``chain``, ``event`` and the rest are no steps. Input and output are JSON text (``observe``
records a function's call as ``{"args": [...], "kwargs": {...}}``); a generation's usage is the JSON
object ``langfuse.observation.usage_details`` (``input``/``output`` plus provider-specific keys). A failed
observation has ``level=ERROR`` and its message in ``status_message``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from otel_traj.dialects import documents, langsmith
from otel_traj.dialects._base import json_string, loads
from otel_traj.dialects._messages import (
    Output,
    as_messages,
    assistant_output,
    content_text,
    last_assistant_text,
    last_user_text,
)
from otel_traj.dialects._results import ToolResults
from otel_traj.dialects._results import request_failures as shared_failures
from otel_traj.dialects._results import request_results as shared_results
from otel_traj.dialects._steps import unwrap_arguments
from otel_traj.dialects.vocabulary import Vocabulary, not_steps, reads
from otel_traj.spanview import SpanView

DIALECT = "langfuse"
TYPE = "langfuse.observation.type"
INPUT = "langfuse.observation.input"
OUTPUT = "langfuse.observation.output"
# Trace-level keys of the Langfuse SDK: the session (conversation) and the user.
SESSION = "langfuse.session.id"
USER = "langfuse.user.id"
PROMPT_KEYS: tuple[tuple[str | None, str], ...] = (
    ("langfuse.observation.prompt.name", "langfuse.observation.prompt.version"),
)
RETRIEVER = "retriever"
# Langfuse's observation types: tool, generation and agent observations are steps, a retriever a read.
VOCABULARY = Vocabulary(
    TYPE,
    DIALECT,
    {
        "tool": "tool",
        "generation": "model",
        "agent": "agent",
        RETRIEVER: reads(OUTPUT, INPUT),
        **not_steps(("span", "event", "chain", "evaluator", "embedding", "guardrail")),
    },
)


# Keys of an observation's metadata that Langfuse fills itself (not the application's metadata).
API_RESERVED_METADATA = frozenset({"attributes", "resourceAttributes", "scopeAttributes", "scope"})


def api_attributes(observation: Mapping[str, Any]) -> dict[str, Any]:
    """An observation of the public API as the span attributes the Langfuse SDK writes: its type,
    input, output, model, usage details, level and status message, session and user, and its
    metadata as the trace's (``langfuse.trace.metadata.<key>``, as ``propagate_attributes`` sets it
    on every span). This dialect reads them as it reads the SDK's spans."""
    attrs: dict[str, Any] = {}
    kind = observation.get("type")
    if isinstance(kind, str) and kind:
        # ``TOOL``, ``GENERATION``, ``AGENT``, ``SPAN``, ``CHAIN``, ``RETRIEVER``, ``EVENT``, ...: the
        # API's capitals are the SDK's values; the vocabulary above says which are steps.
        attrs[TYPE] = kind.lower()
    for field, key in (
        ("input", INPUT),
        ("output", OUTPUT),
        ("model", "langfuse.observation.model.name"),
        ("level", "langfuse.observation.level"),
        ("statusMessage", "langfuse.observation.status_message"),
        ("sessionId", SESSION),
        ("userId", USER),
    ):
        value = observation.get(field)
        if value is not None:
            attrs[key] = value if isinstance(value, str) else orjson.dumps(value).decode()
    usage = observation.get("usageDetails")
    if isinstance(usage, Mapping) and usage:
        attrs["langfuse.observation.usage_details"] = orjson.dumps(dict(usage)).decode()
    metadata = observation.get("metadata")
    if isinstance(metadata, Mapping):
        for key, value in metadata.items():
            if key not in API_RESERVED_METADATA and isinstance(value, str | int | float | bool):
                attrs[f"langfuse.trace.metadata.{key}"] = value
    return attrs


def failed(attrs: Mapping[str, Any]) -> bool:
    return attrs.get("langfuse.observation.level") == "ERROR"


def generation_output(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> Output | None:
    """A generation's output: a message, a list of messages, a chat completion's choices (an OpenAI
    response, as LiteLLM's integrations record it), a LangChain ``LLMResult``'s generations, or
    text. The last three are what an observation ingested over OTLP holds when its span's
    attributes were not kept (a Langfuse server's events table): its output is the value some
    instrumentation recorded."""
    value = attrs.get(OUTPUT)
    if value is None:
        return None
    decoded = json_string(value)
    if isinstance(decoded, str) and decoded[:1] not in ("{", "["):
        return decoded, (), ()
    if isinstance(decoded, str) and decoded[:1] == "{":
        data = loads(decoded)
        if isinstance(data, Mapping) and isinstance(generations := data.get("generations"), list):
            return langsmith.generations_output(generations, max_chars)
        if isinstance(data, Mapping) and isinstance(choices := data.get("choices"), list):
            decoded = [
                c["message"]
                for c in choices
                if isinstance(c, Mapping) and isinstance(c.get("message"), Mapping)
            ]
    messages = as_messages(decoded)
    if messages and isinstance(messages[0], Mapping) and "role" not in messages[0]:
        return content_text(decoded), (), ()
    return assistant_output(messages, max_chars)


def generation_input(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> str | None:
    """A generation's input: messages, or the OpenAI drop-in's ``{"tools", "messages"}`` (whenever a
    call passes tools), or text."""
    raw = json_string(attrs.get(INPUT))
    if raw is None:
        return None
    if isinstance(raw, str) and raw[:1] not in ("{", "["):
        return raw
    messages = as_messages(raw)
    if len(messages) == 1 and isinstance(messages[0], Mapping) and "messages" in messages[0]:
        messages = as_messages(messages[0]["messages"])
    return last_user_text(messages, max_chars)


def _request(attrs: Mapping[str, Any]) -> Any:
    """A generation's input: the request's messages, or a request body holding them."""
    return json_string(attrs.get(INPUT)) if attrs.get(TYPE) == "generation" else None


def request_results(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> ToolResults | None:
    """The tool results a generation's request sends back for the previous response's calls."""
    return shared_results(_request(attrs), max_chars) or None


def request_failures(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> tuple[str, ...] | None:
    """Call ids whose results a generation's request sends back as failures (Anthropic's
    ``is_error``, a tool message's ``status: error``): where Langfuse kept only the typed fields of
    a span, its input is the only record of them."""
    return shared_failures(_request(attrs), max_chars) or None


def observation_input(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> str | None:
    """An agent observation's input: the first text argument of ``observe``'s wrapper, or messages."""
    raw, _ = unwrap_arguments(attrs.get(INPUT), max_chars)
    raw = json_string(raw)
    if isinstance(raw, Mapping):
        return next((v for v in raw.values() if isinstance(v, str)), None)
    if isinstance(raw, str) and raw[:1] not in ("{", "["):
        return raw
    return last_user_text(as_messages(raw), max_chars) if raw is not None else None


def observation_output(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> str | None:
    output = json_string(attrs.get(OUTPUT))
    if isinstance(output, str) and output[:1] in ("{", "["):
        return last_assistant_text(as_messages(output), max_chars)
    return output if isinstance(output, str) else None


def is_retriever(attrs: Mapping[str, Any]) -> bool:
    return attrs.get(TYPE) == RETRIEVER


def retrieved(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> str | None:
    """What a retriever observation returned: its output's documents."""
    return documents.listed(attrs.get(OUTPUT)) if is_retriever(attrs) else None


def retrieval_query(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> str | None:
    """What a retriever observation asked for: its input (the query text)."""
    return observation_input(view, attrs, max_chars) if is_retriever(attrs) else None
