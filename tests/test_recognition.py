"""Recognition by evidence and unreadable steps: an unknown value never hides a step, a span that
carries GenAI evidence but cannot be read is kept, counted, logged and makes its run unverified."""

from __future__ import annotations

import dataclasses
import json
import logging
from functools import cache
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from otel_traj.adapters.files import read_trace_inputs
from otel_traj.conversations.grade import conversation_verdicts
from otel_traj.conversations.summary import TraceSummary
from otel_traj.dialects import fields, read_span, to_step
from otel_traj.dialects.recognize import OPERATION_VOCABULARY, VENDOR_VOCABULARIES
from otel_traj.dialects.sources import Source
from otel_traj.grader import Grader
from otel_traj.joins import normalized
from otel_traj.offline import trajectories_from_views
from otel_traj.policy import parse_policy
from otel_traj.serialize import verdict_to_dict
from otel_traj.spanview import SpanView
from otel_traj.stats import PipelineStats
from otel_traj.steps import ModelCall, ToolCall, Unreadable
from otel_traj.throttle import Throttle
from tests.dialect_spans import record
from tests.properties import examples
from tests.real_frameworks import FRAMEWORKS, run_files

TOOL = {
    "gen_ai.operation.name": "execute_tool",
    "gen_ai.tool.name": "list_invoices",
    "gen_ai.tool.call.arguments": json.dumps({"customer_id": "C028"}),
}
VENDOR_KEYS = [v.key for v in VENDOR_VOCABULARIES]


@pytest.mark.parametrize("key", VENDOR_KEYS)
def test_an_unknown_vendor_kind_never_hides_a_conventions_tool_call(key: str) -> None:
    step = to_step(record("execute_tool list_invoices", {**TOOL, key: "WIDGET"}))
    assert isinstance(step, ToolCall)
    call = normalized(step)
    assert (call.name, call.arguments) == ("list_invoices", {"customer_id": "C028"})


@pytest.mark.parametrize("key", [*VENDOR_KEYS, OPERATION_VOCABULARY.key])
def test_a_kind_of_the_wrong_type_is_no_evidence(key: str) -> None:
    attributes = {**TOOL, key: 7} if key != OPERATION_VOCABULARY.key else {**TOOL, key: ["execute_tool"]}
    step = to_step(record("execute_tool list_invoices", attributes))
    assert isinstance(step, ToolCall) and step.name == "list_invoices"


def test_an_operation_the_conventions_do_not_define_yields_to_structure() -> None:
    attributes = {
        "gen_ai.operation.name": "call_llm",
        "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.usage.input_tokens": 150,
        "gen_ai.usage.output_tokens": 15,
    }
    step = to_step(record("call_llm gpt-4o-mini", attributes))
    assert isinstance(step, ModelCall)
    assert (step.model, step.input_tokens, step.output_tokens) == ("gpt-4o-mini", 150, 15)


def test_an_unknown_operation_without_structure_is_no_step() -> None:
    # Strands' event-loop cycle and OpenAI Agents' "unknown" spans: an agent name is no evidence.
    attributes = {"gen_ai.operation.name": "unknown", "gen_ai.agent.name": "OpenAI Agent"}
    assert to_step(record("unknown", attributes)) is None


def test_a_defined_non_step_value_decides_and_a_disagreeing_vocabulary_is_a_contradiction() -> None:
    reading = read_span(record("RunnableSequence", {**TOOL, "openinference.span.kind": "CHAIN"}))
    assert reading == (None, False)  # a non-step carries no contradiction flag: nothing was built
    tool = read_span(record("list_invoices", {**TOOL, "openinference.span.kind": "TOOL"}))
    assert isinstance(tool[0], ToolCall) and not tool[1]
    model = read_span(
        record("chat", {**TOOL, "gen_ai.operation.name": "chat", "openinference.span.kind": "TOOL"})
    )
    assert isinstance(model[0], ToolCall) and model[1]


def test_contradictions_and_unreadable_spans_are_counted() -> None:
    stats = PipelineStats()
    views = [
        record("list_invoices", {**TOOL, "gen_ai.operation.name": "chat", "openinference.span.kind": "TOOL"}),
        record("execute_tool", {"gen_ai.operation.name": "execute_tool"}),
    ]
    [trajectory] = trajectories_from_views(_one_trace(views), stats=stats)
    snap = stats.snapshot()
    assert (snap.contradictions, snap.spans["unreadable"], snap.spans["accepted"]) == (1, 1, 1)
    [unreadable] = trajectory.unreadable
    assert (unreadable.expected, unreadable.field) == ("tool", "tool name")


def _one_trace(views: list[SpanView]) -> list[SpanView]:
    """The views as one trace under the first one's trace id, each span a root of its own."""
    trace_id = views[0].trace_id
    return [dataclasses.replace(v, trace_id=trace_id, parent_id=None) for v in views]


SCOPE = {"subject": {"attributes": ["app.customer_id"]}, "arguments": {"list_invoices": "customer_id"}}
POLICY = parse_policy(
    {
        "version": 3,
        "defaults": {"scope": SCOPE, "repeats": {"max_identical": 1}},
    }
)


def _graded(views: list[SpanView], grading: dict[str, Any] | None = None) -> dict[str, Any]:
    policy = POLICY if grading is None else parse_policy({"version": 3, "defaults": {"grading": grading}})
    [trajectory] = trajectories_from_views(_one_trace(views))
    return verdict_to_dict(Grader(policy).grade(trajectory))


AGENT = {
    "gen_ai.operation.name": "invoke_agent",
    "gen_ai.agent.name": "support_agent",
    "app.customer_id": "C028",
}


def test_a_run_with_an_unreadable_span_is_unverified_never_pass() -> None:
    views = [
        record("invoke_agent support_agent", AGENT),
        record("execute_tool", {"gen_ai.operation.name": "execute_tool"}),
    ]
    verdict = _graded(views)
    assert verdict["outcome"] == "unverified"
    checks = {c["name"]: c for c in verdict["checks"]}
    assert checks["scope"]["status"] == "skipped" and "could not be read" in checks["scope"]["reason"]
    unreadable = checks["unreadable_steps"]
    assert (unreadable["status"], unreadable["severity"]) == ("fail", "info")
    assert "tool name: no source names the tool" in unreadable["reason"]
    [listed] = verdict["unreadable"]
    assert (listed["span_name"], listed["expected"], listed["field"]) == ("execute_tool", "tool", "tool name")


def test_a_failure_seen_stays_a_failure_beside_an_unreadable_span() -> None:
    views = [
        record("invoke_agent support_agent", {**AGENT, "app.customer_id": "C023"}),
        record("execute_tool list_invoices", TOOL),
        record("execute_tool", {"gen_ai.operation.name": "execute_tool"}),
    ]
    verdict = _graded(views)
    assert verdict["outcome"] == "unsafe"
    assert {c["name"]: c["status"] for c in verdict["checks"]}["scope"] == "fail"


def test_a_policy_may_grade_an_agent_on_what_was_read() -> None:
    views = [
        record("invoke_agent support_agent", AGENT),
        record("execute_tool", {"gen_ai.operation.name": "execute_tool"}),
    ]
    verdict = _graded(views, {"unreadable": "ignore"})
    assert verdict["outcome"] == "pass"
    assert {c["name"]: c["status"] for c in verdict["checks"]}["unreadable_steps"] == "fail"


def test_a_reader_that_raises_makes_its_field_unreadable(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(view: SpanView, attrs: Any, max_chars: int) -> Any:
        raise KeyError("hostile")

    monkeypatch.setattr(fields, "TOOL_ARGUMENTS", (Source("`exploding`", boom),))
    step = to_step(record("execute_tool list_invoices", TOOL))
    assert isinstance(step, Unreadable)
    assert (step.expected, step.field, step.reason) == ("tool", "`exploding`", "KeyError: 'hostile'")
    verdict = _graded(
        [record("invoke_agent support_agent", AGENT), record("execute_tool list_invoices", TOOL)]
    )
    assert verdict["outcome"] == "unverified"


def test_unreadable_spans_are_logged_once_a_period_per_reason(caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    throttle = Throttle(logging.getLogger("otel_traj.test"), period_s=60, clock=lambda: now[0])
    with caplog.at_level(logging.WARNING, logger="otel_traj.test"):
        logged = [throttle.warning("tool name", "span %s", i) for i in range(3)]
        now[0] = 61.0
        logged.append(throttle.warning("tool name", "span %s", 3))
        logged.append(throttle.warning("span", "other reason"))
    assert logged == [True, False, False, True, True]
    assert [r.getMessage() for r in caplog.records] == [
        "span 0",
        "span 3 (2 more like it since the last line)",
        "other reason",
    ]
    with pytest.raises(ValueError, match="period_s"):
        Throttle(logging.getLogger("x"), period_s=float("nan"))


# -- properties over the recorded runs ----------------------------------------------------------


RUNS = sorted((name, scenario) for name in FRAMEWORKS for scenario in ("clean", "violating"))
WRONG_TYPES = [7, -1, 2.5, True, ("a", "b")]
# Keys a dialect reads to recognize a span or to name, identify and argue a tool call, each with the
# values it does not accept: an undefined kind, a wrong type, a broken JSON document.
NOT_ACCEPTED: dict[str, list[Any]] = {
    **{key: ["WIDGET", *WRONG_TYPES] for key in (*VENDOR_KEYS, OPERATION_VOCABULARY.key)},
    **{s.key: WRONG_TYPES for s in (*fields.TOOL_NAME, *fields.TOOL_CALL_ID) if s.key},
    **{s.key: ["{", '{"customer_id": ', "[1, 2", *WRONG_TYPES] for s in fields.TOOL_ARGUMENTS if s.key},
}
READ_KEYS = sorted(NOT_ACCEPTED)


@cache
def _views(name: str, scenario: str) -> tuple[SpanView, ...]:
    return tuple(read_trace_inputs(run_files(name, scenario)).views)


def _calls(views: list[SpanView] | tuple[SpanView, ...]) -> list[tuple[str, Any]]:
    [trajectory] = trajectories_from_views(views)
    return [
        (c.name, c.arguments if c.arguments is not None else c.arguments_text) for c in trajectory.tool_calls
    ]


@cache
def _recorded_calls(name: str, scenario: str) -> list[tuple[str, Any]]:
    return _calls(_views(name, scenario))


@settings(max_examples=examples(150), deadline=None)
@given(run=st.sampled_from(RUNS), data=st.data())
def test_a_value_a_dialect_does_not_accept_never_removes_or_changes_a_tool_call(
    run: tuple[str, str], data: st.DataObject
) -> None:
    views = list(_views(*run))
    index = data.draw(st.integers(0, len(views) - 1), label="span")
    key = data.draw(st.sampled_from(READ_KEYS), label="key")
    if key in views[index].attributes:
        return  # replacing a value the span holds is not adding evidence
    value = data.draw(st.sampled_from(NOT_ACCEPTED[key]), label="value")
    views[index] = dataclasses.replace(views[index], attributes={**views[index].attributes, key: value})
    assert _calls(views) == _recorded_calls(*run)


@settings(max_examples=examples(60), deadline=None)
@given(run=st.sampled_from(RUNS), data=st.data())
def test_a_reader_that_raises_yields_an_unreadable_step_and_no_pass(
    run: tuple[str, str], data: st.DataObject
) -> None:
    table = data.draw(
        st.sampled_from(["TOOL_NAME", "TOOL_ARGUMENTS", "TOOL_RESULT", "MODEL_INPUT"]), label="field"
    )
    original = getattr(fields, table)

    def boom(view: SpanView, attrs: Any, max_chars: int) -> Any:
        raise RuntimeError("reader bug")

    setattr(fields, table, (Source("`broken`", boom), *original))
    try:
        [trajectory] = trajectories_from_views(_views(*run))
    finally:
        setattr(fields, table, original)
    expected = "tool" if table.startswith("TOOL") else "model"
    if expected == "tool" and FRAMEWORKS[run[0]].tool is None:
        return  # no tool spans: nothing for the broken reader to read
    assert any(s.expected == expected and s.field == "`broken`" for s in trajectory.unreadable)
    verdict = Grader(POLICY).grade(trajectory)
    assert verdict.outcome not in ("pass", "pass_with_warnings")


def test_a_conversation_with_a_trace_it_could_not_read_is_unverified() -> None:
    policy = parse_policy(
        {"version": 3, "defaults": {"scope": SCOPE, "conversation": {"budget": {"max_tool_calls": 20}}}}
    )
    conversation = {"gen_ai.conversation.id": "conv-1"}
    first = [record("invoke_agent support_agent", {**AGENT, **conversation})]
    second = [
        record("invoke_agent support_agent", {**AGENT, **conversation}),
        record("execute_tool", {"gen_ai.operation.name": "execute_tool"}),
    ]
    verdicts = [
        Grader(policy).grade(t)
        for views in (first, second)
        for t in trajectories_from_views(_one_trace(views))
    ]
    assert [v.outcome for v in verdicts] == ["pass", "unverified"]
    [conversation_verdict] = conversation_verdicts(verdicts, policy)
    assert conversation_verdict.outcome == "unverified"
    checks = {c.name: c for c in conversation_verdict.checks}
    assert checks["conversation_budget"].status == "skipped"
    assert checks["unreadable_steps"].reason.endswith(verdicts[1].trajectory.trace_hex)
    # What another replica receives keeps it (the summary's count travels in the event).
    [summary] = [t for t in conversation_verdict.traces if t.unreadable]
    assert TraceSummary.from_dict(summary.to_dict()).unreadable == 1
