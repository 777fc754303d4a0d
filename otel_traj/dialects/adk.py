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
from otel_traj.dialects._base import json_object_text, loads
from otel_traj.dialects._messages import Output, assistant_output, last_user_text
from otel_traj.dialects._usage import Usage, usage_from_json
from otel_traj.spanview import SpanView
from otel_traj.steps import StepKind

DIALECT = "adk"
TOOL_ARGS = "gcp.vertex.agent.tool_call_args"
TOOL_RESPONSE = "gcp.vertex.agent.tool_response"
LLM_REQUEST = "gcp.vertex.agent.llm_request"
LLM_RESPONSE = "gcp.vertex.agent.llm_response"


def returned_value(value: Any) -> Any:
    """What a tool returned inside ADK's ``{"result": …}`` (a return value that is not an object);
    any other value unchanged."""
    if (
        isinstance(value, dict)
        and len(value) == 1
        and "result" in value
        and not isinstance(value["result"], dict)
    ):
        return value["result"]
    return value


def recognize(view: SpanView, attrs: Mapping[str, Any]) -> StepKind | None:
    """ADK's own keys: tool arguments make a tool call; a model request a model call, or the agent
    when the operation says so."""
    arguments = json_object_text(attrs.get(TOOL_ARGS))
    if not arguments and not json_object_text(attrs.get(LLM_REQUEST)):
        return None
    operation = semconv.VOCABULARY.meaning(view, attrs)
    if arguments or operation == "tool":
        return "tool"
    return "agent" if operation == "agent" else "model"


def request_input(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> str | None:
    request = loads(attrs.get(LLM_REQUEST))
    contents = request.get("contents") if isinstance(request, Mapping) else None
    return last_user_text(contents, max_chars) if isinstance(contents, list) else None


def _response(attrs: Mapping[str, Any]) -> Mapping[str, Any] | None:
    response = loads(attrs.get(LLM_RESPONSE))
    return response if isinstance(response, Mapping) else None


def response_output(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> Output | None:
    response = _response(attrs)
    if response is None:
        return None
    content = response.get("content")
    text, requested, _ = (
        assistant_output([content], max_chars) if isinstance(content, Mapping) else (None, (), ())
    )
    reason = response.get("finish_reason")
    return text, requested, (reason.lower(),) if isinstance(reason, str) else ()


def json_usage(attrs: Mapping[str, Any]) -> Usage | None:
    response = _response(attrs) if LLM_RESPONSE in attrs else None
    counted = usage_from_json(response.get("usage_metadata")) if response is not None else None
    return counted if counted is not None and (counted.input, counted.output) != (None, None) else None
