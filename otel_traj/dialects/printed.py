"""Values an instrumentation wrote with Python's ``str()`` instead of JSON, read without evaluating
code: a dict literal (LangChain's ``input_str``), a LangChain ToolMessage (OpenLIT's tool results:
``content='…' name='…' tool_call_id='…'``), and an OpenAI chat message as a dict (the OpenAI Agents
instrumentation of OpenTelemetry's contrib writes a response with calls as one text part,
``{'content': None, …, 'tool_calls': [{'id', 'function': {'name', 'arguments'}}]}``), and any object
printed by a dataclass-style ``repr()`` (``ChatMessage(_role=<ChatRole.TOOL: 'tool'>, _content=[…])``:
OpenInference writes Haystack's messages so).
"""

from __future__ import annotations

import ast
import re
from typing import Any

from otel_traj.dialects._messages import openai_tool_call
from otel_traj.steps import RequestedTool

_LITERAL_ERRORS = (ValueError, TypeError, SyntaxError, MemoryError, RecursionError)
# One of the fields pydantic prints after a ToolMessage's content (``key=repr(value)``, space-separated).
_TOOL_CALL_ID = " tool_call_id="
_CONTENT = "content="
# The tokens a repr is made of: string and number literals (as Python writes them), names, and the
# punctuation of calls, containers and ``<…>``. A repr never holds comments or triple quotes.
_TOKEN = re.compile(
    r"""\s*(?:(?P<string>[bBrRuU]{0,2}(?:'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*"))"""
    r"""|(?P<number>(?:0[xXoObB][0-9a-fA-F_]+|\d[\d_]*(?:\.\d*)?(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?)j?)"""
    r"""|(?P<name>[^\W\d]\w*)|(?P<op>[-()\[\]{}<>:,=.]))""",
    re.DOTALL,
)
_LITERALS = frozenset({"string", "number"})


def python_literal(text: Any, max_chars: int) -> Any:
    """A dict written as a Python literal, else ``text`` unchanged."""
    if not isinstance(text, str) or len(text) > max_chars or not text.startswith("{'"):
        return text
    try:
        value = ast.literal_eval(text)
    except _LITERAL_ERRORS:
        return text
    return value if isinstance(value, dict) else text


def chat_message(text: str, max_chars: int) -> tuple[str | None, tuple[RequestedTool, ...]] | None:
    """``(content, requested calls)`` of an OpenAI chat message printed as a dict; None for other text."""
    message = python_literal(text, max_chars) if "'tool_calls'" in text else None
    if not isinstance(message, dict) or not isinstance(calls := message.get("tool_calls"), list):
        return None
    content = message.get("content")
    requested = tuple(call for c in calls if (call := openai_tool_call(c, max_chars)) is not None)
    return (content if isinstance(content, str) else None), requested


# How Python prints the OpenAI SDK's (and LiteLLM's) tool-call objects, ``ChatCompletionMessageToolCall(
# function=Function(arguments='…', name='…'), id='call_1', type='function')``: CrewAI's ``LLM.call``
# returns a list of them for a response with calls, which AgentOps records as the completion's text.
TOOL_CALL_OBJECT = "ChatCompletionMessageToolCall("


def tool_call_objects(text: Any, max_chars: int) -> tuple[RequestedTool, ...] | None:
    """The calls of a printed list of tool-call objects (``[ChatCompletionMessageToolCall(…), …]``);
    None for other text."""
    if not isinstance(text, str) or not text.startswith("[" + TOOL_CALL_OBJECT):
        return None
    calls = python_object(text, max_chars)
    if not isinstance(calls, list):
        return None
    requested = tuple(call for c in calls if (call := openai_tool_call(c, max_chars)) is not None)
    return requested or None


def _string_at(text: str, start: int) -> tuple[str, int] | None:
    """The Python string literal at ``start`` (whatever its quotes and escapes) and where it ends;
    None when there is none."""
    match = _TOKEN.match(text, start)
    if match is None or match.lastgroup != "string":
        return None
    try:
        value = ast.literal_eval(match.group("string"))
    except _LITERAL_ERRORS:
        return None
    return (value, match.end()) if isinstance(value, str) else None


def tool_message(text: Any, max_chars: int) -> tuple[Any, str | None]:
    """``(content, tool_call_id)`` of a printed ToolMessage whose content is text, else
    ``(text, None)``."""
    if not isinstance(text, str) or len(text) > max_chars or not text.startswith(_CONTENT):
        return text, None
    content = _string_at(text, len(_CONTENT))
    if content is None:
        return text, None
    key = text.find(_TOOL_CALL_ID, content[1])
    call_id = _string_at(text, key + len(_TOOL_CALL_ID)) if key != -1 else None
    return (content[0], call_id[0]) if call_id is not None else (text, None)


# The key naming the class of an object read from its repr (``{TYPE: "ToolCall", "id": …}``).
TYPE = "__type__"
# Objects nested deeper than this are not read (a repr is the instrumentation's, its depth the data's).
MAX_DEPTH = 32
_CONSTANTS = {"None": None, "True": True, "False": False}
_CLOSING = {"(": ")", "[": "]", "{": "}"}


class _Unreadable(Exception):
    """The text is not a repr this module reads."""


class _Repr:
    """A recursive-descent reader of ``repr()`` output: literals, lists, tuples, dicts,
    ``Name(field=value, …)`` objects and ``<…>`` (an enum member reads as its value, anything else,
    such as ``<function f at 0x…>``, as None). Nothing is evaluated: a literal is read by
    ``ast.literal_eval``, the rest by this reader."""

    def __init__(self, text: str) -> None:
        self._tokens: list[tuple[str, str]] = []
        position, end = 0, len(text)
        while position < end:
            match = _TOKEN.match(text, position)
            if match is None:
                if text[position:].strip():
                    raise _Unreadable(f"unexpected {text[position]!r}")
                break
            kind = match.lastgroup or ""
            self._tokens.append((kind, match.group(kind)))
            position = match.end()
        self._at = 0

    def peek(self, ahead: int = 0) -> str | None:
        """The text of the token ``ahead`` places on, None past the end."""
        at = self._at + ahead
        return self._tokens[at][1] if at < len(self._tokens) else None

    def take(self) -> tuple[str, str]:
        """The next token: ``(kind, text)``, its kind ``string``, ``number``, ``name`` or ``op``."""
        if self._at >= len(self._tokens):
            raise _Unreadable("the text ends early")
        self._at += 1
        return self._tokens[self._at - 1]

    def expect(self, op: str) -> None:
        if self.take()[1] != op:
            raise _Unreadable(f"expected {op!r}")

    def value(self, depth: int) -> Any:
        if depth > MAX_DEPTH:
            raise _Unreadable("nested too deep")
        kind, text = self.take()
        if kind in _LITERALS:
            return ast.literal_eval(text)
        if text == "-":
            return -ast.literal_eval(self.take()[1])
        if kind == "name":
            if self.peek() == "(":
                self.take()
                return self._object(text, depth)
            if text in _CONSTANTS:
                return _CONSTANTS[text]
            raise _Unreadable(f"bare name {text!r}")
        if text == "<":
            return self._opaque()
        if text in _CLOSING:
            items = self._items(_CLOSING[text], depth)
            if text == "{":
                return dict(items)
            values = [v for _, v in items]
            return values if text == "[" else tuple(values)
        raise _Unreadable(f"unexpected {text!r}")

    def _items(self, closing: str, depth: int) -> list[tuple[Any, Any]]:
        """``key: value`` pairs up to ``closing`` (``(None, value)`` in a list or tuple)."""
        items: list[tuple[Any, Any]] = []
        while self.peek() not in (closing, None):
            first = self.value(depth + 1)
            if closing == "}":
                self.expect(":")
                items.append((first, self.value(depth + 1)))
            else:
                items.append((None, first))
            if self.peek() == ",":
                self.take()
        self.expect(closing)
        return items

    def _object(self, name: str, depth: int) -> dict[str, Any]:
        """``Name(field=value, …)`` as ``{TYPE: name, field: value}``; a leading ``_`` (a private
        dataclass field) is dropped from the field's name, positional values go to ``args``."""
        fields: dict[str, Any] = {TYPE: name}
        positional: list[Any] = []
        while self.peek() not in (")", None):
            if self.peek(1) == "=":
                name = self.take()[1]
                self.take()
                fields[name.lstrip("_") or name] = self.value(depth + 1)
            else:
                positional.append(self.value(depth + 1))
            if self.peek() == ",":
                self.take()
        self.expect(")")
        if positional:
            fields["args"] = positional
        return fields

    def _opaque(self) -> Any:
        """The rest of ``<…>``: an enum member's value (``<Role.TOOL: 'tool'>``), else None."""
        value: Any = None
        previous = ""
        while (token := self.take())[1] != ">":
            if previous == ":" and token[0] in _LITERALS:
                value = ast.literal_eval(token[1])
            previous = token[1]
        return value


def python_object(text: Any, max_chars: int) -> Any:
    """The value a ``repr()`` shows (objects as dicts, see ``_Repr``), or None when ``text`` is not one
    or is longer than ``max_chars``."""
    if not isinstance(text, str) or len(text) > max_chars:
        return None
    try:
        reader = _Repr(text)
        value = reader.value(0)
    except (_Unreadable, *_LITERAL_ERRORS):
        return None
    return value if reader.peek() is None else None


# Haystack's printed ChatMessage: ``ChatMessage(_role=<ChatRole.TOOL: 'tool'>, _content=[…], …)``.
HAYSTACK_MESSAGE = "ChatMessage(_role="
# The key of each content part in Haystack's own JSON (``ChatMessage.to_dict``), by the part's class.
_HAYSTACK_PARTS = {
    "ToolCall": "tool_call",
    "ToolCallResult": "tool_call_result",
    "ReasoningContent": "reasoning",
}


def _haystack_part(part: Any) -> Any:
    if not isinstance(part, dict):
        return None
    kind = part.get(TYPE)
    if kind == "TextContent":
        return {"text": part.get("text")}
    key = _HAYSTACK_PARTS.get(kind) if isinstance(kind, str) else None
    return {key: part} if key is not None else None


def haystack_role(text: str) -> str | None:
    """The role a printed Haystack message starts with (``…_role=<ChatRole.TOOL: 'tool'>``), read
    without reading the message."""
    if not text.startswith(HAYSTACK_MESSAGE + "<ChatRole."):
        return None
    start = text.find(": '", len(HAYSTACK_MESSAGE))
    end = text.find("'>", start + 3)
    return text[start + 3 : end] if 0 <= start < end else None


def haystack_message(text: Any, max_chars: int) -> Any:
    """A printed Haystack ChatMessage in Haystack's own JSON shape (``{"role", "content": [{"text"},
    {"tool_call"}, {"tool_call_result"}], "meta"}``, which the message readers know); ``text`` unchanged
    when it is not one."""
    if not isinstance(text, str) or not text.startswith(HAYSTACK_MESSAGE):
        return text
    message = python_object(text, max_chars)
    if not isinstance(message, dict) or message.get(TYPE) != "ChatMessage":
        return text
    parts = message.get("content")
    content = [p for p in map(_haystack_part, parts) if p is not None] if isinstance(parts, list) else []
    return {"role": message.get("role"), "content": content, "meta": message.get("meta")}
