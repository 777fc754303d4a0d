"""pydantic-ai 1.x spans (and the pydantic-ai specifics of 2.x agent spans).

1.x names its tool spans ``running tool`` and records ``tool_arguments`` / ``tool_response``; later 1.x
releases add ``gen_ai.operation.name=execute_tool``. Its agent span (``agent run`` in 1.x,
``invoke_agent NAME`` in 2.x) carries the whole conversation in ``pydantic_ai.all_messages`` (older:
``all_messages_events``) and the answer in ``final_result``. Usage on the agent span is the run's
total (``gen_ai.aggregated_usage.*`` in 2.x, ``gen_ai.usage.*`` in 1.x): it goes to the AgentRun only,
never to a ModelCall, so nothing is counted twice.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any

from otel_traj.dialects import semconv
from otel_traj.dialects._base import json_object_text, loads
from otel_traj.dialects._messages import content_text, last_user_text_in
from otel_traj.spanview import SpanView
from otel_traj.steps import LazyText, StepKind

DIALECT = "pydantic_ai"
# Attributes only pydantic-ai sets: the dispatcher routes spans carrying them here.
MARKERS = (
    "tool_arguments",
    "tool_response",
    "pydantic_ai.all_messages",
    "all_messages_events",
    "final_result",
)
TOOL_SPAN = "running tool"
AGENT_SPAN = "agent run"
# Tools pydantic-ai defines to return structured output (``final_result``, ``final_result_<Type>``).
OUTPUT_TOOLS = ("final_result",)
OUTPUT_TOOL_PREFIXES = ("final_result_",)


def recognize(view: SpanView, attrs: Mapping[str, Any]) -> StepKind | None:
    """pydantic-ai's span names and its own keys (1.x ``tool_arguments``, ``final_result``), with the
    operation it also sets. Asked for spans with one of ``MARKERS`` or named ``running tool``."""
    name = view.name
    operation = semconv.VOCABULARY.meaning(view, attrs)
    if operation == "tool" or name == TOOL_SPAN or json_object_text(attrs.get("tool_arguments")):
        return "tool"
    if operation == "agent" or name == AGENT_SPAN or "final_result" in attrs:
        return "agent"
    return "model" if operation == "model" else None


def all_messages_input(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> LazyText:
    raw = attrs.get("pydantic_ai.all_messages")
    return partial(last_user_text_in, raw, max_chars) if raw is not None else None


def events_input(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> str | None:
    """1.x ``all_messages_events``: a JSON list of ``{"event.name": ..., "content": ...}``."""
    events = loads(attrs.get("all_messages_events"))
    if not isinstance(events, list):
        return None
    for event in reversed(events):
        if isinstance(event, dict) and event.get("event.name") == "gen_ai.user.message":
            text = content_text(event.get("content"))
            if text:
                return text[:max_chars]
    return None
