"""What the Langfuse Python SDK writes beyond its observation types: the OpenAI drop-in's generation
input when tools are passed, and trace metadata as JSON-encoded attributes; and the outputs a
generation holds when Langfuse kept only the typed fields of a span another instrumentation wrote."""

from __future__ import annotations

import json

from otel_traj.dialects.context import capture_sources, captured_values
from otel_traj.dialects.langfuse import (
    INPUT,
    OUTPUT,
    TYPE,
    generation_input,
    generation_output,
    request_failures,
    request_results,
)
from otel_traj.spanview import SpanView

MAX = 4096
QUESTION = "Customer C023 here, please refund INV-1002."


def view() -> SpanView:
    return SpanView(trace_id=1, span_id=2, parent_id=None, start_ns=0, end_ns=1, name="OpenAI-generation")


def test_the_drop_ins_input_with_tools_gives_the_users_message() -> None:
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": QUESTION}]
    with_tools = json.dumps(
        {"tools": [{"type": "function", "function": {"name": "x"}}], "messages": messages}
    )
    assert generation_input(view(), {INPUT: with_tools}, MAX) == QUESTION
    assert generation_input(view(), {INPUT: json.dumps(messages)}, MAX) == QUESTION


def test_trace_metadata_is_captured_under_its_own_name_and_decoded() -> None:
    sources = capture_sources(["app.customer_id"])
    attributes = {"langfuse.trace.metadata.app.customer_id": '"C023"', "session.id": "conv-1"}
    assert captured_values(attributes, sources, MAX) == [("app.customer_id", "C023")]
    # A value that is not JSON is kept as it is.
    attributes = {"langfuse.trace.metadata.app.customer_id": "C023"}
    assert captured_values(attributes, sources, MAX) == [("app.customer_id", "C023")]


def test_a_chat_completion_or_an_llm_result_as_output_gives_the_calls_it_requested() -> None:
    call = {"id": "call_1", "type": "function"}
    call["function"] = {"name": "get_subscription", "arguments": '{"customer_id": "C023"}'}
    message = {"role": "assistant", "content": None, "tool_calls": [call]}
    completion = {
        "id": "chatcmpl-1",
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
    }
    langchain = {
        "type": "tool_call",
        "id": "call_1",
        "name": "get_subscription",
        "args": {"customer_id": "C023"},
    }
    ai_message = {"type": "ai", "content": "", "tool_calls": [langchain]}
    result = {"generations": [[{"text": "", "message": ai_message, "generation_info": None}]]}
    for output in (completion, result):
        text, requested, _ = generation_output(view(), {OUTPUT: json.dumps(output)}, MAX) or (None, (), ())
        assert not text
        assert [(r.name, r.call_id, json.loads(r.arguments_text or "")) for r in requested] == [
            ("get_subscription", "call_1", {"customer_id": "C023"})
        ]
    answer = {"choices": [{"message": {"role": "assistant", "content": "Refunded."}}]}
    assert generation_output(view(), {OUTPUT: json.dumps(answer)}, MAX) == ("Refunded.", (), ())


def test_a_generations_request_gives_the_results_it_sends_back_and_which_failed() -> None:
    # Anthropic's request as an instrumentation recorded it: the failure is only its is_error flag.
    call = {"type": "tool_use", "id": "call_3", "name": "check_payment", "input": {"invoice_id": "INV-1002"}}
    failed = {"type": "tool_result", "tool_use_id": "call_3", "content": "gateway timeout", "is_error": True}
    request = {
        "model": "claude-sonnet-4-5",
        "messages": [
            {"role": "user", "content": QUESTION},
            {"role": "assistant", "content": [call]},
            {"role": "user", "content": [failed]},
        ],
    }
    attributes = {TYPE: "generation", INPUT: json.dumps(request)}
    assert request_results(view(), attributes, MAX) == (("call_3", "gateway timeout"),)
    assert request_failures(view(), attributes, MAX) == ("call_3",)
    # Only a generation's input is a request.
    assert request_failures(view(), {**attributes, TYPE: "span"}, MAX) is None
