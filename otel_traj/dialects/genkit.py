"""Genkit (``genkit``, JavaScript) tracing: every action is a span with Genkit's own ``genkit:*`` attributes.

``genkit:type`` says what ran (``action``, ``util``, ``flowStep``, ``promptTemplate``, ...) and, for
actions, ``genkit:metadata:subtype`` which action: ``tool``, ``model``, ``agent`` (``ai.defineAgent``),
``flow`` (``ai.defineFlow``). ``genkit:name`` names it (a model by its plugin namespace first:
``openai/gpt-4o-mini``); ``genkit:input`` / ``genkit:output`` hold its input and output as JSON. A
model's are Genkit's request ``{messages, config, tools}`` and response ``{message, finishReason,
usage: {inputTokens, outputTokens}, raw}``, whose messages are ``{role, content: [{text} |
{toolRequest: {name, ref, input}} | {toolResponse: {name, ref, output}}]}`` (``ref`` is the call id);
a tool's are its arguments and result. A ``retriever`` action (``ai.defineRetriever``) is a
retrieval (``operations``): its input is ``{query: <DocumentData>, options}``, its output
``{documents: [<DocumentData>]}``, a document ``{content: [{text} | {media}], metadata}``. The
``generate`` util spans around each turn of the tool loop repeat the request and the final response
(with the last call's usage): they are no steps. An agent's session id is
``genkit:metadata:agent:sessionId``. A failure is the span's status with an ``exception`` event (and
``genkit:state = error``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from otel_traj.dialects import documents
from otel_traj.dialects._base import as_int, as_str, clip_text, first_int, loads_once
from otel_traj.dialects._messages import (
    Output,
    assistant_output,
    content_text,
    last_user_text_in,
    message_text,
)
from otel_traj.dialects._results import ToolResults, request_results
from otel_traj.dialects._usage import Usage
from otel_traj.dialects.vocabulary import Vocabulary, not_steps, reads
from otel_traj.spanview import SpanView
from otel_traj.steps import StepKind

DIALECT = "genkit"
SUBTYPE = "genkit:metadata:subtype"
NAME = "genkit:name"
INPUT = "genkit:input"
OUTPUT = "genkit:output"
SESSION_ID = "genkit:metadata:agent:sessionId"
RETRIEVER = "retriever"
KINDS: dict[str, StepKind] = {
    "tool": "tool",
    "tool.v2": "tool",  # a tool of multipart output (``ai.defineTool({multipart: true})``)
    "model": "model",
    "agent": "agent",
    "flow": "agent",
}
VOCABULARY = Vocabulary(
    SUBTYPE,
    DIALECT,
    {
        **KINDS,
        RETRIEVER: reads(OUTPUT, INPUT),
        **not_steps(
            (
                "util",
                "prompt",
                "executable-prompt",
                "embedder",
                "indexer",
                "reranker",
                "evaluator",
            )
        ),
    },
)


def _kind(attrs: Mapping[str, Any]) -> StepKind | None:
    subtype = attrs.get(SUBTYPE)
    return KINDS.get(subtype) if isinstance(subtype, str) else None


def is_tool(attrs: Mapping[str, Any]) -> bool:
    return _kind(attrs) == "tool"


def is_model(attrs: Mapping[str, Any]) -> bool:
    return attrs.get(SUBTYPE) == "model"


def is_agent(attrs: Mapping[str, Any]) -> bool:
    return _kind(attrs) == "agent"


def is_flow(attrs: Mapping[str, Any]) -> bool:
    """A flow is the application's unit of work around its agents: its name yields to theirs."""
    return attrs.get(SUBTYPE) == "flow"


def _decoded(attrs: Mapping[str, Any], key: str) -> Any:
    """The JSON value of ``key`` (parsed once for the several fields read from it)."""
    value = attrs.get(key)
    return loads_once(value) if isinstance(value, str) else None


def _response(attrs: Mapping[str, Any]) -> Mapping[str, Any] | None:
    data = _decoded(attrs, OUTPUT) if is_model(attrs) else None
    return data if isinstance(data, Mapping) else None


def provider(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> str | None:
    """The plugin namespace a model's name starts with (``openai`` of ``openai/gpt-4o-mini``)."""
    name = attrs.get(NAME)
    if not is_model(attrs) or not isinstance(name, str) or "/" not in name:
        return None
    return as_str(name.split("/", 1)[0])


def response_output(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> Output | None:
    """A model's response message (text and ``toolRequest`` parts) and its ``finishReason``."""
    data = _response(attrs)
    if data is None:
        return None
    text, requested, _ = assistant_output([data.get("message")], max_chars)
    reason = data.get("finishReason")
    return text, requested, ((reason,) if isinstance(reason, str) and reason else ())


def request_input(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> str | None:
    """The user's last message in a model's request ``{messages, ...}`` (found from the end)."""
    value = attrs.get(INPUT)
    return last_user_text_in(value, max_chars) if is_model(attrs) and isinstance(value, str) else None


def request_tool_results(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> ToolResults | None:
    """The ``toolResponse`` parts a model's request sends back after its last model message."""
    if not is_model(attrs):
        return None
    return request_results(attrs.get(INPUT), max_chars) or None


def usage(attrs: Mapping[str, Any]) -> Usage | None:
    """A model response's ``usage`` (Genkit's ``GenerationUsage``)."""
    data = _response(attrs)
    counts = data.get("usage") if data is not None else None
    if not isinstance(counts, Mapping):
        return None
    counted = Usage(
        input=as_int(counts.get("inputTokens")),
        output=as_int(counts.get("outputTokens")),
        cache_read=first_int(counts, ("cachedContentTokens",)),
        reasoning=first_int(counts, ("thoughtsTokens",)),
    )
    return counted if counted.input is not None or counted.output is not None else None


def _text(value: Any, max_chars: int) -> str | None:
    """A flow's or an agent's input or output: a string, a message (an agent turn's ``{message}``)
    or text (``{text}``, ``{prompt}``)."""
    if isinstance(value, str):
        return clip_text(value, max_chars)
    if not isinstance(value, Mapping):
        return None
    for key in ("message", "text", "prompt"):
        found = value.get(key)
        text = message_text(found) if isinstance(found, Mapping) else content_text(found)
        if text:
            return clip_text(text, max_chars)
    return None


def run_input(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> str | None:
    return _text(_decoded(attrs, INPUT), max_chars) if is_agent(attrs) else None


def run_output(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> str | None:
    return _text(_decoded(attrs, OUTPUT), max_chars) if is_agent(attrs) else None


def retrieved(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> str | None:
    """What a retriever action returned: its output's ``documents``."""
    return documents.listed(attrs.get(OUTPUT)) if attrs.get(SUBTYPE) == RETRIEVER else None


def retrieval_query(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> str | None:
    """What a retriever action asked for: the text of its input's ``query`` document."""
    data = _decoded(attrs, INPUT) if attrs.get(SUBTYPE) == RETRIEVER else None
    query = data.get("query") if isinstance(data, Mapping) else None
    text = content_text(query.get("content")) if isinstance(query, Mapping) else None
    return clip_text(text, max_chars)
