"""OpenAI Agents SDK traced by Logfire (``logfire.instrument_openai_agents``).

Logfire names spans by their message template and keeps the SDK's span data as attributes:
``Function: {name}`` (tool: ``name``, ``input`` = the arguments JSON text, ``output``, and ``error`` =
``{"message", "data"}`` when the tool failed), ``Agent run: {name!r}`` and the model spans
``Chat completion with {gen_ai.request.model!r}`` / ``Responses API with {gen_ai.request.model!r}``.
Model spans carry ``gen_ai.usage.*`` and the same numbers again in a JSON ``usage`` (or inside
``response``): the semconv names win, the JSON is read only when they are missing. The run's
``RunConfig.group_id`` (the conversation) is the trace span's ``group_id``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from otel_traj.dialects._base import as_int, as_str, first, loads
from otel_traj.dialects._messages import Output, as_messages, assistant_output, last_user_text
from otel_traj.dialects._usage import Usage, usage_from_json
from otel_traj.spanview import SpanView
from otel_traj.steps import StepKind

DIALECT = "logfire"
TEMPLATE = "logfire.msg_template"
TOOL_TEMPLATE = "Function: {name}"
AGENT_TEMPLATE = "Agent run: {name!r}"
MODEL_TEMPLATES = ("Chat completion with", "Responses API")
TEMPLATES = (TOOL_TEMPLATE, AGENT_TEMPLATE, *MODEL_TEMPLATES)
# The OpenAI Agents SDK's trace span under Logfire: the run's ``RunConfig.group_id``, its conversation.
GROUP_ID = "group_id"


def recognize(view: SpanView, attrs: Mapping[str, Any]) -> StepKind | None:
    """Logfire's message templates: ``Function: {name}``, ``Agent run: {name!r}``, the model calls'."""
    template = attrs.get(TEMPLATE)
    if not isinstance(template, str) or not template.startswith(TEMPLATES):
        return None
    if is_tool(attrs):
        return "tool"
    return "agent" if is_agent(attrs) else "model"


_ERROR_LEVEL = 17


def is_tool(attrs: Mapping[str, Any]) -> bool:
    return attrs.get(TEMPLATE) == TOOL_TEMPLATE


def is_agent(attrs: Mapping[str, Any]) -> bool:
    return attrs.get(TEMPLATE) == AGENT_TEMPLATE


def is_model(attrs: Mapping[str, Any]) -> bool:
    template = attrs.get(TEMPLATE)
    return isinstance(template, str) and template.startswith(MODEL_TEMPLATES)


def failed(attrs: Mapping[str, Any]) -> bool:
    """A Logfire span that recorded an ``error`` or logged at error level."""
    if not is_tool(attrs):
        return False
    level = as_int(attrs.get("logfire.level_num"))
    return attrs.get("error") is not None or (level is not None and level >= _ERROR_LEVEL)


def error_message(attrs: Mapping[str, Any]) -> str | None:
    value = attrs.get("error") if is_tool(attrs) else None
    if value is None:
        return None
    error = loads(value, 65536) if isinstance(value, str) else value
    if not isinstance(error, Mapping):
        return as_str(value)
    data = error.get("data")
    if isinstance(data, Mapping) and isinstance(data.get("error"), str):
        return str(data["error"])
    return as_str(error.get("message"))


def _response_output(value: Any) -> list[Any]:
    response = loads(value) if isinstance(value, str) else value
    output = response.get("output") if isinstance(response, Mapping) else None
    return output if isinstance(output, list) else []


def model_input(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> str | None:
    if not is_model(attrs):
        return None
    return last_user_text(as_messages(first(attrs, ("input", "raw_input"))), max_chars)


def model_output(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> Output | None:
    if not is_model(attrs):
        return None
    outputs = as_messages(attrs["output"]) if "output" in attrs else _response_output(attrs.get("response"))
    return assistant_output(outputs, max_chars) if outputs else None


def json_usage(attrs: Mapping[str, Any]) -> Usage | None:
    """The usage JSON of a model span (``usage``, or ``usage`` inside ``response``)."""
    counted = usage_from_json(attrs.get("usage"))
    if counted.input is None and counted.output is None:
        response = loads(attrs.get("response"))
        counted = usage_from_json(response.get("usage") if isinstance(response, Mapping) else None)
    return counted if counted.input is not None or counted.output is not None else None
