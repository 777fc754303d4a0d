"""MLflow Tracing (``mlflow``, ``mlflow-tracing``) exported as OpenTelemetry spans: ``mlflow.spanType``.

TOOL, CHAT_MODEL / LLM and AGENT spans map to steps, a RETRIEVER to a retrieval (``operations``): its
outputs are the list of MLflow ``Document`` (``{page_content, metadata, id}``) it returned, its inputs
the query (a string, or the traced function's arguments). CHAIN, EMBEDDING, MEMORY (documented only as
"memory operations persisting context to long-term storage", no shape of what it read or wrote) and the
rest are no steps.
MLflow writes every attribute value as JSON text, strings included (``mlflow.spanType = "\\"TOOL\\""``).
``mlflow.spanInputs`` holds the traced function's arguments by name, ``mlflow.spanOutputs`` its return
value; an autologged client call records the request's keyword arguments (``{model, messages,
tools}``) and the client's whole response object (OpenAI's ``{choices: [{message, finish_reason}]}``),
with the model in ``mlflow.llm.model`` and the usage in ``mlflow.chat.tokenUsage``. Tool and agent
spans are named after their function. A failure is the span's status with an ``exception`` event.
Trace metadata (the session) stays in MLflow's trace info: the OTLP export does not carry it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from otel_traj.dialects import documents
from otel_traj.dialects._base import clip_text, loads, loads_once
from otel_traj.dialects._messages import (
    Output,
    as_messages,
    assistant_output,
    last_user_text,
    last_user_text_in,
)
from otel_traj.dialects._results import ToolResults, request_failures, request_results
from otel_traj.dialects._usage import Usage, usage_from_json
from otel_traj.dialects.vocabulary import NOT_A_STEP, Meaning, Refine, Vocabulary, reads
from otel_traj.spanview import SpanView
from otel_traj.steps import StepKind

DIALECT = "mlflow"
SPAN_TYPE = "mlflow.spanType"
INPUTS = "mlflow.spanInputs"
OUTPUTS = "mlflow.spanOutputs"
MODEL = "mlflow.llm.model"
PROVIDER = "mlflow.llm.provider"
USAGE = "mlflow.chat.tokenUsage"
_TYPES: dict[str, StepKind] = {"TOOL": "tool", "CHAT_MODEL": "model", "LLM": "model", "AGENT": "agent"}
_OTHER_TYPES = ("CHAIN", "EMBEDDING", "PARSER", "RERANKER", "MEMORY")
RETRIEVERS = ("RETRIEVER", '"RETRIEVER"')
# The span types as MLflow writes them (JSON strings), and bare; ``UNKNOWN`` says nothing.
_MEANINGS: dict[str, Meaning | Refine] = {
    **_TYPES,
    **dict.fromkeys(_OTHER_TYPES, NOT_A_STEP),
    "RETRIEVER": reads(OUTPUTS, INPUTS),
}
VOCABULARY = Vocabulary(
    SPAN_TYPE, DIALECT, {**_MEANINGS, **{f'"{name}"': meaning for name, meaning in _MEANINGS.items()}}
)


def _decoded(attrs: Mapping[str, Any], key: str) -> Any:
    """The value MLflow serialized into ``key``: an object, a list, a string or a number (parsed once
    for the several fields read from it)."""
    value = attrs.get(key)
    if not isinstance(value, str):
        return value
    decoded = loads_once(value)
    return decoded if decoded is not None or value == "null" else value


def _response(data: Any, max_chars: int) -> Output | None:
    """A client's response object: OpenAI chat ``choices``, the Responses API's ``output`` items, or a
    message (Anthropic's content blocks)."""
    if isinstance(data, str):
        return data, (), ()
    if not isinstance(data, Mapping):
        return None
    choices = data.get("choices")
    if isinstance(choices, list):
        choices = [choice for choice in choices if isinstance(choice, Mapping)]
        messages = [choice.get("message") for choice in choices]
        text, requested, _ = assistant_output(messages, max_chars)
        reasons = tuple(r for choice in choices if isinstance(r := choice.get("finish_reason"), str) and r)
        return text, requested, reasons
    items = data.get("output")
    text, requested, reasons = assistant_output(
        as_messages(items if isinstance(items, list) else data), max_chars
    )
    stop = data.get("stop_reason")
    return text, requested, reasons or ((stop,) if isinstance(stop, str) and stop else ())


def response_output(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> Output | None:
    return _response(_decoded(attrs, OUTPUTS), max_chars)


def request_input(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> str | None:
    """The user's last message in a request's ``messages`` (found from the end of the text: the list
    repeats the conversation), else its text ``input`` (the Responses API's)."""
    value = attrs.get(INPUTS)
    if not isinstance(value, str):
        return None
    text = last_user_text_in(value, max_chars)
    if text is not None:
        return text
    data = loads(value)
    prompt = data.get("input", data.get("prompt")) if isinstance(data, Mapping) else None
    if isinstance(prompt, str):
        return clip_text(prompt, max_chars)
    return last_user_text(as_messages(prompt), max_chars)


def request_tool_results(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> ToolResults | None:
    """The results a request's ``messages`` send back after its last assistant message."""
    return request_results(attrs.get(INPUTS), max_chars) or None


def request_failed_results(
    view: SpanView, attrs: Mapping[str, Any], max_chars: int
) -> tuple[str, ...] | None:
    """Call ids whose results the request sends back flagged as failures (Anthropic's ``is_error``)."""
    return request_failures(attrs.get(INPUTS), max_chars) or None


def run_input(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> str | None:
    """An agent function's input: the user's last message when it is called with messages, else its
    first text argument (``support_agent(question)``)."""
    data = _decoded(attrs, INPUTS)
    if isinstance(data, str):
        return clip_text(data, max_chars)
    if not isinstance(data, Mapping):
        return None
    for value in data.values():
        text = last_user_text(value, max_chars) if isinstance(value, list) else None
        if text is not None:
            return text
    return clip_text(next((v for v in data.values() if isinstance(v, str) and v), None), max_chars)


def run_output(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> str | None:
    """An agent function's answer: the text it returned, or the text of the response it returned."""
    output = _response(_decoded(attrs, OUTPUTS), max_chars)
    return output[0] if output is not None else None


def usage(attrs: Mapping[str, Any]) -> Usage | None:
    counted = usage_from_json(attrs.get(USAGE))
    return counted if counted.input is not None or counted.output is not None else None


def retrieved(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> str | None:
    """What a RETRIEVER span returned: its outputs' documents."""
    return documents.listed(attrs.get(OUTPUTS)) if attrs.get(SPAN_TYPE) in RETRIEVERS else None


def retrieval_query(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> str | None:
    """What a RETRIEVER span asked for: its input text (the query string, or its first text argument)."""
    return run_input(view, attrs, max_chars) if attrs.get(SPAN_TYPE) in RETRIEVERS else None
