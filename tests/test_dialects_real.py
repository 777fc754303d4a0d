"""Dialect parsers against real traces recorded from real frameworks (tests/fixtures/real).

Each fixture's ``facts.json`` says what the run actually did (tool calls with arguments and outcome,
model calls, token usage, final answer); the steps parsed from its spans must say the same.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from otel_traj.adapters.otlp_proto import views_from_bytes
from otel_traj.dialects import to_step
from otel_traj.steps import AgentRun, ModelCall, ToolCall

REAL = Path(__file__).parent / "fixtures" / "real"
FIXTURES = sorted(path.with_suffix("").with_suffix("") for path in REAL.glob("*/*.otlp.pb"))
EXPECTED_DIALECTS = {
    "pydantic_ai": {"tool": "semconv", "model": "semconv", "agent": "pydantic_ai"},
    "pydantic_ai_v1": {"tool": "pydantic_ai", "model": "semconv", "agent": "pydantic_ai"},
    "openai_agents": {"tool": "openinference", "model": "openinference", "agent": "openinference"},
    "langgraph_openinference": {"tool": "openinference", "model": "openinference", "agent": "openinference"},
    "langgraph_traceloop": {"tool": "traceloop", "model": "semconv", "agent": "traceloop"},
    "openai_v2": {"tool": "semconv", "model": "semconv", "agent": "semconv"},
    "strands": {"tool": "semconv", "model": "semconv", "agent": "semconv"},
    "strands_latest": {"tool": "semconv", "model": "semconv", "agent": "semconv"},
}


def _steps(stem: Path) -> list[Any]:
    views = views_from_bytes(stem.with_suffix(".otlp.pb").read_bytes())
    steps = [to_step(view) for view in sorted(views, key=lambda v: v.start_ns)]
    return [step for step in steps if step is not None]


def _facts(stem: Path) -> dict[str, Any]:
    return json.loads(stem.with_suffix(".facts.json").read_text())


def _arguments(tool: ToolCall, expected: dict[str, Any]) -> Any:
    """The recorded arguments as the dict the tool received.

    A single-argument tool recorded as its bare value (LangChain under OpenInference) is compared
    by that value: the parser must keep it as text, never guess the parameter name.
    """
    if tool.arguments is not None:
        return tool.arguments
    assert tool.arguments_text is not None
    try:
        return json.loads(tool.arguments_text)
    except ValueError:
        assert len(expected) == 1, tool.arguments_text
        return {next(iter(expected)): tool.arguments_text}


def _number(value: Any) -> Any:
    # A tool annotated ``float`` receives 199.0 for the model's 199: the same argument.
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _key(name: str, arguments: dict[str, Any], ok: bool) -> str:
    normalized = {k: _number(v) for k, v in arguments.items()}
    return json.dumps([name, normalized, ok], sort_keys=True)


@pytest.mark.parametrize("stem", FIXTURES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_tool_calls_match_what_the_tools_executed(stem: Path) -> None:
    facts = _facts(stem)
    tools = [s for s in _steps(stem) if isinstance(s, ToolCall)]
    expected = Counter(_key(c["name"], c["arguments"], c["ok"]) for c in facts["tool_calls"])
    got = Counter(_key(t.name, _arguments(t, _expected_args(facts, t.name)), t.ok) for t in tools)
    assert got == expected
    for tool in tools:
        assert tool.step_id == f"{tool.span_id:016x}"
        assert not tool.truncated
        if not tool.ok:
            assert tool.error_message, tool
            message = tool.error_message
            assert "payment gateway timeout" in message or "Error running tool" in message


def _expected_args(facts: dict[str, Any], name: str) -> dict[str, Any]:
    return next(c["arguments"] for c in facts["tool_calls"] if c["name"] == name)


@pytest.mark.parametrize("stem", FIXTURES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_model_calls_count_tokens_once(stem: Path) -> None:
    facts = _facts(stem)
    models = [s for s in _steps(stem) if isinstance(s, ModelCall)]
    assert len(models) == facts["model_calls"]
    per_call = [(m.input_tokens, m.output_tokens) for m in models]
    assert per_call == [(u["input_tokens"], u["output_tokens"]) for u in facts["usage"]["per_call"]]
    assert all(m.model == "gpt-4o-mini" for m in models)
    assert all(m.input_text and m.input_text.startswith("Customer C023 here.") for m in models)
    assert models[-1].output_text == facts["final_answer"]
    assert not models[-1].requested_tools


@pytest.mark.parametrize("stem", FIXTURES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_requested_tools_match_executed_calls(stem: Path) -> None:
    facts = _facts(stem)
    models = [s for s in _steps(stem) if isinstance(s, ModelCall)]
    requested = Counter(
        _key(r.name, json.loads(r.arguments_text or "null"), True) for m in models for r in m.requested_tools
    )
    expected = Counter(_key(c["name"], c["arguments"], True) for c in facts["tool_calls"])
    assert requested == expected
    assert all(r.call_id and r.call_id.startswith("call_") for m in models for r in m.requested_tools)


@pytest.mark.parametrize("stem", FIXTURES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_agent_run_and_dialects(stem: Path) -> None:
    facts = _facts(stem)
    steps = _steps(stem)
    agents = [s for s in steps if isinstance(s, AgentRun)]
    assert agents and all(a.agent_name == facts["agent_name"] for a in agents)
    assert any(a.conversation_id == facts["conversation_id"] for a in agents)
    for agent in agents:
        # Usage on an agent span is the run's total: it must equal the sum over the model calls.
        if agent.input_tokens is not None:
            assert (agent.input_tokens, agent.output_tokens) == (
                facts["usage"]["input_tokens"],
                facts["usage"]["output_tokens"],
            )
    answers = {a.output_text for a in agents} - {None}
    assert answers <= {facts["final_answer"]}
    expected = EXPECTED_DIALECTS[stem.parent.name]
    assert {s.dialect for s in steps if isinstance(s, ToolCall)} == {expected["tool"]}
    assert {s.dialect for s in steps if isinstance(s, ModelCall)} == {expected["model"]}
    assert {s.dialect for s in agents} >= {expected["agent"]}


def test_every_framework_is_covered() -> None:
    assert {stem.parent.name for stem in FIXTURES} == set(EXPECTED_DIALECTS)


def test_tool_call_ids_link_tools_to_requests_where_recorded() -> None:
    """Frameworks that record call ids (on the span or inside the LangChain ToolMessage) keep them."""
    for stem in FIXTURES:
        if stem.parent.name == "openai_agents":
            continue  # OpenInference's OpenAI Agents tool spans carry no call id
        tools = [s for s in _steps(stem) if isinstance(s, ToolCall)]
        ids = [t.call_id for t in tools if t.ok]
        assert all(i and i.startswith("call_") for i in ids), (stem, ids)
