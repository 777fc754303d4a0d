"""ReAct's text format (LlamaIndex's ReActAgent under OpenInference): a response's `Action:` /
`Action Input:` text is the call it requests, the answer is what follows `Answer:` in the last
response's scaffold, and an `Observation:` user message is a tool's result, not the user's message."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from otel_traj.builder import build_trajectory
from otel_traj.dialects import react, to_step
from otel_traj.dialects._messages import last_user_text, last_user_text_in
from otel_traj.records import TraceContext
from otel_traj.steps import ModelCall, RequestedTool
from tests.dialect_spans import record
from tests.dialect_steps import ANSWER, ARGS, USER, as_model

MAX = 4096
STEP = f"Thought: I need to use a tool: list_invoices.\nAction: list_invoices\nAction Input: {ARGS}"
FINAL = f"Thought: I can answer without using any more tools.\nAnswer: {ANSWER}"


def test_a_step_requests_its_action_with_the_json_input() -> None:
    assert react.requested_tools(STEP) == (RequestedTool(name="list_invoices", arguments_text=ARGS),)
    # Text after the JSON object (a model that goes on) is not part of the input.
    [requested] = react.requested_tools(STEP + "\nObservation: (the model made this up)")
    assert requested.arguments_text == ARGS
    # LangChain's classic agent: a plain string input, the rest of the line.
    [plain] = react.requested_tools("Thought: look it up\nAction: search\nAction Input: refund policy\n")
    assert (plain.name, plain.arguments_text) == ("search", "refund policy")


def test_one_action_per_response_and_none_after_an_answer() -> None:
    # ReAct runs the first action of a response (LlamaIndex's parser drops a second one).
    second = STEP.replace("list_invoices", "get_subscription")
    [first] = react.requested_tools(f"{STEP}\n{second}")
    assert first.name == "list_invoices"
    for text in (
        FINAL,
        f"Thought: done.\nAnswer: no tool needed.\nAction: list_invoices\nAction Input: {ARGS}",
        "Action Input: {} alone",
        "We took Action: list_invoices and Action Input: x on one line.",
        "",
    ):
        assert react.requested_tools(text) == (), text


def test_the_answer_is_the_text_after_the_marker() -> None:
    assert react.answer(FINAL) == ANSWER
    assert react.answer(f"Thought: done\nFinal Answer: {ANSWER}\n") == ANSWER
    # Not a scaffold, an action step, or an empty answer: unchanged.
    for text in (ANSWER, f"Answer: {ANSWER}", f"The Answer: {ANSWER}", STEP, "Thought: hm\nAnswer:   "):
        assert react.answer(text) == text


@given(st.text(max_size=200))
def test_any_text_without_the_scaffold_is_left_as_it_is(text: str) -> None:
    if not text.lstrip().startswith("Thought:"):
        assert react.answer(text) == text
    if "Action Input:" not in text:
        assert react.requested_tools(text) == ()


def _react_model_span(messages: list[tuple[str, str]], output: str) -> ModelCall:
    attributes: dict[str, object] = {
        "openinference.span.kind": "LLM",
        "llm.model_name": "gpt-4o-mini",
        "llm.output_messages.0.message.role": "assistant",
        "llm.output_messages.0.message.content": output,
        "llm.token_count.prompt": 10,
        "llm.token_count.completion": 1,
    }
    for index, (role, content) in enumerate(messages):
        attributes[f"llm.input_messages.{index}.message.role"] = role
        attributes[f"llm.input_messages.{index}.message.content"] = content
    return as_model(to_step(record("OpenAI.astream_chat", attributes)))


def test_a_react_model_span_requests_the_action_and_keeps_the_users_message() -> None:
    history = [
        ("system", "You are designed to help with a variety of tasks ..."),
        ("user", USER),
        ("assistant", STEP.replace(ARGS, "{'customer_id': 'C023'}")),
        ("user", "Observation: [{'invoice_id': 'INV-1002'}]"),
    ]
    model = _react_model_span(history, STEP.replace("list_invoices", "check_payment"))
    assert [r.name for r in model.requested_tools] == ["check_payment"]
    # The observation is the previous call's result sent as user text: the user said the question.
    assert model.input_text == USER


def test_an_observation_is_not_the_users_message_in_a_message_list() -> None:
    messages = [
        {"role": "user", "content": USER},
        {"role": "assistant", "content": STEP},
        {"role": "user", "content": "Observation: payment gateway timeout"},
    ]
    assert last_user_text(messages, MAX) == USER
    assert last_user_text_in(json.dumps(messages), MAX) == USER


def test_the_final_answer_is_not_the_scaffold() -> None:
    steps = [
        ModelCall(
            span_id=at,
            start_ns=2 * at - 1,
            end_ns=2 * at,
            output_text=text,
            input_tokens=1,
            output_tokens=1,
            requested_tools=react.requested_tools(text),
        )
        for at, text in ((1, STEP), (2, FINAL))
    ]
    trajectory = build_trajectory(TraceContext(trace_id=1), steps)
    assert trajectory.final_answer == ANSWER
    assert trajectory.model_calls[-1].output_text == FINAL
