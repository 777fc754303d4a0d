"""Tool results that a model request carries: what the framework sent back for the calls the model
asked for in its previous response.

Some frameworks record a tool's result only there (AutoGen's tool spans have none; CrewAI under
OpenLLMetry records no tool span at all), so the trajectory builder takes a call's result from the
next request that answers its call id. Only the messages after the request's last assistant message
are new: they are read from the end of the text, so a request that repeats a long conversation is
not parsed in full. Accepted shapes: OpenAI ``{"role": "tool", "tool_call_id", "content"}``, GenAI
semconv parts ``{"type": "tool_call_response", "id", "response" (or "result")}``, Anthropic content
blocks ``{"type": "tool_result", "tool_use_id", "content"}``, Vercel AI SDK ``{"type": "tool-result",
"toolCallId", "output"}``, Bedrock ``{"toolResult": {"toolUseId", "content"}}``, Gemini
``{"function_response": {"id", "response"}}`` (``functionResponse`` in the API's JSON), Haystack
``{"tool_call_result": {"result", "origin": {"id"}}}``, Genkit ``{"toolResponse": {"ref", "output"}}``
and Responses API ``function_call_output``.

Some shapes also say that the result reports a failure: Anthropic's ``is_error: true``, Bedrock's
``status: "error"``, LangChain's ToolMessage ``status: "error"``, the Vercel AI SDK's ``error-text``
/ ``error-json`` outputs, and Gemini's function response whose ``response`` holds an ``error`` key and
no ``output`` (the Gemini API's convention: ``output`` for the function's output, ``error`` for error
details; the Google Gen AI SDK sends a function that raised as ``{"error": "..."}``). A Gemini part is
recognised by its own shape (``function_response`` / ``functionResponse``); a GenAI
``tool_call_response`` part only when the span's provider is Gemini's (``gemini=True``): other
providers' tools may return ``{"error": ...}`` as data. Where no span shows the call run (a
hand-written loop traced at the model client only, the SDK's chat loop), that flag is the only record
of its failure (``request_failures``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from otel_traj.dialects._base import PARSE_LIMIT, as_str, as_text, clip_text, loads
from otel_traj.dialects._messages import ASSISTANT_ROLES, assistant_output, content_text
from otel_traj.steps import RequestedTool

# ``(call id, result text)`` pairs, as many as a response may request.
ToolResults = tuple[tuple[str, str], ...]
MAX_RESULTS = 128
_DECODER = json.JSONDecoder()
_ASSISTANT_MARKERS = ('"role": "assistant"', '"role":"assistant"', '"role": "model"', '"role":"model"')
_ERROR_OUTPUTS = frozenset({"error-text", "error-json"})
# Every failure flag above contains this text: a request without it is not parsed for failures.
_ERROR_MARK = "error"


def _result(block: Any) -> tuple[Any, Any] | None:
    """``(call id, result)`` of one content block or part, or None."""
    if not isinstance(block, Mapping):
        return None
    kind = block.get("type")
    if kind == "tool_call_response":
        # ``result`` in pydantic-ai's record of the part, ``response`` in the conventions.
        return block.get("id"), block.get("response", block.get("result"))
    if kind == "tool_result":
        return block.get("tool_use_id"), block.get("content")
    if kind == "tool-result":
        return block.get("toolCallId"), block.get("output", block.get("result"))
    if kind == "function_call_output":
        return block.get("call_id"), block.get("output")
    nested = block.get("toolResult")
    if isinstance(nested, Mapping):
        return nested.get("toolUseId"), nested.get("content")
    nested = block.get("function_response", block.get("functionResponse"))
    if isinstance(nested, Mapping):
        return nested.get("id"), nested.get("response")
    nested = block.get("tool_call_result")
    if isinstance(nested, Mapping):
        origin = nested.get("origin")
        return (origin.get("id") if isinstance(origin, Mapping) else None), nested.get("result")
    nested = block.get("toolResponse")  # Genkit
    if isinstance(nested, Mapping):
        return nested.get("ref"), nested.get("output")
    return None


def _gemini_error(response: Any) -> bool:
    """Whether a Gemini function response reports an error: error details under ``error`` and no
    ``output`` (the Gemini API's ``FunctionResponse.response``)."""
    return (
        isinstance(response, Mapping)
        and response.get("error") not in (None, False, "")
        and "output" not in response
    )


def _failed(block: Mapping[str, Any], gemini: bool = False) -> bool:
    """Whether a result block says that the call failed; ``gemini``: the span's provider is Gemini's,
    whose GenAI ``tool_call_response`` parts keep the function response as it was sent."""
    if block.get("is_error") is True:  # Anthropic
        return True
    if _is_tool_message(block) and block.get("status") == "error":  # LangChain's ToolMessage
        return True
    nested = block.get("function_response", block.get("functionResponse"))
    if isinstance(nested, Mapping) and _gemini_error(nested.get("response")):  # Gemini
        return True
    if gemini and block.get("type") == "tool_call_response":
        return _gemini_error(block.get("response", block.get("result")))
    nested = block.get("toolResult")
    if isinstance(nested, Mapping) and nested.get("status") == "error":  # Bedrock
        return True
    nested = block.get("tool_call_result")
    if isinstance(nested, Mapping) and nested.get("error") is True:  # Haystack
        return True
    output = block.get("output")
    return isinstance(output, Mapping) and output.get("type") in _ERROR_OUTPUTS  # Vercel AI SDK


def _result_blocks(message: Any) -> list[Mapping[str, Any]]:
    """The blocks of a message that carry a tool result (the message itself when it is one)."""
    if not isinstance(message, Mapping):
        return []
    if _is_tool_message(message) or _result(message) is not None:
        return [message]
    blocks = message.get("parts")
    if not isinstance(blocks, list):
        blocks = message.get("content")
    if not isinstance(blocks, list):
        return []
    return [block for block in blocks if _result(block) is not None]


def _is_tool_message(message: Mapping[str, Any]) -> bool:
    """An OpenAI-style tool message: the result of the call ``tool_call_id``."""
    return message.get("role") == "tool" and "tool_call_id" in message


def _message_results(message: Any) -> list[tuple[Any, Any]]:
    if isinstance(message, Mapping) and _is_tool_message(message):
        # LiteLLM's OpenTelemetry logger keeps OpenAI's ``tool_call_id`` beside semconv text parts.
        content = message.get("content")
        return [(message.get("tool_call_id"), content if content is not None else message.get("parts"))]
    return [found for found in map(_result, _result_blocks(message)) if found is not None]


def _unblocked(value: Any) -> Any:
    if (
        isinstance(value, list)
        and len(value) == 1
        and isinstance(value[0], Mapping)
        and value[0].keys() == {"json"}
    ):
        return value[0]["json"]
    return value


def results_of(messages: Sequence[Any], max_chars: int) -> ToolResults:
    """The tool results among ``messages`` (the ones after the last assistant message)."""
    pairs: list[tuple[str, str]] = []
    for message in messages:
        for call_id, value in _message_results(message):
            key = as_str(call_id)
            # A result is any text (JSON of the value, often); a list of text blocks is its text, and
            # Bedrock's one ``{"json": value}`` block its value.
            text = (content_text(value) if isinstance(value, list) else None) or as_text(_unblocked(value))
            if key is not None and text is not None and len(pairs) < MAX_RESULTS:
                pairs.append((clip_text(key, max_chars) or key, clip_text(text, max_chars) or ""))
    return tuple(pairs)


def _after_last_assistant(messages: list[Any]) -> list[Any]:
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, Mapping) and message.get("role") in ASSISTANT_ROLES:
            return messages[index + 1 :]
    return []


def _last_assistant(messages: list[Any]) -> Any:
    for message in reversed(messages):
        if isinstance(message, Mapping) and message.get("role") in ASSISTANT_ROLES:
            return message
    return None


def _split(text: str) -> tuple[Any, list[Any]] | None:
    """``(the last assistant message, the messages after it)`` of a JSON message list, decoded from
    the end; None when the text has to be parsed in full to tell."""
    start = max(text.rfind(marker) for marker in _ASSISTANT_MARKERS)
    if start < 0:
        return None, []  # no assistant message yet: the first request, no results
    opening = text.rfind("{", 0, start)
    if opening < 0 or text[opening + 1 : start].strip():
        return None
    try:
        assistant, position = _DECODER.raw_decode(text, opening)
    except ValueError:
        return None
    tail = _tail(text, position)
    return None if tail is None else (assistant, tail)


def _tail(text: str, position: int) -> list[Any] | None:
    """The messages from ``position`` to the end of the list; None when they do not decode."""
    messages: list[Any] = []
    end = len(text)
    while position < end:
        while position < end and text[position] in " \t\r\n,":
            position += 1
        if position >= end or text[position] == "]":
            return messages
        try:
            message, position = _DECODER.raw_decode(text, position)
        except ValueError:
            return None
        messages.append(message)
    return None


def _split_request(value: Any) -> tuple[Any, list[Any]]:
    """``(the last assistant message, the messages after it)`` of a request's message list or of a
    request body ``{"messages": [...]}`` (OpenInference's ``input.value``), as JSON text or parsed."""
    if isinstance(value, str):
        split = _split(value)
        if split is not None:
            return split
        value = loads(value, PARSE_LIMIT)
    if isinstance(value, Mapping):
        value = value.get("messages")
    if isinstance(value, list):
        return _last_assistant(value), _after_last_assistant(value)
    return None, []


def failures_of(messages: Sequence[Any], max_chars: int, gemini: bool = False) -> tuple[str, ...]:
    """The call ids of the results among ``messages`` that report a failure (``gemini``: recorded
    for a Gemini model, see ``_failed``)."""
    found: list[str] = []
    for message in messages:
        for block in _result_blocks(message):
            if not _failed(block, gemini):
                continue
            result = _result(block)
            key = as_str(block.get("tool_call_id") if result is None else result[0])
            if key is not None and len(found) < MAX_RESULTS:
                found.append(clip_text(key, max_chars) or key)
    return tuple(found)


def request_failures(value: Any, max_chars: int, gemini: bool = False) -> tuple[str, ...]:
    """The call ids whose results a request (a message list, or a request body with one) sends back
    as failures, after its last assistant message (``gemini``: a request to a Gemini model)."""
    if isinstance(value, str) and _ERROR_MARK not in value:
        return ()
    return failures_of(_split_request(value)[1], max_chars, gemini)


def request_results(value: Any, max_chars: int) -> ToolResults:
    """The tool results a request's message list (JSON text or a list) carries after its last
    assistant message."""
    return results_of(_split_request(value)[1], max_chars)


def resent_calls(value: Any, max_chars: int) -> tuple[RequestedTool, ...]:
    """The calls of the previous response as a request's message list repeats them (its last
    assistant message, the one its tool results answer), with their ids: the response's own record
    may have none (LiteLLM's OpenTelemetry logger records the requested calls without ids)."""
    assistant, _ = _split_request(value)
    return assistant_output([assistant], max_chars)[1] if assistant is not None else ()
