"""Tool results a model request sends back, read from the end of its message list, and given to
the calls whose spans recorded none; the results it flags as failures fail the calls no span shows."""

from __future__ import annotations

import json
from typing import Any

from otel_traj.builder import build_trajectory
from otel_traj.dialects import to_step
from otel_traj.dialects._messages import assistant_output
from otel_traj.dialects._results import request_failures, request_results, resent_calls
from otel_traj.records import TraceContext
from otel_traj.steps import ModelCall, RequestedTool, ToolCall
from tests.dialect_spans import record

ASK = {"role": "assistant", "tool_calls": [{"id": "c1", "function": {"name": "f", "arguments": "{}"}}]}


def test_every_shape_of_a_sent_back_result() -> None:
    messages = [
        {"role": "user", "content": "hi"},
        ASK,
        {"role": "tool", "tool_call_id": "c1", "content": '{"ok": true}'},
        {"role": "user", "parts": [{"type": "tool_call_response", "id": "c2", "response": {"n": 1}}]},
        {"role": "user", "parts": [{"type": "tool_call_response", "id": "c3", "result": [1, 2]}]},
        {"role": "tool", "content": [{"type": "tool-result", "toolCallId": "c4", "output": "four"}]},
        {"role": "user", "content": [{"toolResult": {"toolUseId": "c5", "content": [{"text": "five"}]}}]},
        {"role": "user", "parts": [{"function_response": {"id": "c6", "response": {"r": "six"}}}]},
        {"type": "function_call_output", "call_id": "c7", "output": "seven"},
    ]
    expected = (
        ("c1", '{"ok": true}'),
        ("c2", '{"n": 1}'),
        ("c3", "[1, 2]"),
        ("c4", "four"),
        ("c5", "five"),
        ("c6", '{"r": "six"}'),
        ("c7", "seven"),
    )
    assert request_results(json.dumps(messages), 4096) == expected
    assert request_results(messages, 4096) == expected


def test_only_results_after_the_last_assistant_message_are_read() -> None:
    old = [{"role": "tool", "tool_call_id": "old", "content": "stale"}]
    messages = [
        {"role": "user", "content": "hi"},
        ASK,
        *old,
        ASK,
        {"role": "tool", "tool_call_id": "c9", "content": "new"},
    ]
    assert request_results(json.dumps(messages), 4096) == (("c9", "new"),)
    # Read from the end: what comes before the last assistant message is never parsed.
    text = json.dumps(messages)
    damaged = (
        '[{"role": "user", "content": "hi"}, {{{ not json' + text[text.rindex(', {"role": "assistant"') :]
    )
    assert request_results(damaged, 4096) == (("c9", "new"),)
    assert request_results(json.dumps([{"role": "user", "content": "first turn"}]), 4096) == ()


MS = 1_000_000


def asked_then_answered(
    results: tuple[tuple[str, str], ...], failed: tuple[str, ...] = ()
) -> tuple[ModelCall, ModelCall]:
    """A response asking for calls ``a`` (c1) and ``b`` (c2), then the request sending ``results``
    back (``failed``: the ids it sends back as failures)."""
    asked = (RequestedTool(name="a", call_id="c1"), RequestedTool(name="b", call_id="c2"))
    first = ModelCall(span_id=1, end_ns=5 * MS, input_tokens=1, output_tokens=1, requested_tools=asked)
    second = ModelCall(
        span_id=2,
        start_ns=20 * MS,
        end_ns=25 * MS,
        input_tokens=1,
        output_tokens=1,
        tool_results=results,
        failed_results=failed,
    )
    return first, second


def test_a_call_without_a_result_takes_the_one_sent_back_and_a_recorded_one_is_kept() -> None:
    ms = MS
    first, second = asked_then_answered((("c1", "sent back a"), ("c2", "sent back b")))
    a = ToolCall(name="a", span_id=3, start_ns=6 * ms, end_ns=8 * ms, call_id="c1")
    b = ToolCall(name="b", span_id=4, start_ns=6 * ms, end_ns=9 * ms, call_id="c2", result="own b")
    calls = build_trajectory(TraceContext(trace_id=1), [first, a, b, second]).tool_calls
    assert [(c.name, c.result) for c in calls] == [("a", "sent back a"), ("b", "own b")]


def test_an_id_reused_in_a_later_turn_answers_each_call_with_its_own_result() -> None:
    # Google GenAI's instrumentation names Gemini calls without an id `<name>_<index>`: the same
    # call asked for in two turns has the same id, each answered by the request after it.
    ms = 1_000_000

    def model(span_id: int, start: int, results: tuple[tuple[str, str], ...] = ()) -> ModelCall:
        return ModelCall(
            span_id=span_id,
            start_ns=start * ms,
            end_ns=(start + 5) * ms,
            input_tokens=1,
            output_tokens=1,
            requested_tools=(RequestedTool(name="a", call_id="a_0"),) if span_id < 3 else (),
            tool_results=results,
        )

    turns = [model(1, 0), model(2, 10, (("a_0", "first"),)), model(3, 20, (("a_0", "second"),))]
    calls = build_trajectory(TraceContext(trace_id=1), turns).tool_calls
    assert [(c.turn, c.call_id, c.result) for c in calls] == [(0, "a_0", "first"), (1, "a_0", "second")]


def test_a_tool_message_with_text_parts_and_an_openai_call_id() -> None:
    # LiteLLM's OpenTelemetry logger: semconv text parts, OpenAI's `tool_call_id` beside them.
    messages = [
        ASK,
        {"role": "tool", "parts": [{"type": "text", "content": '{"ok": 1}'}], "tool_call_id": "c1"},
    ]
    assert request_results(json.dumps(messages), 4096) == (("c1", '{"ok": 1}'),)


def test_the_resent_calls_of_a_request_are_its_last_assistant_messages() -> None:
    again = {"role": "assistant", "tool_calls": [{"id": "c2", "function": {"name": "g", "arguments": "{}"}}]}
    messages = [{"role": "user", "content": "hi"}, ASK, {"role": "tool", "tool_call_id": "c1"}, again]
    assert resent_calls(json.dumps(messages), 4096) == (
        RequestedTool(name="g", call_id="c2", arguments_text="{}"),
    )
    assert resent_calls(json.dumps(messages[:1]), 4096) == ()


def test_a_response_recorded_without_ids_takes_them_from_the_request_that_repeats_it() -> None:
    ms = 1_000_000
    asked = (
        RequestedTool(name="a", arguments_text='{"x": 1, "y": 2}'),
        RequestedTool(name="b", arguments_text="{}"),
    )
    first = ModelCall(span_id=1, start_ns=0, end_ns=5 * ms, input_tokens=1, requested_tools=asked)
    # The loop sends the calls back with their ids (and arguments re-serialized) before the results.
    resent = (
        RequestedTool(name="a", call_id="c1", arguments_text='{"y": 2, "x": 1}'),
        RequestedTool(name="b", call_id="c2", arguments_text="{}"),
    )
    other = (RequestedTool(name="a", call_id="c9", arguments_text='{"x": 3}'),)
    second = ModelCall(
        span_id=2,
        start_ns=10 * ms,
        end_ns=15 * ms,
        input_tokens=1,
        resent_source=resent,
        tool_results=(("c1", "ra"), ("c2", "rb")),
    )
    third = ModelCall(span_id=3, start_ns=20 * ms, end_ns=25 * ms, input_tokens=1, resent_source=other)
    calls = build_trajectory(TraceContext(trace_id=1), [first, second, third]).tool_calls
    assert [(c.name, c.call_id, c.result) for c in calls] == [("a", "c1", "ra"), ("b", "c2", "rb")]


# Anthropic's Messages API: the calls are `tool_use` blocks of the assistant message, the results
# `tool_result` blocks of the next user message, a failure flagged with `is_error`.
ANTHROPIC_ASK = {
    "role": "assistant",
    "content": [
        {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {"q": "a"}},
        {"type": "tool_use", "id": "toolu_2", "name": "pay", "input": {"n": 2}},
    ],
}
ANTHROPIC_RESULTS = {
    "role": "user",
    "content": [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "found"}]},
        {"type": "tool_result", "tool_use_id": "toolu_2", "content": "gateway timeout", "is_error": True},
    ],
}


def test_anthropic_content_blocks_give_calls_results_and_failures() -> None:
    messages = [{"role": "user", "content": "hi"}, ANTHROPIC_ASK, ANTHROPIC_RESULTS]
    _, requested, _ = assistant_output([ANTHROPIC_ASK], 4096)
    assert requested == (
        RequestedTool(name="lookup", call_id="toolu_1", arguments_text='{"q": "a"}'),
        RequestedTool(name="pay", call_id="toolu_2", arguments_text='{"n": 2}'),
    )
    assert request_results(json.dumps(messages), 4096) == (
        ("toolu_1", "found"),
        ("toolu_2", "gateway timeout"),
    )
    assert request_failures(json.dumps(messages), 4096) == ("toolu_2",)
    # A request body (OpenInference's `input.value`) holds the list under `messages`.
    body = {"model": "m", "messages": messages, "tools": [{"name": "pay", "description": "no error here"}]}
    assert request_failures(json.dumps(body), 4096) == ("toolu_2",)
    assert request_failures(body, 4096) == ("toolu_2",)
    # Only the results after the last assistant message are the request's own.
    assert request_failures(json.dumps([*messages, ANTHROPIC_ASK]), 4096) == ()
    succeeded = {**ANTHROPIC_RESULTS, "content": ANTHROPIC_RESULTS["content"][:1]}
    assert request_failures(json.dumps([*messages[:2], succeeded]), 4096) == ()


def test_other_failure_flags_of_sent_back_results() -> None:
    messages = [
        ASK,
        {"role": "user", "content": [{"toolResult": {"toolUseId": "b1", "status": "error", "content": []}}]},
        {
            "role": "user",
            "content": [{"toolResult": {"toolUseId": "b2", "status": "success", "content": []}}],
        },
        {
            "role": "tool",
            "content": [{"type": "tool-result", "toolCallId": "v1", "output": {"type": "error-text"}}],
        },
        {
            "role": "tool",
            "content": [{"type": "tool-result", "toolCallId": "v2", "output": {"type": "text"}}],
        },
    ]
    assert request_failures(messages, 4096) == ("b1", "v1")


def test_openinference_failure_flag_only_in_the_request_body() -> None:
    """The flattened messages keep a result's text and id; the body in `input.value` its `is_error`."""
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}, ANTHROPIC_ASK, ANTHROPIC_RESULTS]}
    attributes = {
        "openinference.span.kind": "LLM",
        "input.value": json.dumps(body),
        "input.mime_type": "application/json",
        "llm.input_messages.0.message.role": "user",
        "llm.input_messages.0.message.content": "hi",
        "llm.input_messages.1.message.role": "assistant",
        "llm.input_messages.2.message.role": "tool",
        "llm.input_messages.2.message.tool_call_id": "toolu_1",
        "llm.input_messages.2.message.content": "found",
        "llm.input_messages.3.message.role": "tool",
        "llm.input_messages.3.message.tool_call_id": "toolu_2",
        "llm.input_messages.3.message.content": "gateway timeout",
        "llm.token_count.prompt": 10,
        "llm.token_count.completion": 1,
    }
    model = to_step(record("messages.create", attributes))
    assert isinstance(model, ModelCall)
    assert model.tool_results == (("toolu_1", "found"), ("toolu_2", "gateway timeout"))
    assert model.failed_results == ("toolu_2",)


def test_a_call_no_span_shows_fails_when_the_request_says_so() -> None:
    ms = MS
    first, second = asked_then_answered((("c1", "timeout"), ("c2", "done")), failed=("c1",))
    calls = build_trajectory(TraceContext(trace_id=1), [first, second]).tool_calls
    assert [(c.name, c.observed, c.ok, c.error_message) for c in calls] == [
        ("a", False, False, "timeout"),
        ("b", False, True, None),
    ]
    # A span that shows the call has the final word on its outcome.
    a = ToolCall(name="a", span_id=3, start_ns=6 * ms, end_ns=8 * ms, call_id="c1")
    calls = build_trajectory(TraceContext(trace_id=1), [first, a, second]).tool_calls
    assert sorted((c.name, c.observed, c.ok, c.result) for c in calls) == [
        ("a", True, True, "timeout"),
        ("b", False, True, "done"),
    ]


def test_anthropic_client_own_span_results_as_text_blocks_and_its_stop_reason() -> None:
    """The anthropic client's own tracing (content mode): GenAI messages whose tool_call_response parts
    hold the result as Anthropic text blocks and drop `is_error`; the finish reason is only
    `anthropic.message.stop_reason`."""
    messages = [
        {"role": "user", "parts": [{"type": "text", "content": "hi"}]},
        {
            "role": "assistant",
            "parts": [{"type": "tool_call", "id": "toolu_1", "name": "pay", "arguments": {"n": 2}}],
        },
        {
            "role": "user",
            "parts": [
                {
                    "type": "tool_call_response",
                    "id": "toolu_1",
                    "response": [{"type": "text", "text": '{"paid": true}'}],
                }
            ],
        },
    ]
    output = [{"role": "assistant", "parts": [{"type": "text", "content": "done"}]}]
    attributes = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "anthropic",
        "gen_ai.request.model": "claude-sonnet-4-5",
        "gen_ai.conversation.id": "conv-1",
        "gen_ai.input.messages": json.dumps(messages),
        "gen_ai.output.messages": json.dumps(output),
        "gen_ai.usage.input_tokens": 10,
        "gen_ai.usage.output_tokens": 2,
        "anthropic.message.stop_reason": "end_turn",
    }
    model = to_step(record("anthropic.messages.create", attributes, scope="com.anthropic.sdk.python"))
    assert isinstance(model, ModelCall)
    assert (model.input_text, model.output_text, model.finish_reasons) == ("hi", "done", ("end_turn",))
    assert model.tool_results == (("toolu_1", '{"paid": true}'),)
    assert model.failed_results == ()


GEMINI_ASK = {
    "role": "assistant",
    "parts": [{"type": "tool_call", "id": "pay_0", "name": "pay", "arguments": {"n": 2}}],
}
GEMINI_ERROR = {"error": "Failed to invoke function pay because of error gateway timeout"}


def _gemini_results(*responses: Any) -> dict[str, Any]:
    """A request's tool results as GenAI ``tool_call_response`` parts, one per function response."""
    parts = [
        {"type": "tool_call_response", "id": f"pay_{index}", "response": response}
        for index, response in enumerate(responses)
    ]
    return {"role": "user", "parts": parts}


def _native(key: str, call_id: str, response: Any) -> dict[str, Any]:
    """A request message holding one Gemini function response part (``key``: its JSON or SDK name)."""
    return {"role": "user", "parts": [{key: {"id": call_id, "name": "pay", "response": response}}]}


def test_gemini_function_responses_with_an_error_key_are_failures() -> None:
    """The Gemini API's function response: ``output`` for the output, ``error`` for error details."""
    native = [
        GEMINI_ASK,
        _native("function_response", "g1", GEMINI_ERROR),
        _native("functionResponse", "g2", GEMINI_ERROR),
        _native("functionResponse", "g3", {"result": "ok"}),
        # A tool's output that happens to hold an `error` field is output, not a failure.
        _native("function_response", "g4", {"output": GEMINI_ERROR}),
        _native("function_response", "g5", {"result": GEMINI_ERROR}),
        _native("function_response", "g6", {"error": None}),
        _native("function_response", "g7", {**GEMINI_ERROR, "output": 1}),
    ]
    # Gemini's own parts say so whatever the span's provider.
    assert request_failures(json.dumps(native), 4096) == ("g1", "g2")
    assert request_results(native, 4096)[1] == ("g2", json.dumps(GEMINI_ERROR))


def test_genai_tool_call_response_parts_fail_on_an_error_key_only_for_gemini() -> None:
    messages = [GEMINI_ASK, _gemini_results(GEMINI_ERROR, {"result": GEMINI_ERROR}, {"output": "ok"})]
    assert request_failures(json.dumps(messages), 4096, gemini=True) == ("pay_0",)
    # Another provider's tool may return `{"error": ...}` as its value: no convention makes it a failure.
    assert request_failures(json.dumps(messages), 4096) == ()


def _generate_content(provider_key: str, provider: str) -> ModelCall:
    messages = [
        {"role": "user", "parts": [{"type": "text", "content": "hi"}]},
        GEMINI_ASK,
        _gemini_results(GEMINI_ERROR),
    ]
    attributes = {
        "gen_ai.operation.name": "generate_content",
        provider_key: provider,
        "gen_ai.request.model": "gemini-2.5-flash",
        "gen_ai.input.messages": json.dumps(messages),
        "gen_ai.usage.input_tokens": 10,
        "gen_ai.usage.output_tokens": 1,
    }
    model = to_step(record("generate_content gemini-2.5-flash", attributes))
    assert isinstance(model, ModelCall)
    assert model.tool_results == (("pay_0", json.dumps(GEMINI_ERROR)),)
    return model


def test_a_gemini_span_marks_the_error_responses_it_sends_back() -> None:
    """OpenTelemetry's google-genai instrumentation keeps the function response as sent; the provider
    (``gen_ai.provider.name`` or the older ``gen_ai.system``) says it is Gemini's."""
    for key, provider in (
        ("gen_ai.provider.name", "gemini"),
        ("gen_ai.provider.name", "gcp.gemini"),
        ("gen_ai.system", "vertex_ai"),
        ("gen_ai.provider.name", "gcp.vertex_ai"),
    ):
        assert _generate_content(key, provider).failed_results == ("pay_0",), provider
    # pydantic-ai's Google providers record the tool's own return value, and OpenAI has no such convention.
    for provider in ("openai", "google-gla", "anthropic"):
        assert _generate_content("gen_ai.provider.name", provider).failed_results == (), provider


def test_failures_in_the_operation_details_event() -> None:
    """Content captured as events: the request's messages are an ``operation.details`` event's."""
    messages = [GEMINI_ASK, _gemini_results(GEMINI_ERROR)]
    attributes = {
        "gen_ai.operation.name": "generate_content",
        "gen_ai.provider.name": "gemini",
        "gen_ai.usage.input_tokens": 10,
        "gen_ai.usage.output_tokens": 1,
    }
    details = ("gen_ai.client.inference.operation.details", {"gen_ai.input.messages": json.dumps(messages)})
    model = to_step(record("generate_content gemini-2.5-flash", attributes, events=[details]))
    assert isinstance(model, ModelCall)
    assert model.failed_results == ("pay_0",)


def test_a_tool_message_with_status_error_is_a_failure_whatever_records_it() -> None:
    # LangChain's ToolMessage keeps `status: "error"` beside OpenAI's tool-message fields.
    failed = {"role": "tool", "tool_call_id": "c1", "content": "timeout", "status": "error"}
    ok = {"role": "tool", "tool_call_id": "c2", "content": "done", "status": "success"}
    assert request_failures([ASK, failed, ok], 4096) == ("c1",)
    assert request_failures(json.dumps([ASK, failed, ok]), 4096) == ("c1",)
    assert request_failures([ASK, ok], 4096) == ()


def test_a_tool_the_provider_ran_is_a_call_the_model_made() -> None:
    """The conventions' ``server_tool_call`` part (a web search the provider ran within the
    response): its details are the arguments; the response part beside it is no second call."""
    output = [
        {
            "role": "assistant",
            "parts": [
                {"type": "reasoning", "content": "Search first."},
                {
                    "type": "server_tool_call",
                    "id": "ws_1",
                    "name": "web_search",
                    "server_tool_call": {"type": "web_search", "query": "otel genai"},
                },
                {"type": "server_tool_call_response", "server_tool_call_response": {"results": 3}},
                {"type": "text", "content": "OpenTelemetry has GenAI conventions."},
            ],
        }
    ]
    text, tools, _ = assistant_output(output, 4096)
    assert text == "OpenTelemetry has GenAI conventions."
    [call] = tools
    assert (call.name, call.call_id) == ("web_search", "ws_1")
    assert json.loads(call.arguments_text or "") == {"type": "web_search", "query": "otel genai"}
