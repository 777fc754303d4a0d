"""Log lines about untrusted input, at most one a period per reason: a hostile or broken
instrumentation that sends the same bad span a million times writes one line a minute, not a million."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Hashable

from otel_traj import env

PERIOD_S = 60.0
# Reasons are few (a field and a step kind); the bound only guards against an unbounded key set.
MAX_REASONS = 1024


class Throttle:
    def __init__(
        self,
        logger: logging.Logger,
        *,
        period_s: float = PERIOD_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._logger = logger
        self._period_s = env.SECONDS.require("period_s", period_s)
        self._clock = clock
        self._last: dict[Hashable, float] = {}
        self._held: dict[Hashable, int] = {}
        self._lock = threading.Lock()

    def warning(self, reason: Hashable, message: str, *args: object) -> bool:
        """Log ``message`` unless a line for ``reason`` was logged less than a period ago; the next
        line of the reason says how many were held back. Returns whether it logged."""
        now = self._clock()
        with self._lock:
            last = self._last.get(reason)
            if last is not None and now - last < self._period_s:
                self._held[reason] = self._held.get(reason, 0) + 1
                return False
            if last is None and len(self._last) >= MAX_REASONS:
                self._last.clear()
                self._held.clear()
            self._last[reason] = now
            held = self._held.pop(reason, 0)
        if held:
            message += f" ({held} more like it since the last line)"
        self._logger.warning(message, *args)
        return True
