"""Values written with Python's ``str()``: a LangChain ToolMessage (OpenLIT's tool results) and DSPy's
ChatAdapter sections are read back exactly, and anything else is left as it is."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from otel_traj.dialects import dspy
from otel_traj.dialects.printed import chat_message, tool_message

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
