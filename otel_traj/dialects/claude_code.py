"""Claude Code's own traces (its beta session tracing, scope ``com.anthropic.claude_code.tracing``).

Every span is named ``claude_code.<type>`` and says its type again in ``span.type``:

- ``interaction``: one user prompt and everything done for it, the run's root (``user_prompt`` when
  prompts are logged): the agent run.
- ``llm_request``: one request to the model, with ``model``, ``gen_ai.system``, ``input_tokens``,
  ``output_tokens``, ``cache_read_tokens``, ``cache_creation_tokens``, ``success`` and the finish
  reasons; no messages.
- ``tool``: one tool call, ``tool_name``, ``tool_use_id`` / ``gen_ai.tool.call.id``, and the tool's
  output in a ``tool.output`` span event (``output``); a tool that failed says ``success: false``
  and ``error``.
- ``tool.execution``, running the tool, inside its tool span (the same call id): a part of the call,
  which records the call's failure (``success: false``, ``error``, status ERROR) when the tool span
  does not; it joins its call (``otel_traj.joins.parts_joined``).
- ``tool.blocked_on_user`` (the permission decision) inside a tool span, and ``hook`` spans: no
  step.

Claude Code also copies the resource attributes it is given (``OTEL_RESOURCE_ATTRIBUTES``) onto every
span: a deployment that names the model there (kagent writes ``gen_ai.request.model`` and
``gen_ai.provider.name``) puts a model on the tool, approval and interaction spans too. The span's
type decides what it is; the copied keys are the process's, not the span's (``recognize``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from otel_traj.dialects._base import first_int
from otel_traj.dialects._usage import Usage
from otel_traj.dialects.vocabulary import NOT_A_STEP, Meaning
from otel_traj.spanview import SpanView

DIALECT = "claude_code"
SPAN_PREFIX = "claude_code."
SPAN_TYPE = "span.type"
MODEL = "model"
USER_PROMPT = "user_prompt"
OUTPUT_EVENT = "tool.output"
OUTPUT = "output"
_TOOL = "tool"
_MODEL_REQUEST = "llm_request"
_INTERACTION = "interaction"
_EXECUTION = "tool.execution"
# What each span type is; a type not listed (a newer release's) is no evidence either way.
TYPES: dict[str, Meaning] = {
    _INTERACTION: "agent",
    _MODEL_REQUEST: "model",
    _TOOL: "tool",
    "tool.blocked_on_user": NOT_A_STEP,
    _EXECUTION: "tool",
    "hook": NOT_A_STEP,
}


def span_type(view: SpanView, attrs: Mapping[str, Any]) -> str | None:
    """The span's type, on a span Claude Code named (``claude_code.<type>``); None on any other."""
    name = view.name
    value = attrs.get(SPAN_TYPE)
    if isinstance(name, str) and isinstance(value, str) and name == SPAN_PREFIX + value:
        return value
    return None


def recognize(view: SpanView, attrs: Mapping[str, Any]) -> Meaning | None:
    """What a ``claude_code.<type>`` span is by its type (``TYPES``)."""
    found = span_type(view, attrs)
    return TYPES.get(found) if found is not None else None


def is_model_request(attrs: Mapping[str, Any]) -> bool:
    return attrs.get(SPAN_TYPE) == _MODEL_REQUEST


def is_interaction(attrs: Mapping[str, Any]) -> bool:
    return attrs.get(SPAN_TYPE) == _INTERACTION


def is_call_part(attrs: Mapping[str, Any]) -> bool:
    """A span of a part of a tool call: it names no tool (its call does)."""
    return attrs.get(SPAN_TYPE) == _EXECUTION


def failed(attrs: Mapping[str, Any]) -> bool:
    """A tool span, or a part of one, that says it did not succeed (``success: false``)."""
    return attrs.get(SPAN_TYPE) in (_TOOL, _EXECUTION) and attrs.get("success") is False


def usage(attrs: Mapping[str, Any]) -> Usage | None:
    """A model request's tokens, under Claude Code's own names."""
    if not is_model_request(attrs):
        return None
    counted = Usage(
        input=first_int(attrs, ("input_tokens",)),
        output=first_int(attrs, ("output_tokens",)),
        cache_read=first_int(attrs, ("cache_read_tokens",)),
        cache_write=first_int(attrs, ("cache_creation_tokens",)),
    )
    return counted if counted.input is not None or counted.output is not None else None
