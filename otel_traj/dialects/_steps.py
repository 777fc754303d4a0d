"""Step constructors shared by the dialects: capping, valid text, error status and ids in one place.

Every step is built here, so every text field of a step is cut to ``max_chars`` and holds no lone
surrogate (see ``_base``) whichever dialect read it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

from otel_traj.dialects._base import (
    as_str,
    bounded_value,
    clip,
    clip_text,
    dumps,
    loads_once,
    span_error,
    valid_json_text,
    valid_text,
)
from otel_traj.dialects._usage import Usage
from otel_traj.spanview import SpanView
from otel_traj.steps import (
    AgentRun,
    LazyCalls,
    LazyText,
    ModelCall,
    RequestedTool,
    ToolCall,
    resolve_text,
    span_hex,
)

UNWRAP_LIMIT = 64 * 1024
# Tool calls kept per model response (each capped like any text): the join needs the first ones.
MAX_REQUESTED = 128


def tool_call(
    view: SpanView,
    attrs: Mapping[str, Any],
    dialect: str,
    name: str,
    max_chars: int,
    call_id: Any = None,
    arguments: Any = None,
    result: Any = None,
    failed: bool = False,
    error_message: str | None = None,
    output: bool = False,
    served: bool = False,
    requested: bool = False,
) -> ToolCall:
    """``arguments``: a dict (already structured) or raw text, which the trajectory builder parses.
    ``output``: the framework's way to end the run with its answer, not an action. ``requested``: the
    span records the model's request for the call, not its execution."""
    ok, error_type, message = span_error(view, attrs, failed)
    structured: dict[str, Any] | None = None
    arguments_text: str | None = None
    cut_arguments = False
    if isinstance(arguments, dict):
        structured, cut_arguments = _structured(arguments, max_chars)
    elif arguments is not None:
        arguments_text, cut_arguments = clip(arguments, max_chars)
    result_text, cut_result = clip(result, max_chars)
    # The trajectory builder and the checks parse these as JSON: no escape may decode to invalid text.
    arguments_text, result_text = valid_json_text(arguments_text), valid_json_text(result_text)
    return ToolCall(
        name=clip_text(name, max_chars) or "",
        span_id=view.span_id,
        parent_id=view.parent_id,
        start_ns=view.start_ns,
        end_ns=view.end_ns,
        call_id=_short(call_id, max_chars),
        arguments=structured,
        arguments_text=arguments_text,
        result=result_text,
        ok=ok,
        error_type=clip_text(error_type, max_chars),
        error_message=clip_text(message or error_message if not ok else None, max_chars),
        dialect=dialect,
        step_id=span_hex(view.span_id),
        truncated=cut_arguments or cut_result,
        output=output,
        served=served,
        observed=not requested,
        arguments_source="request" if requested else "execution",
    )


def _short(value: Any, max_chars: int) -> str | None:
    """An identifier (call id, model, conversation id), valid text cut to ``max_chars``."""
    return clip_text(as_str(value), max_chars)


# Nesting kept in structured arguments; deeper values are kept as their JSON text.
_MAX_DEPTH = 16


def _structured(arguments: dict[str, Any], max_chars: int) -> tuple[dict[str, Any], bool]:
    """``(arguments, truncated)`` of arguments a span holds as structured data, as valid text and
    within ``max_chars`` characters in all (keys and texts; one for each other value): what does not
    fit is cut or left out."""
    room = [max_chars]
    kept = _bounded(arguments, room, 0)
    return (kept if isinstance(kept, dict) else {}), room[0] < 0


def _bounded(value: Any, room: list[int], depth: int) -> Any:
    # ``room[0]`` is what is left of the budget; it goes below zero once something was cut.
    if isinstance(value, str):
        if len(value) > room[0]:
            value = value[: max(0, room[0])]
            room[0] = -1
        else:
            room[0] -= len(value)
        return valid_text(value)
    if isinstance(value, dict | list | tuple) and depth >= _MAX_DEPTH:
        return _bounded(dumps(value) or "", room, depth)
    if isinstance(value, dict):
        kept: dict[str, Any] = {}
        for key, item in value.items():
            if room[0] <= 0:
                room[0] = -1
                break
            key = _bounded(str(key), room, depth)
            kept[key] = _bounded(item, room, depth + 1)
        return kept
    if isinstance(value, list | tuple):
        items: list[Any] = []
        for item in value:
            if room[0] <= 0:
                room[0] = -1
                break
            items.append(_bounded(item, room, depth + 1))
        return items
    room[0] -= 1
    return value


def _text(value: Any, max_chars: int) -> str | None:
    """Message text, without the whitespace models and frameworks leave around it."""
    text = clip_text(value, max_chars)
    return text.strip() or None if text is not None else None


def _clipped(source: Callable[[], Any], max_chars: int) -> str | None:
    return _text(source(), max_chars)


def _lazy_text(value: Any, max_chars: int) -> LazyText:
    """Text now, or a deferred parse (a callable) that clips to ``max_chars`` when first read.

    A deferred parse keeps what it parses (the attribute value: the whole conversation so far) until
    the run is graded. It is deferred only while that is within ``max_chars``; a longer value is
    parsed now, so a run holds ``max_chars`` of it however large the span's attribute was.
    """
    if callable(value):
        if _small(value, max_chars):
            return partial(_clipped, value, max_chars)
        value = resolve_text(value)
    return _text(value, max_chars)


def _small(source: Callable[[], Any], max_chars: int) -> bool:
    """Whether the values a deferred parse holds are short texts or numbers (the dialects defer
    ``partial(parse, attribute value, max_chars)``, possibly within another deferred step)."""
    if not isinstance(source, partial) or source.keywords:
        return False
    return all(
        (isinstance(arg, str) and len(arg) <= max_chars)
        or isinstance(arg, int)
        or arg is None
        or (isinstance(arg, partial) and _small(arg, max_chars))
        for arg in source.args
    )


def _resent(source: Callable[[], tuple[RequestedTool, ...]], max_chars: int) -> tuple[RequestedTool, ...]:
    return tuple(_requested(tool, max_chars) for tool in source()[:MAX_REQUESTED])


def _lazy_calls(source: Callable[[], tuple[RequestedTool, ...]] | None, max_chars: int) -> LazyCalls:
    """The calls a request repeats, deferred as ``_lazy_text`` defers a text: only while what the
    parse holds is within ``max_chars``; a longer history is read now (never raising), so that a run
    keeps the bounded calls and not the history."""
    if source is None:
        return ()
    if _small(source, max_chars):
        return partial(_resent, source, max_chars)
    try:
        return _resent(source, max_chars)
    except Exception:
        return ()


def model_call(
    view: SpanView,
    attrs: Mapping[str, Any],
    dialect: str,
    max_chars: int,
    *,
    model: Any,
    provider: Any,
    usage: Usage,
    finish_reasons: tuple[str, ...] = (),
    requested: tuple[RequestedTool, ...] = (),
    input_text: Any = None,
    output_text: Any = None,
    tool_results: tuple[tuple[str, str], ...] = (),
    resent_calls: Callable[[], tuple[RequestedTool, ...]] | None = None,
    failed_results: tuple[str, ...] = (),
    cumulative_usage: bool = False,
    tool_definitions: tuple[tuple[str, str], ...] = (),
) -> ModelCall:
    ok, error_type, _ = span_error(view, attrs)
    if len(requested) > MAX_REQUESTED:
        requested = requested[:MAX_REQUESTED]
    return ModelCall(
        span_id=view.span_id,
        parent_id=view.parent_id,
        start_ns=view.start_ns,
        end_ns=view.end_ns,
        model=_short(model, max_chars),
        provider=_short(provider, max_chars),
        input_tokens=usage.input,
        output_tokens=usage.output,
        cache_read_tokens=usage.cache_read,
        cache_write_tokens=usage.cache_write,
        reasoning_tokens=usage.reasoning,
        finish_reasons=bounded_value(finish_reasons, max_chars),
        requested_tools=tuple(_requested(tool, max_chars) for tool in requested),
        tool_results=tool_results,
        resent_source=_lazy_calls(resent_calls, max_chars),
        failed_results=failed_results,
        cumulative_usage=cumulative_usage,
        tool_definitions=tool_definitions,
        input_source=_lazy_text(input_text, max_chars),
        output_text=_text(output_text, max_chars),
        ok=ok,
        error_type=clip_text(error_type, max_chars),
        dialect=dialect,
    )


def _requested(tool: RequestedTool, max_chars: int) -> RequestedTool:
    name, call_id = clip_text(tool.name, max_chars) or "", _short(tool.call_id, max_chars)
    arguments = valid_json_text(clip_text(tool.arguments_text, max_chars))
    if (name, call_id, arguments) == (tool.name, tool.call_id, tool.arguments_text):
        return tool
    return RequestedTool(name=name, call_id=call_id, arguments_text=arguments)


def agent_run(
    view: SpanView,
    attrs: Mapping[str, Any],
    dialect: str,
    max_chars: int,
    *,
    name: Any,
    conversation_id: Any = None,
    input_text: Any = None,
    output_text: Any = None,
    usage: Usage | None = None,
    workflow: bool = False,
) -> AgentRun:
    ok, error_type, _ = span_error(view, attrs)
    return AgentRun(
        span_id=view.span_id,
        parent_id=view.parent_id,
        start_ns=view.start_ns,
        end_ns=view.end_ns,
        agent_name=_short(name, max_chars),
        conversation_id=_short(conversation_id, max_chars),
        input_source=_lazy_text(input_text, max_chars),
        output_text=_text(output_text, max_chars),
        input_tokens=usage.input if usage else None,
        output_tokens=usage.output if usage else None,
        ok=ok,
        error_type=clip_text(error_type, max_chars),
        dialect=dialect,
        workflow=workflow,
    )


# Keys under which frameworks nest a call's named arguments, and the other values such a wrapper
# holds (no positional arguments, flags, nulls).
_WRAPPER_KEYS = ("kwargs", "input", "arguments", "tool_input")
_WRAPPER_MARKER = re.compile('"(?:' + "|".join((*_WRAPPER_KEYS, "inputs", "input_str")) + ')"')


def _bookkeeping(value: Any) -> bool:
    return value is None or isinstance(value, bool) or value == [] or value == {}


def unwrap_arguments(value: Any, max_chars: int) -> tuple[Any, Any]:
    """``(arguments, call_id)`` of call arguments recorded inside a wrapper.

    Traceloop and Langfuse's ``observe`` record ``{"args": [...], "kwargs": {...}}``, LlamaIndex
    ``{"kwargs": {...}}``, smolagents ``{"args": [], "sanitize_inputs_outputs": true, "kwargs":
    {...}}``, BeeAI ``{"input": {...}, "options": null}``; LangChain's callback payload is
    ``{"input_str": ..., "inputs": {...}, "kwargs": {"tool_call_id": ...}}``. A wrapper is one of
    those keys holding an object beside nothing but flags, nulls and empty values; positional
    arguments have no names, so a wrapper holding them stays text. The wrapper is parsed up to
    ``UNWRAP_LIMIT`` even when ``max_chars`` is smaller: its metadata is often the bulk of it.
    """
    if not isinstance(value, str) or value[:1] != "{" or len(value) > max(max_chars, UNWRAP_LIMIT):
        return value, None
    if _WRAPPER_MARKER.search(value) is None:
        return value, None  # plain arguments: parsed once, by the trajectory builder
    # Parsed once with the evidence's check that the arguments are well formed (``loads_once``).
    data = loads_once(value)
    if not isinstance(data, dict):
        return value, None
    kwargs = data.get("kwargs")
    if "inputs" in data or "input_str" in data:
        call_id = kwargs.get("tool_call_id") if isinstance(kwargs, dict) else None
        inputs = data.get("inputs")
        if isinstance(inputs, dict | str):
            return inputs, call_id
        return data.get("input_str", value), call_id
    for key in _WRAPPER_KEYS:
        inner = data.get(key)
        if isinstance(inner, dict) and all(_bookkeeping(v) for k, v in data.items() if k != key):
            return inner, None
    # Not a wrapper: the arguments themselves (or positional ones), left as text for the builder.
    return value, None
