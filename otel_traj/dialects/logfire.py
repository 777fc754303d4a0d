"""OpenAI Agents SDK traced by Logfire (``logfire.instrument_openai_agents``).

Logfire names spans by their message template and keeps the SDK's span data as attributes:
``Function: {name}`` (tool: ``name``, ``input`` = the arguments JSON text, ``output``, and ``error`` =
``{"message", "data"}`` when the tool failed), ``Agent run: {name!r}`` and the model spans
``Chat completion with {gen_ai.request.model!r}`` / ``Responses API with {gen_ai.request.model!r}``.
Model spans carry ``gen_ai.usage.*`` and the same numbers again in a JSON ``usage`` (or inside
``response``): the semconv names win, the JSON is read only when they are missing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from otel_traj.dialects import semconv
from otel_traj.dialects._base import as_int, as_str, first, loads
from otel_traj.dialects._messages import as_messages, assistant_output, last_user_text
from otel_traj.dialects._steps import ToolKeys, agent_run, keyed_tool_call, model_call
from otel_traj.dialects._usage import usage, usage_from_json
from otel_traj.spanview import SpanView
from otel_traj.steps import AgentRun, ModelCall, ToolCall

DIALECT = "logfire"
TOOL_TEMPLATE = "Function: {name}"
AGENT_TEMPLATE = "Agent run: {name!r}"
MODEL_TEMPLATES = ("Chat completion with", "Responses API")
TEMPLATES = (TOOL_TEMPLATE, AGENT_TEMPLATE, *MODEL_TEMPLATES)
_ERROR_LEVEL = 17
# The SDK's function spans carry no call id.
_TOOL_KEYS: ToolKeys = ((), ("input",), ("output",))


def parse(
    view: SpanView, attrs: Mapping[str, Any], template: str, max_chars: int
) -> ToolCall | ModelCall | AgentRun | None:
    if template == TOOL_TEMPLATE:
        return parse_tool(view, attrs, max_chars)
    if template == AGENT_TEMPLATE:
        return agent_run(view, attrs, DIALECT, max_chars, name=attrs.get("name"))
    if template.startswith(MODEL_TEMPLATES):
        return parse_model(view, attrs, max_chars)
    return None


def _error_message(value: Any) -> str | None:
    error = loads(value, 65536) if isinstance(value, str) else value
    if not isinstance(error, Mapping):
        return as_str(value)
    data = error.get("data")
    if isinstance(data, Mapping) and isinstance(data.get("error"), str):
        return str(data["error"])
    return as_str(error.get("message"))


def parse_tool(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> ToolCall | None:
    name = as_str(attrs.get("name"))
    if name is None:
        return None
    error = attrs.get("error")
    level = as_int(attrs.get("logfire.level_num"))
    return keyed_tool_call(
        view,
        attrs,
        DIALECT,
        name,
        max_chars,
        _TOOL_KEYS,
        failed=error is not None or (level is not None and level >= _ERROR_LEVEL),
        error_message=_error_message(error) if error is not None else None,
    )


def _response_output(value: Any) -> list[Any]:
    response = loads(value) if isinstance(value, str) else value
    output = response.get("output") if isinstance(response, Mapping) else None
    return output if isinstance(output, list) else []


def parse_model(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> ModelCall:
    if "gen_ai.input.messages" in attrs or "gen_ai.output.messages" in attrs:
        step = semconv.parse_model(view, attrs, max_chars, DIALECT)
    else:
        inputs = as_messages(first(attrs, ("input", "raw_input")))
        outputs = (
            as_messages(attrs["output"]) if "output" in attrs else _response_output(attrs.get("response"))
        )
        output_text, requested, reasons = assistant_output(outputs, max_chars)
        step = model_call(
            view,
            attrs,
            DIALECT,
            max_chars,
            model=first(attrs, ("gen_ai.response.model", "gen_ai.request.model")),
            provider=first(attrs, ("gen_ai.provider.name", "gen_ai.system")),
            usage=usage(attrs),
            finish_reasons=reasons,
            requested=requested,
            input_text=last_user_text(inputs, max_chars),
            output_text=output_text,
        )
    if not step.has_usage:
        counted = usage_from_json(attrs.get("usage"))
        if counted.input is None and counted.output is None:
            response = loads(attrs.get("response"))
            counted = usage_from_json(response.get("usage") if isinstance(response, Mapping) else None)
        step.input_tokens, step.output_tokens = counted.input, counted.output
        step.cache_read_tokens = step.cache_read_tokens if counted.cache_read is None else counted.cache_read
        step.reasoning_tokens = step.reasoning_tokens if counted.reasoning is None else counted.reasoning
    return step
