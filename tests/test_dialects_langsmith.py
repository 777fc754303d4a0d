"""LangSmith's OpenTelemetry export (``langsmith`` SDK, ``LANGSMITH_TRACING_MODE=otel``): a span per
LangSmith run, ``langsmith.span.kind`` = the run type, the run's inputs and outputs as JSON in
``gen_ai.prompt`` / ``gen_ai.completion``, its metadata as ``langsmith.metadata.<key>``. Spans are
recorded through the real SDK with the attributes ``langsmith/_internal/otel/_otel_exporter.py``
writes for LangChain's runs (as in tests/fixtures/real/langgraph_langsmith)."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from otel_traj.dialects import to_step
from otel_traj.dialects.context import capture_sources, captured_values
from otel_traj.steps import RequestedTool
from tests.dialect_spans import record
from tests.dialect_steps import ANSWER, ARGS, USER, as_agent, as_model, as_tool

RESULT = '{"customer_id": "C023", "plan": "pro", "status": "active"}'
# Metadata LangGraph and create_agent put on every run inside the graph.
IN_GRAPH = {
    "langsmith.metadata.lc_agent_name": "support_agent",
    "langsmith.metadata.thread_id": "conv-1",
    "langsmith.metadata.langgraph_node": "tools",
    "langsmith.metadata.langgraph_step": 2,
}


def run(run_type: str, name: str, operation: str, *layers: dict[str, Any]) -> dict[str, Any]:
    """A run's span attributes; ``layers`` merged in order (later keys win)."""
    merged: dict[str, Any] = {
        "langsmith.span.kind": run_type,
        "langsmith.trace.name": name,
        "langsmith.trace.session_name": "default",
        "gen_ai.operation.name": operation,
        "gen_ai.system": "langchain",
    }
    for layer in layers:
        merged |= layer
    return merged


def lc(kind: str, **fields: Any) -> dict[str, Any]:
    """A LangChain message as ``dumpd`` serializes it."""
    return {"lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages", kind], "kwargs": fields}


def tool_span(completion: str) -> dict[str, Any]:
    return run(
        "tool",
        "get_subscription",
        "execute_tool",
        IN_GRAPH,
        {"gen_ai.tool.name": "get_subscription", "gen_ai.tool.call.id": "call_1"},
        {"gen_ai.prompt": ARGS, "gen_ai.completion": completion},
    )


def test_a_tool_run_gives_its_arguments_call_id_and_the_tool_messages_content() -> None:
    message = {"content": RESULT, "type": "tool", "name": "get_subscription", "tool_call_id": "call_1"}
    tool = as_tool(to_step(record("get_subscription", tool_span(json.dumps({"output": message})))))
    assert (tool.name, tool.call_id, tool.arguments_text, tool.result) == (
        "get_subscription",
        "call_1",
        ARGS,
        RESULT,
    )
    assert (tool.ok, tool.dialect) == (True, "langsmith")


def test_a_tool_that_returned_a_value_gives_the_value() -> None:
    tool = as_tool(to_step(record("get_subscription", tool_span(json.dumps({"output": "plan pro"})))))
    assert tool.result == "plan pro"
    tool = as_tool(to_step(record("get_subscription", tool_span(json.dumps({"output": {"plan": "pro"}})))))
    assert tool.result == '{"plan": "pro"}'


def test_a_failed_tool_run_gives_the_exception_langchain_recorded_and_no_result() -> None:
    # LangSmith records LangChain's error text (repr, then the traceback) as a generic Exception.
    text = (
        "PaymentGatewayError('payment gateway timeout')Traceback (most recent call last):\n\n\n"
        '  File "scenario.py", line 137, in _run\n    raise result\n\n\n'
        "scenario.PaymentGatewayError: payment gateway timeout"
    )
    view = record("check_payment", tool_span("{}"), error=Exception(text), status_message="")
    tool = as_tool(to_step(view))
    assert (tool.ok, tool.error_type, tool.error_message, tool.result) == (
        False,
        "PaymentGatewayError",
        "payment gateway timeout",
        None,
    )


def test_an_exception_of_several_arguments_keeps_them_as_written() -> None:
    text = "KeyError('a', 2)Traceback (most recent call last):\n  ...\nKeyError: ('a', 2)"
    tool = as_tool(to_step(record("check_payment", tool_span("{}"), error=Exception(text))))
    assert (tool.error_type, tool.error_message) == ("KeyError", "'a', 2")
    # Any other exception text is left as it is.
    tool = as_tool(to_step(record("check_payment", tool_span("{}"), error=Exception("timeout"))))
    assert (tool.error_type, tool.error_message) == ("Exception", "timeout")


def _llm(prompt: dict[str, Any], completion: dict[str, Any]) -> dict[str, Any]:
    return run(
        "llm",
        "ChatOpenAI",
        "chat",
        IN_GRAPH,
        {"langsmith.metadata.langgraph_node": "model", "gen_ai.system": "openai"},
        {"gen_ai.request.model": "gpt-4o-mini", "gen_ai.usage.input_tokens": 250},
        {"gen_ai.usage.output_tokens": 25, "gen_ai.prompt": json.dumps(prompt)},
        {"gen_ai.completion": json.dumps(completion)},
    )


def test_an_llm_run_gives_the_request_and_the_generations() -> None:
    call = {"name": "check_payment", "args": {"invoice_id": "INV-1002"}, "id": "call_3", "type": "tool_call"}
    messages = [
        lc("SystemMessage", content="Be helpful.", type="system"),
        lc("HumanMessage", content=USER, type="human"),
        lc(
            "AIMessage",
            content="",
            type="ai",
            tool_calls=[{**call, "name": "get_subscription", "id": "call_1"}],
        ),
        lc("ToolMessage", content=RESULT, type="tool", tool_call_id="call_1", status="success"),
    ]
    generation = {
        "text": "",
        "generation_info": {"finish_reason": "tool_calls"},
        "type": "ChatGeneration",
        "message": lc("AIMessage", content="", type="ai", tool_calls=[call]),
    }
    completion = {"generations": [[generation]], "llm_output": {"model_name": "gpt-4o-mini"}, "run": None}
    model = as_model(to_step(record("ChatOpenAI", _llm({"messages": [messages]}, completion))))
    assert (model.model, model.input_tokens, model.output_tokens) == ("gpt-4o-mini", 250, 25)
    assert model.input_text == USER
    assert model.requested_tools == (
        RequestedTool(name="check_payment", call_id="call_3", arguments_text='{"invoice_id": "INV-1002"}'),
    )
    assert model.finish_reasons == ("tool_calls",)
    assert (model.tool_results, model.failed_results) == ((("call_1", RESULT),), ())


def test_an_error_tool_message_sent_back_is_a_failure() -> None:
    messages = [
        lc("HumanMessage", content=USER, type="human"),
        lc(
            "AIMessage",
            content="",
            type="ai",
            tool_calls=[{"name": "check_payment", "args": {}, "id": "call_3"}],
        ),
        lc(
            "ToolMessage",
            content="PaymentGatewayError: timeout",
            type="tool",
            tool_call_id="call_3",
            status="error",
        ),
    ]
    answer = {
        "text": ANSWER,
        "generation_info": {"finish_reason": "stop"},
        "message": lc("AIMessage", content=ANSWER, type="ai"),
    }
    model = as_model(
        to_step(record("ChatOpenAI", _llm({"messages": [messages]}, {"generations": [[answer]]})))
    )
    assert (model.output_text, model.requested_tools, model.finish_reasons) == (ANSWER, (), ("stop",))
    assert model.tool_results == (("call_3", "PaymentGatewayError: timeout"),)
    assert model.failed_results == ("call_3",)


def _graph(name: str, *layers: dict[str, Any]) -> dict[str, Any]:
    state = {"messages": [{"role": "user", "content": USER}]}
    final = {
        "messages": [
            {"content": USER, "type": "human"},
            {"content": ANSWER, "type": "ai", "tool_calls": [], "name": "support_agent"},
        ]
    }
    return run(
        "chain",
        name,
        "chain",
        {"langsmith.metadata.thread_id": "conv-1", "langsmith.metadata.app.customer_id": "C023"},
        {"gen_ai.prompt": json.dumps(state), "gen_ai.completion": json.dumps(final)},
        *layers,
    )


def test_the_graphs_root_chain_is_the_agent_with_its_thread() -> None:
    agent = as_agent(to_step(record("support_agent", _graph("support_agent"))))
    assert (agent.agent_name, agent.conversation_id, agent.dialect) == (
        "support_agent",
        "conv-1",
        "langsmith",
    )
    assert (agent.input_text, agent.output_text) == (USER, ANSWER)


def test_graph_nodes_and_nested_chains_are_no_agents_but_create_agents_graph_is() -> None:
    node = _graph("model", IN_GRAPH, {"langsmith.metadata.langgraph_node": "model"})
    assert to_step(record("model", node)) is None
    nested = replace(record("RunnableSequence", _graph("RunnableSequence")), parent_id=7)
    assert to_step(nested) is None
    # A create_agent graph run inside another graph's node (a subagent) names itself.
    subagent = replace(record("support_agent", _graph("support_agent", IN_GRAPH)), parent_id=7)
    assert as_agent(to_step(subagent)).agent_name == "support_agent"


def test_a_traceable_functions_text_input_and_output() -> None:
    attributes = {
        **_graph("handle"),
        "gen_ai.prompt": json.dumps({"question": USER}),
        "gen_ai.completion": json.dumps({"output": ANSWER}),
    }
    agent = as_agent(to_step(record("handle", attributes)))
    assert (agent.agent_name, agent.input_text, agent.output_text) == ("handle", USER, ANSWER)


def test_a_prompt_template_run_is_no_model_call() -> None:
    # The SDK names a prompt run's operation ``chat``: the run type decides.
    assert to_step(record("ChatPromptTemplate", run("prompt", "ChatPromptTemplate", "chat"))) is None


def test_run_metadata_is_captured_under_its_own_name() -> None:
    sources = capture_sources(["app.customer_id"])
    attributes = {"langsmith.metadata.app.customer_id": "C023", "langsmith.metadata.thread_id": "conv-1"}
    assert captured_values(attributes, sources, 4096) == [("app.customer_id", "C023")]
