"""One documented precedence per field: a span carrying two dialects' keys for one field yields the
value of the key that comes first in the evidence table (otel_traj/dialects/fields.py)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from otel_traj.dialects import fields, to_step
from otel_traj.dialects.sources import Source
from otel_traj.spanview import SpanView
from otel_traj.steps import AgentRun, ModelCall, Step, ToolCall


def _keys(table: tuple[Source, ...]) -> list[str]:
    return [s.key for s in table if s.key is not None]


def _arguments(step: Step) -> Any:
    assert isinstance(step, ToolCall)
    return step.arguments if step.arguments is not None else json.loads(step.arguments_text or "null")


def _value(attribute: str) -> Callable[[Step], Any]:
    return lambda step: getattr(step, attribute)


# field table, the span that makes it a step, how a value is written, how it is read back
KIND = {
    "tool": ("execute_tool x", "execute_tool"),
    "model": ("chat m", "chat"),
    "agent": ("invoke_agent a", "invoke_agent"),
}
FIELDS: list[tuple[tuple[Source, ...], str, Callable[[str], Any], Callable[[Step], Any]]] = [
    (fields.TOOL_NAME, "tool", str, _value("name")),
    (fields.TOOL_CALL_ID, "tool", str, _value("call_id")),
    (fields.TOOL_ARGUMENTS, "tool", lambda v: json.dumps({"value": v}), _arguments),
    (fields.TOOL_RESULT, "tool", str, _value("result")),
    (fields.MODEL_NAME, "model", str, _value("model")),
    (fields.PROVIDER, "model", str, _value("provider")),
    (fields.AGENT_NAME, "agent", str, _value("agent_name")),
    (fields.CONVERSATION_ID, "agent", str, _value("conversation_id")),
]
_TYPES = {"tool": ToolCall, "model": ModelCall, "agent": AgentRun}


@st.composite
def _conflicts(draw: st.DrawFn) -> tuple[int, str, str, str, str]:
    index = draw(st.integers(0, len(FIELDS) - 1))
    keys = _keys(FIELDS[index][0])
    first, second = sorted(
        draw(st.lists(st.sampled_from(keys), min_size=2, max_size=2, unique=True)), key=keys.index
    )
    words = st.text("abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=8)
    high, low = draw(st.lists(words, min_size=2, max_size=2, unique=True))
    return index, first, second, high, low


@settings(max_examples=300, deadline=None)
@given(_conflicts())
def test_the_higher_precedence_key_wins(conflict: tuple[int, str, str, str, str]) -> None:
    index, first, second, high, low = conflict
    _, kind, write, read = FIELDS[index]
    name, operation = KIND[kind]
    attributes = {"gen_ai.operation.name": operation, second: write(low), first: write(high)}
    step = to_step(SpanView(1, 2, None, name, 0, 1, attributes))
    assert isinstance(step, _TYPES[kind])
    expected = json.loads(write(high)) if fields.TOOL_ARGUMENTS is FIELDS[index][0] else high
    assert read(step) == expected, (first, second)


def test_every_field_has_competing_keys() -> None:
    assert all(len(_keys(table)) >= 2 for table, *_ in FIELDS)


def test_a_deferred_message_without_text_gives_way_to_the_next_source() -> None:
    # The normalizer's rebuild of a user message whose text it could not read: a part-less message.
    empty_user = json.dumps([{"role": "user", "parts": []}])
    asked = json.dumps([{"role": "user", "parts": [{"type": "text", "content": "refund INV-7"}]}])
    for rebuilt, expected in ((empty_user, "from input.value"), (asked, "refund INV-7")):
        attributes = {
            "gen_ai.operation.name": "chat",
            "gen_ai.input.messages": rebuilt,
            "input.value": "from input.value",
        }
        step = to_step(SpanView(1, 2, None, "chat m", 0, 1, attributes))
        assert isinstance(step, ModelCall) and step.input_text == expected


def test_requested_calls_without_ids_take_them_from_a_source_that_records_the_same_calls() -> None:
    def output(ids: list[str | None]) -> str:
        calls = [
            {"type": "tool_call", "name": name, "arguments": {}, **({"id": i} if i else {})}
            for name, i in zip(["lookup", "refund"], ids, strict=True)
        ]
        return json.dumps([{"role": "assistant", "parts": calls}])

    def requested(flat_ids: list[str | None], flat_names: list[str]) -> list[tuple[str, str | None]]:
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.output.messages": output([None, None]),
        }
        prefix = "llm.output_messages.0.message"
        attributes[f"{prefix}.role"] = "assistant"
        for n, (name, call_id) in enumerate(zip(flat_names, flat_ids, strict=True)):
            attributes[f"{prefix}.tool_calls.{n}.tool_call.function.name"] = name
            attributes[f"{prefix}.tool_calls.{n}.tool_call.function.arguments"] = "{}"
            if call_id:
                attributes[f"{prefix}.tool_calls.{n}.tool_call.id"] = call_id
        step = to_step(SpanView(1, 2, None, "chat m", 0, 1, attributes))
        assert isinstance(step, ModelCall)
        return [(r.name, r.call_id) for r in step.requested_tools]

    assert requested(["c1", "c2"], ["lookup", "refund"]) == [("lookup", "c1"), ("refund", "c2")]
    # Other calls, or the same calls without every id, give no id: a call is never given another's.
    assert requested(["c1", "c2"], ["refund", "lookup"]) == [("lookup", None), ("refund", None)]
    assert requested(["c1", None], ["lookup", "refund"]) == [("lookup", None), ("refund", None)]
