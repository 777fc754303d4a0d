"""Step constructors shared by the dialects: capping, error status and ids in one place."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

from otel_traj.dialects._base import as_str, clip, clip_text, first, loads, span_error
from otel_traj.dialects._usage import Usage
from otel_traj.spanview import SpanView
from otel_traj.steps import AgentRun, LazyText, ModelCall, RequestedTool, Step, ToolCall, span_hex

UNWRAP_LIMIT = 64 * 1024

# ``parser(view, attributes, max_chars)``; each dialect maps the values of its marker to them.
Parser = Callable[[SpanView, Mapping[str, Any], int], Step | None]


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
) -> ToolCall:
    """``arguments``: a dict (already structured) or raw text, which the trajectory builder parses."""
    ok, error_type, message = span_error(view, attrs, failed)
    structured: dict[str, Any] | None = None
    arguments_text: str | None = None
    cut_arguments = False
    if isinstance(arguments, dict):
        structured = arguments
    elif arguments is not None:
        arguments_text, cut_arguments = clip(arguments, max_chars)
    result_text, cut_result = clip(result, max_chars)
    return ToolCall(
        name=clip_text(name, max_chars) or name,
        span_id=view.span_id,
        parent_id=view.parent_id,
        start_ns=view.start_ns,
        end_ns=view.end_ns,
        call_id=as_str(call_id),
        arguments=structured,
        arguments_text=arguments_text,
        result=result_text,
        ok=ok,
        error_type=error_type,
        error_message=clip_text(message or error_message if not ok else None, max_chars),
        dialect=dialect,
        step_id=span_hex(view.span_id),
        truncated=cut_arguments or cut_result,
    )


# Where a dialect's tool spans keep ``(call id, arguments, result)``: the first present key of each.
ToolKeys = tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]


def keyed_tool_call(
    view: SpanView,
    attrs: Mapping[str, Any],
    dialect: str,
    name: str,
    max_chars: int,
    keys: ToolKeys,
    *,
    failed: bool = False,
    error_message: str | None = None,
) -> ToolCall:
    ids, arguments, results = keys
    call_id, found, result = first(attrs, ids), first(attrs, arguments), first(attrs, results)
    return tool_call(view, attrs, dialect, name, max_chars, call_id, found, result, failed, error_message)


def _text(value: Any, max_chars: int) -> str | None:
    """Message text, without the whitespace models and frameworks leave around it."""
    text = clip_text(value, max_chars)
    return text.strip() or None if text is not None else None


def _clipped(source: Callable[[], Any], max_chars: int) -> str | None:
    return _text(source(), max_chars)


def _lazy_text(value: Any, max_chars: int) -> LazyText:
    """Text now, or a deferred parse (a callable) that clips to ``max_chars`` when first read."""
    if callable(value):
        return partial(_clipped, value, max_chars)
    return _text(value, max_chars)


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
) -> ModelCall:
    ok, error_type, _ = span_error(view, attrs)
    return ModelCall(
        span_id=view.span_id,
        parent_id=view.parent_id,
        start_ns=view.start_ns,
        end_ns=view.end_ns,
        model=as_str(model),
        provider=as_str(provider),
        input_tokens=usage.input,
        output_tokens=usage.output,
        cache_read_tokens=usage.cache_read,
        cache_write_tokens=usage.cache_write,
        reasoning_tokens=usage.reasoning,
        finish_reasons=finish_reasons,
        requested_tools=requested,
        input_source=_lazy_text(input_text, max_chars),
        output_text=_text(output_text, max_chars),
        ok=ok,
        error_type=error_type,
        dialect=dialect,
    )


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
) -> AgentRun:
    ok, error_type, _ = span_error(view, attrs)
    return AgentRun(
        span_id=view.span_id,
        parent_id=view.parent_id,
        start_ns=view.start_ns,
        end_ns=view.end_ns,
        agent_name=clip_text(as_str(name), max_chars),
        conversation_id=as_str(conversation_id),
        input_source=_lazy_text(input_text, max_chars),
        output_text=_text(output_text, max_chars),
        input_tokens=usage.input if usage else None,
        output_tokens=usage.output if usage else None,
        ok=ok,
        error_type=error_type,
        dialect=dialect,
    )


def unwrap_arguments(value: Any, max_chars: int) -> tuple[Any, Any]:
    """``(arguments, call_id)`` of call arguments recorded inside a wrapper.

    Traceloop and Langfuse's ``observe`` record ``{"args": [...], "kwargs": {...}}``; LangChain's
    callback payload is ``{"input_str": ..., "inputs": {...}, "kwargs": {"tool_call_id": ...}}``.
    Positional arguments have no names, so a wrapper holding them stays text. The wrapper is parsed
    up to ``UNWRAP_LIMIT`` even when ``max_chars`` is smaller: its metadata is often the bulk of it.
    """
    if not isinstance(value, str) or value[:1] != "{" or len(value) > max(max_chars, UNWRAP_LIMIT):
        return value, None
    data = loads(value)
    if not isinstance(data, dict):
        return value, None
    kwargs = data.get("kwargs")
    if "inputs" in data or "input_str" in data:
        call_id = kwargs.get("tool_call_id") if isinstance(kwargs, dict) else None
        inputs = data.get("inputs")
        if isinstance(inputs, dict | str):
            return inputs, call_id
        return data.get("input_str", value), call_id
    if data.keys() <= {"args", "kwargs"}:
        if not data.get("args") and isinstance(kwargs, dict):
            return kwargs, None
        return value, None
    return data, None
