"""A one-line progress bar on stderr for long offline runs; silent when stderr is not a terminal.

Pipes, CI logs and files get nothing: a bar redrawn with carriage returns is noise there. The bar is
redrawn at most every ``min_interval_s`` so that a fast loop is not slowed by terminal writes, and it
erases itself when done so the report printed after it starts on a clean line.
"""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Iterable, Iterator, Sized
from types import TracebackType
from typing import TextIO, TypeVar

from otel_traj import env

T = TypeVar("T")


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty() and env.TERM.read() != "dumb"
    except (AttributeError, ValueError):
        return False


class Progress:
    """``label [#########-----------]  45/100  45%`` on ``stream`` (stderr by default); with
    ``total=0`` (length unknown) just ``label 45``.

    enabled: None draws only when the stream is a terminal; True/False force it.
    """

    def __init__(
        self,
        total: int,
        label: str = "",
        stream: TextIO | None = None,
        enabled: bool | None = None,
        min_interval_s: float = 0.1,
    ) -> None:
        self.total = max(0, total)
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = _is_terminal(self.stream) if enabled is None else enabled
        self.min_interval_s = env.SECONDS.require("min_interval_s", min_interval_s)
        self.done = 0
        self._drawn_at = float("-inf")
        self._width = 0

    def advance(self, n: int = 1) -> None:
        self.done += n
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self._drawn_at >= self.min_interval_s or 0 < self.total <= self.done:
            self._drawn_at = now
            self._draw()

    def _draw(self) -> None:
        prefix = f"{self.label} " if self.label else ""
        if not self.total:  # unknown length: a count only
            line = f"{prefix}{self.done}"
        else:
            columns = shutil.get_terminal_size((80, 24)).columns
            done = min(self.done, self.total)
            counts = f" {done:>{len(str(self.total))}}/{self.total} {done * 100 // self.total:>3}%"
            bar_width = max(10, min(40, columns - len(prefix) - len(counts) - 3))
            filled = bar_width * done // self.total
            line = f"{prefix}[{'#' * filled}{'-' * (bar_width - filled)}]{counts}"
        self._width = max(self._width, len(line))
        self.stream.write("\r" + line)
        self.stream.flush()

    def close(self) -> None:
        """Erase the bar (if one was drawn)."""
        if self.enabled and self._width:
            self.stream.write("\r" + " " * self._width + "\r")
            self.stream.flush()
            self._width = 0

    def __enter__(self) -> Progress:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def track(
    items: Iterable[T], label: str = "", total: int | None = None, stream: TextIO | None = None
) -> Iterator[T]:
    """Yield ``items`` while drawing their progress; ``total`` defaults to ``len(items)``."""
    if total is None:
        total = len(items) if isinstance(items, Sized) else 0
    with Progress(total, label, stream) as progress:
        for item in items:
            yield item
            progress.advance()
