"""Live scope checks: a run still in progress pages on its first out-of-scope call; a run that is
already complete gets its full verdict instead, without a live repeat."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace

import pytest
from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider

from otel_traj.config import AssemblerConfig
from otel_traj.live import live_scope
from otel_traj.policy import load_policy
from otel_traj.processor import TrajectoryProcessor
from otel_traj.records import TraceContext
from otel_traj.sinks.base import LiveViolation, Sink
from otel_traj.steps import ModelCall, RequestedTool, ToolCall
from otel_traj.verdict import Verdict
from tests.live_helpers import AGENT, POLICY, tool


class Recording(Sink):
    def __init__(self) -> None:
        super().__init__()
        self.verdicts: list[Verdict] = []
        self.live: list[LiveViolation] = []

    def export(self, verdict: Verdict) -> None:
        self.verdicts.append(verdict)

    def on_live_violation(self, violation: LiveViolation) -> None:
        self.live.append(violation)


Setup = tuple[TrajectoryProcessor, Recording, trace.Tracer]


@pytest.fixture
def live() -> Iterator[Setup]:
    """A processor with a long grace period (only ``force_flush`` grades a run), its sink, a tracer."""
    sink = Recording()
    processor = TrajectoryProcessor(
        policy=POLICY, sinks=[sink], config=AssemblerConfig(grace_s=60, ttl_s=600)
    )
    provider = TracerProvider(resource=Resource.create({"service.name": "support_agent"}))
    provider.add_span_processor(processor)
    try:
        yield processor, sink, provider.get_tracer("test")
    finally:
        provider.shutdown()


def other_customers_invoices(tracer: trace.Tracer) -> None:
    """The open agent span's own attributes are not readable yet: the first call pins the
    subject (C023), the second reads another customer's invoices."""
    tool(tracer, "get_subscription", "C023")
    tool(tracer, "list_invoices", "C028")


def chat(tracer: trace.Tracer, user: str) -> None:
    messages = [{"role": "user", "parts": [{"type": "text", "content": user}]}]
    with tracer.start_as_current_span(
        "chat gpt-4o-mini",
        attributes={
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": "gpt-4o-mini",
            "gen_ai.input.messages": json.dumps(messages),
        },
    ):
        pass


def test_a_run_in_progress_pages_on_its_first_out_of_scope_call(live: Setup) -> None:
    processor, sink, tracer = live
    with tracer.start_as_current_span(
        "invoke_agent support_agent", attributes={**AGENT, "app.customer_id": "C023"}
    ):
        other_customers_invoices(tracer)
        processor.pipeline.process()
        assert [(v.tool, v.result.name, v.result.status) for v in sink.live] == [
            ("list_invoices", "scope", "fail")
        ]
        assert sink.verdicts == []
    assert processor.force_flush(5000)
    [verdict] = sink.verdicts
    assert verdict.outcome == "unsafe"
    assert len(sink.live) == 1


def test_a_run_that_is_already_complete_gets_its_verdict_without_a_live_repeat(live: Setup) -> None:
    processor, sink, tracer = live
    # The worker sees the run only once it has ended: it is complete and waits out the grace.
    with (
        processor.pipeline._work_lock,
        tracer.start_as_current_span(
            "invoke_agent support_agent", attributes={**AGENT, "app.customer_id": "C023"}
        ),
    ):
        other_customers_invoices(tracer)
    processor.pipeline.process()
    assert sink.live == []
    assert sink.verdicts == []
    assert processor.force_flush(5000)
    [verdict] = sink.verdicts
    scope = next(c for c in verdict.checks if c.name == "scope")
    assert (verdict.outcome, scope.status) == ("unsafe", "fail")
    assert sink.live == []


def test_the_user_message_names_the_subject_before_the_agent_span_ends(live: Setup) -> None:
    processor, sink, tracer = live
    with tracer.start_as_current_span("invoke_agent support_agent", attributes=AGENT):
        chat(tracer, "Customer C023 here. I was charged twice for INV-1002.")
        # The very first lookup is another customer's: first use alone would pin C028.
        tool(tracer, "list_invoices", "C028")
        processor.pipeline.process()
        assert [(v.tool, v.result.reason) for v in sink.live] == [
            ("list_invoices", "list_invoices used customer_id=C028, subject is C023")
        ]
    assert processor.force_flush(5000)
    [verdict] = sink.verdicts
    scope = next(c for c in verdict.checks if c.name == "scope")
    assert scope.status == "fail"
    assert scope.reason == sink.live[0].result.reason


class Exploding:
    def observe(self, *args: object) -> None:
        raise RuntimeError("a live check that fails")


def test_a_failing_live_check_loses_no_finished_run(live: Setup) -> None:
    processor, sink, tracer = live
    processor.pipeline._live = lambda context: Exploding()  # type: ignore[assignment,return-value]
    with tracer.start_as_current_span("invoke_agent support_agent", attributes=AGENT):
        tool(tracer, "get_subscription", "C023")
    # A second run still in progress: its new tool call goes to the live check in the same tick in
    # which the first run, complete, is graded.
    with tracer.start_as_current_span("invoke_agent support_agent", attributes=AGENT):
        tool(tracer, "get_subscription", "C024")
        assert processor.force_flush(5000)
        assert [v.trajectory.tool_calls[0].arguments for v in sink.verdicts] == [{"customer_id": "C023"}]
        assert processor.stats.snapshot().internal_errors == 1
    assert processor.force_flush(5000)
    assert len(sink.verdicts) == 2


def test_a_requested_call_recorded_as_a_span_pages_only_once_it_runs(live: Setup) -> None:
    """AgentOps records each call a response requests as a ``tool_call.<name>`` span: no call has run
    yet, so the live check waits for the execution's span."""
    processor, sink, tracer = live
    with tracer.start_as_current_span(
        "invoke_agent support_agent", attributes={**AGENT, "app.customer_id": "C023"}
    ):
        tool(tracer, "get_subscription", "C023")
        request = {
            "tool.name": "list_invoices",
            "tool.parameters": json.dumps({"customer_id": "C028"}),
            "tool.call.id": "call_2",
        }
        with tracer.start_as_current_span("tool_call.list_invoices", attributes=request):
            pass
        processor.pipeline.process()
        assert sink.live == []
        tool(tracer, "list_invoices", "C028")
        processor.pipeline.process()
        assert [(v.tool, v.result.status) for v in sink.live] == [("list_invoices", "fail")]
    assert processor.force_flush(5000)


def test_the_live_check_joins_a_call_without_changing_the_runs_step() -> None:
    """The builder joins the same steps when the run ends: the live check's join is its own value."""
    request = RequestedTool(name="list_invoices", call_id="c1", arguments_text='{"customer_id": "C028"}')
    model = ModelCall(span_id=1, start_ns=0, end_ns=1, requested_tools=(request,), input_source="I am C023")
    call = ToolCall(
        name="list_invoices", span_id=2, start_ns=2, end_ns=3, arguments_text='{"customer_id": "C028"}'
    )
    before = replace(call)
    checker = live_scope(load_policy(POLICY))(TraceContext(trace_id=1, service_name="support_agent"))
    assert checker is not None
    result = checker.observe(call, TraceContext(trace_id=1, service_name="support_agent"), [model])
    assert result is not None and result.reason == "list_invoices used customer_id=C028, subject is C023"
    assert call == before and (call.turn, call.arguments, call.call_id) == (None, None, None)
