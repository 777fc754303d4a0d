"""Offline front door: trajectories from spans read out of files (or any finished batch of spans).

Uses the same assembler, dialects and builder as the in-process processor, so the same spans give the
same trajectory whichever way they arrive.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable

from otel_traj.assembler import Assembler, SpanRecord
from otel_traj.builder import build_trajectory
from otel_traj.config import AssemblerConfig
from otel_traj.dialects import to_step
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

    A span whose parent is not among the spans given is the trace's local root (a file holds what one
    process or one backend saw).
    """
    config = config or AssemblerConfig()
    spans = list(views)
    present: dict[int, set[int]] = defaultdict(set)
    for view in spans:
        present[view.trace_id].add(view.span_id)
    assembler = Assembler(config, stats, track_starts=False)
    records: list[SpanRecord] = []
    for view in spans:
        is_root = view.parent_id is None or view.parent_id not in present[view.trace_id]
        records.append(
            (
                view.trace_id,
                view.span_id,
                None if is_root else view.parent_id,
                is_root,
                view.start_ns,
                view.end_ns,
                to_step(view, config.max_chars),
                view.attributes,
                view.resource,
            )
        )
    assembler.add_all(records)
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
