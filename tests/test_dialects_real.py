"""Dialect parsers against real traces recorded from real frameworks (tests/fixtures/real).

Each fixture's ``facts.json`` says what the run actually did (tool calls with arguments and outcome,
model calls, token usage, final answer); the steps parsed from its spans, one span at a time, must
say the same, except what ``real_frameworks`` declares a framework does not record on its spans.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from otel_traj.adapters.files import read_trace_inputs
from otel_traj.dialects import dspy, react, to_step
from otel_traj.steps import AgentRun, ModelCall, RequestedTool, ToolCall
from tests.real_frameworks import FRAMEWORKS, Recorded, is_call_id, run_files

REAL = Path(__file__).parent / "fixtures" / "real"
FIXTURES = sorted(path.with_suffix("").with_suffix("") for path in REAL.glob("*/*.otlp.pb"))
USER_MESSAGE = "Customer C023 here. I was charged twice for invoice INV-1002, please refund the 199 yuan."


def _steps(stem: Path) -> list[Any]:
    views = read_trace_inputs(run_files(stem.parent.name, stem.name)).views
    steps = [to_step(view) for view in sorted(views, key=lambda v: v.start_ns)]
    return [step for step in steps if step is not None]


def _facts(stem: Path) -> dict[str, Any]:
    return json.loads(stem.with_suffix(".facts.json").read_text())


def _recorded(stem: Path) -> Recorded:
    return FRAMEWORKS[stem.parent.name]


def _number(value: Any) -> Any:
    # A tool annotated ``float`` receives 199.0 for the model's 199: the same argument.
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _key(name: str, arguments: dict[str, Any] | None, ok: bool) -> str:
    normalized = {k: _number(v) for k, v in arguments.items()} if arguments is not None else None
    return json.dumps([name, normalized, ok], sort_keys=True)


def _span_arguments(tool: ToolCall) -> dict[str, Any] | None:
    """The arguments a tool span recorded, as the dict the tool received (None: not a JSON object,
    such as LangChain's bare value for a one-argument tool, which the builder joins to the request)."""
    if tool.arguments is not None:
        return tool.arguments
    try:
        value = json.loads(tool.arguments_text or "")
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _single(facts: dict[str, Any], tool: ToolCall) -> dict[str, Any]:
    """A bare value as the one-argument dict the facts say the tool received."""
    [name] = {key for c in facts["tool_calls"] if c["name"] == tool.name for key in c["arguments"]}
    return {name: tool.arguments_text}


@pytest.mark.parametrize("stem", FIXTURES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_tool_calls_match_what_the_tools_executed(stem: Path) -> None:
    facts, recorded = _facts(stem), _recorded(stem)
    steps = [s for s in _steps(stem) if isinstance(s, ToolCall)]
    # Spans that record a response's request for a call (`request_spans`) are no executions.
    tools = [s for s in steps if s.observed]
    assert (tools != steps) == recorded.request_spans
    if recorded.tool is None:
        assert tools == []
        return
    names = [recorded.tool_prefix + c["name"] for c in facts["tool_calls"]]
    # Calls that run another agent are held to facts' `agent_calls` (test_agent_calls_match_the_agents).
    executed = [t for t in tools if t.name != recorded.output_tool and t.name not in recorded.agent_calls]
    if recorded.layers > 1:
        # The MCP client's and server's spans of each call carry neither its arguments nor its id.
        layers = [t for t in executed if not t.call_id]
        assert len(layers) == (recorded.layers - 1) * len(names)
        assert all(t.arguments is None and t.arguments_text is None for t in layers)
        executed = [t for t in executed if t.call_id]
    assert Counter(t.name for t in executed) == Counter(names)
    assert Counter((t.name, t.ok) for t in executed) == Counter(
        (n, c["ok"]) for n, c in zip(names, facts["tool_calls"], strict=True)
    )
    expected = Counter(
        _key(n, c["arguments"], c["ok"]) for n, c in zip(names, facts["tool_calls"], strict=True)
    )
    if not recorded.span_arguments:
        assert all(t.arguments is None and t.arguments_text is None for t in executed)
    elif recorded.bare_single_arguments:
        # One-argument tools record the bare value: kept as text, never given a name here.
        bare = [t for t in executed if _span_arguments(t) is None]
        assert bare and all(t.arguments_text and not t.arguments_text.startswith("{") for t in bare)
        got = Counter(_key(t.name, _span_arguments(t) or _single(facts, t), t.ok) for t in executed)
        assert got == expected
    else:
        assert Counter(_key(t.name, _span_arguments(t), t.ok) for t in executed) == expected
    if not recorded.span_results:
        assert all(t.result is None for t in executed)
    for tool in tools:
        assert tool.step_id == f"{tool.span_id:016x}"
        assert not tool.truncated
        # The framework's own span says why a call failed (an MCP server's may not).
        if not tool.ok and tool in executed:
            assert tool.error_message, tool
            message = tool.error_message
            # The OpenAI Agents SDK redacts the error under Logfire; BeeAI's ToolError says "Tool Error"
            # (the detail is in its result); ADK's error callback leaves only the type.
            details = (
                "payment gateway timeout",
                "Error running tool",
                "redacted",
                "Tool Error",
                "TOOL_ERROR",
            )
            assert any(text in message for text in details), message
    ids = [(t.name, t.call_id) for t in executed if t.ok]
    if recorded.span_call_ids:
        assert all(is_call_id(recorded, name, i) for name, i in ids), ids


@pytest.mark.parametrize("stem", FIXTURES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_model_calls_count_tokens_once(stem: Path) -> None:
    facts, recorded = _facts(stem), _recorded(stem)
    # LlamaIndex also marks the span that only prepares a request as an LLM span: no usage, no call.
    models = [s for s in _steps(stem) if isinstance(s, ModelCall) and s.has_usage]
    ids = {m.span_id for m in models}
    inner = [m for m in models if m.parent_id in ids]
    assert bool(inner) == (recorded.model_layers > 1)
    if inner:
        # A client library's span inside the framework's records each call again, with its usage
        # (counted once by the builder) and without the messages.
        models = [m for m in models if m.parent_id not in ids]
        usage = Counter((m.input_tokens, m.output_tokens) for m in models)
        assert Counter((m.input_tokens, m.output_tokens) for m in inner) == Counter(
            {key: count * (recorded.model_layers - 1) for key, count in usage.items()}
        )
        assert all(m.model == recorded.model_name for m in inner)
        assert not any(m.input_text or m.output_text or m.requested_tools for m in inner)
    # A span over the whole function-calling loop records the last call's usage only.
    expected = facts["usage"]["per_call"][-1:] if recorded.model_loop_span else facts["usage"]["per_call"]
    per_call = [(m.input_tokens, m.output_tokens) for m in models]
    usages = [(u["input_tokens"], u["output_tokens"]) for u in expected]
    if not recorded.per_call_usage:
        # Each span records the running total so far, not its own call's usage.
        usages = [tuple(map(sum, zip(*usages[: k + 1], strict=True))) for k in range(len(usages))]
    assert per_call == usages
    assert all(m.model == recorded.model_name for m in models)
    if recorded.first_request_only:
        assert models[0].input_text and USER_MESSAGE in models[0].input_text
        assert all(m.input_text is None for m in models[1:])
    elif recorded.requests:
        # An agent run as a tool is asked what the calling agent gave it, not the user's message.
        asked = {USER_MESSAGE} | {text for text, _ in _agent_tool_inputs(facts, recorded)}
        assert all(m.input_text and any(text in m.input_text for text in asked) for m in models)
    else:
        assert all(m.input_text is None for m in models)
    last = models[-1]
    if not recorded.responses:
        assert last.output_text is None and not any(m.requested_tools for m in models)
    elif recorded.adapter_sections:
        # The last response answers in sections (`[[ ## answer ## ]]`), after the loop's `finish`.
        assert last.output_text and dspy.answer(last.output_text) == facts["final_answer"]
        assert not last.requested_tools
        assert any(r.name == recorded.output_tool for m in models for r in m.requested_tools)
    elif recorded.code_actions:
        # The last response is code that hands the answer to the output tool (`final_answer("...")`).
        assert last.output_text and f"{recorded.output_tool}(" in last.output_text
        assert facts["final_answer"] in last.output_text
    elif recorded.react_text:
        # The last response is the ReAct scaffold (`Thought: … Answer: …`) around the answer.
        assert last.output_text and last.output_text != facts["final_answer"]
        assert react.answer(last.output_text) == facts["final_answer"]
        assert not last.requested_tools
    elif recorded.output_tool:
        [answer] = last.requested_tools
        assert answer.name == recorded.output_tool
        assert facts["final_answer"] in (answer.arguments_text or "")
    else:
        assert last.output_text == facts["final_answer"]
        assert not last.requested_tools
    if not recorded.requested_calls:
        # The responses are recorded without the calls they requested (a loop span records only the
        # last response, which requests none).
        assert not any(m.requested_tools for m in models)
        finishes = {reason for m in models for reason in m.finish_reasons}
        if recorded.code_actions:
            # Text responses: the model asked for no calls of the API's own kind.
            assert not finishes & {"tool_calls", "tool-calls"}
        else:
            assert recorded.model_loop_span or bool(finishes & {"tool_calls", "tool-calls"})


@pytest.mark.parametrize("stem", FIXTURES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_requested_tools_match_executed_calls(stem: Path) -> None:
    facts, recorded = _facts(stem), _recorded(stem)
    if not recorded.responses or not recorded.requested_calls:
        return  # covered by test_model_calls_count_tokens_once: nothing requested is recorded
    models = [s for s in _steps(stem) if isinstance(s, ModelCall)]
    # One model call recorded by two layers (DSPy's `LM.__call__` around LiteLLM's `completion`,
    # pydantic-ai's `chat` around botocore's) requests once: count the innermost layer that records
    # the requests (botocore's records none).
    models = [m for m in models if not any(o.parent_id == m.span_id and o.requested_tools for o in models)]
    # Requests recorded as spans of their own are children of the model call's span.
    spans = [s for s in _steps(stem) if isinstance(s, ToolCall) and not s.observed]
    assert {s.parent_id for s in spans} <= {m.span_id for m in models}
    recorded_requests = [r for m in models for r in m.requested_tools] + [
        RequestedTool(name=s.name, call_id=s.call_id, arguments_text=json.dumps(_span_arguments(s)))
        for s in spans
    ]
    requests = [
        r for r in recorded_requests if r.name != recorded.output_tool and r.name not in recorded.agent_calls
    ]
    expected = Counter(
        _key(recorded.tool_prefix + c["name"], c["arguments"], True) for c in facts["tool_calls"]
    )
    if recorded.merged_parallel_request and facts["scenario"] == "clean":
        # One recorded call holds both calls of the parallel response, arguments concatenated.
        merged = requests.pop(0)
        assert merged.arguments_text == '{"customer_id": "C023"}{"customer_id": "C023"}'
        expected -= Counter([_key("get_subscription", {"customer_id": "C023"}, True)])
        expected -= Counter([_key("list_invoices", {"customer_id": "C023"}, True)])
    got = Counter(_key(r.name, json.loads(r.arguments_text or "null"), True) for r in requests)
    assert got == expected
    ids = [r.call_id for r in recorded_requests]
    if recorded.call_ids and recorded.response_call_ids:
        assert all(is_call_id(recorded, r.name, r.call_id) for r in recorded_requests)
    else:
        assert ids == [None] * len(ids)


@pytest.mark.parametrize("stem", FIXTURES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_requests_mark_the_failed_results(stem: Path) -> None:
    facts, recorded = _facts(stem), _recorded(stem)
    if recorded.tool is not None:
        return  # the tool spans say which call failed
    models = [s for s in _steps(stem) if isinstance(s, ModelCall)]
    failed = [call_id for m in models for call_id in m.failed_results]
    expected = sum(not c["ok"] for c in facts["tool_calls"]) if recorded.request_failures else 0
    assert len(failed) == expected
    assert all(any(call_id == r for m in models for r, _ in m.tool_results) for call_id in failed)


@pytest.mark.parametrize("stem", FIXTURES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_agent_run_and_dialects(stem: Path) -> None:
    facts, recorded = _facts(stem), _recorded(stem)
    steps = _steps(stem)
    agents = [s for s in steps if isinstance(s, AgentRun)]
    if recorded.agent is None:
        assert agents == []
    else:
        # The first named agent span names the agent, a workflow span only when no agent span does
        # (frameworks add workflow or event spans of the agent kind around or inside it).
        named = [a.agent_name for a in agents if a.agent_name and not a.workflow] or [
            a.agent_name for a in agents if a.agent_name
        ]
        agent = recorded.agent_alias or facts["agent_name"]
        assert named[:1] == ([agent] if recorded.agent_named else [])
        names = {a.agent_name for a in agents if not a.workflow}  # a workflow names the pipeline
        # A run of several agents (handoffs, agents run as tools) names each of them.
        others = set(facts.get("agents", ()))
        assert names <= {agent, None, recorded.output_tool, *recorded.node_agents, *others}
        assert names >= {*recorded.node_agents, *others}
        assert {s.dialect for s in agents} >= {recorded.agent}
    conversations = {a.conversation_id for a in agents} - {None}
    assert conversations == ({facts["conversation_id"]} if recorded.conversation == "agent" else set())
    totals = (facts["usage"]["input_tokens"], facts["usage"]["output_tokens"])
    with_usage = [(a.input_tokens, a.output_tokens) for a in agents if a.input_tokens is not None]
    if recorded.agent_usage_is_total:
        # Usage on an agent span is the run's total: it must equal the sum over the model calls.
        assert all(usage == totals for usage in with_usage)
    else:
        assert with_usage and any(usage != totals for usage in with_usage)
    answers = {a.output_text for a in agents} - {None}
    assert answers <= {facts["final_answer"]}
    assert {s.dialect for s in steps if isinstance(s, ToolCall)} == (
        {recorded.tool} if recorded.tool else set()
    )
    assert {s.dialect for s in steps if isinstance(s, ModelCall)} == {recorded.model}


def _agent_tool_inputs(facts: dict[str, Any], recorded: Recorded) -> list[tuple[str, str]]:
    """``(input, agent)`` of each call that ran an agent as a tool (not a handoff: the agent handed
    over to gets the conversation)."""
    calls = [c for c in facts.get("agent_calls", ()) if c["tool"] in recorded.agent_calls]
    return [(json.loads(c["arguments"])["input"], c["tool"]) for c in calls if "handoff" not in c]


@pytest.mark.parametrize("stem", FIXTURES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_agent_calls_match_the_agents(stem: Path) -> None:
    """Handoffs and agents run as tools: each is a tool span (unless declared unnamed) and a call the
    model requested, with the arguments and call id the agents' calls in facts.json have."""
    facts, recorded = _facts(stem), _recorded(stem)
    expected = [c for c in facts.get("agent_calls", ()) if c["tool"] in recorded.agent_calls]
    assert {c["tool"] for c in expected} == set(recorded.agent_calls)
    assert set(recorded.unnamed_calls) <= set(recorded.agent_calls)
    steps = _steps(stem)
    spans = [s for s in steps if isinstance(s, ToolCall) and s.name in recorded.agent_calls]
    named = [c for c in expected if c["tool"] not in recorded.unnamed_calls]
    assert [(s.name, _span_arguments(s), s.observed) for s in spans] == [
        (c["tool"], json.loads(c["arguments"]), True) for c in named
    ]
    assert all(s.result == c["result"] for s, c in zip(spans, named, strict=True) if "result" in c)
    requested = [
        r
        for s in steps
        if isinstance(s, ModelCall)
        for r in s.requested_tools
        if r.name in recorded.agent_calls
    ]
    assert [(r.name, r.call_id, json.loads(r.arguments_text or "null")) for r in requested] == [
        (c["tool"], c["call_id"], json.loads(c["arguments"])) for c in expected
    ]


def test_every_framework_is_covered() -> None:
    assert {stem.parent.name for stem in FIXTURES} == set(FRAMEWORKS)
