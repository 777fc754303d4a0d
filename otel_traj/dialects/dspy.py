"""DSPy (``openinference-instrumentation-dspy``): the model answers in the sections of DSPy's
ChatAdapter (``[[ ## next_tool_name ## ]]``), not with tool calls.

A ReAct step's response names the tool to run and its arguments in two sections, so the call the
model asked for is read from them; the loop ends through ReAct's own ``finish`` tool (the answer, not
an action), and the answer is the ``answer`` section (else the last one) of the last response. The
user's message is the request's first section. Tool spans are named ``<tool>.__call__`` and carry no
``tool.name``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

from otel_traj.spanview import SpanView
from otel_traj.steps import LazyText, RequestedTool

CALL_SUFFIX = ".__call__"
# ReAct's built-in tool that ends the loop; a program's own tool cannot take its name.
FINISH_SPAN = "finish" + CALL_SUFFIX
_SECTION = re.compile(r"\[\[ ## (\w+) ## \]\]")
_NEXT_TOOL = "[[ ## next_tool_name ## ]]"


def tool_name(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> str | None:
    """The tool a ``<tool>.__call__`` span ran."""
    name = view.name
    if isinstance(name, str) and name.endswith(CALL_SUFFIX) and len(name) > len(CALL_SUFFIX):
        return name[: -len(CALL_SUFFIX)]
    return None


def sections(text: str) -> dict[str, str]:
    """The sections of a ChatAdapter text by field name, up to ``completed``; empty for other text."""
    found: dict[str, str] = {}
    if "[[ ## " not in text:
        return found
    marks = list(_SECTION.finditer(text))
    for mark, following in zip(marks, [*marks[1:], None], strict=False):
        if mark.group(1) == "completed":
            break
        found[mark.group(1)] = text[mark.end() : following.start() if following else len(text)].strip()
    return found


def requested_tools(text: str) -> tuple[RequestedTool, ...]:
    """The call a ReAct step's response asks for (no call id: ChatAdapter has none)."""
    if _NEXT_TOOL not in text:
        return ()
    fields = sections(text)
    name = fields.get("next_tool_name")
    return (RequestedTool(name=name, arguments_text=fields.get("next_tool_args") or None),) if name else ()


def user_message(text: str) -> str:
    """The first input field of a ChatAdapter request (the signature's first input, the question);
    any other text unchanged."""
    fields = sections(text)
    return next(iter(fields.values())) if fields else text


def request_user_message(text: LazyText) -> LazyText:
    """:func:`user_message` of a request's text, also when that text is read when first needed."""
    if callable(text):
        return partial(_deferred_user_message, text)
    return user_message(text) if isinstance(text, str) else text


def _deferred_user_message(read: Callable[[], str | None]) -> str | None:
    text = read()
    return user_message(text) if text is not None else None


def answer(text: str) -> str:
    """The answer a ChatAdapter response gives; any other text unchanged."""
    fields = sections(text)
    if not fields:
        return text
    return fields.get("answer", list(fields.values())[-1])
