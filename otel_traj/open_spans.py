"""Which traces still have spans open, in-process, without a lock on the application's threads.

The span hooks only append to deques (``deque.append`` is atomic in CPython and costs a few tens of
nanoseconds): ``on_start`` the trace id of the started span, ``on_end`` the ended span itself. The
worker drains them each tick, reads the ended spans and keeps the per-trace open counts. Ends are
drained before starts: every drained end's start was appended earlier, so it is in the starts drained
right after, and a count never goes below zero or reaches zero while a span is open.

When the worker falls ``max_backlog`` spans behind, the processor queues a record without a step
instead of the span (``ended_without_step``, or ``ended_lost_step`` when the span may have carried a
step): the step is dropped and counted, the open count stays right, and the run is known to be short.

A span that never ends would keep its trace's count forever: each count remembers when its trace was
first seen, and the assembler forgets counts past the TTL (``expire``) or when it hands over the
trace's run unfinished (``forget``).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Container, Iterable
from itertools import takewhile
from typing import Any, TypeVar

from otel_traj.records import SpanRecord

T = TypeVar("T")


def _drain(queue: deque[T], most: int | None = None) -> list[T]:
    """What ``queue`` holds, oldest first: all of it, or its ``most`` oldest."""
    out: list[T] = []
    pop = queue.popleft
    try:
        if most is None:
            while True:
                out.append(pop())
        for _ in range(min(most, len(queue))):
            out.append(pop())
    except IndexError:
        pass
    return out


class OpenSpans:
    def __init__(self) -> None:
        self._starts: deque[int] = deque()
        self.ended_spans: deque[Any] = deque()
        # Filled by the processor only when the worker is behind.
        self._stepless: deque[SpanRecord] = deque()
        self._lost: deque[SpanRecord] = deque()
        self._open: dict[int, int] = {}
        # When each counted trace was first seen, oldest first (a count reopened goes to the end).
        self._since: dict[int, float] = {}
        # Bound C methods, called directly from the span hooks.
        self.started = self._starts.append
        self.ended = self.ended_spans.append
        self.ended_without_step = self._stepless.append
        self.ended_lost_step = self._lost.append

    def drain(
        self, now: float = 0.0, most: int | None = None
    ) -> tuple[list[Any], list[SpanRecord], list[SpanRecord]]:
        """The spans ended since the last drain (at most ``most``: the rest stay queued, their traces
        still counted open), and the records queued in their place (those whose step was dropped
        apart); the starts since then are counted as open (first seen ``now``). Worker thread only;
        call ``closed`` for every drained end."""
        ended = _drain(self.ended_spans, most)
        stepless, lost = _drain(self._stepless), _drain(self._lost)
        counts, since = self._open, self._since
        for trace_id in _drain(self._starts):
            count = counts.get(trace_id)
            if count is None:
                counts[trace_id] = 1
                since[trace_id] = now
            else:
                counts[trace_id] = count + 1
        return ended, stepless, lost

    def closed(self, trace_ids: Iterable[int]) -> None:
        """One span of each trace id (repeated per span) has ended."""
        counts = self._open
        for trace_id in trace_ids:
            left = counts.get(trace_id, 0) - 1
            if left > 0:
                counts[trace_id] = left
            elif counts.pop(trace_id, None) is not None:
                self._since.pop(trace_id, None)

    def forget(self, trace_id: int) -> None:
        """Stop counting a trace's open spans (its run was handed over unfinished)."""
        if self._open.pop(trace_id, None) is not None:
            self._since.pop(trace_id, None)

    def expire(self, before: float, keep: Container[int]) -> int:
        """Forget the counts first seen before ``before``, except those of traces in ``keep`` (their
        buffer's own TTL forgets them); returns how many were forgotten. Costs what is past the TTL:
        the counts are in first-seen order."""
        since, counts = self._since, self._open
        old = [t for t, _ in takewhile(lambda item: item[1] < before, since.items())]
        forgotten = 0
        for trace_id in old:
            # Either way out of ``since``: a kept trace's count is its buffer's to forget.
            del since[trace_id]
            if trace_id not in keep:
                counts.pop(trace_id, None)
                forgotten += 1
        return forgotten

    def clear(self) -> None:
        """Forget every span (a forked child: the parent's spans are the parent's). In place: the
        span hooks hold the deques' bound ``append``."""
        for queue in (self._starts, self.ended_spans, self._stepless, self._lost):
            queue.clear()
        self._open.clear()
        self._since.clear()

    def is_open(self, trace_id: int) -> bool:
        return trace_id in self._open

    @property
    def idle(self) -> bool:
        """No span open and nothing queued for the worker."""
        return not (self._open or self._starts or self.ended_spans or self._stepless or self._lost)
