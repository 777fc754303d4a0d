"""Tool results a model request sends back, read from the end of its message list, and given to
the calls whose spans recorded none."""

from __future__ import annotations

import json

from otel_traj.builder import build_trajectory
from otel_traj.dialects._results import request_results, resent_calls
from otel_traj.records import TraceContext
from otel_traj.steps import ModelCall, RequestedTool, ToolCall

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


def test_a_call_without_a_result_takes_the_one_sent_back_and_a_recorded_one_is_kept() -> None:
    ms = 1_000_000
    first = ModelCall(
        span_id=1,
        start_ns=0,
        end_ns=5 * ms,
        input_tokens=1,
        output_tokens=1,
        requested_tools=(RequestedTool(name="a", call_id="c1"), RequestedTool(name="b", call_id="c2")),
    )
    second = ModelCall(
        span_id=2,
        start_ns=20 * ms,
        end_ns=25 * ms,
        input_tokens=1,
        output_tokens=1,
        tool_results=(("c1", "sent back a"), ("c2", "sent back b")),
    )
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
        resent_calls=resent,
        tool_results=(("c1", "ra"), ("c2", "rb")),
    )
    third = ModelCall(span_id=3, start_ns=20 * ms, end_ns=25 * ms, input_tokens=1, resent_calls=other)
    calls = build_trajectory(TraceContext(trace_id=1), [first, second, third]).tool_calls
    assert [(c.name, c.call_id, c.result) for c in calls] == [("a", "c1", "ra"), ("b", "c2", "rb")]
