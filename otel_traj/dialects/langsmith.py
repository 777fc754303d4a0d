"""LangSmith's OpenTelemetry export (``langsmith`` SDK, ``LANGSMITH_TRACING_MODE=otel`` or the legacy
``LANGSMITH_OTEL_ENABLED``): every LangSmith run, LangChain/LangGraph callbacks or ``@traceable``,
becomes a span when it ends, with ``langsmith.span.kind`` = the run type.

``tool`` and ``llm`` runs map to steps; a ``chain`` run is the agent when it is LangChain's
``create_agent`` graph (``langsmith.metadata.lc_agent_name`` names the run itself) or the root chain
of a run outside any LangGraph node: LangGraph's nodes, middleware and LCEL pieces are chains too.
A ``retriever`` run is a retrieval (``operations``): LangChain's tracer records its inputs as
``{"query": ...}`` and its outputs as ``{"documents": [<Document>]}`` (each dumped as ``{id, metadata,
page_content, type}``). ``prompt``, ``parser`` and the rest are no steps. The SDK also sets
``gen_ai.operation.name`` from the run type (``chat`` for a prompt template, which must not make it a
model call; ``embeddings`` for a retriever, which must not hide its documents): the run type decides,
and the two never count as a contradiction (``Vocabulary.echoes``).

The run's inputs and outputs are JSON text in ``gen_ai.prompt`` / ``gen_ai.completion``, in
LangChain's shapes: a chat model's ``{"messages": [[<serialized messages>]]}`` and its ``LLMResult``
``{"generations": [[{"message", "generation_info"}]]}``; a tool's arguments object and ``{"output":
<ToolMessage>}``; a graph's state ``{"messages": [...]}``; a value that is no object as ``{"output":
value}``, no outputs as ``{}``. The run metadata is flattened into ``langsmith.metadata.<key>``:
LangSmith groups runs into threads by ``thread_id``, ``session_id`` or ``conversation_id`` there
(``langsmith.trace.session_id`` is the LangSmith project, no conversation).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from otel_traj.dialects import documents
from otel_traj.dialects._base import clip_text, dumps, loads_once
from otel_traj.dialects._messages import (
    MAX_MESSAGES,
    Output,
    assistant_output,
    content_text,
    last_assistant_text,
    last_user_text,
)
from otel_traj.dialects._results import ToolResults
from otel_traj.dialects._results import request_failures as shared_failures
from otel_traj.dialects._results import request_results as shared_results
from otel_traj.dialects.vocabulary import NOT_A_STEP, Meaning, Vocabulary, not_steps, reads
from otel_traj.spanview import SpanView

DIALECT = "langsmith"
KIND = "langsmith.span.kind"
NAME = "langsmith.trace.name"
INPUTS = "gen_ai.prompt"
OUTPUTS = "gen_ai.completion"
AGENT_NAME = "langsmith.metadata.lc_agent_name"
_NODE = "langsmith.metadata.langgraph_node"
# The metadata keys LangSmith groups a thread by, in its own order.
CONVERSATION_KEYS = tuple(
    f"langsmith.metadata.{key}" for key in ("session_id", "thread_id", "conversation_id")
)


def _chain(view: SpanView, attrs: Mapping[str, Any]) -> Meaning:
    return "agent" if is_agent(view, attrs) else NOT_A_STEP


VOCABULARY = Vocabulary(
    KIND,
    DIALECT,
    {
        "tool": "tool",
        "llm": "model",
        "chain": _chain,
        "retriever": reads(OUTPUTS, INPUTS),
        **not_steps(("embedding", "prompt", "parser")),
    },
    echoes="gen_ai.operation.name",
)
# LangChain's message types as chat roles.
_ROLES = {
    "human": "user",
    "ai": "assistant",
    "AIMessageChunk": "assistant",
    "tool": "tool",
    "system": "system",
}


def is_agent(view: SpanView, attrs: Mapping[str, Any]) -> bool:
    """Whether a ``chain`` run is the agent: LangChain's ``create_agent`` graph (its metadata names the
    agent after the run itself), or the root of a run outside any LangGraph node."""
    if attrs.get(AGENT_NAME, 0) == attrs.get(NAME, view.name):
        return True
    return _NODE not in attrs and view.is_local_root


def is_run(attrs: Mapping[str, Any]) -> bool:
    return KIND in attrs


def is_tool(attrs: Mapping[str, Any]) -> bool:
    return attrs.get(KIND) == "tool"


def _data(attrs: Mapping[str, Any], key: str) -> Any:
    """The run's inputs or outputs, parsed once for the several fields read from them."""
    value = attrs.get(key)
    return loads_once(value) if isinstance(value, str) and value[:1] in ("{", "[") else None


def _message(message: Any) -> Any:
    """A LangChain message (serialized with ``dumpd`` or as its fields) as an OpenAI-style dict with a
    ``role``, so that tool results read as any other; other values unchanged."""
    if not isinstance(message, Mapping) or "role" in message:
        return message
    kwargs = message.get("kwargs")
    fields = kwargs if "lc" in message and isinstance(kwargs, Mapping) else message
    kind = fields.get("type")
    role = _ROLES.get(kind) if isinstance(kind, str) else None
    return {**fields, "role": role} if role is not None else message


def _messages(value: Any) -> list[Any]:
    """The messages of inputs or outputs: ``{"messages": [...]}``, a chat model's batch
    ``{"messages": [[...]]}`` (its last prompt), or a list."""
    if isinstance(value, Mapping):
        value = value.get("messages")
    if isinstance(value, list) and value and isinstance(value[-1], list):
        value = value[-1]
    return [_message(m) for m in value[-MAX_MESSAGES:]] if isinstance(value, list) else []


def tool_arguments(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> Any:
    """A tool run's inputs: its arguments object (``{"input": ...}`` for a tool given one string)."""
    return attrs.get(INPUTS) if is_tool(attrs) else None


def tool_result(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> Any:
    """A tool run's output: the ToolMessage's content, or the value the tool returned; nothing for a
    run without outputs (``{}``, a failed call)."""
    if not is_tool(attrs):
        return None
    raw = attrs.get(OUTPUTS)
    data = _data(attrs, OUTPUTS)
    if not isinstance(data, dict):
        return raw
    if not data:
        return None
    if data.keys() != {"output"}:
        return raw
    output = _message(data["output"])
    if isinstance(output, Mapping) and output.get("role") == "tool":
        output = output.get("content")
    return output if isinstance(output, str) else dumps(output)


def model_output(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> Output | None:
    """An LLM run's response: the generations of LangChain's ``LLMResult`` (each message or text, and
    its finish reason), else OpenAI's ``choices`` (``wrap_openai``), else messages."""
    data = _data(attrs, OUTPUTS)
    if not isinstance(data, dict) or not is_run(attrs):
        return None
    generations = data.get("generations")
    if isinstance(generations, list):
        return generations_output(generations, max_chars)
    choices = data.get("choices")
    if isinstance(choices, list):
        found = [c for c in choices if isinstance(c, Mapping)]
        messages = [
            {**c["message"], "finish_reason": c.get("finish_reason")} for c in found if "message" in c
        ]
        return assistant_output(messages, max_chars)
    return assistant_output(_messages(data) or [_message(data)], max_chars)


def generations_output(generations: list[Any], max_chars: int) -> Output:
    """The response in the generations of LangChain's ``LLMResult`` (LangSmith's outputs, and
    OpenInference's ``output.value`` of a LangChain chat model)."""
    flat = [g for batch in generations for g in (batch if isinstance(batch, list) else [batch])]
    messages: list[Any] = []
    for generation in flat:
        if not isinstance(generation, Mapping):
            continue
        info = generation.get("generation_info")
        reason = info.get("finish_reason") if isinstance(info, Mapping) else None
        message = _message(generation.get("message")) or {"role": "assistant"}
        if not isinstance(message, Mapping):
            continue
        if not message.get("content") and not message.get("tool_calls"):
            message = {**message, "content": generation.get("text")}
        messages.append({**message, "finish_reason": reason})
    return assistant_output(messages, max_chars)


def model_input(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> str | None:
    """The user's last message in an LLM run's inputs (a completion model's last prompt)."""
    data = _data(attrs, INPUTS)
    if not isinstance(data, dict) or not is_run(attrs):
        return None
    prompts = data.get("prompts")
    if isinstance(prompts, list) and prompts:
        return clip_text(content_text(prompts[-1]), max_chars)
    return last_user_text(_messages(data), max_chars)


def _request(attrs: Mapping[str, Any]) -> list[Any]:
    """An LLM run's input messages, as chat messages."""
    return _messages(_data(attrs, INPUTS)) if is_run(attrs) else []


def request_results(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> ToolResults | None:
    """The ToolMessages a request sends back for the previous response's calls."""
    return shared_results(_request(attrs), max_chars) or None


def request_failures(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> tuple[str, ...] | None:
    """Call ids whose ToolMessage the request sends back with ``status: "error"``."""
    return shared_failures(_request(attrs), max_chars) or None


def run_input(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> str | None:
    """An agent run's input: the user's last message of the state it was given, else the first text
    among its inputs (a ``@traceable`` function's arguments)."""
    data = _data(attrs, INPUTS)
    if not isinstance(data, dict) or not is_run(attrs):
        return None
    text = last_user_text(_messages(data), max_chars)
    if text is None:
        text = next((v for v in data.values() if isinstance(v, str) and v), None)
    return clip_text(text, max_chars)


def run_output(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> str | None:
    """An agent run's answer: the last assistant message of its final state, else the text it returned
    (``{"output": text}``)."""
    data = _data(attrs, OUTPUTS)
    if not isinstance(data, dict) or not is_run(attrs):
        return None
    messages = _messages(data)
    if messages:
        return last_assistant_text(messages, max_chars)
    output = data.get("output")
    return clip_text(output, max_chars) if isinstance(output, str) else None


def _retriever(attrs: Mapping[str, Any]) -> bool:
    return attrs.get(KIND) == "retriever"


def retrieved(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> str | None:
    """What a retriever run returned: the documents of its outputs."""
    return documents.listed(attrs.get(OUTPUTS)) if _retriever(attrs) else None


def retrieval_query(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> str | None:
    """What a retriever run asked for: its inputs' ``query``, else their first text."""
    data = _data(attrs, INPUTS) if _retriever(attrs) else None
    if not isinstance(data, dict):
        return None
    query = data.get("query")
    if not isinstance(query, str):
        query = next((v for v in data.values() if isinstance(v, str) and v), None)
    return clip_text(query, max_chars)
