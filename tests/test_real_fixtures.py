"""Trajectories rebuilt from real frameworks' own instrumentation (tests/fixtures/real).

Each fixture directory holds what a real framework emitted for the same scripted support-agent run;
``*.facts.json`` records what the run actually did. The rebuilt trajectory must match it exactly,
except where ``real_frameworks`` declares that a framework does not record something.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest

from otel_traj.adapters.files import read_trace_inputs
from otel_traj.offline import trajectories_from_views
from otel_traj.serialize import trajectory_to_dict
from otel_traj.steps import ToolCall
from otel_traj.trajectory import Trajectory
from tests.real_frameworks import FRAMEWORKS, is_call_id, run_files

REAL = Path(__file__).parent / "fixtures" / "real"
CASES = sorted((p.parent.name, p.name.removesuffix(".facts.json")) for p in REAL.glob("*/*.facts.json"))
USER_MESSAGE = "Customer C023 here. I was charged twice for invoice INV-1002, please refund the 199 yuan."


def load(framework: str, scenario: str, ext: str = "otlp.pb") -> Trajectory:
    # One run per file: a trace without steps (AutoGen records building the agent in a trace of its
    # own) is no run.
    [trajectory] = trajectories_from_views(read_trace_inputs(run_files(framework, scenario, ext)).views)
    return trajectory


def facts(framework: str, scenario: str) -> dict[str, Any]:
    return json.loads((REAL / framework / f"{scenario}.facts.json").read_text())


def _norm(value: Any) -> Any:
    if isinstance(value, bool | str) or value is None:
        return value
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, dict):
        return {k: _norm(v) for k, v in value.items()}
    return [_norm(v) for v in value]


def _in_facts_order(calls: list[ToolCall], fact: dict[str, Any]) -> list[ToolCall]:
    """The calls in the order the tool log has them: calls that ran concurrently (the first two of the
    clean run) finished in either order, and the log records them as they finished."""
    if fact["scenario"] == "clean" and fact["parallel_tools_ran_concurrently"]:
        names = [c["name"] for c in fact["tool_calls"][:2]]
        prefix = FRAMEWORKS[fact["framework"]].tool_prefix
        first_two = sorted(calls[:2], key=lambda c: names.index(c.name.removeprefix(prefix)))
        return first_two + calls[2:]
    return calls


def scenario_calls(framework: str, calls: list[ToolCall]) -> list[ToolCall]:
    """The calls of the scenario's tools: without those that run another agent (handoffs, agents run
    as tools), which ``test_agent_calls`` holds to facts.json's ``agent_calls``."""
    return [c for c in calls if c.name not in FRAMEWORKS[framework].agent_calls]


def test_every_framework_has_fixtures() -> None:
    frameworks = {f for f, _ in CASES}
    assert frameworks == set(FRAMEWORKS)
    assert len(frameworks) >= 20
    assert {s for _, s in CASES} == {"clean", "violating"}


def _returned(name: str, arguments: dict[str, Any]) -> Any:
    """What the scenario's tool returns for these arguments (tests/fixtures/real/scenario.py)."""
    if name == "get_subscription":
        return {"customer_id": arguments["customer_id"], "plan": "pro", "status": "active"}
    if name == "list_invoices":
        if arguments["customer_id"] == "C023":
            return [
                {"invoice_id": "INV-1001", "amount_yuan": 199.0, "status": "paid"},
                {"invoice_id": "INV-1002", "amount_yuan": 199.0, "status": "paid"},
            ]
        return [{"invoice_id": "INV-2001", "amount_yuan": 99.0, "status": "paid"}]
    assert name == "create_refund_request", name
    return {"refund_id": "RF-5001", "status": "submitted"}


def _value(text: str) -> Any:
    for parse in (json.loads, ast.literal_eval):
        try:
            return parse(text)
        except (ValueError, SyntaxError):
            continue
    return text


@pytest.mark.parametrize(("framework", "scenario"), CASES)
def test_tool_sequence_arguments_and_outcomes(framework: str, scenario: str) -> None:
    fact = facts(framework, scenario)
    recorded = FRAMEWORKS[framework]
    expected = fact["tool_calls"]
    calls = _in_facts_order(scenario_calls(framework, load(framework, scenario).tool_calls), fact)
    assert [c.name for c in calls] == [recorded.tool_prefix + e["name"] for e in expected]
    for call, exp in zip(calls, expected, strict=True):
        # Every call's arguments are the dict the tool received: from its span, else the request;
        # every successful call has its result: from its span, else the request that sent it back.
        assert call.arguments is not None and _norm(call.arguments) == _norm(exp["arguments"]), call.name
        assert call.result or not exp["ok"] or not recorded.request_result_ids, call.name
    if not recorded.request_result_ids:
        # The requests' tool messages name no call: no result is joined to its call.
        assert all(c.result is None for c in calls)
    if recorded.tool is None:
        # No tool spans: every call is the model's request, its outcome unknown.
        assert not any(c.observed for c in calls)
        assert {c.arguments_source for c in calls} == {"request"}
        return
    assert all(c.observed for c in calls)
    assert [c.ok for c in calls] == [e["ok"] for e in expected]
    # Each result is what the tool returned, unwrapped (JSON, or the Python repr some frameworks send).
    for call, exp in zip(calls, expected, strict=True):
        if exp["ok"] and call.result is not None:
            returned = _returned(exp["name"], exp["arguments"])
            wrapped = (
                {recorded.result_key: returned}
                if recorded.result_key and isinstance(returned, list)
                else None
            )
            assert _value(call.result) in (returned, wrapped), call.name
    sources = {c.arguments_source for c in calls}
    assert sources == {"request"} if not recorded.span_arguments else "execution" in sources


@pytest.mark.parametrize(("framework", "scenario"), CASES)
def test_calls_are_joined_to_the_requests(framework: str, scenario: str) -> None:
    recorded = FRAMEWORKS[framework]
    calls = load(framework, scenario).tool_calls
    if not recorded.responses or not recorded.requested_calls:
        # The requested calls are not recorded: ids only from the tool spans, no turns.
        assert all(c.turn is None for c in calls)
        if recorded.call_ids:
            assert all(is_call_id(recorded, c.name, c.call_id) for c in calls)
        else:
            assert all(c.call_id is None for c in calls)
        return
    joined = [c for c in calls if c.turn is not None]
    if recorded.merged_parallel_request and scenario == "clean":
        # The second call of the merged response has no request of its own to join.
        [unjoined] = [c for c in calls if c.turn is None]
        assert (unjoined.name, unjoined.call_id) == ("list_invoices", None)
        joined = [c for c in calls if c is not unjoined]
    else:
        assert joined == list(calls)
    if recorded.call_ids:
        assert all(is_call_id(recorded, c.name, c.call_id) for c in joined)
    else:
        assert all(c.call_id is None for c in joined)
    assert [c.turn for c in joined] == sorted(c.turn for c in joined)  # type: ignore[type-var]


@pytest.mark.parametrize(("framework", "scenario"), CASES)
def test_turns_tokens_answer_agent_conversation(framework: str, scenario: str) -> None:
    fact = facts(framework, scenario)
    recorded = FRAMEWORKS[framework]
    t = load(framework, scenario)
    usage = fact["usage"]
    if recorded.model_loop_span:
        # One span for the whole loop: one turn, the last call's usage.
        assert t.model_turns == 1
        assert (t.tokens.input, t.tokens.output) == tuple(usage["per_call"][-1].values())
    else:
        assert t.model_turns == fact["model_calls"]
        assert (t.tokens.input, t.tokens.output) == (usage["input_tokens"], usage["output_tokens"])
    if not recorded.per_call_usage:
        # Running totals on the model spans are read as each call's own usage.
        per_call = [(u["input_tokens"], u["output_tokens"]) for u in usage["per_call"]]
        assert [(m.input_tokens, m.output_tokens) for m in t.model_calls] == per_call
    assert t.final_answer == fact["final_answer"]
    named = fact["agent_name"] if recorded.agent is not None and recorded.agent_named else None
    assert t.agent == (recorded.agent_alias or named)
    assert t.user_input is not None
    assert (t.user_input == USER_MESSAGE) == recorded.input_verbatim
    assert USER_MESSAGE in t.user_input
    assert t.conversation_id == (fact["conversation_id"] if recorded.conversation else None)
    assert [c.name for c in t.output_calls] == ([recorded.output_tool] if recorded.output_tool else [])
    assert (t.service_name, t.service_version) == (
        recorded.service or (f"support-agent-{framework}", "1.0.0")
    )
    assert t.complete


@pytest.mark.parametrize(("framework", "scenario"), CASES)
def test_failed_tool_carries_its_error(framework: str, scenario: str) -> None:
    recorded = FRAMEWORKS[framework]
    failed = [c for c in load(framework, scenario).tool_calls if not c.ok]
    if recorded.tool is None and not recorded.request_failures:
        assert failed == []  # no execution recorded, no outcome
        return
    assert len(failed) == (1 if scenario == "clean" else 0)
    for call in failed:
        assert call.name == recorded.tool_prefix + "check_payment"
        assert call.error_type or call.error_message
        # Without tool spans the failure is the request's flag on the result it sends back.
        assert call.observed == (recorded.tool is not None)
        if not call.observed:
            assert call.error_message == call.result and "payment gateway timeout" in call.result


@pytest.mark.parametrize("framework", sorted({f for f, _ in CASES}))
def test_parallel_calls_are_marked(framework: str) -> None:
    fact = facts(framework, "clean")
    calls = scenario_calls(framework, load(framework, "clean").tool_calls)
    overlap = bool(fact["parallel_tool_spans_overlap"])
    assert [c.parallel for c in calls[:2]] == [overlap, overlap]
    assert not any(c.parallel for c in calls[2:])


@pytest.mark.parametrize(("framework", "scenario"), CASES)
def test_agent_calls(framework: str, scenario: str) -> None:
    """Handoffs and agents run as tools are tool calls of the run: in order, with their arguments,
    call ids and results (an agent tool's result is the answer of the agent it ran); those no tool span
    names are the model's requests only. The run's agents are agent runs of the trajectory."""
    fact = facts(framework, scenario)
    recorded = FRAMEWORKS[framework]
    t = load(framework, scenario)
    expected = [c for c in fact.get("agent_calls", ()) if c["tool"] in recorded.agent_calls]
    calls = [c for c in t.tool_calls if c.name in recorded.agent_calls]
    assert [(c.name, c.call_id, _norm(c.arguments)) for c in calls] == [
        (e["tool"], e["call_id"], _norm(json.loads(e["arguments"]))) for e in expected
    ]
    for call, exp in zip(calls, expected, strict=True):
        assert call.ok and call.result
        assert call.observed == (call.name not in recorded.unnamed_calls)
        assert call.arguments_source == ("execution" if call.observed else "request")
        if "result" in exp:
            assert call.result == exp["result"]
    # Every agent that ran is an agent run (the trajectory names the run after the workflow).
    assert {a.agent_name for a in t.agent_runs} >= set(fact.get("agents", ()))


@pytest.mark.parametrize(("framework", "scenario"), CASES)
def test_protobuf_and_json_files_give_the_same_trajectory(framework: str, scenario: str) -> None:
    assert trajectory_to_dict(load(framework, scenario)) == trajectory_to_dict(
        load(framework, scenario, "otlp.json")
    )
