"""Mastra (``@mastra/core``) spans exported by ``@mastra/otel-exporter``.

Mastra names its spans after the GenAI semantic conventions (``invoke_agent``, ``chat``,
``execute_tool``), so they are classified as those; what the conventions leave out is in Mastra's own
``mastra.*`` attributes: the run's input and output on the agent span (``mastra.agent_run.input`` /
``mastra.agent_run.output``) and the tracing metadata (``mastra.metadata.<key>``, where an
application puts its conversation id as ``sessionId``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from otel_traj.dialects._base import clip_text, loads
from otel_traj.dialects._messages import as_messages, content_text, last_user_text
from otel_traj.spanview import SpanView

RUN_INPUT = "mastra.agent_run.input"
RUN_OUTPUT = "mastra.agent_run.output"
SESSION_ID = "mastra.metadata.sessionId"


def run_input(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> str | None:
    """``mastra.agent_run.input``: the text the agent was given, or the message list as JSON."""
    value = attrs.get(RUN_INPUT)
    if not isinstance(value, str):
        return None
    if value[:1] in ("[", "{"):
        parsed = loads(value)
        if isinstance(parsed, list | dict):
            return last_user_text(as_messages(parsed), max_chars)
    return clip_text(value, max_chars)


def run_output(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> str | None:
    """``mastra.agent_run.output``: ``{"text", ...}`` as JSON (or the bare text)."""
    value = attrs.get(RUN_OUTPUT)
    if not isinstance(value, str):
        return None
    parsed = loads(value) if value[:1] == "{" else None
    if isinstance(parsed, Mapping):
        text = content_text(parsed.get("text"))
        return clip_text(text, max_chars) if text else None
    return clip_text(value, max_chars)
