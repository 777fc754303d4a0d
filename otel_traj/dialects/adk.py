"""Google ADK (``gcp.vertex.agent`` tracer).

Tool spans (``execute_tool NAME``) record ``gcp.vertex.agent.tool_call_args`` and
``gcp.vertex.agent.tool_response`` as JSON text; the call id is ``"<not specified>"`` when ADK did not
know it. Model spans (``call_llm``) record the whole request and response as
``gcp.vertex.agent.llm_request`` / ``llm_response`` (Gemini ``contents`` with ``parts``) next to
``gen_ai.usage.*``. ADK also sets ``llm_request``/``llm_response`` to ``"{}"`` on tool spans, so the
tool attributes are checked first. Agent spans (``invoke_agent``) are plain semconv.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from otel_traj.dialects import semconv
from otel_traj.dialects._base import as_str, loads, suffix
from otel_traj.dialects._messages import assistant_output, last_user_text
from otel_traj.dialects._steps import tool_call
from otel_traj.dialects._usage import usage, usage_from_json
from otel_traj.spanview import SpanView
from otel_traj.steps import AgentRun, ModelCall, RequestedTool, ToolCall

DIALECT = "adk"
TOOL_ARGS = "gcp.vertex.agent.tool_call_args"
LLM_REQUEST = "gcp.vertex.agent.llm_request"
_NOT_SPECIFIED = frozenset({"<not specified>", "N/A", ""})


def parse(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> ToolCall | ModelCall | AgentRun | None:
    operation = attrs.get("gen_ai.operation.name")
    if TOOL_ARGS in attrs or operation == "execute_tool":
        return parse_tool(view, attrs, max_chars)
    if operation in semconv.AGENT_OPERATIONS:
        return semconv.parse_agent(view, attrs, max_chars, DIALECT)
    return parse_model(view, attrs, max_chars)


def _specified(value: Any) -> Any:
    return None if isinstance(value, str) and value in _NOT_SPECIFIED else value


def parse_tool(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> ToolCall:
    name = as_str(attrs.get("gen_ai.tool.name")) or suffix(view.name, "execute_tool ") or "unknown"
    call_id = _specified(attrs.get("gen_ai.tool.call.id"))
    arguments = _specified(attrs.get(TOOL_ARGS))
    result = _specified(attrs.get("gcp.vertex.agent.tool_response"))
    return tool_call(view, attrs, DIALECT, name, max_chars, call_id, arguments, result)


def parse_model(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> ModelCall:
    request = loads(attrs.get(LLM_REQUEST))
    response = loads(attrs.get("gcp.vertex.agent.llm_response"))
    contents = request.get("contents") if isinstance(request, Mapping) else None
    input_text = last_user_text(contents, max_chars) if isinstance(contents, list) else None
    output_text: str | None = None
    requested: tuple[RequestedTool, ...] = ()
    reasons: tuple[str, ...] = ()
    counted = usage(attrs)
    if isinstance(response, Mapping):
        content = response.get("content")
        if isinstance(content, Mapping):
            output_text, requested, _ = assistant_output([content], max_chars)
        if counted.input is None and counted.output is None:
            counted = usage_from_json(response.get("usage_metadata"))
        if isinstance(response.get("finish_reason"), str):
            reasons = (response["finish_reason"].lower(),)
    found = (input_text, output_text, requested, reasons)
    return semconv.model_step(view, attrs, DIALECT, max_chars, found, counted=counted)
