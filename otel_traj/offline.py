"""Offline front door: trajectories from spans read out of files (or any finished batch of spans).

Uses the same assembler, dialects and builder as the in-process processor, so the same spans give the
same trajectory whichever way they arrive.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import replace

from otel_traj.assembler import Assembler
from otel_traj.builder import build_trajectory
from otel_traj.config import AssemblerConfig
from otel_traj.spanview import SpanView
from otel_traj.stats import PipelineStats
from otel_traj.trajectory import Trajectory
from otel_traj.verdict import Verdict


def trajectories_from_views(
    views: Iterable[SpanView],
    config: AssemblerConfig | None = None,
    stats: PipelineStats | None = None,
) -> list[Trajectory]:
    """One trajectory per trace that holds GenAI spans, ordered by start time.

    Files hold all there is: a span whose parent is not among the spans given has no parent here
    (it is a local root, and no trace waits for that parent).
    """
    spans = list(views)
    present: dict[int, set[int]] = defaultdict(set)
    for view in spans:
        present[view.trace_id].add(view.span_id)
    assembler = Assembler(config=config, stats=stats)
    make_record = assembler.make_record
    assembler.add_all(
        [
            make_record(
                view
                if view.parent_id is None or view.parent_id in present[view.trace_id]
                else replace(view, parent_id=None, parent_is_remote=False)
            )
            for view in spans
        ]
    )
    finished = assembler.pop_ready(flush=True, expire_all=True)
    trajectories = [build_trajectory(f.context, f.steps, complete=f.complete) for f in finished]
    trajectories.sort(key=lambda t: (t.start_ns, t.trace_id))
    return trajectories


def grade_views(
    views: Iterable[SpanView],
    grade: Callable[[Trajectory], Verdict],
    config: AssemblerConfig | None = None,
) -> list[Verdict]:
    return [grade(t) for t in trajectories_from_views(views, config)]
