"""Values written with Python's ``str()``: a LangChain ToolMessage (OpenLIT's tool results), DSPy's
ChatAdapter sections and objects printed by ``repr()`` (Haystack's messages under OpenInference) are
read back exactly, and anything else is left as it is."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from otel_traj.dialects import dspy, openinference, to_step
from otel_traj.dialects.openinference import MAX_PRINTED
from otel_traj.dialects.printed import MAX_DEPTH, TYPE, chat_message, python_object, tool_message
from otel_traj.dialects.printed import haystack_message as printed_haystack
from otel_traj.steps import RequestedTool
from tests.dialect_spans import record
from tests.dialect_steps import as_model

MAX = 4096


@given(st.text(max_size=200), st.text(alphabet=st.characters(exclude_characters="'\\"), max_size=40))
def test_a_printed_tool_message_gives_its_content_and_call_id(content: str, call_id: str) -> None:
    # What pydantic prints for a LangChain ToolMessage: ``key=repr(value)``, space-separated.
    printed = f"content={content!r} name='get_subscription' tool_call_id={call_id!r} status='success'"
    assert tool_message(printed, MAX) == (content, call_id)


@given(st.text(max_size=300))
def test_other_text_is_left_as_it_is(text: str) -> None:
    result, call_id = tool_message(text, MAX)
    assert call_id is None or text.startswith("content=")
    if call_id is None:
        assert result == text


def test_what_is_not_a_tool_message_with_text_content() -> None:
    for text in (
        "content=[{'type': 'text'}] tool_call_id='call_1'",  # content blocks, not text
        "content='no id' name='x'",  # no call id: some other message
        "content='unterminated tool_call_id='c'",
        "content=" + "'" + "x" * MAX + "' tool_call_id='call_1'",  # longer than the cap: not parsed
    ):
        assert tool_message(text, MAX) == (text, None)


REACT_STEP = (
    "[[ ## next_thought ## ]]\nI should list the invoices.\n\n[[ ## next_tool_name ## ]]\nlist_invoices\n\n"
    '[[ ## next_tool_args ## ]]\n{"customer_id": "C023"}\n\n[[ ## completed ## ]]'
)
REQUEST = (
    "[[ ## question ## ]]\nRefund INV-1002, please.\n\n[[ ## trajectory ## ]]\n[[ ## thought_0 ## ]]\n..."
)


def test_a_react_step_requests_its_next_tool() -> None:
    [requested] = dspy.requested_tools(REACT_STEP)
    assert (requested.name, requested.arguments_text, requested.call_id) == (
        "list_invoices",
        '{"customer_id": "C023"}',
        None,
    )
    assert dspy.requested_tools("I should list the invoices.") == ()


def test_a_react_step_in_output_value_alone_requests_its_next_tool() -> None:
    # LiteLLM's span under DSPy with only ``output.value`` (no ``llm.output_messages.*``, as Langfuse
    # keeps it): the sections start with "[" but are text, not JSON.
    attributes = {"openinference.span.kind": "LLM", "output.value": REACT_STEP}
    model = as_model(to_step(record("completion", attributes, scope="openinference.instrumentation.litellm")))
    assert [(r.name, r.arguments_text) for r in model.requested_tools] == [
        ("list_invoices", '{"customer_id": "C023"}')
    ]
    assert model.output_text == REACT_STEP


def test_the_answer_and_the_users_message_are_their_sections() -> None:
    final = "[[ ## reasoning ## ]]\nDone.\n\n[[ ## answer ## ]]\nRefunded.\n\n[[ ## completed ## ]]"
    assert dspy.answer(final) == "Refunded."
    # Without an `answer` field, the last one before `completed`.
    assert dspy.answer("[[ ## summary ## ]]\nAll set.\n\n[[ ## completed ## ]]") == "All set."
    assert dspy.user_message(REQUEST) == "Refund INV-1002, please."
    for text in ("plain text", "[[ ## ]] not a section"):
        assert dspy.answer(text) == text and dspy.user_message(text) == text


def test_a_chat_message_printed_as_a_dict_gives_its_calls() -> None:
    printed = (
        "{'content': None, 'refusal': None, 'role': 'assistant', 'tool_calls': [{'id': 'call_1', "
        "'function': {'arguments': '{\"customer_id\": \"C023\"}', 'name': 'get_subscription'}, "
        "'type': 'function'}]}"
    )
    found = chat_message(printed, MAX)
    assert found is not None
    content, [call] = found
    assert (content, call.name, call.call_id, call.arguments_text) == (
        None,
        "get_subscription",
        "call_1",
        '{"customer_id": "C023"}',
    )
    for text in ("{'content': 'hi'}", "no dict", "{'tool_calls': 'x'}", printed[: MAX // 100]):
        assert chat_message(text, MAX) is None


def test_an_object_printed_by_repr_reads_back_without_evaluating_it() -> None:
    printed = (
        "ChatMessage(_role=<ChatRole.TOOL: 'tool'>, _content=[ToolCallResult(result='{\"ok\": true}', "
        "origin=ToolCall(tool_name='check_payment', arguments={'invoice_id': 'INV-1002'}, id='call_3'), "
        "error=True)], _name=None, _meta={'n': -1.5, 'f': <function f at 0x7f00>, 't': (1,)})"
    )
    assert python_object(printed, MAX) == {
        TYPE: "ChatMessage",
        "role": "tool",
        "content": [
            {
                TYPE: "ToolCallResult",
                "result": '{"ok": true}',
                "origin": {
                    TYPE: "ToolCall",
                    "tool_name": "check_payment",
                    "arguments": {"invoice_id": "INV-1002"},
                    "id": "call_3",
                },
                "error": True,
            }
        ],
        "name": None,
        "meta": {"n": -1.5, "f": None, "t": (1,)},
    }
    assert python_object("Point(1, y=2)", MAX) == {TYPE: "Point", "y": 2, "args": [1]}


def test_what_is_not_a_repr_reads_as_nothing() -> None:
    deep = "(" * (MAX_DEPTH + 2) + "1" + ")" * (MAX_DEPTH + 2)
    for text in (
        "__import__('os').system('x')",  # a call on a call: not a repr
        "os.system('x')",
        "Foo(x=1",  # cut off
        "Foo(x=1) trailing",
        "f'{x}'",
        deep,
        "Foo(x='" + "a" * MAX + "')",  # longer than the cap
        None,
    ):
        assert python_object(text, MAX) is None, text


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=20),
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    )
)
def test_literals_read_back_as_they_were(value: object) -> None:
    assert python_object(repr(value), 10 * MAX) == value


def test_a_haystack_message_under_openinference_gives_ids_and_results() -> None:
    # openinference-instrumentation-haystack: the flattened messages have roles only for tool results
    # and no call ids; `input.value` / `output.value` keep the messages printed with repr().
    call = "ToolCall(tool_name='list_invoices', arguments={'customer_id': 'C023'}, id='call_2', extra=None)"
    assistant = (
        f"ChatMessage(_role=<ChatRole.ASSISTANT: 'assistant'>, _content=[{call}], _name=None, _meta={{}})"
    )
    result = (
        "ChatMessage(_role=<ChatRole.TOOL: 'tool'>, _content=[ToolCallResult(result='[]', "
        f"origin={call}, error=False)], _name=None, _meta={{}})"
    )
    attributes = {
        "openinference.span.kind": "LLM",
        "llm.input_messages.0.message.role": "user",
        "llm.input_messages.0.message.content": "Refund INV-1002, please.",
        "llm.input_messages.1.message.role": "assistant",
        "llm.input_messages.2.message.role": "tool",
        "input.value": json.dumps(
            {"messages": ["ChatMessage(_role=<ChatRole.USER: 'user'>, …)", assistant, result]}
        ),
        "llm.output_messages.0.message.role": "assistant",
        "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "list_invoices",
        "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": '{"customer_id": "C023"}',
        "output.value": json.dumps({"replies": [assistant]}),
    }
    model = as_model(to_step(record("OpenAIChatGenerator.run", attributes)))
    assert model.tool_results == (("call_2", "[]"),)
    assert model.requested_tools == (
        RequestedTool(name="list_invoices", call_id="call_2", arguments_text='{"customer_id": "C023"}'),
    )
    # Replies that name other calls lend no ids.
    other = attributes | {"output.value": json.dumps({"replies": [assistant.replace("list_invoices", "x")]})}
    [requested] = as_model(to_step(record("OpenAIChatGenerator.run", other))).requested_tools
    assert requested.call_id is None


def test_printed_messages_read_per_span_are_bounded() -> None:
    # Reading a repr costs ~1 ms a kilobyte: a request with more than MAX_PRINTED printed messages
    # after the last response (found by its role, without reading it) gives no results.
    assistant = "ChatMessage(_role=<ChatRole.ASSISTANT: 'assistant'>, _content=[], _name=None, _meta={})"

    def result(i: int) -> str:
        origin = f"ToolCall(tool_name='t', arguments={{}}, id='call_{i}')"
        content = f"[ToolCallResult(result='ok', origin={origin}, error=False)]"
        return f"ChatMessage(_role=<ChatRole.TOOL: 'tool'>, _content={content}, _name=None, _meta={{}})"

    def results(count: int) -> tuple[tuple[str, str], ...]:
        messages = [assistant, *map(result, range(count))]
        attributes = {"openinference.span.kind": "LLM", "input.value": json.dumps({"messages": messages})}
        return as_model(to_step(record("chat", attributes))).tool_results

    assert len(results(MAX_PRINTED)) == MAX_PRINTED
    assert results(MAX_PRINTED + 1) == ()


def test_a_request_s_printed_messages_are_read_once_for_its_results_and_failures(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The results and the failures sent back are both read from `input.value`'s printed messages:
    # each printed message of a span's request is tokenized once.
    origin = "ToolCall(tool_name='t', arguments={}, id='call_1')"
    failed = f"[ToolCallResult(result='boom', origin={origin}, error=True)]"
    messages = [
        "ChatMessage(_role=<ChatRole.ASSISTANT: 'assistant'>, _content=[], _name=None, _meta={})",
        f"ChatMessage(_role=<ChatRole.TOOL: 'tool'>, _content={failed}, _name=None, _meta={{}})",
    ]
    attributes = {"openinference.span.kind": "LLM", "input.value": json.dumps({"messages": messages})}
    reads: list[str] = []

    def counted(message: object, max_chars: int) -> object:
        reads.append(str(message))
        return printed_haystack(message, max_chars)

    monkeypatch.setattr(openinference.printed, "haystack_message", counted)
    model = as_model(to_step(record("chat", attributes)))
    assert model.tool_results == (("call_1", "boom"),)
    assert model.failed_results == ("call_1",)
    assert reads == [messages[1]]


@given(st.text(max_size=300))
def test_any_text_is_a_message_or_left_as_it_is(text: str) -> None:
    for candidate in (text, "ChatMessage(_role=" + text, "ChatMessage(_role=None, _content=[" + text + "])"):
        message = printed_haystack(candidate, MAX)
        assert message is candidate or set(message) == {"role", "content", "meta"}
