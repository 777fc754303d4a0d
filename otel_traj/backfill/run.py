"""Runs rebuilt from a Langfuse project's traces, oldest first, for grading through the offline path.

Each trace's observations become span views (``adapters.langfuse_api``) and a run through the same
assembler and builder as files and the processor. A run read with problems (an observation not
ended, metadata truncated, a parent missing, span attributes the server did not keep, what
``fidelity`` finds lost) is marked not complete, its outcome ``incomplete``, and the problems are
in its ``errors``: never a silent pass.

Where the next ``--since last`` starts (:attr:`Backfilled.cursor_ns`): the start of the first trace
not handled (still running, or not read because reading failed), else that of the newest trace
handled. Starts are inclusive, so that trace is read again; its scores have the same ids.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from otel_traj.adapters.langfuse_api import views_from_observations
from otel_traj.backfill.fidelity import (
    ATTRIBUTES_NOT_KEPT,
    attribute_problems,
    event_problems,
    message_problems,
    settle_ties,
)
from otel_traj.backfill.http import ReadError
from otel_traj.offline import trajectories_from_views
from otel_traj.progress import Progress

if TYPE_CHECKING:
    from otel_traj.backfill.langfuse import LangfuseReader, TraceFilter
    from otel_traj.config import AssemblerConfig
    from otel_traj.trajectory import Trajectory

# Problems quoted in a run's errors; the rest are counted.
PROBLEMS_SHOWN = 3


@dataclass(slots=True)
class Backfilled:
    """The runs read, what became of every trace listed, and where the next run starts."""

    runs: list[Trajectory] = field(default_factory=list)
    listed: int = 0
    read: int = 0
    incomplete: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    failure: str | None = None
    cursor_ns: int | None = None


def incomplete(run: Trajectory, problems: list[str], source: str) -> Trajectory:
    """The run marked not fully read from ``source``, with the problems in its errors."""
    shown = "; ".join(problems[:PROBLEMS_SHOWN])
    more = f" and {len(problems) - PROBLEMS_SHOWN} more" if len(problems) > PROBLEMS_SHOWN else ""
    errors = [*run.errors, f"not fully read from {source}: {shown}{more}"]
    return replace(run, complete=False, errors=errors)


def read_langfuse_runs(
    reader: LangfuseReader, query: TraceFilter, *, limit: int | None, config: AssemblerConfig
) -> Backfilled:
    """The runs of the traces ``query`` selects, at most ``limit`` traces (the oldest)."""
    out = Backfilled()
    refs = reader.traces(query)
    out.listed = len(refs)
    if limit is not None:
        out.skipped["over --limit"] = max(0, len(refs) - limit)
        refs = refs[:limit]
    frontier: int | None = None
    newest: int | None = None
    with Progress(len(refs), "reading") as progress:
        for ref in refs:
            progress.advance()
            if not ref.ended:
                out.skipped["still running"] += 1
                frontier = ref.start_ns if frontier is None else frontier
                continue
            try:
                observations = reader.observations(ref.trace_id)
            except ReadError as exc:
                out.failure = f"trace {ref.trace_id}: {exc}"
                frontier = ref.start_ns if frontier is None else frontier
                break
            out.read += 1
            newest = ref.start_ns
            views = views_from_observations(observations)
            runs = trajectories_from_views(views.views, config)
            if not runs:
                # Without the spans' attributes, no GenAI observation may only mean none was recognized.
                out.skipped[ATTRIBUTES_NOT_KEPT if views.without_attributes else "no GenAI observations"] += 1
                continue
            lost = [*event_problems(views.views), *attribute_problems(views.without_attributes)]
            for read in runs:
                run, unsettled = settle_ties(read)
                problems = [
                    *views.problems,
                    *lost,
                    *unsettled,
                    *message_problems(run, views.dropped_messages),
                ]
                if problems:
                    run = incomplete(run, problems, "Langfuse")
                    out.incomplete += 1
                out.runs.append(run)
    out.runs.sort(key=lambda run: (run.start_ns, run.trace_id))
    out.cursor_ns = frontier if frontier is not None else newest
    return out
