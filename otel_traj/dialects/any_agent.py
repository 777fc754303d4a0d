"""mozilla-ai's any-agent: the spans it writes itself around every framework it wraps (scope ``any_agent``).

GenAI keys of the conventions beside keys of its own. ``invoke_agent [<name>]`` is a plain semconv
agent span. ``execute_tool <name>`` (``gen_ai.operation.name = execute_tool``, ``gen_ai.tool.name``)
records the arguments as JSON in ``gen_ai.tool.args`` and the result in ``gen_ai.output`` (with
``gen_ai.output.type`` ``text`` or ``json``); a failure is status ERROR with the returned
``Error calling tool: …`` text. A model call is ``call_llm <model>`` with ``gen_ai.operation.name =
call_llm``, a value the conventions do not define: its response is ``gen_ai.output``, the text of
an answer or, for a response with calls, a JSON list ``[{"tool.name": …, "tool.args": <arguments
JSON>}]`` without call ids; its request, ``gen_ai.input.messages`` (OpenAI chat messages), is
recorded on the first model call of a trace only; usage in ``gen_ai.usage.*``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from otel_traj.dialects._base import clip_text, loads
from otel_traj.dialects._messages import Output, requested_tool
from otel_traj.spanview import SpanView
from otel_traj.steps import StepKind

DIALECT = "any_agent"
# ``gen_ai.operation.name`` values of any-agent's own, beside the conventions' ``execute_tool`` and
# ``invoke_agent``.
OPERATIONS: dict[str, StepKind] = {"call_llm": "model"}
TOOL_ARGS = "gen_ai.tool.args"
OUTPUT = "gen_ai.output"
_CALL_NAME = "tool.name"
_CALL_ARGS = "tool.args"


def recognize(view: SpanView, attrs: Mapping[str, Any]) -> StepKind | None:
    """The step of an any-agent span: its own model operation, or a tool span with its arguments key."""
    operation = attrs.get("gen_ai.operation.name")
    found = OPERATIONS.get(operation) if isinstance(operation, str) else None
    if found is None and operation == "execute_tool" and TOOL_ARGS in attrs:
        found = "tool"
    return found


def response_output(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> Output | None:
    """``gen_ai.output`` of a model span: the requested calls (a list of ``{"tool.name",
    "tool.args"}``, no ids) or the text."""
    value = attrs.get(OUTPUT)
    if not isinstance(value, str) or not value:
        return None
    parsed = loads(value) if value.lstrip().startswith("[") else None
    if (
        isinstance(parsed, list)
        and parsed
        and all(isinstance(c, Mapping) and _CALL_NAME in c for c in parsed)
    ):
        calls = (requested_tool(c.get(_CALL_NAME), None, c.get(_CALL_ARGS), max_chars) for c in parsed)
        return None, tuple(call for call in calls if call is not None), ()
    return clip_text(value, max_chars), (), ()
