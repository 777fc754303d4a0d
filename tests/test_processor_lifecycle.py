"""TrajectoryProcessor follows the SDK's span-processor lifecycle, as ``BatchSpanProcessor`` does;
settings from the environment; one definition of a local root at every front door."""

from __future__ import annotations

import logging
import threading

import pytest
from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from prometheus_client import CollectorRegistry

from otel_traj.assembler import SPANS_PER_PASS, Assembler
from otel_traj.config import AssemblerConfig
from otel_traj.env import SettingError, strict_settings
from otel_traj.offline import trajectories_from_views
from otel_traj.processor import TrajectoryProcessor
from otel_traj.sinks.base import Sink
from otel_traj.spanview import SpanView
from otel_traj.verdict import Verdict
from tests.semconv_agent import clean_refund, emit

RESOURCE = Resource.create({"service.name": "support-svc"})


class Blocking(Sink):
    """A sink whose export waits until released, and which records the deadline it was given."""

    def __init__(self) -> None:
        super().__init__()
        self.entered = threading.Event()
        self.release = threading.Event()
        self.exported: list[Verdict] = []
        self.shutdown_with: list[int] = []

    def export(self, verdict: Verdict) -> None:
        self.entered.set()
        self.release.wait(30)
        self.exported.append(verdict)

    def shutdown(self, timeout_millis: int = 30_000) -> None:
        self.shutdown_with.append(timeout_millis)


def _provider(processor: TrajectoryProcessor) -> TracerProvider:
    provider = TracerProvider(resource=RESOURCE)
    provider.add_span_processor(processor)
    return provider


def _in_thread(target: object) -> tuple[threading.Thread, list[object]]:
    result: list[object] = []
    thread = threading.Thread(target=lambda: result.append(target()))  # type: ignore[operator]
    thread.start()
    return thread, result


def test_after_shutdown_the_hooks_take_nothing_and_force_flush_is_false() -> None:
    verdicts: list[Verdict] = []
    processor = TrajectoryProcessor(on_verdict=verdicts.append, config=AssemblerConfig(grace_s=0))
    provider = _provider(processor)
    tracer = provider.get_tracer("test")
    emit(tracer, clean_refund())
    processor.shutdown()
    assert len(verdicts) == 1
    before = processor.stats.snapshot()
    emit(tracer, clean_refund())
    assert processor.pipeline.assembler.open_spans.idle
    assert processor.pipeline.assembler.in_flight == 0
    assert processor.stats.snapshot() == before
    assert processor.force_flush(1000) is False
    assert len(verdicts) == 1


def test_force_flush_returns_false_by_its_deadline_when_a_sink_blocks() -> None:
    sink = Blocking()
    processor = TrajectoryProcessor(sinks=[sink], config=AssemblerConfig(grace_s=0))
    provider = _provider(processor)
    emit(provider.get_tracer("test"), clean_refund())
    # The worker is stuck in the sink with the run's verdict, holding the work.
    thread, _ = _in_thread(lambda: processor.pipeline.process(flush=True))
    assert sink.entered.wait(10)
    flush, flushed = _in_thread(lambda: processor.force_flush(50))
    flush.join(10)
    try:
        assert not flush.is_alive()
        assert flushed == [False]
    finally:
        sink.release.set()
        thread.join(10)
        processor.shutdown()
    assert len(sink.exported) == 1


def test_shutdown_returns_by_its_deadline_and_counts_what_it_could_not_grade() -> None:
    sink = Blocking()
    processor = TrajectoryProcessor(sinks=[sink], config=AssemblerConfig(grace_s=0))
    provider = _provider(processor)
    tracer = provider.get_tracer("test")
    emit(tracer, clean_refund())
    thread, _ = _in_thread(lambda: processor.pipeline.process(flush=True))
    assert sink.entered.wait(10)
    emit(tracer, clean_refund())
    processor.pipeline.assembler.sync_open()  # the second run is buffered, waiting for the worker
    stop, _ = _in_thread(lambda: processor.pipeline.shutdown(timeout_millis=50))
    stop.join(10)
    try:
        assert not stop.is_alive()
        assert processor.stats.snapshot().dropped == {"shutdown": 1}
        # Every sink was shut down with what was left of the deadline: nothing, by then.
        assert sink.shutdown_with == [0]
    finally:
        sink.release.set()
        thread.join(10)


def test_shutdown_passes_what_is_left_of_its_deadline_to_the_sinks() -> None:
    sink = Blocking()
    sink.release.set()
    processor = TrajectoryProcessor(sinks=[sink])
    processor.pipeline.shutdown(timeout_millis=20_000)
    [left] = sink.shutdown_with
    assert 0 < left <= 20_000
    processor.shutdown()  # idempotent
    assert len(sink.shutdown_with) == 1


def test_an_invalid_library_setting_is_logged_and_the_default_used(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("OTEL_TRAJ_GRACE_S", "half a second")
    monkeypatch.setenv("OTEL_TRAJ_MAX_TRACES", "-5")
    with caplog.at_level(logging.WARNING, logger="otel_traj"):
        config = AssemblerConfig()
    assert (config.grace_s, config.max_traces) == (0.5, 10_000)
    messages = " ".join(r.getMessage() for r in caplog.records)
    assert "OTEL_TRAJ_GRACE_S='half a second'" in messages
    assert "OTEL_TRAJ_MAX_TRACES='-5'" in messages
    with strict_settings(), pytest.raises(SettingError, match="OTEL_TRAJ_GRACE_S"):
        AssemblerConfig()


def test_a_cap_of_zero_from_the_environment_is_refused_like_any_invalid_value(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("OTEL_TRAJ_MAX_BACKLOG", "0")
    with caplog.at_level(logging.WARNING, logger="otel_traj"):
        assert AssemblerConfig().max_backlog == 100_000
    assert "OTEL_TRAJ_MAX_BACKLOG='0': expected an integer >= 1" in caplog.text


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        ("max_backlog", 0, "an integer >= 1"),
        ("max_traces", -1, "an integer >= 1"),
        ("max_chars", 0, "an integer >= 1"),
        ("max_steps", 2.5, "an integer >= 1"),
        ("ttl_s", float("nan"), "a finite number of seconds >= 0"),
        ("grace_s", -0.1, "a finite number of seconds >= 0"),
        ("max_event_bytes", -1, "an integer >= 0"),
    ],
)
def test_an_invalid_setting_names_the_field_and_the_value(field: str, value: object, expected: str) -> None:
    with pytest.raises(ValueError) as raised:
        AssemblerConfig(**{field: value})  # type: ignore[arg-type]
    assert str(raised.value) == f"{field}={value!r}: expected {expected}"


def test_health_of_two_processors_sharing_a_registry_is_reported_for_both() -> None:
    registry = CollectorRegistry()
    processors = [TrajectoryProcessor(registry=registry, config=AssemblerConfig(grace_s=0)) for _ in range(2)]
    for processor in processors:
        provider = _provider(processor)
        emit(provider.get_tracer("test"), clean_refund())
        assert processor.force_flush(5000)
    accepted = [p.stats.snapshot().spans["accepted"] for p in processors]
    try:
        assert min(accepted) > 0
        assert registry.get_sample_value("otel_traj_spans_total", {"result": "accepted"}) == sum(accepted)
    finally:
        for processor in processors:
            processor.shutdown()


def _span(span_id: int, parent_id: int | None, remote: bool = False, start: int = 10) -> SpanView:
    attributes = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup"}
    return SpanView(
        trace_id=7,
        span_id=span_id,
        parent_id=parent_id,
        name="execute_tool lookup",
        start_ns=start,
        end_ns=start + 5,
        attributes=attributes,
        parent_is_remote=remote,
    )


def test_received_spans_wait_for_the_remote_parent_of_a_local_root() -> None:
    # Process B's part of a trace arrives first: its local root's parent is in process A.
    assembler = Assembler(config=AssemblerConfig(grace_s=0))
    assembler.add_all([assembler.make_record(_span(2, 1, remote=True, start=20))])
    assert assembler.pop_ready(flush=True) == []
    assembler.add_all([assembler.make_record(_span(1, None, start=10))])
    [finished] = assembler.pop_ready(flush=True)
    assert finished.complete
    # The trace's root is the span without a parent, not process B's local root.
    assert finished.context.root_span_id == 1
    assert len(finished.steps) == 2


def test_a_file_without_a_spans_parent_makes_that_span_the_root() -> None:
    [trajectory] = trajectories_from_views([_span(2, 1, remote=True), _span(3, 2)])
    assert trajectory.complete
    assert trajectory.root_span_id == 2


def test_a_flood_of_spans_is_read_over_several_passes_and_ready_runs_are_graded_between_them() -> None:
    """100k hostile spans made one pass of the worker 4.6 s long while good runs waited (and went
    over ``max_traces``); a pass now reads at most ``SPANS_PER_PASS`` ended spans."""
    sink = Blocking()
    sink.release.set()
    processor = TrajectoryProcessor(sinks=[sink], config=AssemblerConfig(grace_s=0))
    provider = _provider(processor)
    tracer = provider.get_tracer("test")
    pipeline, assembler = processor.pipeline, processor.pipeline.assembler
    with pipeline._work_lock:  # the worker waits: the test takes the passes itself
        emit(tracer, clean_refund())
        flood = tracer.start_span("invoke_agent flood", attributes={"gen_ai.operation.name": "invoke_agent"})
        with trace.use_span(flood):
            for i in range(2 * SPANS_PER_PASS + 10):
                tracer.start_span("execute_tool t", attributes={"gen_ai.tool.name": f"t{i}"}).end()
        assembler.sync_open()
        assert assembler.behind and pipeline.next_wait() == 0.0
        # The good run is ready after the first pass, not once the whole flood was read.
        [good] = assembler.pop_ready()
        assert good.complete and len(good.steps) > 1
        assembler.sync_open()
        assembler.sync_open()
        assert not assembler.behind and pipeline.next_wait() > 0
    flood.end()
    assert processor.force_flush(10_000)
    processor.shutdown()
    assert len(sink.exported) == 1  # the flood's run (the good one was taken by the test)
