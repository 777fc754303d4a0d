"""AgentOps' own attributes (tests/fixtures/real/agentops_openai): its decorators' spans
(``agentops.span.kind``, ``operation.name``, ``agentops.<kind>.input`` / ``.output``) and the
``tool_call.<name>`` spans its OpenAI instrumentation writes for the calls a response requests. Spans
are recorded through the real SDK with the values AgentOps 0.4.21 writes."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from otel_traj.dialects import to_step
from otel_traj.offline import trajectories_from_views
from otel_traj.spanview import SpanView
from tests.dialect_spans import record
from tests.dialect_steps import ANSWER, USER, as_agent, as_model, as_tool


class PaymentGatewayError(Exception):
    pass


def decorated(kind: str, name: str, key: str | None = None, *args: Any, **kwargs: Any) -> dict[str, str]:
    """A decorator span's attributes; its input ``{"args", "kwargs"}`` under ``agentops.<key>.input``."""
    attributes = {"agentops.span.kind": kind, "operation.name": name}
    if key is not None:
        attributes[f"agentops.{key}.input"] = json.dumps({"args": list(args), "kwargs": kwargs})
    return attributes


def span(
    name: str, attributes: dict[str, Any], span_id: int, parent: int | None, at: int, **more: Any
) -> SpanView:
    """A recorded span placed in one trace: its id, parent and start (the SDK picks its own)."""
    view = record(name, attributes, **more)
    return replace(view, trace_id=1, span_id=span_id, parent_id=parent, start_ns=at, end_ns=at + 10)


def request_span(name: str, call_id: str, arguments: str) -> dict[str, str]:
    """A ``tool_call.<name>`` span's attributes: one call a response requested."""
    return {
        "tool.name": name,
        "tool.parameters": arguments,
        "tool.call.id": call_id,
        "tool.call.type": "function",
    }


def test_tool_span_arguments_and_result() -> None:
    attributes = {
        **decorated("tool", "get_subscription", "tool", customer_id="C023"),
        "agentops.tool.output": '{"plan": "pro"}',
    }
    tool = as_tool(to_step(record("get_subscription.tool", attributes, scope="agentops")))
    assert (tool.name, tool.arguments, tool.result, tool.call_id, tool.ok, tool.observed, tool.dialect) == (
        "get_subscription",
        {"customer_id": "C023"},
        '{"plan": "pro"}',
        None,
        True,
        True,
        "agentops",
    )


def test_failed_tool_span() -> None:
    view = record(
        "check_payment.tool",
        decorated("tool", "check_payment", "tool", invoice_id="INV-1002"),
        error=PaymentGatewayError("payment gateway timeout"),
        status_message="PaymentGatewayError: payment gateway timeout",
    )
    tool = as_tool(to_step(view))
    assert (tool.ok, tool.error_message, tool.result) == (False, "payment gateway timeout", None)


def test_trace_is_a_workflow_with_the_question_answer_and_conversation() -> None:
    attributes = {
        **decorated("session", "support_request", "entity", USER, "conv-1"),
        "agentops.entity.output": ANSWER,
        "trace.metadata.conversation_id": "conv-1",
        "agentops.session.end_state": "Success",
    }
    run = as_agent(to_step(record("support_request.session", attributes)))
    assert (run.agent_name, run.workflow, run.conversation_id) == ("support_request", True, "conv-1")
    assert (run.input_text, run.output_text) == (USER, ANSWER)


def test_agent_class_input_is_no_object_repr() -> None:
    """An ``@agent`` class records its constructor's arguments, an object as its ``str()``."""
    attributes = decorated("agent", "support_agent", "entity", "<openai.OpenAI object at 0x7f3a2c1d0a50>")
    run = as_agent(to_step(record("support_agent.agent", attributes)))
    assert (run.agent_name, run.workflow, run.input_text, run.output_text) == (
        "support_agent",
        False,
        None,
        None,
    )


def test_agent_function_reads_its_messages_and_json_answer() -> None:
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": USER}]
    attributes = {
        **decorated("agent", "support_agent", "agent", messages=messages),
        "agentops.agent.output": json.dumps(ANSWER),
    }
    run = as_agent(to_step(record("support_agent.agent", attributes)))
    assert (run.input_text, run.output_text) == (USER, ANSWER)


def test_tasks_are_no_steps() -> None:
    assert to_step(record("answer.task", decorated("task", "answer", "task", USER))) is None


def test_request_span_is_a_requested_call() -> None:
    view = record(
        "tool_call.get_subscription", request_span("get_subscription", "call_1", '{"customer_id": "C023"}')
    )
    tool = as_tool(to_step(view))
    assert (tool.name, tool.call_id, tool.arguments, tool.observed, tool.arguments_source) == (
        "get_subscription",
        "call_1",
        {"customer_id": "C023"},
        False,
        "request",
    )


def _chat(span_id: int, at: int, *prompt: tuple[str, dict[str, str]], answer: str | None = None) -> SpanView:
    """An ``openai.chat.completion`` span: the request flattened as ``gen_ai.prompt.N.*``."""
    attributes = {
        "gen_ai.request.type": "chat",
        "gen_ai.system": "OpenAI",
        "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.usage.prompt_tokens": 100,
        "gen_ai.usage.completion_tokens": 10,
        "gen_ai.completion.0.role": "assistant",
        "gen_ai.completion.0.finish_reason": "stop" if answer else "tool_calls",
    }
    if answer:
        attributes["gen_ai.completion.0.content"] = answer
    for index, (role, fields) in enumerate([("user", {"content": USER}), *prompt]):
        attributes[f"gen_ai.prompt.{index}.role"] = role
        attributes.update({f"gen_ai.prompt.{index}.{key}": value for key, value in fields.items()})
    return span("openai.chat.completion", attributes, span_id, 3, at)


def test_request_spans_are_the_responses_calls() -> None:
    """The requests under a chat span are its response's calls: an execution without an id joins
    them (turn and id), the failure's result is the error the next request sent back."""
    arguments = '{"invoice_id": "INV-1002"}'
    sent = '{"error": "PaymentGatewayError: payment gateway timeout"}'
    views = [
        span("support_request.session", decorated("session", "support_request", "entity", USER), 1, None, 0),
        span("support_agent.agent", decorated("agent", "support_agent"), 2, 1, 1),
        span("answer.task", decorated("task", "answer"), 3, 2, 2),
        _chat(4, 10),
        span("tool_call.check_payment", request_span("check_payment", "call_3", arguments), 5, 4, 11),
        span(
            "check_payment.tool",
            decorated("tool", "check_payment", "tool", invoice_id="INV-1002"),
            6,
            3,
            30,
            error=PaymentGatewayError("payment gateway timeout"),
        ),
        _chat(
            7,
            50,
            ("assistant", {"tool_calls.0.id": "call_3", "tool_calls.0.name": "check_payment"}),
            ("tool", {"content": sent, "tool_call_id": "call_3"}),
            answer=ANSWER,
        ),
    ]
    [trajectory] = trajectories_from_views(views)
    [call] = trajectory.tool_calls
    assert (call.name, call.call_id, call.turn, call.observed, call.ok, call.result) == (
        "check_payment",
        "call_3",
        0,
        True,
        False,
        sent,
    )
    first = trajectory.model_calls[0]
    assert [(r.name, r.call_id, r.arguments_text) for r in first.requested_tools] == [
        ("check_payment", "call_3", arguments)
    ]
    assert as_model(to_step(views[-1])).tool_results == (("call_3", sent),)
    assert (trajectory.agent, trajectory.user_input, trajectory.final_answer) == (
        "support_agent",
        USER,
        ANSWER,
    )


def test_a_request_without_its_model_call_stays_requested() -> None:
    view = span(
        "tool_call.list_invoices",
        request_span("list_invoices", "call_2", '{"customer_id": "C023"}'),
        5,
        None,
        0,
    )
    [trajectory] = trajectories_from_views([view])
    [call] = trajectory.tool_calls
    assert (call.name, call.call_id, call.observed, call.arguments) == (
        "list_invoices",
        "call_2",
        False,
        {"customer_id": "C023"},
    )


# AgentOps' CrewAI instrumentation (tests/fixtures/real/crewai_agentops): `Agent.execute_task` and
# `LLM.call` spans.
_PRINTED_CALLS = (
    '[ChatCompletionMessageToolCall(function=Function(arguments=\'{"customer_id": "C023"}\', '
    "name='get_subscription'), id='call_1', type='function'), ChatCompletionMessageToolCall("
    "function=Function(arguments='{\"customer_id\": \"C023\"}', name='list_invoices'), id='call_2', "
    "type='function')]"
)


def _crewai_llm(content: str) -> dict[str, Any]:
    """A CrewAI ``LLM.call`` span's attributes as AgentOps writes them (the content is ``str()`` of the
    call's return value)."""
    return {
        "agentops.span.kind": "llm",
        "agentops.entity.name": "LLM",
        "gen_ai.system": "crewai",
        "gen_ai.request.model": "openai/gpt-4o-mini",
        "gen_ai.prompt.0.role": "user",
        "gen_ai.prompt.0.content": f"\nCurrent Task: {USER}",
        "gen_ai.completion.0.content": content,
        "gen_ai.completion.0.role": "assistant",
        "gen_ai.usage.prompt_tokens": 150,
        "gen_ai.usage.completion_tokens": 15,
    }


def test_crewai_llm_span_is_a_model_call() -> None:
    model = as_model(to_step(record("openai/gpt-4o-mini.llm", _crewai_llm(ANSWER), scope="crewai")))
    assert (model.model, model.output_text, model.input_tokens, model.dialect) == (
        "openai/gpt-4o-mini",
        ANSWER,
        150,
        "agentops",
    )
    assert USER in (model.input_text or "")


def test_crewai_printed_tool_calls_are_the_requested_calls() -> None:
    model = as_model(to_step(record("openai/gpt-4o-mini.llm", _crewai_llm(_PRINTED_CALLS), scope="crewai")))
    assert model.output_text is None
    assert [(c.name, c.call_id, c.arguments_text) for c in model.requested_tools] == [
        ("get_subscription", "call_1", '{"customer_id": "C023"}'),
        ("list_invoices", "call_2", '{"customer_id": "C023"}'),
    ]


def test_crewai_agent_is_named_by_its_role() -> None:
    attributes = {
        "agentops.span.kind": "agent",
        "agentops.entity.name": "Agent",
        "agent.role": "support_agent",
        "agentops.entity.input": "You are a customer-support agent.",
    }
    run = as_agent(to_step(record("support_agent.agent", attributes, scope="crewai")))
    assert (run.agent_name, run.input_text, run.workflow) == ("support_agent", None, False)
