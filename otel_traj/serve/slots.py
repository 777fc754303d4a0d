"""The places a receiver gives requests: ``Arrivals`` while a request's body (HTTP) or message (gRPC)
is still arriving, ``Busy`` while it is decoded and admitted.

They are kept apart so that a slow sender waits among senders only: it never holds a place a request
whose bytes are all there needs to be decoded. Arrivals are bounded by cutting the one that has waited
longest (the newcomer gets in), so a slow sender cannot keep anyone out either; a request that is cut
is told to retry (503 / ``CANCELLED``).
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from otel_traj import env


class Arrivals:
    """At most ``limit`` requests whose bytes are still arriving; one more calls the ``cut`` of the
    request that has been arriving longest. Thread-safe; ``cut`` runs on the thread that came in."""

    def __init__(self, *, limit: int) -> None:
        self.limit = env.COUNT.require("limit", limit)
        self._arriving: OrderedDict[int, Callable[[], None]] = OrderedDict()
        self._keys = itertools.count()
        self._lock = threading.Lock()
        self.cut_off = 0

    @contextmanager
    def arriving(self, cut: Callable[[], None]) -> Iterator[None]:
        key = next(self._keys)
        with self._lock:
            self._arriving[key] = cut
            oldest = self._arriving.popitem(last=False)[1] if len(self._arriving) > self.limit else None
            self.cut_off += oldest is not None
        if oldest is not None:
            oldest()
        try:
            yield
        finally:
            with self._lock:
                self._arriving.pop(key, None)

    def __len__(self) -> int:
        with self._lock:
            return len(self._arriving)


class Busy:
    """``size`` slots for requests being decoded and admitted, and when each was taken.

    Starved while every slot has been held longer than ``deadline_s``: nothing the receiver takes in
    can be decoded, whatever the exporters do. Each time it is found starved after it was not, one
    episode is counted (``starvations``); it is looked at by ``/readyz``, by every scrape and by a
    request that found no free slot.
    """

    def __init__(self, *, size: int, deadline_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.size = env.COUNT.require("size", size)
        self.deadline_s = env.POSITIVE_SECONDS.require("deadline_s", deadline_s)
        self._clock = clock
        self._free = threading.BoundedSemaphore(size)
        self._taken: dict[int, float] = {}
        self._keys = itertools.count()
        self._lock = threading.Lock()
        self._starved = False
        self.starvations = 0

    @contextmanager
    def slot(self, wait_s: float | None = None) -> Iterator[bool]:
        """Holds a slot while inside, waiting at most ``wait_s`` (None: as long as it takes) for one;
        gives False, holding nothing, when none came free."""
        if not self._free.acquire(timeout=wait_s):
            self.starved()
            yield False
            return
        key = next(self._keys)
        with self._lock:
            self._taken[key] = self._clock()
        try:
            yield True
        finally:
            with self._lock:
                del self._taken[key]
            self._free.release()

    def starved(self) -> bool:
        with self._lock:
            starved = (
                len(self._taken) >= self.size and self._clock() - max(self._taken.values()) > self.deadline_s
            )
            self.starvations += starved and not self._starved
            self._starved = starved
        return starved
