"""Reading trace files into runs for the offline commands, in this process or in worker processes
(``--jobs``), the runs and their order the same either way.

A run must be rebuilt from all its spans, and a log record's events joined to their span, so the
files that hold one trace must be read together. Which traces a file holds is known only once it is
decoded, and decoding is half the work: a first pass to find them would read everything twice.
So the files are cut into batches of consecutive files (eight per worker); a worker reads one
batch at a time, its files together, rebuilds and grades the runs they hold, and sends back what it
read (each file's summary and the verdicts: small values). Batches that turn out to share a trace
(a trace split across files far apart, log records in a file of their own, a span read twice) are
then read again together, each such group by one worker. Files that share no trace with another
batch, the common case (one trace per file, as Tempo and Jaeger give them; the formats of one
recording side by side), are read once.

Workers get what they need as arguments and send back pickled values, so they work however they
are started. On Linux, when this process runs no other thread (the commands, which read before they
start any sink), they are forked: ready in about 10 ms, where a ``forkserver`` or ``spawn`` worker
imports the package again (300 to 800 ms measured here, most of what two cores save on 500 runs).
A process that runs threads (an application's, a sink's) could fork one holding a lock: its workers
come from ``forkserver`` (``spawn`` where there is none). Nothing starts a process at import; with
one job, or fewer than two files, there is no pool at all.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING

from otel_traj import env
from otel_traj.adapters.files import (
    SkippedFile,
    TraceFile,
    TraceFileError,
    expand_paths,
    ignored_files,
    read_files,
)
from otel_traj.config import AssemblerConfig
from otel_traj.offline import grader, trajectories_from_views
from otel_traj.spanview import MalformedSpan

if TYPE_CHECKING:
    from concurrent.futures import Executor
    from multiprocessing.context import BaseContext

    from otel_traj.policy import Policy
    from otel_traj.trajectory import Trajectory
    from otel_traj.verdict import Verdict

Entry = tuple[Path, bool]  # a file to read, and whether it was named explicitly
Grade = Callable[[Sequence["Trajectory"]], list["Verdict"]]
# Batches of consecutive files per worker in the first pass: enough that one slow batch does not
# leave a worker idle long, few enough that each reads many files at once.
TASKS_PER_WORKER = 8
# Below this much input the automatic count (0: one per core) reads in this process: starting the
# workers and sending their runs back costs what a second core saves (measured on two cores: two
# files 0.35 s in one process, 0.40 s with two; 116 runs in 9.9 MB 0.58 s and 0.56 s; 580 runs in
# 42.9 MiB 847 ms and 595 ms). A count given explicitly is always used.
AUTO_MIN_BYTES = 16 * 1024 * 1024


class WorkerError(TraceFileError):
    """A worker process failed on a file (an error other than the file being unreadable, or the
    process killed): ``str()`` is ``"<path>: <what happened>"``."""


@dataclass(frozen=True, slots=True)
class FileRead:
    """One trace file read: its format, how many spans and GenAI events of log records (and log
    records it could not read) it held, the traces of its spans and of its events, and how many
    spans it held that could not be read (an id that is no hex string, a field of the wrong type),
    of which ``kept_malformed`` were kept in their traces as unreadable steps (their trace id read)."""

    path: Path
    format: str
    spans: int
    events: int
    unreadable_records: int
    span_traces: frozenset[int]
    event_traces: frozenset[int]
    malformed_spans: int = 0
    kept_malformed: int = 0

    @classmethod
    def of(cls, file: TraceFile) -> FileRead:
        spans = frozenset(view.trace_id for view in file.views)
        events = frozenset(trace_id for trace_id, _ in file.events.by_span)
        kept = sum(isinstance(view, MalformedSpan) for view in file.views) if file.malformed else 0
        counts = (len(file.views) - kept, file.events.events, file.events.malformed)
        return cls(file.path, file.format, *counts, spans, events, file.malformed, kept)

    @property
    def traces(self) -> frozenset[int]:
        return self.span_traces | self.event_traces


@dataclass(frozen=True, slots=True)
class Inputs:
    """What a set of paths held: each file read, in the order read; each passed over, by path; and
    how many GenAI events of log records name no span read."""

    files: list[FileRead]
    skipped: list[SkippedFile]
    unattached: int = 0


@dataclass(frozen=True, slots=True)
class Part:
    """What some files read together gave: their inputs, their runs ordered by start time, and the
    runs' verdicts when they were graded where read (else None)."""

    inputs: Inputs
    trajectories: list[Trajectory]
    verdicts: list[Verdict] | None = None


def job_count(jobs: int | None = None, input_bytes: int | None = None) -> int:
    """Worker processes for ``jobs``: None reads ``OTEL_TRAJ_JOBS``; 0 is one per core this process
    may run on, when ``input_bytes`` (unknown: None) is at least ``AUTO_MIN_BYTES``, else one."""
    count = env.JOBS.read() if jobs is None else env.SIZE.require("jobs", jobs)
    if count:
        return count
    return _cores() if input_bytes is None or input_bytes >= AUTO_MIN_BYTES else 1


def _cores() -> int:
    if hasattr(os, "process_cpu_count"):  # Python 3.13: the cores this process may run on
        return int(os.process_cpu_count() or 1)
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def read_parts(
    paths: Iterable[str | Path], config: AssemblerConfig, policy: Policy | None, jobs: int | None
) -> Part:
    """The inputs, runs and (graded by worker processes only) verdicts of the files at ``paths``.
    Raises ``TraceFileError`` for the first unreadable file in the order given, as one process
    reading them in that order would."""
    ignored: list[Path] = []
    entries = list(expand_paths(paths, ignored))
    workers = min(job_count(jobs, _size(entries)), len(entries))
    parts = _in_workers(entries, config, policy, workers) if workers > 1 else [read_part(entries, config)]
    return _merged(entries, parts, ignored_files(ignored))


def _size(entries: Sequence[Entry]) -> int:
    total = 0
    for path, _ in entries:
        try:
            total += path.stat().st_size
        except OSError:
            continue  # named when it is read
    return total


def read_part(entries: Sequence[Entry], config: AssemblerConfig, grade: Grade | None = None) -> Part:
    """Read ``entries`` together and rebuild their runs; with ``grade``, grade them too."""
    inputs = read_files(entries)
    trajectories = trajectories_from_views(inputs.views, config)
    verdicts = grade(trajectories) if grade is not None else None
    summary = Inputs([FileRead.of(file) for file in inputs.files], inputs.skipped, inputs.unattached)
    return Part(summary, trajectories, verdicts)


def _in_workers(
    entries: list[Entry], config: AssemblerConfig, policy: Policy | None, workers: int
) -> list[Part]:
    # Loaded here: reading in this process pays nothing for the pool.
    from concurrent.futures import ProcessPoolExecutor

    pool = ProcessPoolExecutor(
        workers, mp_context=_context(), initializer=_start_worker, initargs=(config, policy)
    )
    try:
        size = -(-len(entries) // (workers * TASKS_PER_WORKER))
        units = [entries[start : start + size] for start in range(0, len(entries), size)]
        alone = _gathered(pool, units)
        groups = _sharing(alone)
        joined = [[entry for i in group for entry in units[i]] for group in groups if len(group) > 1]
        again = iter(_gathered(pool, joined))
        return [next(again) if len(group) > 1 else alone[group[0]] for group in groups]
    finally:
        pool.shutdown(cancel_futures=True)


def _context() -> BaseContext:
    import multiprocessing
    import sys
    import threading

    methods = multiprocessing.get_all_start_methods()
    if sys.platform == "linux" and threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    if "forkserver" not in methods:
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    # The server imports the reading code once; each worker forked from it starts with it loaded.
    context.set_forkserver_preload([__name__])
    return context


def _gathered(pool: Executor, units: list[list[Entry]]) -> list[Part]:
    """Each unit's part, in order; the first error in that order is raised."""
    from concurrent.futures.process import BrokenProcessPool

    results: Iterator[Part] = pool.map(_read_in_worker, units)
    parts: list[Part] = []
    for unit in units:
        try:
            parts.append(next(results))
        except BrokenProcessPool:
            reason = "a worker process stopped abruptly (killed, or out of memory) reading it or one near it"
            raise WorkerError(unit[0][0], reason) from None
    return parts


def _sharing(parts: list[Part]) -> list[list[int]]:
    """The indices of ``parts`` grouped so that no two groups hold one trace, each group in order
    and the groups in the order of their first index."""
    owner: dict[int, int] = {}
    root = list(range(len(parts)))

    def find(i: int) -> int:
        while root[i] != i:
            root[i] = root[root[i]]
            i = root[i]
        return i

    for i, part in enumerate(parts):
        for file in part.inputs.files:
            for trace_id in file.traces:
                first = owner.setdefault(trace_id, i)
                a, b = sorted((find(first), find(i)))
                root[b] = a
    groups: dict[int, list[int]] = {}
    for i in range(len(parts)):
        groups.setdefault(find(i), []).append(i)
    return list(groups.values())


def _merged(entries: list[Entry], parts: list[Part], ignored: list[SkippedFile]) -> Part:
    """The parts as one, in the order one process reading ``entries`` in turn gives."""
    index: dict[Path, int] = {}
    for i, (path, _) in enumerate(entries):
        index.setdefault(path, i)
    files = sorted((f for part in parts for f in part.inputs.files), key=lambda f: index[f.path])
    skipped = sorted([*(s for part in parts for s in part.inputs.skipped), *ignored], key=lambda s: s.path)
    unattached = sum(part.inputs.unattached for part in parts)
    trajectories = sorted((t for part in parts for t in part.trajectories), key=_start)
    graded = [part.verdicts for part in parts if part.verdicts is not None]
    verdicts = None
    if len(graded) == len(parts):
        verdicts = sorted(chain.from_iterable(graded), key=lambda v: _start(v.trajectory))
    return Part(Inputs(files, skipped, unattached), trajectories, verdicts)


def _start(trajectory: Trajectory) -> tuple[int, int]:
    return trajectory.start_ns, trajectory.trace_id


# A worker's settings and grader, made once when it starts (``_start_worker``): the grader plans a
# policy's checks once, not for every file.
_SETTINGS: list[tuple[AssemblerConfig, Grade | None]] = []


def _start_worker(config: AssemblerConfig, policy: Policy | None) -> None:
    # What a forked worker shares with its parent stays out of its collections: scanning it would
    # copy the parent's memory page by page.
    gc.freeze()
    _SETTINGS.append((config, grader(policy) if policy is not None else None))


def _read_in_worker(unit: list[Entry]) -> Part:
    config, grade = _SETTINGS[-1]
    try:
        return read_part(unit, config, grade)
    except TraceFileError:
        raise
    except Exception as exc:
        # The parent names the file; the worker's traceback follows as the cause.
        others = f" (read with {len(unit) - 1} other files)" if len(unit) > 1 else ""
        raise WorkerError(unit[0][0], f"{type(exc).__name__}: {exc}{others}") from exc
