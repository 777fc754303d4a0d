"""Dialects: one SpanView in, at most one Step out.

``read_span`` runs for every span a front door gets, so the common case, a span that is not GenAI at
all, is rejected first and cheaply: one set test against the attribute keys, then one ``startswith``
on the name. A GenAI span is classified by the evidence it carries (``recognize``: vocabularies, vendor
recognizers, structure, span names; one rule for contradictions); every field is then read through the
evidence table (``fields``), across all dialects' keys. A span with evidence that yields no complete
step, or whose reading raised, is an ``Unreadable`` step: never dropped in silence.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from otel_traj.dialects import adk, claude_code, haystack, pydantic_ai, semconv
from otel_traj.dialects._base import clip_text
from otel_traj.dialects.evidence import agent_step, model_step, tool_step
from otel_traj.dialects.operations import context_step
from otel_traj.dialects.recognize import EVIDENCE_KEYS, RECOGNIZER_KEYS, Kind, classify
from otel_traj.dialects.sources import UnreadableField
from otel_traj.spanview import MalformedSpan, SpanView
from otel_traj.steps import Step, Unreadable

__all__ = ["DEFAULT_MAX_CHARS", "MARKERS", "NAME_PREFIXES", "Reading", "may_be_step", "read_span", "to_step"]

DEFAULT_MAX_CHARS = 4096

# A span with none of these attribute keys and none of these name prefixes is no step.
MARKERS = frozenset(
    {
        *EVIDENCE_KEYS,
        *RECOGNIZER_KEYS,
        "gen_ai.system",
        "gen_ai.provider.name",
        *haystack.MARKERS,
    }
)
NAME_PREFIXES = (
    "execute_tool ",
    "invoke_agent ",
    "chat ",
    "running tool",
    "agent run",
    "call_llm",
    haystack.SPAN_PREFIX,
    claude_code.SPAN_PREFIX,
)
_REASON_CHARS = 200


# What reading one span gave: its step (or None), and whether its kind vocabularies disagreed. A
# plain pair: one is made for every span a front door reads.
Reading = tuple[Step | None, bool]
_NOTHING: Reading = (None, False)


def may_be_step(name: str, attributes: Mapping[str, Any]) -> bool:
    """Whether ``read_span`` could find a step in a span of this name and these attributes: one of
    the markers or name prefixes."""
    return name.startswith(NAME_PREFIXES) or not MARKERS.isdisjoint(attributes)


def to_step(view: SpanView, max_chars: int = DEFAULT_MAX_CHARS) -> Step | None:
    """The step a span records (``read_span``'s step)."""
    return read_span(view, max_chars)[0]


def read_span(view: SpanView, max_chars: int = DEFAULT_MAX_CHARS) -> Reading:
    """The step a span records: a tool call, model call or agent run; an ``Unreadable`` step when the
    span has evidence of one but it could not be read; None for spans that are no step.

    Never raises for the span's content: instrumentation data is untrusted. A span an adapter could
    not decode (``MalformedSpan``) is an ``Unreadable`` step that says why; one whose trace id could
    not be read either is no view at all (the adapter counts it).
    """
    if view.__class__ is MalformedSpan:
        return _malformed(view), False
    kind: Kind | None = None
    try:
        attrs = view.attributes
        marked = not MARKERS.isdisjoint(attrs)
        name = view.name
        if not marked and not (isinstance(name, str) and name.startswith(NAME_PREFIXES)):
            return _NOTHING
        # The field tables probe many keys that are absent; a plain dict answers those fastest (the
        # SDK's attribute mapping raises and catches KeyError for each).
        if type(attrs) is not dict:
            attrs = dict(attrs)
        # Claude Code's spans carry no key of the conventions' unless a deployment copies them on.
        kind = classify(view, attrs) if marked or name.startswith(claude_code.SPAN_PREFIX) else _by_name(name)
        if kind is None:
            return _NOTHING
        return _build(kind, view, attrs, max_chars), kind.contradicted
    except UnreadableField as exc:
        unreadable = _unreadable(view, kind, exc.field, exc.reason, max_chars)
        return unreadable, kind is not None and kind.contradicted
    except Exception as exc:
        reason = f"{type(exc).__name__}: {exc}"[:_REASON_CHARS]
        return _unreadable(view, kind, "span", reason, max_chars), False


def _build(kind: Kind, view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> Step | None:
    if kind.kind == "tool":
        return tool_step(view, attrs, kind.dialect, max_chars)
    if kind.kind == "model":
        return model_step(view, attrs, kind.dialect, max_chars)
    if kind.kind == "context":
        return context_step(view, attrs, kind.dialect, max_chars)
    return agent_step(view, attrs, kind.dialect, max_chars)


def _unreadable(view: SpanView, kind: Kind | None, field: str, reason: str, max_chars: int) -> Unreadable:
    """The unreadable step of a span; its ids and times must be readable (else the span is malformed)."""
    name = view.name
    return Unreadable(
        span_id=view.span_id,
        parent_id=view.parent_id,
        start_ns=view.start_ns,
        end_ns=view.end_ns,
        span_name=(clip_text(name, min(max_chars, _REASON_CHARS)) or "") if isinstance(name, str) else "",
        expected=kind.kind if kind is not None else None,
        field=field,
        reason=reason,
        dialect=kind.dialect if kind is not None else "",
    )


def _malformed(view: MalformedSpan) -> Unreadable:
    return Unreadable(
        span_id=view.span_id,
        parent_id=view.parent_id,
        start_ns=view.start_ns,
        end_ns=view.end_ns,
        span_name=clip_text(view.name, _REASON_CHARS) or "",
        field="span",
        reason=view.reason,
        malformed=True,
    )


def _by_name(name: str) -> Kind | None:
    if name.startswith("execute_tool "):
        return Kind("tool", semconv.DIALECT)
    if name.startswith("invoke_agent ") or name == pydantic_ai.AGENT_SPAN:
        return Kind("agent", semconv.DIALECT)
    if name.startswith("chat "):
        return Kind("model", semconv.DIALECT)
    if name == "call_llm":
        return Kind("model", adk.DIALECT)
    if name.startswith(haystack.SPAN_PREFIX):
        found = haystack.kind(name, {})
        return Kind(found, haystack.DIALECT) if found is not None else None
    return None
