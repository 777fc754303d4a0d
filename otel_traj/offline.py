"""The offline path: trace files (spans and the GenAI events of log records) -> runs -> verdicts and
conversation verdicts -> sinks, for ``otel-traj grade``, ``gate`` and ``policy suggest``.

The same assembler, dialects and builder as the in-process processor rebuild the runs, so the same
spans give the same trajectory whichever way they arrive; the runs are graded in batches as the
pipeline's worker grades them and handed to the same sinks as ``otel-traj serve``'s
(``otel_traj.outputs``).
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from otel_traj.assembler import Assembler
from otel_traj.builder import build_trajectory
from otel_traj.config import AssemblerConfig
from otel_traj.pipeline import ungraded
from otel_traj.progress import Progress
from otel_traj.spanview import SpanView
from otel_traj.stats import PipelineStats
from otel_traj.trajectory import Trajectory
from otel_traj.verdict import Verdict

if TYPE_CHECKING:
    from otel_traj.cases import CasesReport, GoldenCase
    from otel_traj.conversations import ConversationVerdict
    from otel_traj.offline_read import Inputs
    from otel_traj.policy import Policy
    from otel_traj.sinks.base import Sink

logger = logging.getLogger("otel_traj")

# Runs graded together (check by check, as the worker grades a tick's runs) and handed to the sinks
# before the next batch is graded; the sinks are flushed between batches, so an input larger than a
# sink's queue waits for room instead of being dropped. A batch must fit every sink's queue: 256
# verdicts are a few thousand Langfuse scores (queue 10,000) and 256 events (queue 10,000).
BATCH_SIZE = 256
# How long delivery may wait on the sinks, in all (grading is not counted).
DELIVERY_TIMEOUT_MS = 30_000

T = TypeVar("T")


@dataclass(slots=True, frozen=True)
class Runs:
    """What trace files held: the inputs read (files, skipped files, log records' events) and the
    runs rebuilt from them, ordered by start time; ``verdicts``: the runs graded where they were read
    (by worker processes) with ``graded_by``, else None (:func:`grade_runs` grades them)."""

    inputs: Inputs
    trajectories: list[Trajectory]
    verdicts: list[Verdict] | None = None
    graded_by: Policy | None = None


@dataclass(slots=True, frozen=True)
class Graded:
    """The verdicts of the runs (in their order), the conversations' verdicts (None without a
    policy) and, with golden cases, the cases' report."""

    verdicts: list[Verdict]
    conversations: list[ConversationVerdict] | None = None
    cases: CasesReport | None = None


def read_runs(
    paths: Sequence[str | Path],
    *,
    policy: Policy | None = None,
    cases: Sequence[GoldenCase] | None = None,
    match_on: str | None = None,
    capture: Iterable[str] = (),
    jobs: int | None = 1,
) -> Runs:
    """The runs the trace files at ``paths`` (files or directories) hold. Like the processor, each
    run keeps the attributes its policy's scope subject may be read from, the attribute that names
    its golden case and ``capture``, from any span of its trace. Raises ``TraceFileError``.

    ``jobs``: worker processes that read, rebuild and grade (with ``policy``) the files, the runs
    the same and in the same order as one process gives them (None: ``OTEL_TRAJ_JOBS``, as the
    commands' ``--jobs``; 0: one per core from 16 MiB of input; with one, the default, or fewer
    than two files, this process reads them). Workers not forked (when this process runs threads,
    or off Linux) import the caller's main module, as ``multiprocessing`` does: a script that asks
    for them guards its entry point with ``if __name__ == "__main__"``.
    """
    from otel_traj.offline_read import read_parts

    config = offline_config(policy, cases, match_on, capture)
    part = read_parts(paths, config, policy, jobs)
    graded_by = policy if part.verdicts is not None else None
    return Runs(part.inputs, part.trajectories, part.verdicts, graded_by)


def offline_config(
    policy: Policy | None,
    cases: Sequence[GoldenCase] | None = None,
    match_on: str | None = None,
    capture: Iterable[str] = (),
) -> AssemblerConfig:
    """The assembler's settings for files: the attributes a run keeps from any span of its trace are
    ``capture``, those ``policy``'s scope subjects may be read from and those naming golden cases."""
    keys = tuple(capture)
    if policy is not None:
        from otel_traj.live import subject_attributes

        keys += subject_attributes(policy)
    if cases is not None:
        keys += tuple(key for key in (match_on, *(c.match_on for c in cases)) if key)
    return AssemblerConfig().with_capture(keys)


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


def grade_runs(
    runs: Runs | Sequence[Trajectory],
    *,
    policy: Policy | None = None,
    cases: Sequence[GoldenCase] | None = None,
    match_on: str | None = None,
    sinks: Sequence[Sink] = (),
    timeout_millis: int = DELIVERY_TIMEOUT_MS,
    batch_size: int = BATCH_SIZE,
) -> Graded:
    """Grade ``runs`` with ``policy`` (none: rebuilt, not graded), and their conversations,
    and hand every verdict to each sink's ``export`` and every conversation's to its
    ``export_conversation``, as the pipeline does; then flush and shut the sinks down.

    With ``cases`` each verdict is also graded against its golden case (which needs every run, so
    the sinks get the verdicts once all are graded). ``timeout_millis`` bounds the time spent waiting
    on the sinks, in all: what a sink has not delivered by then it counts as dropped. ``batch_size``:
    runs graded together and handed to the sinks, which are flushed before the next batch. Runs
    :func:`read_runs` graded with ``policy`` as it read them are not graded again.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size={batch_size}: must be at least 1")
    trajectories = runs.trajectories if isinstance(runs, Runs) else runs
    if isinstance(runs, Runs) and runs.verdicts is not None and runs.graded_by is policy:
        grade_all = _given(runs.verdicts)
    else:
        grade_all = grader(policy)
    delivery = _Delivery(sinks, timeout_millis)
    graded: list[Verdict] = []
    conversations = report = None
    try:
        with Progress(len(trajectories), "grading") as progress:
            for batch in _batches(trajectories, batch_size):
                verdicts = grade_all(batch)
                graded.extend(verdicts)
                progress.advance(len(batch))
                if cases is None:
                    delivery.export(verdicts)
        if policy is not None:
            from otel_traj.conversations import conversation_verdicts

            conversations = conversation_verdicts(graded, policy)
        if cases is not None:
            from otel_traj.cases import apply_cases

            graded, report = apply_cases(graded, cases, match_on)
            for cased in _batches(graded, batch_size):
                delivery.export(cased)
        for talks in _batches(conversations or [], batch_size):
            delivery.export_conversations(talks)
    finally:
        # Whatever happened, the sinks deliver what they were given and stop their threads.
        delivery.close()
    return Graded(graded, conversations, report)


def grade_views(
    views: Iterable[SpanView],
    *,
    policy: Policy | None = None,
    config: AssemblerConfig | None = None,
    sinks: Sequence[Sink] = (),
    timeout_millis: int = DELIVERY_TIMEOUT_MS,
) -> Graded:
    """:func:`grade_runs` on the runs ``views`` hold (:func:`trajectories_from_views`; ``config``
    defaults to :func:`offline_config` of ``policy``)."""
    runs = trajectories_from_views(views, config if config is not None else offline_config(policy))
    return grade_runs(runs, policy=policy, sinks=sinks, timeout_millis=timeout_millis)


def grader(policy: Policy | None) -> Callable[[Sequence[Trajectory]], list[Verdict]]:
    """The verdicts of a batch of runs graded with ``policy`` (none: rebuilt, not graded)."""
    if policy is None:
        return lambda batch: [ungraded(t) for t in batch]
    from otel_traj.grader import Grader

    return Grader(policy).grade_all


def _given(verdicts: Sequence[Verdict]) -> Callable[[Sequence[Trajectory]], list[Verdict]]:
    """The verdicts already given for each batch of runs, batch after batch."""
    left = iter(verdicts)
    return lambda batch: list(islice(left, len(batch)))


def _batches(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


class _Delivery:
    """The sinks' side of the offline path: each batch handed to every sink (one that raises is
    logged and counted, and the others go on), then every sink flushed (judges first, ahead of the
    sinks they publish to) within what is left of the time allowed for waiting."""

    def __init__(self, sinks: Sequence[Sink], timeout_millis: int) -> None:
        self.sinks = list(sinks)
        self._left_s = max(0, timeout_millis) / 1000

    def export(self, verdicts: Sequence[Verdict]) -> None:
        for sink in self.sinks:
            for verdict in verdicts:
                _guarded(sink, sink.export, verdict)
        self._flush()

    def export_conversations(self, verdicts: Sequence[ConversationVerdict]) -> None:
        for sink in self.sinks:
            for verdict in verdicts:
                _guarded(sink, sink.export_conversation, verdict)
        self._flush()

    def close(self) -> None:
        self._flush()
        for sink in self.sinks:
            self._wait(sink, sink.shutdown)

    def _flush(self) -> None:
        for sink in self.sinks:
            self._wait(sink, sink.force_flush)

    def _wait(self, sink: Sink, call: Callable[[int], object]) -> None:
        started = time.monotonic()
        _guarded(sink, call, int(self._left_s * 1000))
        self._left_s = max(0.0, self._left_s - (time.monotonic() - started))


def _guarded(sink: Sink, call: Callable[[T], object], arg: T) -> None:
    try:
        call(arg)
    except Exception:
        sink.stats.count_sink_error(type(sink).__name__)
        logger.exception("sink %s failed", type(sink).__name__)
