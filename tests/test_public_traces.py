"""Traces recorded by others (tests/fixtures/public), read as their spans say.

Each file's expectations were written by reading its spans (tests/fixtures/public/README.md), not
from what otel-traj makes of them: the tool calls in order with their outcome, the model calls
counted once, the agent, and which spans are no step (the structure around the steps). Every span
is accounted for: it is a step, or one of the spans the expectations name as no step. A run that
was not fully read is never graded ``pass``.
"""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from pathlib import Path
from typing import NamedTuple

import pytest

from otel_traj.adapters.files import read_trace_inputs
from otel_traj.cli import main
from otel_traj.dialects import read_span
from otel_traj.dialects.fields import TOOL_NAME
from otel_traj.grader import Grader
from otel_traj.offline import trajectories_from_views
from otel_traj.spanview import MalformedSpan, SpanView
from otel_traj.steps import ToolCall
from otel_traj.trajectory import Trajectory

PUBLIC = Path(__file__).parent / "fixtures" / "public"
OK, FAILED = True, False
# The attributes a tool's name is read from.
NAME_KEYS = frozenset(source.key for source in TOOL_NAME if source.key is not None)


class Expected(NamedTuple):
    """What the spans of one run show: its agent, its tool calls ``(name, ok)`` in order, its model
    calls, the names of its spans that are no step, and whether all of it can be read."""

    agent: str | None
    tool_calls: tuple[tuple[str, bool], ...]
    model_calls: int
    no_step: tuple[str, ...] = ()
    fully_read: bool = True


# Per file, its runs in the order they started.
EXPECTED: dict[str, tuple[Expected, ...]] = {
    "agentevals/adk_py_v1_default_S2.json": (
        Expected(
            agent="weather_agent",
            tool_calls=(("get_weather", OK), ("get_time", OK)),
            model_calls=3,
            no_step=("invocation",),
        ),
    ),
    "agentevals/adk_py_v1_default_S5.json": (
        Expected(
            agent="weather_agent",
            tool_calls=(("get_weather", OK), ("get_weather", OK)),
            model_calls=2,
            no_step=("invocation", "execute_tool (merged)"),
        ),
    ),
    "agentevals/adk_go_main.json": (
        Expected(
            agent="weather_agent",
            tool_calls=(("get_weather", OK),),
            model_calls=2,
            no_step=("execute_tool (merged)",),
        ),
    ),
    "agentevals/mcp_tool_call.json": (
        Expected(
            agent="weather-forecast-agent",
            tool_calls=(("get-weather", OK),),
            model_calls=2,
        ),
    ),
    "agentevals/openai_v2_logs_span_id.json": (
        Expected(agent=None, tool_calls=(("get_weather", OK),), model_calls=2, no_step=("agent_run",)),
    ),
    "agentevals/openai_agents_handoff.json": (
        Expected(
            agent="triage",
            tool_calls=(("transfer_to_billing", OK), ("issue_refund", OK)),
            model_calls=3,
        ),
    ),
    "agentevals/strands_span_events.json": (
        Expected(
            agent="weather_agent",
            tool_calls=(("get_weather", OK),),
            model_calls=2,
            no_step=("execute_event_loop_cycle", "execute_event_loop_cycle"),
        ),
    ),
    "agentevals/tool_error_no_error_type.json": (
        Expected(
            agent="stock_agent",
            tool_calls=(("get_stock_price", FAILED),),
            model_calls=2,
        ),
    ),
    "agentevals/upstream_new_parts.json": (
        Expected(
            agent="research",
            tool_calls=(("web_search", OK),),
            model_calls=1,
        ),
    ),
    "agentevals/claude_code_kagent_turn2.json": (
        Expected(
            agent="claude-test",
            tool_calls=(("mcp__kagent-tool-server__k8s_get_resources", OK),),
            model_calls=2,
            no_step=("claude_code.tool.blocked_on_user",),
        ),
    ),
    "agentevals/content_capture_off.json": (
        Expected(agent="weather_agent", tool_calls=(("get_weather", OK),), model_calls=2),
    ),
    "agentevals/deprecated_aliases.json": (Expected(agent=None, tool_calls=(), model_calls=1),),
    "agentevals/duplicate_span_ids.json": (Expected(agent="helper", tool_calls=(), model_calls=1),),
    "agentevals/failed_inference_then_retry.json": (
        Expected(agent="summarizer", tool_calls=(), model_calls=2),
    ),
    "agentevals/remote_parent_root.json": (Expected(agent="helper", tool_calls=(), model_calls=1),),
    "agentevals/two_span_cycle.json": (
        Expected(agent="helper", tool_calls=(), model_calls=1),
        # Two chat spans, each the other's parent: a run with no root, never complete.
        Expected(agent=None, tool_calls=(), model_calls=2, fully_read=False),
    ),
    "agentevals/util_genai_openai_tool_loop.json": (
        Expected(
            agent=None,
            tool_calls=(("get_weather", OK),),
            model_calls=2,
            no_step=("handle_request",),
        ),
    ),
}


def _views(name: str) -> list[SpanView]:
    return list(read_trace_inputs([PUBLIC / name]).views)


def _runs(views: list[SpanView]) -> list[Trajectory]:
    return sorted(trajectories_from_views(views), key=lambda t: t.start_ns)


def _named_call(step: object) -> bool:
    return isinstance(step, ToolCall) and bool(step.name)


def _fully_read(trajectory: Trajectory) -> bool:
    return trajectory.complete and not trajectory.unreadable


# Files none of whose spans otel-traj can read, with how many spans each holds: it must say so, and
# never grade a run of them as whole.
NOT_READ = {
    # Jaeger JSON whose span ids ("invoke00000001", "calllm000000001") are not hex: no span can be
    # placed in its run, but their trace id reads, so the run is there, made of unreadable steps.
    "agentevals/helm_reversed_order.json": 5,
}


def test_every_public_file_has_expectations() -> None:
    files = {str(p.relative_to(PUBLIC)) for p in PUBLIC.glob("*/*.json")}
    assert files == set(EXPECTED) | set(NOT_READ)


@pytest.mark.parametrize("name", sorted(NOT_READ))
def test_a_file_that_cannot_be_read_says_so(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    inputs = read_trace_inputs([PUBLIC / name])
    assert all(isinstance(view, MalformedSpan) for view in inputs.views)
    assert inputs.views.malformed == NOT_READ[name]
    (run,) = _runs(list(inputs.views))
    assert not _fully_read(run)
    assert len(run.unreadable) == NOT_READ[name]
    assert all(step.reason.startswith(f"{PUBLIC / name}: malformed span: ") for step in run.unreadable)
    assert main(["grade", "-v", "--format", "json", str(PUBLIC / name)]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["trajectories"][0]["outcome"] == "incomplete"
    assert f"{NOT_READ[name]} malformed spans not read ({NOT_READ[name]} kept as unreadable steps" in err


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_span_is_accounted_for(name: str) -> None:
    """A span that is no step is one the expectations name as such: none vanishes unnoticed."""
    no_step = Counter(view.name for view in _views(name) if read_span(view)[0] is None)
    assert no_step == Counter(span for run in EXPECTED[name] for span in run.no_step)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_run_is_read_as_its_spans_show(name: str) -> None:
    runs = _runs(_views(name))
    assert len(runs) == len(EXPECTED[name])
    for trajectory, expected in zip(runs, EXPECTED[name], strict=True):
        assert _fully_read(trajectory) == expected.fully_read
        assert [(c.name, c.ok) for c in trajectory.tool_calls] == list(expected.tool_calls)
        assert trajectory.model_turns == expected.model_calls
        assert trajectory.agent == expected.agent


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_only_a_run_fully_read_passes(name: str) -> None:
    """A run fully read passes as recorded, one that is not never does; with its first tool span's
    name lost (from its attributes, and from its span name when that names the tool, as a new
    instrumentation's key or a backend dropping attributes leaves it), a run is not fully read."""
    views = _views(name)
    for trajectory in _runs(views):
        passed = Grader().grade(trajectory).outcome in ("pass", "pass_with_warnings")
        assert passed == _fully_read(trajectory)
    # A tool span that names its tool (a part of a call, Claude Code's execution span, names none).
    tools = [i for i, view in enumerate(views) if _named_call(read_span(view)[0])]
    if not tools:
        return  # no tool span: the calls are read from the model's messages
    first = views[tools[0]]
    call = read_span(first)[0]
    assert isinstance(call, ToolCall)
    views[tools[0]] = dataclasses.replace(
        first,
        name="execute_tool" if call.name in first.name else first.name,
        attributes={k: v for k, v in first.attributes.items() if k not in NAME_KEYS},
    )
    [trajectory] = [t for t in _runs(views) if t.trace_id == first.trace_id]
    assert trajectory.unreadable
    assert Grader().grade(trajectory).outcome not in ("pass", "pass_with_warnings")
