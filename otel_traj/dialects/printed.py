"""Values an instrumentation wrote with Python's ``str()`` instead of JSON, read without evaluating
code: a dict literal (LangChain's ``input_str``), a LangChain ToolMessage (OpenLIT's tool results:
``content='…' name='…' tool_call_id='…'``), and an OpenAI chat message as a dict (the OpenAI Agents
instrumentation of OpenTelemetry's contrib writes a response with calls as one text part,
``{'content': None, …, 'tool_calls': [{'id', 'function': {'name', 'arguments'}}]}``).
"""

from __future__ import annotations

import ast
import io
import tokenize
from typing import Any

from otel_traj.dialects._messages import openai_tool_call
from otel_traj.steps import RequestedTool

_LITERAL_ERRORS = (ValueError, TypeError, SyntaxError, MemoryError, RecursionError)
# One of the fields pydantic prints after a ToolMessage's content (``key=repr(value)``, space-separated).
_TOOL_CALL_ID = " tool_call_id="
_CONTENT = "content="


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


def _string_at(text: str, start: int) -> tuple[str, int] | None:
    """The Python string literal at ``start`` (whatever its quotes and escapes: the tokenizer's first
    token) and where it ends; None when there is none."""
    try:
        token = next(tokenize.generate_tokens(io.StringIO(text[start:]).readline))
        if token.type != tokenize.STRING or token.end[0] != 1:
            return None
        value = ast.literal_eval(token.string)
    except (tokenize.TokenError, StopIteration, *_LITERAL_ERRORS):
        return None
    return (value, start + token.end[1]) if isinstance(value, str) else None


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
