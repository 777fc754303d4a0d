"""Pipeline, driven directly: grading batches of assembled runs, a failing grader costing only its
run, the order of sinks and callbacks, and the receiver waking an idle worker."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from otel_traj.adapters.otlp_proto import views_from_bytes
from otel_traj.config import AssemblerConfig
from otel_traj.pipeline import Pipeline, ungraded
from otel_traj.records import SpanRecord
from otel_traj.serve.ingest import Ingest
from otel_traj.sinks.base import Sink
from otel_traj.steps import ToolCall
from otel_traj.trajectory import Trajectory
from otel_traj.verdict import Verdict

REAL = Path(__file__).parent / "fixtures" / "real"

MakePipeline = Callable[..., Pipeline]


@pytest.fixture
def make_pipeline() -> Iterator[MakePipeline]:
    """``make_pipeline(**arguments)`` makes a Pipeline; each is shut down after the test."""
    made: list[Pipeline] = []

    def make(**kwargs: Any) -> Pipeline:
        made.append(Pipeline(**kwargs))
        return made[-1]

    yield make
    for pipeline in made:
        pipeline.shutdown()


def _tool_span(trace_id: int) -> SpanRecord:
    """A received root span holding one tool call."""
    step = ToolCall(name="t", span_id=10, start_ns=1, end_ns=2)
    return SpanRecord(
        trace_id=trace_id,
        span_id=10,
        parent_id=None,
        is_local_root=True,
        start_ns=1,
        end_ns=2,
        step=step,
        captured=[],
        metadata=None,
        resource={},
    )


def test_a_run_that_fails_to_grade_does_not_drop_the_others(make_pipeline: MakePipeline) -> None:
    def grade(trajectory: Trajectory) -> Verdict:
        if trajectory.trace_id == 1:
            raise RuntimeError("broken policy code")
        return ungraded(trajectory)

    verdicts: list[Verdict] = []
    pipeline = make_pipeline(grade=grade, callbacks=[verdicts.append], config=AssemblerConfig(grace_s=60))
    records = [_tool_span(trace_id) for trace_id in (1, 2, 3)]
    pipeline.assembler.add_all(records)
    assert pipeline.process(flush=True) == 3
    pipeline.shutdown()
    assert sorted(v.trajectory.trace_id for v in verdicts) == [2, 3]
    assert pipeline.stats.internal_errors == 1


def test_runs_are_graded_together_and_one_by_one_only_when_that_fails(make_pipeline: MakePipeline) -> None:
    batches: list[list[int]] = []

    def grade(trajectory: Trajectory) -> Verdict:
        if trajectory.trace_id == 1:
            raise RuntimeError("broken policy code")
        return ungraded(trajectory)

    def grade_all(trajectories: Sequence[Trajectory]) -> list[Verdict]:
        batches.append([t.trace_id for t in trajectories])
        return [grade(t) for t in trajectories]

    verdicts: list[Verdict] = []
    pipeline = make_pipeline(
        grade=grade, grade_all=grade_all, callbacks=[verdicts.append], config=AssemblerConfig(grace_s=60)
    )
    for trace_ids in ((2, 3), (1, 4, 5)):
        pipeline.assembler.add_all([_tool_span(trace_id) for trace_id in trace_ids])
        pipeline.process(flush=True)
    pipeline.shutdown()
    # Each tick's runs in one call; the failing batch again one by one, losing only the broken run.
    assert batches == [[2, 3], [1, 4, 5]]
    assert [v.trajectory.trace_id for v in verdicts] == [2, 3, 4, 5]
    assert pipeline.stats.internal_errors == 1


def test_callbacks_see_verdicts_every_sink_already_has(make_pipeline: MakePipeline) -> None:
    class Recording(Sink):
        def __init__(self) -> None:
            super().__init__()
            self.exported: list[int] = []

        def export(self, verdict: Verdict) -> None:
            self.exported.append(verdict.trajectory.trace_id)

    sinks = [Recording(), Recording()]
    seen: list[tuple[int, list[int], list[int]]] = []
    pipeline = make_pipeline(
        sinks=sinks,
        callbacks=[lambda v: seen.append((v.trajectory.trace_id, *(list(s.exported) for s in sinks)))],
        config=AssemblerConfig(grace_s=60),
    )
    pipeline.assembler.add_all([_tool_span(trace_id) for trace_id in (1, 2)])
    pipeline.process(flush=True)
    pipeline.shutdown()
    assert seen == [(1, [1, 2], [1, 2]), (2, [1, 2], [1, 2])]


def test_the_receiver_wakes_an_idle_worker(make_pipeline: MakePipeline) -> None:
    # A worker that, idle, would sleep an hour: only the receiver's wake gets the run graded.
    graded = threading.Event()
    pipeline = make_pipeline(
        callbacks=[lambda verdict: graded.set()], config=AssemblerConfig(grace_s=0), idle_tick_s=3600
    )
    assert pipeline.next_wait() == 3600
    ingest = Ingest(pipeline)
    ingest.accept(views_from_bytes((REAL / "pydantic_ai" / "clean.otlp.pb").read_bytes()))
    assert graded.wait(30)
    pipeline.shutdown()
