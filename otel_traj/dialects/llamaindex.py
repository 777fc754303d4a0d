"""LlamaIndex's tool results as instrumentations record them, and LlamaIndex's own OpenTelemetry
integration (``llama-index-observability-otel``).

OpenInference's tool spans hold its ``ToolOutput`` (``{"blocks", "tool_name", "raw_input",
"raw_output", "is_error"}``). Under OpenLLMetry (``opentelemetry-instrumentation-llamaindex``) every
workflow step is a Traceloop ``task`` span named ``BaseWorkflowAgent.task``; the step that calls a
tool carries ``tool.name`` and ``tool.arguments``, and its output is the ``ToolCallResult``
(``{"tool_name", "tool_kwargs", "tool_id", "tool_output"}``): the call id, what the tool returned and
whether it failed.

LlamaIndex's own integration (``LlamaIndexOpenTelemetry``) opens a span per dispatcher span, named
``<class>.<method>``, whose only attributes are LlamaIndex's instrument tags: inside a workflow run
``llamaindex.run_id`` and the step's ``llamaindex.step.input_summary`` (a ``repr``-like summary of
the event the step received, cut at 200 characters), inherited by the spans opened in the step. The
content is in span events, one per instrumentation event, its fields flattened with ``.``: a model
call's ``LLMChatStartEvent`` / ``LLMChatEndEvent`` (``messages``, LlamaIndex's ChatMessage dumps as
JSON; ``response.message.*``; ``response.raw.*``, the provider's response with its usage). A tool is
a ``<Name>Tool.call`` / ``.acall`` span in the agent's ``call_tool`` step, whose summary is the
``ToolCall(tool_name=…, tool_kwargs={…}, tool_id=…)``; its result is only in the next request. The
workflow's root span carries no attribute, so it is no step.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from otel_traj.dialects import printed
from otel_traj.dialects._base import as_str, dumps, loads, loads_once, str_tuple
from otel_traj.dialects._messages import Output, assistant_output, last_user_text
from otel_traj.dialects._results import ToolResults, request_results
from otel_traj.dialects._usage import Usage, usage_from_json
from otel_traj.spanview import SpanView
from otel_traj.steps import StepKind

DIALECT = "llamaindex"
TOOL_NAME = "tool.name"
TOOL_ARGUMENTS = "tool.arguments"
_TOOL_OUTPUT = '{"blocks"'
_CALL_RESULT = '{"tool_name"'

# LlamaIndex's own integration: the tag every span of a workflow run carries (the marker), the step's
# input summary, and the events of a chat model call.
RUN_ID = "llamaindex.run_id"
INPUT_SUMMARY = "llamaindex.step.input_summary"
CHAT_START = "LLMChatStartEvent"
CHAT_END = "LLMChatEndEvent"
_CHAT_EVENTS = frozenset({CHAT_START, CHAT_END})
_TOOL_METHODS = frozenset({"call", "acall"})
_TOOL_CALL = "ToolCall("
# The tool's name at the start of a ToolCall summary cut before its arguments end.
_SUMMARY_NAME = re.compile(r"ToolCall\(tool_name=('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\")")
_USAGE_PREFIXES = ("response.raw.usage.", "response.additional_kwargs.")


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


# LlamaIndex's own OpenTelemetry integration.


def returned_value(value: Any) -> Any:
    """What a tool returned inside LlamaIndex's ``ToolOutput`` (``{"blocks", "tool_name",
    "raw_output"}``) as a JSON object; any other value unchanged."""
    if isinstance(value, dict) and "raw_output" in value and "tool_name" in value:
        return value["raw_output"]
    return value


def model_calls_in_events(name: str, attrs: Mapping[str, Any]) -> str | None:
    """What a span of a LlamaIndex workflow run keeps in its span events only: its model calls (the
    chat events, which make a span a model call)."""
    return "LlamaIndex's model calls" if RUN_ID in attrs else None


def recognize(view: SpanView, attrs: Mapping[str, Any]) -> StepKind | None:
    """A span of a workflow run is a model call when it holds a chat event, a tool call when it is a
    tool's ``call`` / ``acall`` inside the step that received a ``ToolCall``; the steps, the request
    building (``_prepare_chat_with_tools``) and the rest are no steps."""
    if RUN_ID not in attrs:
        return None
    if any(event.name in _CHAT_EVENTS for event in view.events):
        return "model"
    owner, _, method = view.name.rpartition(".")
    if method in _TOOL_METHODS and owner.endswith("Tool") and _summary_call(attrs) is not None:
        return "tool"
    return None


@lru_cache(maxsize=8)
def _read_summary(summary: str) -> Mapping[str, Any] | None:
    """The fields of a ``ToolCall(…)`` summary; only its tool name when the summary was cut (after
    200 characters, or a dict of more than 3 arguments written as ``{4 keys}``)."""
    call = printed.python_object(summary, len(summary))
    if isinstance(call, dict) and call.get(printed.TYPE) == "ToolCall":
        return call
    match = _SUMMARY_NAME.match(summary)
    name = printed.python_object(match.group(1), len(summary)) if match is not None else None
    return {"tool_name": name} if isinstance(name, str) else None


def _summary_call(attrs: Mapping[str, Any]) -> Mapping[str, Any] | None:
    summary = attrs.get(INPUT_SUMMARY)
    if not isinstance(summary, str) or not summary.startswith(_TOOL_CALL):
        return None
    return _read_summary(summary)


def _summary_field(attrs: Mapping[str, Any], key: str) -> Any:
    call = _summary_call(attrs)
    return call.get(key) if call is not None else None


def summary_tool_name(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> str | None:
    return as_str(_summary_field(attrs, "tool_name"))


def summary_call_id(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> str | None:
    return as_str(_summary_field(attrs, "tool_id"))


def summary_arguments(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> dict[str, Any] | None:
    arguments = _summary_field(attrs, "tool_kwargs")
    return arguments if isinstance(arguments, dict) else None


def _chat_event(view: SpanView) -> Mapping[str, Any]:
    """The attributes of the span's ``LLMChatEndEvent`` (the request and the response), else of its
    ``LLMChatStartEvent`` (the request: a streamed response ends its events after the span)."""
    found: Mapping[str, Any] = {}
    for event in view.events:
        if event.name == CHAT_END:
            return event.attributes or {}
        if event.name == CHAT_START:
            found = event.attributes or {}
    return found


def _block_calls(blocks: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The ``tool_call`` blocks as OpenAI calls (``tool_kwargs``: the arguments' JSON text)."""
    return [
        {
            "id": b.get("tool_call_id"),
            "function": {"name": b.get("tool_name"), "arguments": b.get("tool_kwargs")},
        }
        for b in blocks
        if b.get("block_type") == "tool_call"
    ]


def _message(message: Any) -> Any:
    """A LlamaIndex ChatMessage dump (``{role, additional_kwargs, blocks}``) as an OpenAI chat message:
    its text blocks as ``content``, its ``tool_call`` blocks (else the provider's calls in
    ``additional_kwargs.tool_calls``) as ``tool_calls``, a tool message's ``tool_call_id``."""
    if not isinstance(message, Mapping) or not isinstance(blocks := message.get("blocks"), list):
        return message
    extra = message.get("additional_kwargs")
    extra = extra if isinstance(extra, Mapping) else {}
    blocks = [block for block in blocks if isinstance(block, Mapping)]
    texts = [b.get("text") for b in blocks if b.get("block_type") == "text"]
    content = "\n".join(t for t in texts if isinstance(t, str) and t) or None
    converted: dict[str, Any] = {"role": message.get("role"), "content": content}
    calls = _block_calls(blocks) or extra.get("tool_calls")
    if isinstance(calls, list) and calls:
        converted["tool_calls"] = calls
    if extra.get("tool_call_id") is not None:
        converted["tool_call_id"] = extra["tool_call_id"]
    return converted


def _messages(view: SpanView) -> list[Any]:
    """The request's messages, as OpenAI chat messages."""
    value = _chat_event(view).get("messages")
    data = loads_once(value) if isinstance(value, str) else None
    return [_message(message) for message in data] if isinstance(data, list) else []


def model_name(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> str | None:
    """The model the provider answered with, else the one the LLM was configured with."""
    event = _chat_event(view)
    return as_str(event.get("response.raw.model")) or as_str(event.get("model_dict.model_name"))


def response_output(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> Output | None:
    """The response message (its blocks, else the provider's calls) and the provider's finish
    reasons (``response.raw.choices``)."""
    event = _chat_event(view)
    blocks = event.get("response.message.blocks")
    if blocks is None:
        return None
    calls = event.get("response.message.additional_kwargs.tool_calls")
    message = _message(
        {
            "role": event.get("response.message.role"),
            "blocks": loads(blocks),
            "additional_kwargs": {"tool_calls": loads(calls)} if isinstance(calls, str) else {},
        }
    )
    text, requested, _ = assistant_output([message], max_chars)
    return text, requested, _finish_reasons(event.get("response.raw.choices"))


def _finish_reasons(choices: Any) -> tuple[str, ...]:
    """The finish reason of each choice of the provider's response (OpenAI's ``choices``, as JSON)."""
    parsed = loads(choices)
    if not isinstance(parsed, list):
        return ()
    return str_tuple([choice.get("finish_reason") for choice in parsed if isinstance(choice, Mapping)])


def request_input(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> str | None:
    return last_user_text(_messages(view), max_chars)


def request_tool_results(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> ToolResults | None:
    """The results the request sends back after its last assistant message."""
    return request_results(_messages(view), max_chars) or None


def usage(view: SpanView, attrs: Mapping[str, Any]) -> Usage | None:
    """The provider's usage flattened into ``response.raw.usage.*``, else the counts LlamaIndex's LLM
    copies into ``response.additional_kwargs.*``."""
    if RUN_ID not in attrs:
        return None
    event = _chat_event(view)
    for prefix in _USAGE_PREFIXES:
        counts = {key[len(prefix) :]: value for key, value in event.items() if key.startswith(prefix)}
        found = usage_from_json(counts)
        if found.input is not None or found.output is not None:
            return found
    return None
