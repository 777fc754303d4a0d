"""Observations of Langfuse's public API read back into span views: what its OpenTelemetry ingestion
moved out of the span's attributes and events is put back where the instrumentation wrote it, and
what it did not keep makes the run not fully read."""

from __future__ import annotations

import json
from typing import Any

from otel_traj.adapters.langfuse_api import views_from_observations
from otel_traj.backfill.fidelity import ATTRIBUTES_NOT_KEPT, attribute_problems, event_problems
from otel_traj.dialects import read_span
from otel_traj.spanview import SpanEvent, SpanView
from otel_traj.steps import ToolCall


def _observation(attributes: dict[str, str], value_in: Any, value_out: Any) -> dict[str, Any]:
    return {
        "id": "00000000000000a1",
        "traceId": "0" * 31 + "1",
        "name": "get_subscription",
        "startTime": "2026-11-30T18:30:55.739000Z",
        "endTime": "2026-11-30T18:30:55.761000Z",
        "input": json.dumps(value_in),
        "output": json.dumps(value_out),
        "metadata": {"attributes": attributes, "scope": {"name": "strands.telemetry.tracer"}},
    }


TOOL = {
    "gen_ai.operation.name": "execute_tool",
    "gen_ai.tool.name": "get_subscription",
    "gen_ai.tool.call.id": "call_1",
}


def test_per_message_events_langfuse_moved_into_input_and_output_are_events_again() -> None:
    # Langfuse took the input from the span's gen_ai.tool.message event (its role from the event's
    # name) and the output from its gen_ai.choice event, and kept no event.
    request = [{"role": "tool", "content": '{"customer_id": "C023"}', "id": "call_1"}]
    choice = {"message": '[{"text": "{\\"plan\\": \\"pro\\"}"}]', "id": "call_1"}
    (view,) = views_from_observations([_observation(TOOL, request, choice)]).views
    assert [(e.name, dict(e.attributes)) for e in view.events] == [
        ("gen_ai.tool.message", {"content": '{"customer_id": "C023"}', "id": "call_1"}),
        ("gen_ai.choice", choice),
    ]
    assert "gen_ai.tool.call.arguments" not in view.attributes
    step, _ = read_span(view)
    assert isinstance(step, ToolCall) and step.arguments_text == '{"customer_id": "C023"}'


def test_the_conventions_messages_stay_attributes() -> None:
    # A list of {role, parts} is the conventions' attribute, never events.
    chat = {"gen_ai.operation.name": "chat"}
    messages = [{"role": "user", "parts": [{"type": "text", "content": "refund"}]}]
    answer = [{"role": "assistant", "parts": [{"type": "text", "content": "done"}]}]
    (view,) = views_from_observations([_observation(chat, messages, answer)]).views
    assert not view.events
    assert json.loads(view.attributes["gen_ai.input.messages"]) == messages
    assert json.loads(view.attributes["gen_ai.output.messages"]) == answer
    # An output alone that looks like a choice came from an attribute as well as it may have come
    # from an event: it stays an attribute.
    observation = _observation({"gen_ai.operation.name": "invoke_agent"}, None, {"message": "done"})
    observation["input"] = None
    (view,) = views_from_observations([observation]).views
    assert not view.events and json.loads(view.attributes["output"]) == {"message": "done"}


def _span(name: str, attributes: dict[str, Any], events: tuple[SpanEvent, ...] = ()) -> SpanView:
    return SpanView(
        trace_id=1,
        span_id=2,
        parent_id=None,
        name=name,
        start_ns=0,
        end_ns=1,
        attributes=attributes,
        events=events,
    )


def test_a_span_read_without_the_events_its_dialect_records_in_makes_the_run_not_fully_read() -> None:
    strands_chat = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "strands-agents"}
    workflow_step = {"llamaindex.run_id": "run-1"}
    problems = event_problems(
        [_span("chat", strands_chat), _span("chat", strands_chat), _span("OpenAI.achat", workflow_step)]
    )
    assert problems == [
        "Strands' model messages (the calls the model requested) are recorded in span events, which"
        " Langfuse does not keep (2 observations read without them)",
        "LlamaIndex's model calls are recorded in span events, which Langfuse does not keep (1"
        " observations read without them)",
    ]
    # Events given back (Langfuse moved them into input and output), the messages kept as attributes,
    # or a span of the conventions that records nothing in events: nothing lost.
    choice = SpanEvent(name="gen_ai.choice", timestamp=0, attributes={"message": "done"})
    assert not event_problems(
        [
            _span("chat", strands_chat, (choice,)),
            _span("chat", {**strands_chat, "gen_ai.input.messages": "[]"}),
            _span("chat", {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai"}),
        ]
    )


def test_the_vercel_ai_sdks_text_and_calls_langfuse_joined_into_one_message_are_split_again() -> None:
    # Langfuse's message holds the calls as the attribute held them: JSON text inside its JSON.
    calls = (
        '[{"toolCallId":"call_1","toolName":"get_subscription","input":"{\\"customer_id\\": \\"C023\\"}"}]'
    )
    observation = _observation({"ai.operationId": "ai.generateText.doGenerate"}, [], {})
    observation["metadata"]["scope"] = {"name": "ai"}
    observation["output"] = json.dumps({"role": "assistant", "content": "Let me look.", "tool_calls": calls})
    (view,) = views_from_observations([observation]).views
    assert (view.attributes["ai.response.text"], view.attributes["ai.response.toolCalls"]) == (
        "Let me look.",
        calls,
    )


def test_spans_of_other_instrumentations_given_back_without_their_attributes_are_counted() -> None:
    # A server writing to its events table keeps the resource and the scope's attributes, never the
    # span's: the observation is read from its typed fields, and counted.
    resource = {"service.name": "support-agent"}
    other = _observation(TOOL, {"customer_id": "C023"}, {"plan": "pro"})
    other["type"] = "TOOL"
    other["metadata"] = {"resourceAttributes": json.dumps(resource), "scopeAttributes": "{}"}
    # The Langfuse SDK's spans (its tracer's scope carries public_key, or the scope is named) and
    # observations not ingested over OTLP wrote nothing but their typed fields.
    sdk_events = {
        **other,
        "metadata": {"resourceAttributes": resource, "scopeAttributes": {"public_key": "pk"}},
    }
    sdk_ingested = {**other, "metadata": {"resourceAttributes": resource, "scope": {"name": "langfuse-sdk"}}}
    native = {**other, "metadata": {"user_tier": "pro"}}
    read = views_from_observations([other, sdk_events, sdk_ingested, native])
    assert read.without_attributes == 1 and not read.problems
    step, _ = read_span(read.views[0])
    assert isinstance(step, ToolCall) and step.name == "get_subscription"
    assert attribute_problems(read.without_attributes) == [
        f"{ATTRIBUTES_NOT_KEPT} (1 observations ingested over OpenTelemetry read from their typed"
        " fields only)"
    ]
    assert not attribute_problems(0)
