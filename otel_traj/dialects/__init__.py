"""Dialects: one SpanView in, at most one Step out.

``to_step`` runs for every span a front door gets, so the common case, a span that is not GenAI at
all, is rejected first and cheaply: one set test against the attribute keys, then one ``startswith``
on the name. GenAI spans are classified by attributes first, most specific marker first (vendor markers before
``gen_ai.operation.name``, which several vendors also set), and by span name only when no attribute
says what the span is: frameworks rename spans. Classification decides only the kind of step and
the dialect named on it; every field is then read through the evidence table (``fields``), across
all dialects' keys.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from otel_traj.dialects import (
    adk,
    agentops,
    any_agent,
    genkit,
    haystack,
    langfuse,
    langsmith,
    llamaindex,
    logfire,
    mlflow,
    openinference,
    pydantic_ai,
    semconv,
    traceloop,
    vercel,
)
from otel_traj.dialects.evidence import agent_step, model_step, tool_step
from otel_traj.spanview import SpanView
from otel_traj.steps import Step, StepKind

__all__ = ["DEFAULT_MAX_CHARS", "MARKERS", "NAME_PREFIXES", "may_be_step", "to_step"]

DEFAULT_MAX_CHARS = 4096

# A span with none of these attribute keys and none of these name prefixes is no step.
MARKERS = frozenset(
    {
        langfuse.TYPE,
        openinference.KIND,
        traceloop.KIND,
        langsmith.KIND,
        "llm.request.type",
        vercel.OPERATION,
        mlflow.SPAN_TYPE,
        genkit.SUBTYPE,
        agentops.KIND,
        agentops.CALL_ID,
        adk.TOOL_ARGS,
        adk.LLM_REQUEST,
        logfire.TEMPLATE,
        llamaindex.RUN_ID,
        "gen_ai.operation.name",
        "gen_ai.tool.name",
        "gen_ai.system",
        "gen_ai.provider.name",
        *pydantic_ai.MARKERS,
        *haystack.MARKERS,
    }
)
_PYDANTIC_MARKERS = frozenset(pydantic_ai.MARKERS)
# Markers whose value names the kind of span, most specific first: the first one present decides.
_KEYED: tuple[tuple[str, Mapping[str, StepKind], str], ...] = (
    (langfuse.TYPE, {"tool": "tool", "generation": "model", "agent": "agent"}, langfuse.DIALECT),
    (openinference.KIND, {"TOOL": "tool", "LLM": "model", "AGENT": "agent"}, openinference.DIALECT),
    (traceloop.KIND, {"tool": "tool", "workflow": "agent", "agent": "agent"}, traceloop.DIALECT),
    (langsmith.KIND, langsmith.KINDS, langsmith.DIALECT),
    ("llm.request.type", {"chat": "model", "completion": "model"}, traceloop.DIALECT),
    (vercel.OPERATION, vercel.KINDS, vercel.DIALECT),
    (mlflow.SPAN_TYPE, mlflow.KINDS, mlflow.DIALECT),
    (genkit.SUBTYPE, genkit.KINDS, genkit.DIALECT),
    (agentops.KIND, agentops.KINDS, agentops.DIALECT),
)
_SEMCONV_KINDS: dict[str, StepKind] = {
    "execute_tool": "tool",
    **dict.fromkeys(semconv.MODEL_OPERATIONS, "model"),
    **dict.fromkeys(semconv.AGENT_OPERATIONS, "agent"),
}
NAME_PREFIXES = (
    "execute_tool ",
    "invoke_agent ",
    "chat ",
    "running tool",
    "agent run",
    "call_llm",
    haystack.SPAN_PREFIX,
)
_MODEL_KEYS = ("gen_ai.request.model", "gen_ai.response.model")
Kind = tuple[StepKind, str]


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
        # The field tables probe many keys that are absent; a plain dict answers those fastest (the
        # SDK's attribute mapping raises and catches KeyError for each).
        if type(attrs) is not dict:
            attrs = dict(attrs)
        if marked:
            return _by_attributes(view, attrs, max_chars)
        return _build(_by_name(name), view, attrs, max_chars)
    except Exception:  # a malformed span is no step; it must never stop the others
        return None


def _by_attributes(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> Step | None:
    return _build(_classify(view, attrs), view, attrs, max_chars)


def _build(kind: Kind | None, view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> Step | None:
    if kind is None:
        return None
    step_kind, dialect = kind
    if step_kind == "tool":
        return tool_step(view, attrs, dialect, max_chars)
    if step_kind == "model":
        return model_step(view, attrs, dialect, max_chars)
    return agent_step(view, attrs, dialect, max_chars)


def _classify(view: SpanView, attrs: Mapping[str, Any]) -> Kind | None:
    """What the span is (tool, model or agent) and which dialect says so, or None."""
    for marker, kinds, dialect in _KEYED:
        value = attrs.get(marker)
        if value is not None:
            found = kinds.get(value) if isinstance(value, str) else None
            if (
                found is None
                and value == "task"
                and marker == traceloop.KIND
                and llamaindex.TOOL_NAME in attrs
            ):
                found = "tool"  # a LlamaIndex workflow step that calls a tool (OpenLLMetry)
            elif found is None and value == "chain" and marker == langsmith.KIND:
                found = "agent" if langsmith.is_agent(view, attrs) else None
            return (found, dialect) if found is not None else None
    if llamaindex.RUN_ID in attrs:
        found = llamaindex.kind(view, attrs)
        return (found, llamaindex.DIALECT) if found is not None else None
    if agentops.is_request(view, attrs):
        return "tool", agentops.DIALECT  # a call a response requested, recorded as a span of its own
    operation = attrs.get("gen_ai.operation.name")
    if adk.TOOL_ARGS in attrs or adk.LLM_REQUEST in attrs:
        if adk.TOOL_ARGS in attrs or operation == "execute_tool":
            return "tool", adk.DIALECT
        return ("agent" if operation in semconv.AGENT_OPERATIONS else "model"), adk.DIALECT
    template = attrs.get(logfire.TEMPLATE)
    if isinstance(template, str) and template.startswith(logfire.TEMPLATES):
        if logfire.is_tool(attrs):
            return "tool", logfire.DIALECT
        return ("agent" if logfire.is_agent(attrs) else "model"), logfire.DIALECT
    if view.name == pydantic_ai.TOOL_SPAN or not _PYDANTIC_MARKERS.isdisjoint(attrs):
        return _pydantic_kind(view, attrs, operation)
    found = any_agent.kind(operation, attrs)
    if found is not None:
        return found, any_agent.DIALECT
    if isinstance(operation, str):
        found = _SEMCONV_KINDS.get(operation)
        return (found, semconv.DIALECT) if found is not None else None
    if "gen_ai.tool.name" in attrs:
        return "tool", semconv.DIALECT
    if any(key in attrs for key in _MODEL_KEYS):
        return "model", semconv.DIALECT
    return _haystack(view.name, attrs)


def _haystack(name: Any, attrs: Mapping[str, Any]) -> Kind | None:
    found = haystack.kind(name, attrs)
    return (found, haystack.DIALECT) if found is not None else None


def _pydantic_kind(view: SpanView, attrs: Mapping[str, Any], operation: Any) -> Kind | None:
    if operation == "execute_tool" or view.name == pydantic_ai.TOOL_SPAN or "tool_arguments" in attrs:
        return "tool", pydantic_ai.DIALECT
    if (
        operation in semconv.AGENT_OPERATIONS
        or view.name == pydantic_ai.AGENT_SPAN
        or "final_result" in attrs
    ):
        return "agent", pydantic_ai.DIALECT
    if operation in semconv.MODEL_OPERATIONS:
        return "model", pydantic_ai.DIALECT
    return None


def _by_name(name: str) -> Kind | None:
    if name.startswith("execute_tool "):
        return "tool", semconv.DIALECT
    if name.startswith("invoke_agent ") or name == pydantic_ai.AGENT_SPAN:
        return "agent", semconv.DIALECT
    if name.startswith("chat "):
        return "model", semconv.DIALECT
    if name == "call_llm":
        return "model", adk.DIALECT
    if name.startswith(haystack.SPAN_PREFIX):
        return _haystack(name, {})
    return None
