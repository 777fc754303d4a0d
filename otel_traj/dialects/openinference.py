"""OpenInference (Arize): OpenAI Agents, LangChain/LangGraph, LlamaIndex, smolagents, CrewAI and others.

Classified by ``openinference.span.kind``: TOOL, LLM and AGENT map to steps, a RETRIEVER with
documents and a RERANKER with output documents to a retrieval (``operations``); CHAIN, EMBEDDING and
the rest do not. Tool calls keep
their arguments in ``input.value`` (single-argument LangChain tools record the bare value; the
trajectory builder takes the model's request instead);
``tool.parameters`` is usually the tool's JSON schema, and is read as arguments only when it is not
one. LangChain tool spans carry no call id, but their ``output.value`` is the serialized
ToolMessage, which holds both the id and the result content. Messages are flattened into
``llm.input_messages.N.message.*`` / ``llm.output_messages.N.message.*``, with text either in
``content`` or in a list of ``contents.M.message_content.text``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from functools import lru_cache
from typing import Any

from otel_traj.dialects import langsmith, operations, printed, react
from otel_traj.dialects._base import PARSE_LIMIT, clip_text, dumps, loads
from otel_traj.dialects._messages import (
    ASSISTANT_ROLES,
    MAX_MESSAGES,
    Output,
    as_messages,
    assistant_output,
    content_text,
    indexed_tool_calls,
    last_assistant_text,
    last_user_text,
    last_user_text_in,
)
from otel_traj.dialects._results import MAX_RESULTS, ToolResults, failures_of, results_of
from otel_traj.dialects.vocabulary import NOT_A_STEP, Meaning, Vocabulary, not_steps
from otel_traj.spanview import SpanView
from otel_traj.steps import RequestedTool

DIALECT = "openinference"
KIND = "openinference.span.kind"
# The output tool of the agents OpenInference traces (smolagents', BeeAI's ``final_answer``).
OUTPUT_TOOLS = ("final_answer",)
# OpenInference records a prompt template's version, not its name.
PROMPT_KEYS: tuple[tuple[str | None, str], ...] = ((None, "llm.prompt_template.version"),)
# The OpenAI Agents SDK's handoff: a TOOL span ``handoff to <agent>`` with no tool name, whose input
# and output are the two agents' names. It records the transfer, not a tool's execution: the call is
# the one the model requested (``transfer_to_<agent>``), read from the response.
HANDOFF_PREFIX = "handoff to "


# BeeAI's instrumentation records its tools' emitter events (``tool.custom.<tool>.error``) as TOOL
# spans of their own, inside the tool's span and without a tool name: an event of that call.
_EMITTER_PATH = "metadata.path"
_TOOL_EVENTS = (".start", ".success", ".error", ".retry", ".finish")


def _tool(view: SpanView, attrs: Mapping[str, Any]) -> Meaning:
    if "tool.name" in attrs:
        return "tool"
    name = view.name
    if isinstance(name, str) and name.startswith(HANDOFF_PREFIX):
        return NOT_A_STEP
    path = attrs.get(_EMITTER_PATH)
    if isinstance(path, str) and path.startswith("tool.") and path.endswith(_TOOL_EVENTS):
        return NOT_A_STEP
    return "tool"


VOCABULARY = Vocabulary(
    KIND,
    DIALECT,
    {
        "TOOL": _tool,
        "LLM": "model",
        "AGENT": "agent",
        "RETRIEVER": operations.retriever,
        "RERANKER": operations.reranker,
        **not_steps(("CHAIN", "EMBEDDING", "GUARDRAIL", "EVALUATOR", "PROMPT")),
    },
)
_FLAT_CALL_KEYS = ("tool_call.function.name", "tool_call.id", "tool_call.function.arguments")
_MAX_CONTENTS = 64
_SCHEMA_KEYS = frozenset({"type", "properties", "$schema", "required", "title", "description"})


def _message_text(attrs: Mapping[str, Any], prefix: str) -> Any:
    """``<prefix>content``, else the texts of ``<prefix>contents.M.message_content.text``."""
    text = attrs.get(prefix + "content")
    if text is not None:
        return text
    texts = []
    for index in range(_MAX_CONTENTS):
        part = f"{prefix}contents.{index}.message_content."
        kind = attrs.get(part + "type")
        value = attrs.get(part + "text")
        if kind is None and value is None:
            break
        if isinstance(value, str) and value and kind in (None, "text"):
            texts.append(value)
    return "\n".join(texts) if texts else None


def flat_input(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> str | None:
    """Last user text of ``llm.input_messages.N.message.*`` (contiguous indices from 0); a ReAct
    observation (a tool's result sent as a user message) is not the user's."""
    found: Any = None
    for index in range(MAX_MESSAGES):
        prefix = f"llm.input_messages.{index}.message."
        role = attrs.get(prefix + "role")
        if role is None:
            break
        if role == "user":
            text = _message_text(attrs, prefix)
            found = text if text is not None and not react.is_observation(text) else found
    return clip_text(found, max_chars)


def flat_results(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> ToolResults | None:
    """Tool results after the last assistant message of ``llm.input_messages.N.message.*``; none when
    a tool message there has no ``tool_call_id`` (the LiteLLM instrumentation flattens one to its role
    and content, Haystack's to its role): ``input.value`` keeps them."""
    last_assistant = -1
    count = 0
    for index in range(MAX_MESSAGES):
        role = attrs.get(f"llm.input_messages.{index}.message.role")
        if role is None:
            break
        count = index + 1
        if role in ASSISTANT_ROLES:
            last_assistant = index
    messages = [
        {
            "role": "tool",
            "tool_call_id": attrs.get(f"llm.input_messages.{index}.message.tool_call_id"),
            "content": _message_text(attrs, f"llm.input_messages.{index}.message."),
        }
        for index in range(last_assistant + 1, count)
        if attrs.get(f"llm.input_messages.{index}.message.role") == "tool" and last_assistant >= 0
    ]
    if any(message["tool_call_id"] is None for message in messages):
        return None  # read from ``input.value`` (``value_results``)
    return results_of(messages, max_chars) or None


def value_failures(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> tuple[str, ...] | None:
    """Call ids whose results the request in ``input.value`` sends back as failures: the flattened
    ``llm.input_messages`` keep a result's text and call id but not the provider's error flag
    (Anthropic's ``is_error``, Haystack's printed ``error=True``), which only the request records."""
    value = attrs.get("input.value")
    if not isinstance(value, str) or "error" not in value:
        return None
    return failures_of(_request_tail(value, max_chars), max_chars) or None


def flat_output(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> Output | None:
    if "llm.output_messages.0.message.role" not in attrs:
        return None
    texts: list[str] = []
    tools: list[RequestedTool] = []
    for index in range(MAX_MESSAGES):
        prefix = f"llm.output_messages.{index}.message."
        if prefix + "role" not in attrs:
            break
        text = _message_text(attrs, prefix)
        if isinstance(text, str) and text:
            texts.append(text)
        tools += indexed_tool_calls(attrs, prefix + "tool_calls.", _FLAT_CALL_KEYS, max_chars)
    incomplete = any(tool.call_id is None or tool.arguments_text is None for tool in tools)
    if incomplete and "output.value" in attrs:
        tools = _completed(tools, value_output(view, attrs, max_chars))
    return clip_text("\n".join(texts), max_chars) if texts else None, tuple(tools), ()


def _completed(tools: list[RequestedTool], other: Output | None) -> list[RequestedTool]:
    """``tools`` with the call ids and arguments ``output.value`` gives the same calls where the
    flattened messages leave them out (Haystack's drop the ids, its printed replies keep them; the
    OpenAI Agents instrumentation drops a call's empty arguments ``{}``): joined only when both name
    the same calls."""
    found = other[1] if other is not None else ()
    if [t.name for t in found] != [t.name for t in tools]:
        return tools
    return [
        replace(t, call_id=t.call_id or o.call_id, arguments_text=t.arguments_text or o.arguments_text)
        for t, o in zip(tools, found, strict=True)
    ]


def _messages_of(value: Any) -> list[Any]:
    """Messages of an ``input.value``/``output.value``: a list, ``{"messages": [...]}``, a chat
    generator's ``{"replies": [...]}`` or a chat completion's ``{"choices": [{"message": ...}]}`` (an
    OpenAI response, LiteLLM's); printed messages (Haystack's) stay text, see ``_readable``."""
    data = loads(value) if isinstance(value, str) and value[:1] in ("[", "{") else None
    return _messages_in(data)


def _messages_in(data: Any) -> list[Any]:
    if isinstance(data, dict) and isinstance(choices := data.get("choices"), list):
        return [c["message"] for c in choices if isinstance(c, dict) and isinstance(c.get("message"), dict)]
    if isinstance(data, dict):
        data = data.get("messages", data.get("replies", data))
    return as_messages(data) if isinstance(data, list | dict) else []


# Printed messages read per span at most: Python's tokenizer reads a repr, ~1 ms a kilobyte, so a span
# holding many costs at most this many times ``max_chars`` of it (a response has a few, the results
# after it one per call).
MAX_PRINTED = 16


def _readable(messages: list[Any], max_chars: int) -> list[Any]:
    """``messages`` with the first ``MAX_PRINTED`` printed Haystack messages read into their JSON shape."""
    return [printed.haystack_message(m, max_chars) if i < MAX_PRINTED else m for i, m in enumerate(messages)]


def _tail(messages: list[Any], max_chars: int) -> list[Any]:
    """The messages after the last assistant message, read from the end (a request repeats the whole
    conversation, and only what follows the last response is new); none when that takes reading more
    than ``MAX_PRINTED`` printed messages."""
    tail: list[Any] = []
    budget = MAX_PRINTED
    for message in reversed(messages[-MAX_RESULTS - 1 :]):
        if isinstance(message, str):
            role = printed.haystack_role(message)
            if role in ASSISTANT_ROLES:
                return tail[::-1]
            if budget == 0:
                return []
            budget -= 1
            message = printed.haystack_message(message, max_chars)
        elif isinstance(message, Mapping) and message.get("role") in ASSISTANT_ROLES:
            return tail[::-1]
        tail.append(message)
    return []


def value_results(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> ToolResults | None:
    """Tool results after the last assistant message of ``input.value``'s messages, JSON or printed
    (Haystack's), which keep the call ids that ``llm.input_messages`` may leave out."""
    value = attrs.get("input.value")
    if not isinstance(value, str):
        return None
    return results_of(_request_tail(value, max_chars), max_chars) or None


@lru_cache(maxsize=8)
def _request_tail(value: str, max_chars: int) -> tuple[Any, ...]:
    """``_tail`` of the messages of a request's ``input.value``, read once for the span's results and
    its failures (a printed Haystack message costs ~1 ms a kilobyte to tokenize). Callers only read it."""
    return tuple(_tail(_messages_of(value), max_chars))


def _is_json(attrs: Mapping[str, Any], key: str) -> bool:
    return attrs.get(key) == "application/json"


# The field holding the user's text when an agent records its input as an object of arguments
# (smolagents ``{"task": ...}``, BeeAI ``{"input": ...}``, LlamaIndex ``{"user_msg": ...}``).
_INPUT_FIELDS = ("input", "task", "user_msg", "query", "question", "message", "prompt")


def value_input(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> str | None:
    """The user's text in ``input.value``: messages or an arguments object when it is JSON, else the
    text itself."""
    value = attrs.get("input.value")
    if value is None:
        return None
    if _is_json(attrs, "input.mime_type") or (isinstance(value, str) and value[:1] in ("[", "{")):
        data = loads(value) if isinstance(value, str) else value
        if isinstance(data, dict):
            text = next((data[k] for k in _INPUT_FIELDS if isinstance(data.get(k), str) and data[k]), None)
            if text is not None:
                return clip_text(text, max_chars)
        text = last_user_text(_messages_in(data), max_chars)
        return text if text is not None else last_user_text_in(value, max_chars)
    return content_text(value)


def value_output(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> Output | None:
    """A response in ``output.value``: messages when it is JSON, else the text itself (a text that
    only starts as JSON would, DSPy's ``[[ ## next_thought ## ]]`` sections, is text)."""
    value = attrs.get("output.value")
    if value is None:
        return None
    json_mime = _is_json(attrs, "output.mime_type")
    if json_mime or (isinstance(value, str) and value[:1] in ("[", "{")):
        data = loads(value) if isinstance(value, str) and value[:1] in ("[", "{") else None
        if isinstance(data, dict) and isinstance(generations := data.get("generations"), list):
            return langsmith.generations_output(generations, max_chars)
        if json_mime or data is not None or len(value) > PARSE_LIMIT:
            messages = _readable(_messages_in(data), max_chars)
            return assistant_output(messages, max_chars) if messages else None
    return content_text(value), (), ()


def value_answer(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> str | None:
    """An agent's answer in ``output.value``: its last assistant message, else its text."""
    value = attrs.get("output.value")
    if value is None:
        return None
    messages = _messages_of(value)
    if messages:
        return last_assistant_text(messages, max_chars)
    return None if _is_json(attrs, "output.mime_type") else content_text(value)


def tool_message(output: Any, max_chars: int) -> tuple[Any, Any]:
    """``(result, call_id)`` from LangChain's serialized ToolMessage ``{"type": "tool", "data": ...}``."""
    if not isinstance(output, str) or len(output) > max_chars or not output.startswith('{"type": "tool"'):
        return output, None
    message = loads(output)
    data = message.get("data") if isinstance(message, dict) else None
    if not isinstance(data, dict):
        return output, None
    content = data.get("content")
    return (content if content is not None else output), data.get("tool_call_id")


def _is_schema(value: Any) -> bool:
    """Whether a parsed ``tool.parameters`` is a JSON schema (or a name → schema map) rather than the
    call's arguments."""
    if not isinstance(value, dict) or not value:
        return False
    if "properties" in value or value.get("type") == "object":
        return True
    return all(isinstance(item, dict) and not _SCHEMA_KEYS.isdisjoint(item) for item in value.values())


def parameters_arguments(value: Any) -> Any:
    """``tool.parameters`` as arguments when it holds the call's values, never a schema."""
    parsed = loads(value) if isinstance(value, str) else value
    return None if not isinstance(parsed, dict) or _is_schema(parsed) else parsed


def positional_arguments(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> str | None:
    """A call's positional arguments named by the tool's parameters, as a JSON object with its named
    ones. A wrapper ``{"args": [...], "kwargs": {...}}`` in ``input.value`` (smolagents' ``Tool.__call__``,
    beside its ``sanitize_inputs_outputs`` flag) keeps positional values without names, and code
    calls tools positionally (a CodeAgent's ``final_answer("...")``, ``get_subscription("C023")``);
    ``tool.parameters`` lists the tool's parameters in order, as a name → schema map (smolagents'
    ``inputs``) or a JSON schema's ``properties``. None when nothing is positional or the parameters
    cannot name every value."""
    value = attrs.get("input.value")
    if not isinstance(value, str) or not value.startswith('{"args": [') or value.startswith('{"args": []'):
        return None
    data = loads(value)
    parameters = loads(attrs.get("tool.parameters"))
    if not isinstance(data, dict) or not isinstance(parameters, dict) or not _is_schema(parameters):
        return None
    args, kwargs = data.get("args"), data.get("kwargs") or {}
    properties = parameters.get("properties") if "properties" in parameters else parameters
    if not isinstance(args, list) or not isinstance(kwargs, dict) or not isinstance(properties, dict):
        return None
    others = (v for k, v in data.items() if k not in ("args", "kwargs"))
    names = [name for name in properties if name not in kwargs]
    if len(args) > len(names) or not all(v is None or isinstance(v, bool) for v in others):
        return None
    return dumps({**dict(zip(names, args, strict=False)), **kwargs})
