"""Claude Code's own traces (scope ``com.anthropic.claude_code.tracing``): spans named
``claude_code.<type>`` with the type again in ``span.type``, attribute names its own (``tool_name``,
``input_tokens``, ``success``), the tool's output in a ``tool.output`` event. The values are those of
the recording in tests/fixtures/public/agentevals/claude_code_kagent_turn2.json (Claude Code 2.1.285),
with and without the resource attributes a deployment copies onto every span."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from otel_traj.adapters.files import read_trace_inputs
from otel_traj.dialects import read_span, to_step
from otel_traj.offline import trajectories_from_views
from otel_traj.spanview import STATUS_ERROR, SpanView
from otel_traj.trajectory import Trajectory
from tests.dialect_spans import record
from tests.dialect_steps import as_agent, as_model, as_tool

SCOPE = "com.anthropic.claude_code.tracing"
RECORDING = Path(__file__).parent / "fixtures" / "public" / "agentevals" / "claude_code_kagent_turn2.json"
CALL_ID = "toolu_01T86jfEn7vjUaXjpFkQ9YoE"
TOOL = "mcp__kagent-tool-server__k8s_get_resources"
# What kagent puts in the resource, and Claude Code copies onto every span.
DEPLOYMENT = {
    "gen_ai.agent.name": "claude-test",
    "gen_ai.provider.name": "anthropic",
    "gen_ai.request.model": "claude-haiku-4-5",
}


def claude_code(kind: str, attributes: dict[str, Any], *, deployed: bool = True, **more: Any) -> SpanView:
    """A span Claude Code writes, with the deployment's resource attributes copied on (``deployed``)."""
    copied = DEPLOYMENT if deployed else {}
    view = record(
        f"claude_code.{kind}",
        {**copied, "session.id": "9115de23", "span.type": kind, **attributes},
        scope=SCOPE,
        **more,
    )
    return dataclasses.replace(view, resource={**view.resource, **copied})


def model_request(**attributes: Any) -> dict[str, Any]:
    return {
        "model": "claude-haiku-4-5",
        "gen_ai.system": "anthropic",
        "input_tokens": 10,
        "output_tokens": 140,
        "cache_read_tokens": 26101,
        "cache_creation_tokens": 660,
        "success": True,
        "gen_ai.response.finish_reasons": ("tool_use",),
        **attributes,
    }


def tool(**attributes: Any) -> dict[str, Any]:
    return {"tool_name": TOOL, "tool_use_id": CALL_ID, "gen_ai.tool.call.id": CALL_ID, **attributes}


@pytest.mark.parametrize("deployed", [True, False])
def test_a_model_request_is_a_model_call_with_its_tokens(deployed: bool) -> None:
    model = as_model(to_step(claude_code("llm_request", model_request(), deployed=deployed)))
    assert (model.model, model.provider, model.dialect) == ("claude-haiku-4-5", "anthropic", "claude_code")
    assert (model.input_tokens, model.output_tokens) == (10, 140)
    assert (model.cache_read_tokens, model.cache_write_tokens) == (26101, 660)
    assert model.finish_reasons == ("tool_use",)


@pytest.mark.parametrize("deployed", [True, False])
def test_a_tool_span_is_the_call_with_its_output_event(deployed: bool) -> None:
    output = '{"output":"agentevals  ClusterIP  10.96.201.104"}'
    span = claude_code("tool", tool(), deployed=deployed, events=[("tool.output", {"output": output})])
    call = as_tool(to_step(span))
    assert (call.name, call.call_id, call.result, call.ok, call.dialect) == (
        TOOL,
        CALL_ID,
        output,
        True,
        "claude_code",
    )
    assert call.arguments is None and call.arguments_text is None


def test_a_tool_that_says_it_failed_is_a_failed_call() -> None:
    span = claude_code("tool", tool(success=False, error="Shell command failed"))
    call = as_tool(to_step(span))
    assert (call.ok, call.error_message) == (False, "Shell command failed")


def test_the_execution_span_is_a_part_of_its_call_with_its_failure() -> None:
    span = claude_code(
        "tool.execution",
        {
            "tool_use_id": CALL_ID,
            "gen_ai.tool.call.id": CALL_ID,
            "success": False,
            "error": "Shell command failed",
        },
        error=RuntimeError("Shell command failed"),
    )
    part = as_tool(to_step(span))
    assert (part.name, part.call_id, part.ok, part.error_message) == (
        "",
        CALL_ID,
        False,
        "Shell command failed",
    )


def _recorded_run() -> list[SpanView]:
    return list(read_trace_inputs([RECORDING]).views)


def _only_run(views: list[SpanView]) -> Trajectory:
    [trajectory] = trajectories_from_views(views)
    return trajectory


def test_a_call_whose_execution_failed_failed() -> None:
    """Claude Code records a tool's failure on the execution span inside the tool span only."""
    views = _recorded_run()
    at = next(i for i, view in enumerate(views) if view.name == "claude_code.tool.execution")
    views[at] = dataclasses.replace(
        views[at],
        attributes={**views[at].attributes, "success": False, "error": "Shell command failed"},
        status_code=STATUS_ERROR,
        status_message="Shell command failed",
    )
    trajectory = _only_run(views)
    assert [(c.name, c.ok, c.error_message) for c in trajectory.tool_calls] == [
        (TOOL, False, "Shell command failed")
    ]
    assert not trajectory.unreadable
    assert _only_run(_recorded_run()).tool_calls[0].ok


def test_an_execution_span_without_its_tool_span_is_unreadable() -> None:
    views = [view for view in _recorded_run() if view.name != "claude_code.tool"]
    trajectory = _only_run(views)
    assert trajectory.tool_calls == ()
    assert [(u.span_name, u.field) for u in trajectory.unreadable] == [("", "tool name")]


def test_the_interaction_is_the_agent_run_of_its_prompt() -> None:
    prompt = "Now use your tools to list the services in the agentevals namespace. One sentence."
    agent = as_agent(to_step(claude_code("interaction", {"user_prompt": prompt, "interaction.sequence": 1})))
    assert (agent.agent_name, agent.input_text, agent.conversation_id) == ("claude-test", prompt, "9115de23")


@pytest.mark.parametrize("kind", ["tool.blocked_on_user", "hook"])
def test_the_permission_decision_and_hooks_are_no_step(kind: str) -> None:
    """They carry the model the deployment copied onto them: no evidence of a model call."""
    span = claude_code(kind, {"duration_ms": 4, "decision": "unknown", "success": True})
    assert read_span(span) == (None, False)


def test_a_type_claude_code_does_not_list_says_nothing() -> None:
    """A newer release's span type: its copied model and provider are the process's, not the span's."""
    assert to_step(claude_code("compaction", {"duration_ms": 4})) is None


def test_span_type_on_a_span_claude_code_did_not_name_is_no_evidence() -> None:
    """Other tracers write ``span.type`` too (with ``tool`` a value among theirs)."""
    span = record("GET /tools", {"span.type": "tool", "tool_name": TOOL, "gen_ai.provider.name": "anthropic"})
    assert to_step(span) is None


def test_a_model_the_span_shares_with_its_resource_is_no_model_call() -> None:
    """Structure: the same key and value on the span and its resource is the process's attribute."""
    copied = record("task_store.update", DEPLOYMENT)
    assert to_step(dataclasses.replace(copied, resource=DEPLOYMENT)) is None
    own = dataclasses.replace(copied, resource={**DEPLOYMENT, "gen_ai.request.model": "gpt-4o"})
    assert as_model(to_step(own)).model == "claude-haiku-4-5"
