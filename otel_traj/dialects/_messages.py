"""Chat messages in the shapes instrumentations record them, reduced to what a step needs.

Accepted shapes (one list may mix them): GenAI semconv ``{role, parts: [{type: text|tool_call}]}``
(and ``server_tool_call`` parts: a tool the provider ran within the response, such as web search),
OpenAI chat ``{role, content, tool_calls: [{id, function: {name, arguments}}]}``, Anthropic content
blocks ``[{type: text}, {type: tool_use, id, name, input}]``, Bedrock/Strands content blocks
``[{text}, {toolUse}]``, Vercel AI SDK ``[{type: text|tool-call}]``, Gemini/ADK
``{role, parts: [{text}, {function_call}]}`` and Genkit ``{role, content: [{text}, {toolRequest}]}``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from otel_traj.dialects._base import as_str, clip_text, dumps, loads
from otel_traj.dialects.react import is_observation
from otel_traj.steps import RequestedTool

# ``raw_decode`` reads one message out of a longer list without parsing the rest.
_DECODER = json.JSONDecoder()
_USER_MARKERS = ('"role":"user"', '"role": "user"')
# Tool results travel as user turns without text: look back past a few of them, then parse it all.
_MAX_USER_PROBES = 8
_CALL_ITEM_TYPES = frozenset({"function_call", "tool_call"})
_TEXT_TYPES = frozenset({"text", "output_text", "input_text"})
_USER_ROLES = frozenset({"user", "human"})
ASSISTANT_ROLES = frozenset({"assistant", "model", "ai"})
# ``None``: a bare response message without a role (some instrumentations drop it).
_OUTPUT_ROLES = ASSISTANT_ROLES | {None}


# ``(text, requested tools, finish reasons)`` of a model response, as one source records it.
Output = tuple[str | None, tuple[RequestedTool, ...], tuple[str, ...]]

# Flattened message lists (``llm.output_messages.N.message.*``, ``gen_ai.completion.N.*``) are read
# index by index up to these bounds.
MAX_MESSAGES = 1000
MAX_TOOL_CALLS = 128

# Messages and parts are JSON objects, so ``dict`` is tested first: ``isinstance(x, Mapping)`` alone
# goes through the ABC machinery and costs several times more on this per-span path.
_MAPPING = (dict, Mapping)


def as_messages(value: Any) -> list[Any]:
    """A message list from a JSON string, a list, or one message."""
    if isinstance(value, str):
        value = loads(value)
    if isinstance(value, list):
        return value
    if isinstance(value, _MAPPING):
        return [value]
    return []


def _part_text(part: Any) -> str | None:
    if isinstance(part, str):
        return part
    if not isinstance(part, _MAPPING):
        return None
    kind = part.get("type")
    if kind is not None and kind not in _TEXT_TYPES:
        return None
    value = part.get("content")
    if isinstance(value, str):
        return value
    value = part.get("text")
    return value if isinstance(value, str) else None


def _joined(blocks: list[Any]) -> str | None:
    texts = [text for text in map(_part_text, blocks) if text]
    return "\n".join(texts) if texts else None


def content_text(content: Any) -> str | None:
    """Text of a message content: a string, a list of text parts, or JSON of either."""
    if isinstance(content, str):
        if content[:1] in ("[", "{"):
            parsed = loads(content)
            if isinstance(parsed, list | dict):
                return content_text(parsed)
        return content
    if isinstance(content, _MAPPING):
        if "role" in content or "parts" in content:
            return message_text(content)
        return _part_text(content)
    if isinstance(content, list):
        return _joined(content)
    return None


def _unwrap(message: Mapping[str, Any]) -> Mapping[str, Any]:
    """LangChain's serialized messages as the message they wrap.

    ``{"type": "ai", "data": {...}}`` (``messages_to_dict``) and
    ``{"lc": 1, "type": "constructor", "kwargs": {..., "type": "ai"}}`` (``dumpd``).
    """
    if "role" in message:
        return message
    data = message.get("data")
    if isinstance(data, _MAPPING):
        return data
    kwargs = message.get("kwargs")
    if "lc" in message and isinstance(kwargs, _MAPPING):
        return kwargs
    return message


def _text(message: Mapping[str, Any]) -> str | None:
    """Text of an unwrapped message: its string content, else its text parts."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    blocks = message.get("parts")
    if isinstance(blocks, list):
        return _joined(blocks)
    return _joined(content) if isinstance(content, list) else None


def _speaker(message: Mapping[str, Any]) -> str | None:
    """Role of an unwrapped message, lower case."""
    value = message.get("role")
    if value is None:
        # LangChain messages say who spoke in ``type``; Responses API call items use it for the item
        # kind and have no speaker (they belong to the assistant's output).
        value = message.get("type")
        if not isinstance(value, str) or value in _CALL_ITEM_TYPES:
            return None
    return value.lower() if isinstance(value, str) else None


def message_text(message: Any) -> str | None:
    if isinstance(message, _MAPPING):
        return _text(_unwrap(message))
    return content_text(message)


def _last_text(messages: list[Any], roles: frozenset[str], max_chars: int) -> str | None:
    for message in reversed(messages):
        if isinstance(message, _MAPPING):
            message = _unwrap(message)
            if _speaker(message) in roles:
                text = _text(message)
                if text and (roles is not _USER_ROLES or not is_observation(text)):
                    return clip_text(text, max_chars)
    return None


def last_user_text(messages: list[Any], max_chars: int) -> str | None:
    """Text of the last user message that has text (tool results sent as user turns are skipped:
    without text, or as a ReAct observation)."""
    return _last_text(messages, _USER_ROLES, max_chars)


def last_assistant_text(messages: list[Any], max_chars: int) -> str | None:
    """Text of the last assistant message that has text: an agent's final answer."""
    return _last_text(messages, ASSISTANT_ROLES, max_chars)


def last_user_text_in(value: Any, max_chars: int) -> str | None:
    """``last_user_text`` of a JSON message list, without parsing the whole list when possible.

    Input message lists grow with the conversation (every model call repeats it), so parsing them
    in full makes a run's cost quadratic. The last ``"role": "user"`` message is found by searching
    the text from the end and decoding only that object; any doubt (the role is not the object's
    first key, a decode error) falls back to the full parse.
    """
    if not isinstance(value, str):
        return last_user_text(as_messages(value), max_chars)
    compact, spaced = _USER_MARKERS
    end = len(value)
    for _ in range(_MAX_USER_PROBES):
        position = max(value.rfind(compact, 0, end), value.rfind(spaced, 0, end))
        start = value.rfind("{", 0, position) if position > 0 else -1
        if start < 0 or value[start + 1 : position].strip():
            break
        try:
            message, _ = _DECODER.raw_decode(value, start)
        except ValueError:
            break
        if isinstance(message, dict):
            message = _unwrap(message)
            text = _text(message) if _speaker(message) in _USER_ROLES else None
            if text and not is_observation(text):
                return clip_text(text, max_chars)
        end = start
    return last_user_text(as_messages(value), max_chars)


def requested_tool(name: Any, call_id: Any, arguments: Any, max_chars: int) -> RequestedTool | None:
    tool = as_str(name)
    if tool is None:
        return None
    text = arguments if isinstance(arguments, str) else dumps(arguments) if arguments is not None else None
    return RequestedTool(name=tool, call_id=as_str(call_id), arguments_text=clip_text(text, max_chars))


def _block_call(block: Any, max_chars: int) -> RequestedTool | None:
    if not isinstance(block, _MAPPING):
        return None
    kind = block.get("type")
    if kind == "tool_call":
        return requested_tool(block.get("name"), block.get("id"), block.get("arguments"), max_chars)
    if kind == "server_tool_call":
        # The provider ran it inside the response (web search, code execution): no span of the
        # agent's shows it, and the call's details, its query, are its arguments.
        return requested_tool(block.get("name"), block.get("id"), block.get("server_tool_call"), max_chars)
    if kind == "function_call":
        # OpenAI Responses API output item: ``id`` names the item, ``call_id`` the call.
        call_id = block.get("call_id") or block.get("id")
        return requested_tool(block.get("name"), call_id, block.get("arguments"), max_chars)
    if kind == "tool_use":  # Anthropic
        return requested_tool(block.get("name"), block.get("id"), block.get("input"), max_chars)
    if kind == "tool-call":
        arguments = block.get("input", block.get("args"))
        return requested_tool(block.get("toolName"), block.get("toolCallId"), arguments, max_chars)
    nested = block.get("toolUse")
    if isinstance(nested, _MAPPING):
        return requested_tool(nested.get("name"), nested.get("toolUseId"), nested.get("input"), max_chars)
    nested = block.get("function_call")
    if isinstance(nested, _MAPPING):
        return requested_tool(nested.get("name"), nested.get("id"), nested.get("args"), max_chars)
    nested = block.get("toolRequest")  # Genkit: the call id is its ``ref``
    if isinstance(nested, _MAPPING):
        return requested_tool(nested.get("name"), nested.get("ref"), nested.get("input"), max_chars)
    nested = block.get("tool_call")  # Haystack
    if isinstance(nested, _MAPPING):
        return requested_tool(nested.get("tool_name"), nested.get("id"), nested.get("arguments"), max_chars)
    return None


def openai_tool_call(call: Any, max_chars: int) -> RequestedTool | None:
    """``{id, function: {name, arguments}}`` (or flat ``{id, name, arguments}``)."""
    if not isinstance(call, _MAPPING):
        return None
    function = call.get("function")
    source = function if isinstance(function, _MAPPING) else call
    arguments = source.get("arguments", source.get("args"))
    return requested_tool(source.get("name"), call.get("id"), arguments, max_chars)


def indexed_tool_calls(
    attrs: Mapping[str, Any], prefix: str, keys: tuple[str, str, str], max_chars: int
) -> list[RequestedTool]:
    """Tool calls flattened into ``<prefix>N.<key>`` attributes; ``keys``: (name, id, arguments)."""
    name_key, id_key, arguments_key = keys
    found: list[RequestedTool] = []
    for index in range(MAX_TOOL_CALLS):
        call_prefix = f"{prefix}{index}."
        name = attrs.get(call_prefix + name_key)
        if name is None:
            break
        call = requested_tool(
            name, attrs.get(call_prefix + id_key), attrs.get(call_prefix + arguments_key), max_chars
        )
        if call is not None:
            found.append(call)
    return found


def _tool_calls(message: Mapping[str, Any], found: list[RequestedTool], max_chars: int) -> None:
    """Append the calls an unwrapped message requests to ``found``."""
    if message.get("type") in _CALL_ITEM_TYPES:
        call = _block_call(message, max_chars)
        if call:
            found.append(call)
        return
    blocks = message.get("parts")
    if not isinstance(blocks, list):
        blocks = message.get("content")
    if isinstance(blocks, list):
        found += filter(None, (_block_call(block, max_chars) for block in blocks))
    calls = message.get("tool_calls")
    if isinstance(calls, list):
        found += filter(None, (openai_tool_call(call, max_chars) for call in calls))


def assistant_output(messages: list[Any], max_chars: int) -> Output:
    """``(text, requested_tools, finish_reasons)`` of the assistant messages of a response."""
    texts: list[str] = []
    tools: list[RequestedTool] = []
    reasons: list[str] = []
    for message in messages:
        if not isinstance(message, _MAPPING):
            continue
        unwrapped = _unwrap(message)
        if _speaker(unwrapped) not in _OUTPUT_ROLES:
            continue
        text = _text(unwrapped)
        if text:
            texts.append(text)
        _tool_calls(unwrapped, tools, max_chars)
        reason = message.get("finish_reason")
        if isinstance(reason, str) and reason:
            reasons.append(reason)
    return clip_text("\n".join(texts), max_chars) if texts else None, tuple(tools), tuple(reasons)
