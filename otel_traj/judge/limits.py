"""Which runs a judge sees: a sample by trace id, and at most so many calls an hour."""

from __future__ import annotations

import hashlib
import threading
import time
from collections import deque
from collections.abc import Callable

HOUR_S = 3600.0


def sampled(trace_id: int, judge: str, share: float) -> bool:
    """True for ``share`` of trace ids, the same ones in every process and on every re-grade, and
    independently per judge (two judges at 5% do not see the same 5%)."""
    if share >= 1:
        return True
    if share <= 0:
        return False
    digest = hashlib.blake2b(f"{judge}/{trace_id:032x}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") < share * 2**64


class HourlyCap:
    """At most ``limit`` calls in any sliding hour (by ``clock``, seconds); ``None`` is no cap."""

    def __init__(self, limit: int | None, clock: Callable[[], float] = time.monotonic) -> None:
        self.limit = limit
        self._clock = clock
        self._calls: deque[float] = deque()
        self._lock = threading.Lock()

    def take(self) -> bool:
        """Count one call if the cap allows it; False when the last hour already holds ``limit``."""
        if self.limit is None:
            return True
        now = self._clock()
        with self._lock:
            while self._calls and self._calls[0] <= now - HOUR_S:
                self._calls.popleft()
            if len(self._calls) >= self.limit:
                return False
            self._calls.append(now)
            return True
