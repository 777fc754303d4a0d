"""One thread that calls what is due: the gRPC receiver's deadlines for a call's message.

grpcio's sync server gives a handler no way to wait for a message with a timeout; a call cancelled
from another thread wakes the handler waiting for it. A timer thread per call would cost a thread
start on every export: here every deadline shares one thread and a heap.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable

logger = logging.getLogger("otel_traj.serve")


class Deadline:
    """A call scheduled by :meth:`Deadlines.call_at`; :meth:`cancel` before it is due and it never runs."""

    __slots__ = ("callback", "cancelled")

    def __init__(self, callback: Callable[[], None]) -> None:
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class Deadlines:
    def __init__(self, *, name: str, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._heap: list[tuple[float, int, Deadline]] = []
        self._order = itertools.count()
        self._changed = threading.Condition()
        self._closed = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def call_after(self, delay_s: float, callback: Callable[[], None]) -> Deadline:
        deadline = Deadline(callback)
        with self._changed:
            heapq.heappush(self._heap, (self._clock() + delay_s, next(self._order), deadline))
            if self._heap[0][2] is deadline:
                self._changed.notify()
        return deadline

    def close(self) -> None:
        """Stop the thread; what is still scheduled never runs."""
        with self._changed:
            self._closed = True
            self._changed.notify()
        self._thread.join()

    def _run(self) -> None:
        while True:
            with self._changed:
                while not self._closed and not self._due():
                    timeout = self._heap[0][0] - self._clock() if self._heap else None
                    self._changed.wait(timeout)
                if self._closed:
                    return
                deadline = heapq.heappop(self._heap)[2]
            if deadline.cancelled:
                continue
            try:
                deadline.callback()
            except Exception:
                logger.exception("a deadline's callback failed")

    def _due(self) -> bool:
        return bool(self._heap) and self._heap[0][0] <= self._clock()
