"""Dialect parsers: one SpanView in, at most one Step out.

``to_step`` runs for every span a front door gets, so the common case, a span that is not GenAI at
all, is rejected first and cheaply: one set test against the attribute keys, then one ``startswith``
on the name. GenAI spans are classified by attributes first, most specific marker first (vendor markers before
``gen_ai.operation.name``, which several vendors also set), and by span name only when no attribute
says what the span is: frameworks rename spans.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from otel_traj.dialects import adk, langfuse, logfire, openinference, pydantic_ai, semconv, traceloop, vercel
from otel_traj.dialects._steps import Parser
from otel_traj.spanview import SpanView
from otel_traj.steps import Step

__all__ = ["DEFAULT_MAX_CHARS", "MARKERS", "NAME_PREFIXES", "may_be_step", "to_step"]

DEFAULT_MAX_CHARS = 4096

# A span with none of these attribute keys and none of these name prefixes is no step.
MARKERS = frozenset(
    {
        "langfuse.observation.type",
        "openinference.span.kind",
        "traceloop.span.kind",
        "llm.request.type",
        "ai.operationId",
        adk.TOOL_ARGS,
        adk.LLM_REQUEST,
        "logfire.msg_template",
        "gen_ai.operation.name",
        "gen_ai.tool.name",
        "gen_ai.system",
        "gen_ai.provider.name",
        *pydantic_ai.MARKERS,
    }
)
_PYDANTIC_MARKERS = frozenset(pydantic_ai.MARKERS)
# Markers whose value names the kind of span, most specific first: the first one present decides.
_KEYED: tuple[tuple[str, Mapping[str, Parser]], ...] = (
    ("langfuse.observation.type", langfuse.PARSERS),
    ("openinference.span.kind", openinference.PARSERS),
    ("traceloop.span.kind", traceloop.PARSERS),
    ("llm.request.type", traceloop.REQUEST_PARSERS),
    ("ai.operationId", vercel.PARSERS),
)
NAME_PREFIXES = ("execute_tool ", "invoke_agent ", "chat ", "running tool", "agent run", "call_llm")
_MODEL_KEYS = ("gen_ai.request.model", "gen_ai.response.model")


def may_be_step(name: str, attributes: Mapping[str, Any]) -> bool:
    """Whether ``to_step`` could find a step in a span of this name and these attributes: one of the
    markers or name prefixes."""
    return name.startswith(NAME_PREFIXES) or not MARKERS.isdisjoint(attributes)


def to_step(view: SpanView, max_chars: int = DEFAULT_MAX_CHARS) -> Step | None:
    """The step a span records, or None for spans that are not tool, model or agent steps.

    Never raises: instrumentation data is untrusted.
    """
    try:
        attrs = view.attributes
        marked = not MARKERS.isdisjoint(attrs)
        name = view.name
        if not marked and not (isinstance(name, str) and name.startswith(NAME_PREFIXES)):
            return None
        # Parsers probe many keys that are absent; a plain dict answers those fastest (the SDK's
        # attribute mapping raises and catches KeyError for each).
        if type(attrs) is not dict:
            attrs = dict(attrs)
        if marked:
            return _by_attributes(view, attrs, max_chars)
        return _by_name(view, attrs, name, max_chars)
    except Exception:  # a malformed span is no step; it must never stop the others
        return None


def _by_attributes(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> Step | None:
    for marker, parsers in _KEYED:
        kind = attrs.get(marker)
        if kind is not None:
            return _parse(parsers, kind, view, attrs, max_chars)
    if adk.TOOL_ARGS in attrs or adk.LLM_REQUEST in attrs:
        return adk.parse(view, attrs, max_chars)
    template = attrs.get("logfire.msg_template")
    if isinstance(template, str) and template.startswith(logfire.TEMPLATES):
        return logfire.parse(view, attrs, template, max_chars)
    if view.name == "running tool" or not _PYDANTIC_MARKERS.isdisjoint(attrs):
        return pydantic_ai.parse(view, attrs, max_chars)
    operation = attrs.get("gen_ai.operation.name")
    if isinstance(operation, str):
        return _parse(semconv.PARSERS, operation, view, attrs, max_chars)
    if "gen_ai.tool.name" in attrs:
        return semconv.parse_tool(view, attrs, max_chars)
    if any(key in attrs for key in _MODEL_KEYS):
        return semconv.parse_model(view, attrs, max_chars)
    return None


def _parse(
    parsers: Mapping[str, Parser], kind: Any, view: SpanView, attrs: Mapping[str, Any], max_chars: int
) -> Step | None:
    parser = parsers.get(kind) if isinstance(kind, str) else None
    return parser(view, attrs, max_chars) if parser is not None else None


def _by_name(view: SpanView, attrs: Mapping[str, Any], name: str, max_chars: int) -> Step | None:
    if name.startswith("execute_tool "):
        return semconv.parse_tool(view, attrs, max_chars)
    if name.startswith("invoke_agent ") or name == "agent run":
        return semconv.parse_agent(view, attrs, max_chars)
    if name.startswith("chat "):
        return semconv.parse_model(view, attrs, max_chars)
    if name == "call_llm":
        return adk.parse_model(view, attrs, max_chars)
    return None
