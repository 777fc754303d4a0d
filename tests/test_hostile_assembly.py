"""Hostile input and caps under load: one bad run costs that run only, ``max_traces`` is a bound,
spans that never end are forgotten after the TTL, and runs that lost spans to the backlog are never
graded as complete. Real TracerProvider with the TrajectoryProcessor, real OTLP ingest."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Span, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Tracer, set_span_in_context

from otel_traj.config import AssemblerConfig
from otel_traj.dialects.context import metadata_values
from otel_traj.grader import score
from otel_traj.pipeline import Pipeline
from otel_traj.policy import parse_policy
from otel_traj.processor import TrajectoryProcessor
from otel_traj.serve.codec import decode_protobuf
from otel_traj.serve.ingest import Ingest, Refused, Unfit
from otel_traj.verdict import Verdict
from tests.properties import examples
from tests.semconv_agent import Call, Run, Turn, clean_refund, emit

RESOURCE = Resource.create({"service.name": "support-svc"})
# Deeper than Python's JSON parser recurses, yet within ``max_chars``: kept unparsed until its run is
# handed over, the shape that once took every run of its tick along.
DEEP = "[" * 2_000


class Harness:
    def __init__(self, config: AssemblerConfig, policy: Any = None) -> None:
        self.verdicts: list[Verdict] = []
        self.processor = TrajectoryProcessor(policy=policy, on_verdict=self.verdicts.append, config=config)
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider(resource=RESOURCE)
        self.provider.add_span_processor(self.processor)
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = self.provider.get_tracer("test")
        self.pipeline = self.processor.pipeline
        self.assembler = self.pipeline.assembler


@pytest.fixture
def harness() -> Iterator[Callable[..., Harness]]:
    made: list[Harness] = []

    def make(config: AssemblerConfig, policy: Any = None) -> Harness:
        made.append(Harness(config, policy))
        return made[-1]

    yield make
    for h in made:
        h.provider.shutdown()


def start_run(tracer: Tracer, i: int, metadata: str | None = None) -> Span:
    """An agent run whose root is still open and whose one tool call has ended."""
    attributes = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "a"}
    if metadata is not None:
        attributes["metadata"] = metadata
    root = tracer.start_span("invoke_agent a", attributes=attributes)
    tool = tracer.start_span(
        "execute_tool t",
        context=set_span_in_context(root),
        attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": f"t{i}"},
    )
    tool.end()
    assert isinstance(root, Span)
    return root


@pytest.fixture
def metadata_blows_up(monkeypatch: pytest.MonkeyPatch) -> None:
    """The run metadata parser fails on the deep JSON as it once did (RecursionError)."""

    def parse(text: str, keys: Any) -> Any:
        if text.startswith("[[[["):
            raise RecursionError("maximum recursion depth exceeded")
        return metadata_values(text, keys)

    monkeypatch.setattr("otel_traj.assembler.metadata_values", parse)


# -- 1. one run that cannot be handed over costs that run only ------------------------------------


@pytest.mark.usefixtures("metadata_blows_up")
def test_a_run_that_fails_in_assembly_costs_that_run_only_in_process(harness: Callable[..., Harness]) -> None:
    h = harness(AssemblerConfig(grace_s=60, ttl_s=600).with_capture(("app.customer_id",)))
    # Every run ends while the worker is held off: all eleven are handed over in one tick.
    with h.pipeline._work_lock:
        good = [emit(h.tracer, clean_refund(f"conv-{i}")) for i in range(10)]
        start_run(h.tracer, 99, metadata=DEEP).end()
    assert h.processor.force_flush(5000)
    assert sorted(v.trajectory.trace_id for v in h.verdicts) == sorted(good)
    assert h.processor.stats.internal_errors == 1
    assert h.processor.stats.dropped == {"internal_error": 1}


@pytest.mark.usefixtures("metadata_blows_up")
def test_a_run_that_fails_in_assembly_costs_that_run_only_in_the_service() -> None:
    verdicts: list[Verdict] = []
    pipeline = Pipeline(callbacks=[verdicts.append], config=AssemblerConfig(grace_s=60, ttl_s=600))
    provider = TracerProvider(resource=RESOURCE)
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("test")
    good = [emit(tracer, clean_refund(f"conv-{i}")) for i in range(10)]
    start_run(tracer, 99, metadata=DEEP).end()
    body = encode_spans(exporter.get_finished_spans()).SerializeToString()
    try:
        Ingest(pipeline).accept(decode_protobuf(body))
        assert pipeline.force_flush(5000)
    finally:
        pipeline.shutdown()
        provider.shutdown()
    assert sorted(v.trajectory.trace_id for v in verdicts) == sorted(good)
    assert pipeline.stats.internal_errors == 1
    assert pipeline.stats.dropped == {"internal_error": 1}


# -- 2. max_traces is a bound ----------------------------------------------------------------------


def test_max_traces_bounds_runs_in_flight_and_counts_each_eviction_once(
    harness: Callable[..., Harness],
) -> None:
    h = harness(AssemblerConfig(grace_s=60, ttl_s=600, max_traces=100))
    in_flight_seen: list[int] = []
    h.processor.add_callback(lambda _: in_flight_seen.append(h.assembler.in_flight))
    roots = [start_run(h.tracer, i) for i in range(1000)]
    assert h.processor.force_flush(5000)
    evicted = {r.get_span_context().trace_id for r in roots[:900]}
    assert h.assembler.in_flight == 100
    assert max(in_flight_seen) <= 100
    assert h.processor.stats.traces_in_flight == 100
    assert {v.trajectory.trace_id for v in h.verdicts} == evicted
    assert len(h.verdicts) == 900
    assert {v.outcome for v in h.verdicts} == {"incomplete"}
    assert h.processor.stats.dropped == {"max_traces": 900}
    # The evicted runs' roots end later: counted as late, not graded again; the others complete.
    for root in roots:
        root.end()
    assert h.processor.force_flush(5000)
    assert len(h.verdicts) == 1000
    assert [v.outcome for v in h.verdicts[900:]] == ["pass"] * 100
    assert h.processor.stats.spans["late"] == 900
    assert h.processor.stats.dropped == {"max_traces": 900}


@settings(
    max_examples=examples(20), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(max_traces=st.integers(1, 12), runs=st.integers(0, 40), ended=st.integers(0, 40))
def test_evictions_counted_equal_runs_handed_over_early(max_traces: int, runs: int, ended: int) -> None:
    h = Harness(AssemblerConfig(grace_s=60, ttl_s=600, max_traces=max_traces))
    try:
        roots = [start_run(h.tracer, i) for i in range(runs)]
        for root in roots[:ended]:
            root.end()
        assert h.processor.force_flush(5000)
        early = [v for v in h.verdicts if not v.trajectory.complete]
        assert h.assembler.in_flight <= max_traces
        assert h.processor.stats.dropped.get("max_traces", 0) == len(early)
        assert len(h.verdicts) + h.assembler.in_flight == runs
    finally:
        h.provider.shutdown()


def test_the_service_refuses_instead_of_evicting_and_counts_no_drop() -> None:
    verdicts: list[Verdict] = []
    pipeline = Pipeline(
        callbacks=[verdicts.append], config=AssemblerConfig(grace_s=60, ttl_s=600, max_traces=10)
    )
    provider = TracerProvider(resource=RESOURCE)
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("test")
    ingest = Ingest(pipeline)
    try:
        # One request of 30 traces can never fit under max_traces, even in an empty service.
        for i in range(30):
            start_run(tracer, i).end()
        with pytest.raises(Unfit, match="the request holds 30 traces"):
            ingest.accept(decode_protobuf(encode_spans(exporter.get_finished_spans()).SerializeToString()))
        assert pipeline.assembler.in_flight == 0
        exporter.clear()
        for i in range(10):
            start_run(tracer, i).end()
        ingest.accept(decode_protobuf(encode_spans(exporter.get_finished_spans()).SerializeToString()))
        exporter.clear()
        start_run(tracer, 99).end()
        with pytest.raises(Refused):
            ingest.accept(decode_protobuf(encode_spans(exporter.get_finished_spans()).SerializeToString()))
        assert pipeline.force_flush(5000)
    finally:
        pipeline.shutdown()
        provider.shutdown()
    assert len(verdicts) == 10
    assert all(v.trajectory.complete for v in verdicts)
    assert "max_traces" not in pipeline.stats.dropped


# -- 3. spans that never end are forgotten ---------------------------------------------------------


def test_spans_never_ended_are_forgotten_after_the_ttl_and_at_shutdown(
    harness: Callable[..., Harness],
) -> None:
    h = harness(AssemblerConfig(grace_s=0, ttl_s=600))
    now = [1000.0]
    h.assembler.clock = lambda: now[0]
    never_ended = [h.tracer.start_span(f"GET /{i}") for i in range(9_000)]
    runs = [start_run(h.tracer, i) for i in range(1_000)]
    h.pipeline.process()
    open_spans = h.assembler.open_spans
    assert len(open_spans._open) == 10_000
    now[0] += 601
    h.pipeline.process()
    assert open_spans._open == {} and open_spans._since == {}
    assert len(h.verdicts) == 1_000
    assert {v.outcome for v in h.verdicts} == {"incomplete"}
    # Spans opened later, never ended either, are gone once the provider shuts down.
    more = [h.tracer.start_span(f"GET /late/{i}") for i in range(100)]
    h.pipeline.process()
    assert len(open_spans._open) == 100
    h.provider.shutdown()
    assert open_spans._open == {} and open_spans._since == {}
    assert len(never_ended) + len(runs) + len(more) == 10_100


def test_a_count_past_the_ttl_of_a_buffered_run_goes_with_its_run(harness: Callable[..., Harness]) -> None:
    h = harness(AssemblerConfig(grace_s=0, ttl_s=600))
    now = [1000.0]
    h.assembler.clock = lambda: now[0]
    # The trace's first span opens long before its first GenAI step: its count outlives the TTL
    # while the run's buffer does not yet, and must not make the run look complete.
    outer = h.tracer.start_span("GET /chat")
    h.pipeline.process()
    now[0] += 500
    root = start_run_under(h.tracer, outer)
    h.pipeline.process()
    now[0] += 200
    h.pipeline.process()
    assert h.verdicts == []
    assert h.assembler.open_spans.is_open(outer.get_span_context().trace_id)
    now[0] += 500
    h.pipeline.process()
    [verdict] = h.verdicts
    assert verdict.outcome == "incomplete"
    assert h.assembler.open_spans._open == {}
    root.end()
    outer.end()


def start_run_under(tracer: Tracer, parent: trace.Span) -> trace.Span:
    root = tracer.start_span(
        "invoke_agent a",
        context=set_span_in_context(parent),
        attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "a"},
    )
    tracer.start_span(
        "execute_tool t",
        context=set_span_in_context(root),
        attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "t"},
    ).end()
    root.end()
    return root


# -- 4. runs that lost spans to the backlog --------------------------------------------------------


def test_runs_that_lost_spans_to_the_backlog_are_incomplete_or_counted(
    harness: Callable[..., Harness],
) -> None:
    policy = parse_policy({"defaults": {"tools": {"deny": ["delete_account"]}}})
    h = harness(AssemblerConfig(grace_s=60, ttl_s=600, max_backlog=2), policy=policy)
    unsafe = Run(
        user="close my account",
        turns=[
            Turn(calls=[Call("lookup", {"q": 1}, "ok")]),
            Turn(calls=[Call("delete_account", {})]),
            Turn(text="done"),
        ],
    )
    # The worker is stalled: the queue holds two spans (the first model call and the lookup), the
    # rest of this run and every span of the next are dropped.
    with h.pipeline._work_lock:
        unsafe_id = emit(h.tracer, unsafe)
        emit(h.tracer, clean_refund())
    assert h.processor.force_flush(5000)
    [verdict] = h.verdicts
    assert verdict.trajectory.trace_id == unsafe_id
    assert [c.name for c in verdict.trajectory.tool_calls] == ["lookup"]
    assert verdict.outcome == "incomplete"
    [check] = [c for c in verdict.checks if c.name == "dropped_steps"]
    assert "max_backlog" in check.reason
    # Two model calls, the denied tool call and the agent span.
    assert check.detail == {"backlog": 4, "max_steps": 0}
    # The note is one of the checks the grader scored: the tools check passed, the run scores less.
    assert [c.name for c in verdict.checks] == ["tools", "dropped_steps"]
    assert verdict.score == score(verdict.checks) < 1.0
    # The clean run: 4 model calls, 4 tool calls and its agent span, the whole run counted once.
    assert h.processor.stats.dropped == {"backlog": 4 + 9, "backlog_run": 1}
    assert h.assembler.in_flight == 0
