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
from otel_traj.dialects._base import as_str, first, loads
from otel_traj.dialects._messages import content_text, last_user_text_in
from otel_traj.dialects._steps import ToolKeys, agent_run, keyed_tool_call
from otel_traj.dialects._usage import agent_usage
from otel_traj.spanview import SpanView
from otel_traj.steps import AgentRun, LazyText, ModelCall, ToolCall

DIALECT = "pydantic_ai"
# Attributes only pydantic-ai sets: the dispatcher routes spans carrying them here.
MARKERS = (
    "tool_arguments",
    "tool_response",
    "pydantic_ai.all_messages",
    "all_messages_events",
    "final_result",
)

_TOOL_KEYS: ToolKeys = (
    ("gen_ai.tool.call.id",),
    ("tool_arguments", "gen_ai.tool.call.arguments"),
    ("tool_response", "gen_ai.tool.call.result"),
)


def parse(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> ToolCall | ModelCall | AgentRun | None:
    operation = attrs.get("gen_ai.operation.name")
    if operation == "execute_tool" or view.name == "running tool" or "tool_arguments" in attrs:
        return parse_tool(view, attrs, max_chars)
    if operation in semconv.AGENT_OPERATIONS or view.name == "agent run" or "final_result" in attrs:
        return parse_agent(view, attrs, max_chars)
    if operation in semconv.MODEL_OPERATIONS:
        return semconv.parse_model(view, attrs, max_chars, DIALECT)
    return None


def parse_tool(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> ToolCall | None:
    name = as_str(attrs.get("gen_ai.tool.name")) or as_str(attrs.get("tool_name"))
    if name is None:
        return None
    return keyed_tool_call(view, attrs, DIALECT, name, max_chars, _TOOL_KEYS)


def _input_from_events(value: Any, max_chars: int) -> str | None:
    """1.x ``all_messages_events``: a JSON list of ``{"event.name": ..., "content": ...}``."""
    events = loads(value)
    if not isinstance(events, list):
        return None
    for event in reversed(events):
        if isinstance(event, dict) and event.get("event.name") == "gen_ai.user.message":
            text = content_text(event.get("content"))
            if text:
                return text[:max_chars]
    return None


def parse_agent(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> AgentRun:
    input_text: LazyText = None
    if "pydantic_ai.all_messages" in attrs:
        input_text = partial(last_user_text_in, attrs.get("pydantic_ai.all_messages"), max_chars)
    elif "all_messages_events" in attrs:
        input_text = _input_from_events(attrs.get("all_messages_events"), max_chars)
    return agent_run(
        view,
        attrs,
        DIALECT,
        max_chars,
        name=first(attrs, ("gen_ai.agent.name", "agent_name")),
        conversation_id=attrs.get("gen_ai.conversation.id"),
        input_text=input_text,
        output_text=attrs.get("final_result"),
        usage=agent_usage(attrs),
    )
