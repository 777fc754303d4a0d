"""The in-process front door: TrajectoryProcessor on a real TracerProvider, from the spans an agent
emits to the verdicts, with the caps, sampling, threads and malformed spans it meets."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, set_span_in_context

from otel_traj.adapters.otlp_proto import views_from_bytes
from otel_traj.config import AssemblerConfig
from otel_traj.offline import trajectories_from_views
from otel_traj.processor import DRAIN_AT, TrajectoryProcessor
from otel_traj.sampling import RecordAllSampler
from otel_traj.serialize import trajectory_to_dict
from otel_traj.verdict import Verdict
from tests.semconv_agent import Call, Run, Turn, clean_refund, emit

RESOURCE = Resource.create({"service.name": "support-svc", "service.version": "2.1.0"})


class Harness:
    def __init__(self, config: AssemblerConfig | None = None, sampler=None) -> None:
        self.verdicts: list[Verdict] = []
        self.exporter = InMemorySpanExporter()
        self.processor = TrajectoryProcessor(
            on_verdict=self.verdicts.append, config=config or AssemblerConfig(grace_s=60, ttl_s=600)
        )
        kwargs = {"sampler": sampler} if sampler is not None else {}
        self.provider = TracerProvider(resource=RESOURCE, **kwargs)
        self.provider.add_span_processor(self.processor)
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = self.provider.get_tracer("test")

    def flush(self) -> list[Verdict]:
        assert self.processor.force_flush(5000)
        return self.verdicts


MakeHarness = Callable[..., Harness]


@pytest.fixture
def harness() -> Iterator[MakeHarness]:
    """``harness(config, sampler)`` makes a Harness; each is shut down after the test."""
    made: list[Harness] = []

    def make(config: AssemblerConfig | None = None, sampler: Any = None) -> Harness:
        made.append(Harness(config, sampler))
        return made[-1]

    yield make
    for h in made:
        h.provider.shutdown()


def test_clean_run_is_rebuilt_exactly(harness: MakeHarness) -> None:
    h = harness()
    trace_id = emit(h.tracer, clean_refund())
    [verdict] = h.flush()
    t = verdict.trajectory
    assert t.trace_id == trace_id
    assert t.agent == "support_agent"
    assert (t.service_name, t.service_version) == ("support-svc", "2.1.0")
    assert t.conversation_id == "conv-clean"
    assert [c.name for c in t.tool_calls] == [
        "get_subscription",
        "list_invoices",
        "check_payment",
        "create_refund_request",
    ]
    assert [c.parallel for c in t.tool_calls] == [True, True, False, False]
    assert [c.ok for c in t.tool_calls] == [True, True, False, True]
    assert t.tool_calls[2].error_message == "payment gateway timeout"
    assert t.tool_calls[3].arguments == {
        "invoice_id": "INV-1002",
        "amount_yuan": 199,
        "reason": "duplicate charge",
    }
    assert t.model_turns == 4
    assert (t.tokens.input, t.tokens.output) == (400, 40)
    assert t.final_answer == "Your refund for INV-1002 has been submitted (RF-5001)."
    assert t.user_input is not None and t.user_input.startswith("Customer C023")
    assert t.attributes["app.customer_id"] == "C023"
    assert t.complete


def test_in_process_equals_offline_on_the_exported_spans(harness: MakeHarness) -> None:
    h = harness()
    emit(h.tracer, clean_refund())
    [verdict] = h.flush()
    views = views_from_bytes(encode_spans(h.exporter.get_finished_spans()).SerializeToString())
    [offline] = trajectories_from_views(views)
    assert trajectory_to_dict(offline) == trajectory_to_dict(verdict.trajectory)


def test_non_genai_traces_are_ignored_and_counted(harness: MakeHarness) -> None:
    h = harness()
    with (
        h.tracer.start_as_current_span("GET /health", attributes={"http.method": "GET"}),
        h.tracer.start_as_current_span("SELECT users", attributes={"db.system": "sqlite"}),
    ):
        pass
    assert h.flush() == []
    assert h.processor.stats.spans["ignored"] == 2
    assert h.processor.pipeline.assembler.in_flight == 0


def test_trace_waits_for_open_spans_then_completes(harness: MakeHarness) -> None:
    h = harness()
    root = h.tracer.start_span("invoke_agent a", attributes={"gen_ai.operation.name": "invoke_agent"})
    ctx = set_span_in_context(root)
    straggler = h.tracer.start_span("background work", context=ctx)
    tool = h.tracer.start_span(
        "execute_tool t",
        context=ctx,
        attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "t"},
    )
    tool.end()
    root.end()
    assert h.flush() == [], "a span of the trace is still open"
    straggler.end()
    [verdict] = h.flush()
    assert [c.name for c in verdict.trajectory.tool_calls] == ["t"]
    assert verdict.trajectory.complete


def test_root_that_never_ends_expires_as_incomplete(harness: MakeHarness) -> None:
    h = harness(AssemblerConfig(grace_s=0, ttl_s=0))
    root = h.tracer.start_span("invoke_agent a", attributes={"gen_ai.operation.name": "invoke_agent"})
    ctx = set_span_in_context(root)
    h.tracer.start_span(
        "execute_tool t",
        context=ctx,
        attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "t"},
    ).end()
    [verdict] = h.flush()
    assert not verdict.trajectory.complete
    assert verdict.outcome == "incomplete"
    root.end()
    assert h.flush() == [verdict]
    assert h.processor.stats.spans["late"] == 1, "a span after the verdict is counted as late"


def test_shutdown_grades_unfinished_traces_as_incomplete(harness: MakeHarness) -> None:
    h = harness()
    root = h.tracer.start_span("invoke_agent a", attributes={"gen_ai.operation.name": "invoke_agent"})
    h.tracer.start_span(
        "execute_tool t",
        context=set_span_in_context(root),
        attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "t"},
    ).end()
    h.provider.shutdown()
    [verdict] = h.verdicts
    assert not verdict.trajectory.complete


def test_remote_parent_makes_a_local_root(harness: MakeHarness) -> None:
    h = harness()
    remote = SpanContext(trace_id=0xABC, span_id=0xDEF, is_remote=True, trace_flags=TraceFlags(1))
    ctx = set_span_in_context(NonRecordingSpan(remote))
    emit_ctx_root = h.tracer.start_span("handle", context=ctx)
    h.tracer.start_span(
        "execute_tool t",
        context=set_span_in_context(emit_ctx_root),
        attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "t"},
    ).end()
    emit_ctx_root.end()
    [verdict] = h.flush()
    assert verdict.trajectory.trace_id == 0xABC
    assert verdict.trajectory.root_span_id == emit_ctx_root.get_span_context().span_id


def test_step_cap_drops_and_counts(harness: MakeHarness) -> None:
    h = harness(AssemblerConfig(grace_s=60, ttl_s=600, max_steps=3))
    run = Run(
        user="hi", turns=[Turn(calls=[Call("lookup", {"q": i}, i)]) for i in range(3)] + [Turn(text="done")]
    )
    emit(h.tracer, run)
    [verdict] = h.flush()
    t = verdict.trajectory
    observed = [c for c in t.tool_calls if c.observed]
    assert len(observed) + t.model_turns == 3
    # The second model call asked for a tool whose span the cap dropped: requested, not observed.
    assert [(c.name, c.observed) for c in t.tool_calls] == [("lookup", True), ("lookup", False)]
    assert verdict.trajectory.dropped_steps == 5
    assert h.processor.stats.dropped["max_steps"] == 5


def test_trace_cap_evicts_oldest_as_incomplete(harness: MakeHarness) -> None:
    h = harness(AssemblerConfig(grace_s=60, ttl_s=600, max_traces=2))
    roots = []
    for i in range(3):
        root = h.tracer.start_span(f"invoke_agent a{i}", attributes={"gen_ai.operation.name": "invoke_agent"})
        h.tracer.start_span(
            "execute_tool t",
            context=set_span_in_context(root),
            attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": f"t{i}"},
        ).end()
        roots.append(root)
    [evicted] = h.flush()
    assert [c.name for c in evicted.trajectory.tool_calls] == ["t0"]
    assert not evicted.trajectory.complete
    assert h.processor.stats.dropped["max_traces"] == 1
    assert h.processor.pipeline.assembler.in_flight == 2


def test_record_all_sampler_grades_every_run_and_exports_a_sample(harness: MakeHarness) -> None:
    h = harness(sampler=RecordAllSampler(0.0))
    for i in range(5):
        emit(h.tracer, clean_refund(f"conv-{i}"))
    assert len(h.flush()) == 5
    assert h.exporter.get_finished_spans() == ()


def test_concurrent_runs_from_threads_are_kept_apart(harness: MakeHarness) -> None:
    h = harness()

    def worker(i: int) -> None:
        for j in range(10):
            emit(h.tracer, clean_refund(f"conv-{i}-{j}"))

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    verdicts = h.flush()
    assert len(verdicts) == 40
    assert {len(v.trajectory.tool_calls) for v in verdicts} == {4}
    assert len({v.trajectory.conversation_id for v in verdicts}) == 40


def test_backlog_cap_drops_and_counts_instead_of_growing(harness: MakeHarness) -> None:
    h = harness(AssemblerConfig(grace_s=60, ttl_s=600, max_backlog=1))
    emit(h.tracer, clean_refund())
    # 4 model calls, 4 tool calls and the agent span: the first waits for the worker, every other
    # candidate span was refused and counted, and the run they belonged to is known to be short.
    assert h.processor.stats.dropped["backlog"] == 8
    [verdict] = h.flush()
    assert verdict.outcome == "incomplete"
    assert h.processor.pipeline.assembler.in_flight == 0


def test_spans_past_the_early_wake_mark_are_queued_not_dropped(harness: MakeHarness) -> None:
    h = harness(AssemblerConfig(grace_s=0, ttl_s=600))
    runs = 30
    # Hold the worker off so that every span of the runs waits in the queue.
    with h.processor.pipeline._work_lock:
        for i in range(runs):
            emit(h.tracer, clean_refund(f"conv-{i}"))
        queued = len(h.processor.pipeline.assembler.open_spans.ended_spans)
    assert queued > DRAIN_AT
    assert len(h.flush()) == runs
    assert "backlog" not in h.processor.stats.dropped


def test_an_unreadable_span_is_counted_and_does_not_hold_its_trace_open(harness: MakeHarness) -> None:
    h = harness(AssemblerConfig(grace_s=0, ttl_s=600))
    agent = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "support_agent"}
    with h.tracer.start_as_current_span("invoke_agent support_agent", attributes=agent) as root:
        child = h.tracer.start_span("lookup")
        # A span of another SDK whose name is not a string: the worker cannot triage it.
        broken = ReadableSpan(
            name=None,  # type: ignore[arg-type]
            context=child.get_span_context(),
            parent=root.get_span_context(),
        )
        h.processor.on_end(broken)
    [verdict] = h.flush()
    assert verdict.trajectory.agent == "support_agent"
    assert verdict.trajectory.complete
    assert h.processor.stats.spans["malformed"] == 1
    assert h.processor.stats.internal_errors == 0


def test_the_worker_of_an_idle_process_sleeps_longer_than_its_tick(harness: MakeHarness) -> None:
    h = harness(AssemblerConfig(grace_s=60, ttl_s=600))
    pipeline = h.processor.pipeline
    assert pipeline.next_wait() == 0.25
    span = h.tracer.start_span("GET /orders")
    # The start is queued for the worker: it looks again within its tick.
    assert pipeline.next_wait() == 0.02
    span.end()
    emit(h.tracer, clean_refund())
    assert pipeline.next_wait() == 0.02
    assert len(h.flush()) == 1
    assert pipeline.next_wait() == 0.25
