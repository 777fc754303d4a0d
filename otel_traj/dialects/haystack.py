"""Haystack's own tracer (``haystack.tracing`` with ``opentelemetry-haystack``): an Agent records
``haystack.agent.run``, one ``haystack.agent.step`` per turn, and in it ``haystack.agent.step.llm`` and
one ``haystack.agent.step.tool`` per call. The tool's name is always there; the content only with
``HAYSTACK_CONTENT_TRACING_ENABLED``, as JSON attributes: the chat messages (Haystack's own shape,
``{"role", "meta", "content": [{"text"}, {"tool_call"}, {"tool_call_result"}]}``), the model and the
usage in each reply's ``meta``, a failed call as ``haystack.tool.error`` with ``{"error": ...}``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from otel_traj.dialects._base import as_str, clip_text, loads_once
from otel_traj.dialects._messages import Output, assistant_output, last_assistant_text, last_user_text
from otel_traj.dialects._results import ToolResults, results_of
from otel_traj.dialects._usage import Usage, usage_from_json
from otel_traj.spanview import SpanView
from otel_traj.steps import StepKind

DIALECT = "haystack"
SPAN_PREFIX = "haystack.agent."
TOOL_NAME = "haystack.tool.name"
TOOL_INPUT = "haystack.agent.step.tool.input"
TOOL_OUTPUT = "haystack.agent.step.tool.output"
TOOL_ERROR = "haystack.tool.error"
LLM_INPUT = "haystack.agent.step.llm.input"
LLM_OUTPUT = "haystack.agent.step.llm.output"
RUN_INPUT = "haystack.agent.input"
RUN_OUTPUT = "haystack.agent.output"
MARKERS = (TOOL_NAME, LLM_OUTPUT, RUN_INPUT)
_KINDS: dict[str, StepKind] = {
    "haystack.agent.step.tool": "tool",
    "haystack.agent.step.llm": "model",
    "haystack.agent.run": "agent",
}


def kind(name: Any, attrs: Mapping[str, Any]) -> StepKind | None:
    """The step a Haystack span records: by its attributes, else by its name."""
    # Haystack writes text: a value of another type is no evidence.
    if isinstance(attrs.get(TOOL_NAME), str):
        return "tool"
    if isinstance(attrs.get(LLM_OUTPUT), str):
        return "model"
    if isinstance(attrs.get(RUN_INPUT), str):
        return "agent"
    return _KINDS.get(name) if isinstance(name, str) else None


def _field(attrs: Mapping[str, Any], key: str, field: str) -> Any:
    value = attrs.get(key)
    data = loads_once(value) if isinstance(value, str) and value[:1] == "{" else None
    return data.get(field) if isinstance(data, Mapping) else None


def _replies(attrs: Mapping[str, Any]) -> list[Any]:
    replies = _field(attrs, LLM_OUTPUT, "replies")
    return replies if isinstance(replies, list) else []


def _metas(attrs: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    metas = (reply.get("meta") for reply in _replies(attrs) if isinstance(reply, Mapping))
    return [meta for meta in metas if isinstance(meta, Mapping)]


def _messages(attrs: Mapping[str, Any], key: str) -> list[Any]:
    messages = _field(attrs, key, "messages")
    return messages if isinstance(messages, list) else []


def output(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> Output | None:
    """The replies: text, requested calls (``tool_call`` parts) and each reply's finish reason."""
    replies = _replies(attrs)
    if not replies:
        return None
    text, requested, _ = assistant_output(replies, max_chars)
    return text, requested, finish_reasons(view, attrs, max_chars)


def finish_reasons(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> tuple[str, ...]:
    reasons = (as_str(meta.get("finish_reason")) for meta in _metas(attrs))
    return tuple(reason for reason in reasons if reason)


def model_name(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> str | None:
    return next((name for meta in _metas(attrs) if (name := as_str(meta.get("model")))), None)


def usage(attrs: Mapping[str, Any]) -> Usage | None:
    """The usage of the replies (one per reply; a turn has one)."""
    counted = [usage_from_json(meta.get("usage")) for meta in _metas(attrs)]
    counted = [u for u in counted if u.input is not None or u.output is not None]
    if not counted:
        return None
    return Usage(input=sum(u.input or 0 for u in counted), output=sum(u.output or 0 for u in counted))


def request_input(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> str | None:
    return last_user_text(_messages(attrs, LLM_INPUT), max_chars)


def request_results(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> ToolResults | None:
    """The results sent back after the request's last assistant message (``tool_call_result`` parts)."""
    messages = _messages(attrs, LLM_INPUT)
    last = max(
        (i for i, m in enumerate(messages) if isinstance(m, Mapping) and m.get("role") == "assistant"),
        default=-1,
    )
    return results_of(messages[last + 1 :], max_chars) if last >= 0 else None


def run_input(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> str | None:
    return last_user_text(_messages(attrs, RUN_INPUT), max_chars)


def run_output(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> str | None:
    return last_assistant_text(_messages(attrs, RUN_OUTPUT), max_chars)


def failed(attrs: Mapping[str, Any]) -> bool:
    return attrs.get(TOOL_ERROR) is True


def error_message(attrs: Mapping[str, Any], max_chars: int) -> str | None:
    return clip_text(as_str(_field(attrs, TOOL_OUTPUT, "error")), max_chars)
