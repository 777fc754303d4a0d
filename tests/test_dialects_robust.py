"""Dialect parsers on hostile input: non-GenAI spans, wrong types, invalid JSON, huge strings.

The parsers run on the application's thread for every span it ends, so they must reject foreign
spans, never raise and never hand on more text than ``max_chars``.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from otel_traj import dialects
from otel_traj.adapters.otlp_proto import views_from_bytes
from otel_traj.dialects import _base, to_step
from otel_traj.dialects.recognize import classify
from otel_traj.dialects.sources import UnreadableField
from otel_traj.spanview import STATUS_ERROR, SpanEvent, SpanView
from otel_traj.steps import AgentRun, ContextOperation, ModelCall, Step, ToolCall, Unreadable
from tests.dialect_spans import record
from tests.real_frameworks import recorded_traces

MB = "x" * (1 << 20)


def test_http_and_database_spans_are_not_steps() -> None:
    server = {
        "http.request.method": "POST",
        "url.path": "/chat/completions",
        "url.scheme": "https",
        "http.route": "/chat/completions",
        "http.response.status_code": 200,
        "server.address": "api.example.com",
        "network.protocol.version": "1.1",
        "user_agent.original": "curl/8",
        "client.address": "10.0.0.1",
    }
    assert to_step(record("POST /chat/completions", server)) is None
    database = {"db.system.name": "postgresql", "db.query.text": "SELECT 1", "db.namespace": "app"}
    assert to_step(record("SELECT app", database)) is None
    assert to_step(record("chat.postMessage", {"rpc.system": "slack"})) is None
    assert to_step(record("execute_tool", {})) is None


def test_span_names_classify_only_when_no_attribute_does() -> None:
    tool = to_step(record("execute_tool lookup", {"custom": 1}))
    assert isinstance(tool, ToolCall) and (tool.name, tool.dialect) == ("lookup", "semconv")
    agent = to_step(record("invoke_agent helper", {}))
    assert isinstance(agent, AgentRun) and agent.agent_name == "helper"
    model = to_step(record("chat gpt-4o", {}))
    assert isinstance(model, ModelCall) and model.model == "gpt-4o"
    # An attribute marker wins over the name.
    renamed = to_step(
        record("execute_tool lookup", {"gen_ai.operation.name": "chat", "gen_ai.request.model": "m"})
    )
    assert isinstance(renamed, ModelCall)


def test_adk_failed_tool() -> None:
    attributes = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "check_payment",
        "gcp.vertex.agent.tool_call_args": '{"invoice_id": "INV-1002"}',
        "gen_ai.tool.call.id": "adk-3",
        "error.type": "TimeoutError",
    }
    tool = to_step(record("execute_tool check_payment", attributes, error=TimeoutError("gateway timeout")))
    assert isinstance(tool, ToolCall)
    assert (tool.ok, tool.error_type, tool.error_message, tool.call_id) == (
        False,
        "TimeoutError",
        "gateway timeout",
        "adk-3",
    )


def test_wrong_types_do_not_raise_and_are_read_where_meaningful() -> None:
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": 7,
        "gen_ai.usage.input_tokens": "150",
        "gen_ai.usage.output_tokens": -3,
        "gen_ai.usage.cache_read.input_tokens": True,
        "gen_ai.usage.reasoning.output_tokens": 12.0,
        "gen_ai.input.messages": 42,
        "gen_ai.output.messages": "[{not json",
        "gen_ai.response.finish_reasons": (1, "stop"),
    }
    model = to_step(record("chat", attributes))
    assert isinstance(model, ModelCall)
    assert (model.model, model.input_tokens, model.output_tokens, model.cache_read_tokens) == (
        "7",
        150,
        None,
        None,
    )
    assert (model.reasoning_tokens, model.finish_reasons, model.input_text) == (12, ("stop",), None)
    tool = to_step(record("execute_tool", {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": 5}))
    assert isinstance(tool, ToolCall) and tool.name == "5"
    odd = {"openinference.span.kind": "LLM", "llm.input_messages.0.message.role": "user"}
    odd["llm.input_messages.0.message.content"] = ("a", "b")
    assert isinstance(to_step(record("llm", odd)), ModelCall)
    # Digits that str.isdigit accepts and int does not read are no count; the span is still a step.
    superscript = {
        "gen_ai.operation.name": "chat",
        "gen_ai.usage.input_tokens": "\u00b2",
        "gen_ai.usage.output_tokens": "9",
    }
    model = to_step(record("chat", superscript))
    assert isinstance(model, ModelCall) and (model.input_tokens, model.output_tokens) == (None, 9)


def test_megabyte_values_are_capped_and_flagged() -> None:
    attributes = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "upload",
        "gen_ai.tool.call.arguments": MB,
        "gen_ai.tool.call.result": MB,
    }
    tool = to_step(record("execute_tool upload", attributes), max_chars=100)
    assert isinstance(tool, ToolCall) and tool.truncated
    assert tool.arguments_text == MB[:100] and tool.result == MB[:100]
    messages = json.dumps([{"role": "user", "parts": [{"type": "text", "content": MB}]}])
    chat = {
        "gen_ai.operation.name": "chat",
        "gen_ai.input.messages": messages,
        "gen_ai.output.messages": messages,
    }
    model = to_step(record("chat", chat), max_chars=50)
    assert isinstance(model, ModelCall) and model.input_text == MB[:50]
    wrapped = json.dumps({"input_str": MB, "inputs": {"blob": MB}, "kwargs": {}})
    traceloop = {
        "traceloop.span.kind": "tool",
        "traceloop.entity.name": "t",
        "traceloop.entity.input": wrapped,
    }
    tool = to_step(record("t.tool", traceloop), max_chars=64)
    assert isinstance(tool, ToolCall) and tool.arguments is None and tool.arguments_text == wrapped[:64]
    assert tool.truncated


def test_small_max_chars_caps_every_text_of_real_traces() -> None:
    limit = 12
    seen = 0
    for path in recorded_traces():
        for view in views_from_bytes(path.read_bytes()):
            step = to_step(view, max_chars=limit)
            if step is None:
                continue
            seen += 1
            for text in _texts(step):
                assert len(text) <= limit, (path, step)
            if isinstance(step, ToolCall) and step.arguments is None and step.arguments_text is not None:
                full = to_step(view)
                assert isinstance(full, ToolCall)
                # Arguments printed as a Python dict are read as one only when they fit.
                arguments = full.arguments_text if full.arguments is None else str(full.arguments)
                assert step.truncated == (len(arguments or "") > limit or len(full.result or "") > limit)
    assert seen > 100


def _texts(step: Step) -> list[str]:
    if isinstance(step, Unreadable):
        values = [step.span_name]  # its reason is otel-traj's, of at most 200 characters
    elif isinstance(step, ToolCall):
        values = [step.arguments_text, step.result, step.error_message]
    elif isinstance(step, ModelCall):
        values = [step.input_text, step.output_text] + [r.arguments_text for r in step.requested_tools]
    elif isinstance(step, ContextOperation):
        values = [step.text, step.query, step.source]
    else:
        values = [step.input_text, step.output_text]
    return [value for value in values if value is not None]


def test_broken_views_are_unreadable_steps_not_dropped() -> None:
    broken = SpanView(1, 2, None, "execute_tool x", 0, 1, attributes=None)  # type: ignore[arg-type]
    step = to_step(broken)
    assert isinstance(step, Unreadable)
    assert (step.span_id, step.span_name, step.field) == (2, "execute_tool x", "span")
    assert step.reason.startswith("TypeError")
    events = [SpanEvent("exception", 5, None)]  # type: ignore[arg-type]
    view = SpanView(
        1,
        2,
        None,
        "execute_tool x",
        0,
        1,
        attributes={"gen_ai.operation.name": "execute_tool"},
        events=events,
        status_code=STATUS_ERROR,
        status_message=3,  # type: ignore[arg-type]
    )
    tool = to_step(view)
    assert isinstance(tool, ToolCall) and (tool.name, tool.ok, tool.error_message) == ("x", False, None)


_KEYS = [
    "gen_ai.operation.name",
    "gen_ai.tool.name",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.usage.input_tokens",
    "openinference.span.kind",
    "input.value",
    "output.value",
    "llm.output_messages.0.message.role",
    "llm.output_messages.0.message.tool_calls.0.tool_call.function.name",
    "traceloop.span.kind",
    "traceloop.entity.input",
    "traceloop.entity.output",
    "llm.request.type",
    "gen_ai.prompt.0.role",
    "gen_ai.completion.0.tool_calls.0.name",
    "langfuse.observation.type",
    "langfuse.observation.input",
    "langfuse.observation.output",
    "langfuse.observation.usage_details",
    "ai.operationId",
    "ai.response.toolCalls",
    "ai.prompt",
    "gcp.vertex.agent.tool_call_args",
    "gcp.vertex.agent.llm_request",
    "gcp.vertex.agent.llm_response",
    "logfire.msg_template",
    "name",
    "input",
    "output",
    "usage",
    "error",
    "response",
    "tool_arguments",
    "pydantic_ai.all_messages",
    "final_result",
]
_CHOICES = [
    "execute_tool",
    "chat",
    "invoke_agent",
    "TOOL",
    "LLM",
    "AGENT",
    "tool",
    "workflow",
    "generation",
    "agent",
    "ai.toolCall",
    "ai.generateText",
    "ai.generateText.doGenerate",
    "Function: {name}",
    "Responses API with {gen_ai.request.model!r}",
    "Chat completion with {gen_ai.request.model!r}",
    "user",
]
_JSON_KEYS = [
    *_CHOICES,
    "role",
    "parts",
    "content",
    "type",
    "tool_calls",
    "function",
    "arguments",
    "args",
    "kwargs",
    "inputs",
    "messages",
    "text",
    "output",
    "data",
    "toolUse",
    "function_call",
]
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20) | st.sampled_from(_CHOICES),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(_JSON_KEYS), inner, max_size=4)
    ),
    max_leaves=12,
)
_values = (
    st.sampled_from(_CHOICES)
    | st.integers()
    | st.floats(allow_nan=True)
    | st.booleans()
    | st.text(max_size=40)
    | st.lists(st.text(max_size=8), max_size=3).map(tuple)
    | _json.map(json.dumps)
)


@settings(max_examples=400, deadline=None)
@given(
    attributes=st.dictionaries(st.sampled_from(_KEYS), _values, max_size=8),
    name=st.sampled_from(["execute_tool t", "chat m", "running tool", "agent run", "call_llm", "x"]),
    failed=st.booleans(),
    max_chars=st.integers(min_value=0, max_value=64),
)
def test_parsers_never_raise(attributes: dict[str, Any], name: str, failed: bool, max_chars: int) -> None:
    events = [
        SpanEvent("gen_ai.choice", 1, {"message": json.dumps([{"text": "t"}])}),
        SpanEvent("exception", 2),
    ]
    view = SpanView(1, 2, None, name, 0, 1, attributes, events, STATUS_ERROR if failed else 0, "boom")
    # The parsers themselves, without read_span's guard: a malformed span must not need it. The one
    # exception they raise on purpose is a tool span that names no tool (an unreadable step).
    kind = classify(view, attributes)
    if kind is None:
        return
    try:
        step = dialects._build(kind, view, attributes, max_chars)
    except UnreadableField as exc:
        assert (kind.kind, exc.field) == ("tool", "tool name")
        return
    if step is not None:
        assert all(len(text) <= max_chars for text in _texts(step))


_JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)


@given(value=_JSON_VALUES, spaced=st.booleans())
@settings(max_examples=400, deadline=None)
def test_json_is_read_exactly_as_the_standard_decoder_reads_it(value: Any, spaced: bool) -> None:
    # Integers beyond 64 bits, NaN, Infinity and lone surrogates are where a faster parser differs.
    text = json.dumps(value, separators=None if spaced else (",", ":"), ensure_ascii=spaced)
    parsed = _base.parse_json(text)
    expected = json.loads(text)
    assert json.dumps(parsed) == json.dumps(expected)
    assert type(parsed) is type(expected)


def test_text_that_is_not_json_reads_as_none() -> None:
    for text in ("", "{", "[1,]", "{'a': 1}", "[" * 100_000 + "]" * 100_000, "1 2", "\ufeff{}"):
        assert _base.parse_json(text) is None
    assert _base.parse_json('{"n": -9223372036854775809}') == {"n": -9223372036854775809}


@given(
    value=_JSON_VALUES
    | st.tuples(st.integers(), st.text(max_size=4))
    | st.frozensets(st.integers(), max_size=3)
)
@settings(max_examples=300, deadline=None)
def test_values_are_written_as_json_dumps_writes_them(value: Any) -> None:
    assert _base.dumps(value) == json.dumps(value, ensure_ascii=False, default=str)


def test_values_json_cannot_write_give_none() -> None:
    cycle: list[Any] = []
    cycle.append(cycle)
    assert _base.dumps(cycle) is None
    assert _base.dumps({("a", "b"): 1}) is None
    assert _base.dumps({1: float("nan"), None: "é"}) == '{"1": NaN, "null": "é"}'
