"""LlamaIndex's tool results as instrumentations record them. OpenInference's tool spans hold its
``ToolOutput`` (``{"blocks", "tool_name", "raw_input", "raw_output", "is_error"}``). Under OpenLLMetry
(``opentelemetry-instrumentation-llamaindex``) every workflow step is a Traceloop ``task`` span named
``BaseWorkflowAgent.task``; the step that calls a tool carries ``tool.name`` and ``tool.arguments``,
and its output is the ``ToolCallResult`` (``{"tool_name", "tool_kwargs", "tool_id", "tool_output"}``):
the call id, what the tool returned and whether it failed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from otel_traj.dialects._base import dumps, loads, loads_once

TOOL_NAME = "tool.name"
TOOL_ARGUMENTS = "tool.arguments"
_TOOL_OUTPUT = '{"blocks"'
_CALL_RESULT = '{"tool_name"'


def _returned(tool_output: Mapping[str, Any], output: str) -> str:
    """What the tool returned (``raw_output``) as text: JSON unless it was text."""
    raw = tool_output.get("raw_output")
    return raw if isinstance(raw, str) else (dumps(raw) or output)


def tool_output(output: Any, max_chars: int) -> Any:
    """What the tool returned, from a ``ToolOutput``; other outputs unchanged."""
    if not isinstance(output, str) or not output.startswith(_TOOL_OUTPUT) or len(output) > max_chars:
        return output
    data = loads(output)
    if not isinstance(data, dict) or "raw_output" not in data or "tool_name" not in data:
        return output
    return _returned(data, output)


def _call_tool_output(output: Any) -> Mapping[str, Any] | None:
    data = loads_once(output) if isinstance(output, str) and output.startswith(_CALL_RESULT) else None
    found = data.get("tool_output") if isinstance(data, Mapping) and "tool_id" in data else None
    return found if isinstance(found, Mapping) else None


def call_result(output: Any) -> tuple[Any, Any]:
    """``(what the tool returned, call id)`` of a ``ToolCallResult``; other outputs unchanged."""
    found = _call_tool_output(output)
    if found is None:
        return output, None
    return _returned(found, output), loads_once(output).get("tool_id")


def failure(output: Any) -> tuple[bool, str | None]:
    """Whether the ``ToolCallResult`` says the tool failed (the span's status does not), and why."""
    found = _call_tool_output(output)
    if found is None or found.get("is_error") is not True:
        return False, None
    raw = found.get("raw_output")
    return True, raw if isinstance(raw, str) else None
