"""LlamaIndex under OpenLLMetry (``opentelemetry-instrumentation-llamaindex``): every workflow step
is a Traceloop ``task`` span named ``BaseWorkflowAgent.task``; the step that calls a tool carries
``tool.name`` and ``tool.arguments``, and its output is LlamaIndex's ``ToolCallResult`` as JSON
(``{"tool_name", "tool_kwargs", "tool_id", "tool_output": {"raw_output", "is_error", ...}}``): the
call id, what the tool returned and whether it failed.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from otel_traj.dialects._base import PARSE_LIMIT, dumps, parse_json

TOOL_NAME = "tool.name"
TOOL_ARGUMENTS = "tool.arguments"
_CALL_RESULT = '{"tool_name"'


@lru_cache(maxsize=8)
def _parsed(text: str) -> Any:
    """One step output, parsed once for the result, the call id and the failure read from it."""
    return parse_json(text) if len(text) <= PARSE_LIMIT else None


def _tool_output(output: Any) -> Mapping[str, Any] | None:
    data = _parsed(output) if isinstance(output, str) and output.startswith(_CALL_RESULT) else None
    tool_output = data.get("tool_output") if isinstance(data, Mapping) and "tool_id" in data else None
    return tool_output if isinstance(tool_output, Mapping) else None


def call_result(output: Any) -> tuple[Any, Any]:
    """``(what the tool returned, call id)`` of a ``ToolCallResult``; other outputs unchanged."""
    tool_output = _tool_output(output)
    if tool_output is None:
        return output, None
    raw = tool_output.get("raw_output")
    data = _parsed(output)
    return (raw if isinstance(raw, str) else dumps(raw) or output), data.get("tool_id")


def failure(output: Any) -> tuple[bool, str | None]:
    """Whether the ``ToolCallResult`` says the tool failed (the span's status does not), and why."""
    tool_output = _tool_output(output)
    if tool_output is None or tool_output.get("is_error") is not True:
        return False, None
    raw = tool_output.get("raw_output")
    return True, raw if isinstance(raw, str) else None
