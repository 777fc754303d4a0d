"""Which traces still have spans open, in-process, without a lock on the application's threads.

The span hooks only append to deques (``deque.append`` is atomic in CPython and costs a few tens of
nanoseconds): ``on_start`` the trace id of the started span, ``on_end`` the ended span itself. Even
the test whether an ended span can matter runs on the worker, which drains the deques each tick,
triages the ended spans (may it carry a step? is it a local root?), keeps the per-trace open counts
and hands on the spans that may carry a step. Ends are drained before starts: every drained end's
start was appended earlier, so it is in the starts drained right after, and a count never goes below
zero or reaches zero while a span is open.

When the worker falls ``max_backlog`` spans behind, the hook triages the span itself and keeps only
its trace id (and root end): the step it may carry is dropped and counted, the open count stays right.
"""

from __future__ import annotations

from collections import deque
from contextlib import suppress
from dataclasses import dataclass
from typing import Any, TypeVar

from otel_traj.adapters.sdk import RootEnd, triage

T = TypeVar("T")


@dataclass(slots=True)
class Drained:
    """What changed since the last drain: traces whose count changed, plain spans ended, roots,
    the spans that may carry a step, and how many ended spans could not be read."""

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
    def __init__(self, interesting: frozenset[str]) -> None:
        # Attribute keys that make a span worth parsing (dialect markers and captured keys).
        self._interesting = interesting
        self._starts: deque[int] = deque()
        self.ended_spans: deque[Any] = deque()
        # Filled by the hooks only when the worker is behind (see ``ended_untriaged``).
        self._plain_ends: deque[int] = deque()
        self._roots: deque[RootEnd] = deque()
        self._malformed: deque[int] = deque()
        self._open: dict[int, int] = {}
        # Bound C methods, called directly from the span hooks.
        self.started = self._starts.append
        self.ended = self.ended_spans.append

    def ended_untriaged(self, span: Any) -> bool:
        """The worker is behind: keep the span's trace id and root end only. Returns whether a
        possible step was dropped."""
        try:
            trace_id, candidate, root = triage(span, self._interesting)
        except Exception:
            self._malformed.append(span.context.trace_id)
            return False
        if root is not None:
            self._roots.append(root)
        self._plain_ends.append(trace_id)
        return candidate

    def drain(self) -> Drained:
        """Worker thread only."""
        ended = _drain(self.ended_spans)
        plain = _drain(self._plain_ends)
        malformed = _drain(self._malformed)
        roots = _drain(self._roots)
        # After every end: the starts of the spans drained above are all in this drain.
        starts = _drain(self._starts)
        candidates: list[Any] = []
        step_ends: list[int] = []
        unreadable = len(malformed)
        interesting = self._interesting
        for span in ended:
            try:
                trace_id, candidate, root = triage(span, interesting)
            except Exception:
                unreadable += 1
                # Without even a trace id, that trace's count stays up until its TTL.
                with suppress(Exception):
                    malformed.append(span.context.trace_id)
                continue
            if root is not None:
                roots.append(root)
            if candidate:
                candidates.append(span)
                step_ends.append(trace_id)
            else:
                plain.append(trace_id)
        counts = self._open
        for trace_id in starts:
            counts[trace_id] = counts.get(trace_id, 0) + 1
        touched = set(step_ends)
        touched.update(plain)
        touched.update(malformed)
        for group in (step_ends, plain, malformed):
            for trace_id in group:
                left = counts.get(trace_id, 0) - 1
                if left > 0:
                    counts[trace_id] = left
                else:
                    counts.pop(trace_id, None)
        return Drained(touched, plain, roots, candidates, unreadable)

    def clear(self) -> None:
        """Forget every span (a forked child: the parent's spans are the parent's). In place: the
        span hooks hold the deques' bound ``append``."""
        for queue in (self._starts, self.ended_spans, self._plain_ends, self._roots, self._malformed):
            queue.clear()
        self._open.clear()

    def is_open(self, trace_id: int) -> bool:
        return trace_id in self._open

    @property
    def idle(self) -> bool:
        """No span open and nothing queued for the worker."""
        return not (
            self._open
            or self._starts
            or self.ended_spans
            or self._plain_ends
            or self._roots
            or self._malformed
        )
