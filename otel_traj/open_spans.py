"""Which traces still have spans open, in-process, without a lock on the application's threads.

``on_start`` and ``on_end`` only append to deques (``deque.append`` is atomic in CPython and costs a
few tens of nanoseconds): trace ids of started and ended spans, and the raw spans that may carry a
step. The worker drains them, keeps the per-trace counts and parses the spans. Ends are
drained before starts: every drained end's start was appended earlier, so it is in the starts drained
right after, and a count never goes below zero or reaches zero while a span is open.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")


# (trace id, span id, start ns, end ns) of an ended local root: a plain tuple, the cheapest to build.
RootEnd = tuple[int, int, int, int]


@dataclass(slots=True)
class Drained:
    """What changed since the last drain: traces whose count changed, plain spans ended, roots."""

    touched: set[int]
    plain_ends: list[int]
    roots: list[RootEnd]
    candidates: list[Any]
    malformed: int


def _drain(queue: deque[T]) -> list[T]:
    out: list[T] = []
    pop = queue.popleft
    try:
        while True:
            out.append(pop())
    except IndexError:
        return out


class OpenSpans:
    def __init__(self) -> None:
        self._starts: deque[int] = deque()
        self._ends: deque[int] = deque()
        self._plain_ends: deque[int] = deque()
        self._roots: deque[RootEnd] = deque()
        # Raw spans that may carry a step (or a captured attribute), parsed by the worker.
        self.candidates: deque[Any] = deque()
        self._malformed: deque[int] = deque()
        self._open: dict[int, int] = {}
        # Bound C methods, called directly from the span hooks.
        self.started = self._starts.append
        self.ended = self._ends.append
        self.ended_plain = self._plain_ends.append
        self.root_ended = self._roots.append
        self.candidate = self.candidates.append
        self.ended_malformed = self._malformed.append

    def drain(self) -> Drained:
        """Worker thread only."""
        ends = _drain(self._ends)
        plain = _drain(self._plain_ends)
        malformed = _drain(self._malformed)
        # After the ends: every candidate whose end was drained is in this drain too.
        candidates = _drain(self.candidates)
        starts = _drain(self._starts)
        roots = _drain(self._roots)
        counts = self._open
        for trace_id in starts:
            counts[trace_id] = counts.get(trace_id, 0) + 1
        touched = set(ends)
        touched.update(plain)
        touched.update(malformed)
        for group in (ends, plain, malformed):
            for trace_id in group:
                left = counts.get(trace_id, 0) - 1
                if left > 0:
                    counts[trace_id] = left
                else:
                    counts.pop(trace_id, None)
        return Drained(touched, plain, roots, candidates, len(malformed))

    def is_open(self, trace_id: int) -> bool:
        return trace_id in self._open
