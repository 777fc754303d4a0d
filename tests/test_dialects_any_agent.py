"""mozilla-ai's any-agent (tests/fixtures/real/any_agent): its own spans, GenAI keys of the conventions
beside keys of its own. Spans are recorded through the real SDK with the values any-agent 1.18 writes:
`call_llm <model>` with `gen_ai.operation.name=call_llm` (a value the conventions do not define), the
response in `gen_ai.output` (text, or a JSON list of `{"tool.name", "tool.args"}`), the request in
`gen_ai.input.messages` on the first model call only; `execute_tool <name>` with `gen_ai.tool.args` and
`gen_ai.output`."""

from __future__ import annotations

import json
from typing import Any

from otel_traj.dialects import to_step
from otel_traj.steps import RequestedTool
from tests.dialect_spans import record
from tests.dialect_steps import ANSWER, ARGS, USER, as_model, as_tool

SCOPE = "any_agent"
FAILURE = "Error calling tool: payment gateway timeout"


def call_llm(output: Any, **more: Any) -> dict[str, Any]:
    """The attributes any-agent sets on a model call's span (`_set_llm_input` / `_set_llm_output`)."""
    text = output if isinstance(output, str) else json.dumps(output)
    return {
        "gen_ai.operation.name": "call_llm",
        "gen_ai.request.model": "gpt-4o-mini",
        **more,
        "gen_ai.output": text,
        "gen_ai.output.type": "json" if not isinstance(output, str) else "text",
        "gen_ai.usage.input_tokens": 150,
        "gen_ai.usage.output_tokens": 15,
    }


def execute_tool(name: str, args: str, output: str) -> dict[str, Any]:
    return {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": name,
        "gen_ai.tool.args": args,
        "gen_ai.output": output,
        "gen_ai.output.type": "text",
    }


def test_tool_span_arguments_and_result() -> None:
    result = "{'customer_id': 'C023', 'plan': 'pro', 'status': 'active'}"
    span = record(
        "execute_tool get_subscription", execute_tool("get_subscription", ARGS, result), scope=SCOPE
    )
    tool = as_tool(to_step(span))
    assert (tool.name, tool.arguments_text, tool.result, tool.call_id, tool.ok, tool.dialect) == (
        "get_subscription",
        ARGS,
        result,
        None,
        True,
        "any_agent",
    )


def test_failed_tool_is_the_status_and_the_returned_text() -> None:
    attributes = execute_tool("check_payment", '{"invoice_id": "INV-1002"}', FAILURE)
    span = record(
        "execute_tool check_payment",
        attributes,
        scope=SCOPE,
        error=Exception(FAILURE),
        status_message=FAILURE,
    )
    tool = as_tool(to_step(span))
    assert (tool.ok, tool.result, tool.error_message) == (False, FAILURE, FAILURE)


def test_call_llm_is_a_model_call_whose_output_lists_the_requested_calls() -> None:
    messages = [{"role": "system", "content": "You are a support agent."}, {"role": "user", "content": USER}]
    calls = [
        {"tool.name": "get_subscription", "tool.args": ARGS},
        {"tool.name": "list_invoices", "tool.args": ARGS},
    ]
    span = record(
        "call_llm gpt-4o-mini",
        call_llm(calls, **{"gen_ai.input.messages": json.dumps(messages)}),
        scope=SCOPE,
    )
    model = as_model(to_step(span))
    assert (model.model, model.input_tokens, model.output_tokens, model.dialect) == (
        "gpt-4o-mini",
        150,
        15,
        "any_agent",
    )
    assert model.requested_tools == (
        RequestedTool(name="get_subscription", call_id=None, arguments_text=ARGS),
        RequestedTool(name="list_invoices", call_id=None, arguments_text=ARGS),
    )
    assert model.output_text is None
    assert model.input_text == USER


def test_call_llm_answer_is_its_text_even_when_the_text_is_json() -> None:
    answer = as_model(to_step(record("call_llm gpt-4o-mini", call_llm(ANSWER), scope=SCOPE)))
    assert (answer.output_text, answer.requested_tools, answer.input_text) == (ANSWER, (), None)
    listed = json.dumps(["INV-1001", "INV-1002"])
    model = as_model(to_step(record("call_llm gpt-4o-mini", call_llm(listed), scope=SCOPE)))
    assert (model.output_text, model.requested_tools) == (listed, ())


def test_a_semconv_tool_span_without_any_agents_keys_stays_semconv() -> None:
    attributes = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "get_subscription",
        "gen_ai.tool.call.arguments": ARGS,
        "gen_ai.tool.call.result": '{"plan": "pro"}',
    }
    tool = as_tool(to_step(record("execute_tool get_subscription", attributes)))
    assert (tool.dialect, tool.arguments_text, tool.result) == ("semconv", ARGS, '{"plan": "pro"}')
