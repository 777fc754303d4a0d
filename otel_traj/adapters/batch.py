"""SpanBatch: the views decoded from one payload, and how many spans could not be read."""

from __future__ import annotations

from collections.abc import Iterable

from otel_traj.spanview import SpanView


class SpanBatch(list[SpanView]):
    """A ``list`` of SpanViews with a ``malformed`` count of the spans that were skipped.

    A span is malformed when it lacks a valid trace or span id or a field has the wrong type; one bad
    span never costs the rest of the payload. Being a list, a batch goes wherever views are expected,
    and the count travels with it to whoever reports pipeline health.
    """

    __slots__ = ("malformed",)

    def __init__(self, views: Iterable[SpanView] = (), malformed: int = 0) -> None:
        super().__init__(views)
        self.malformed = malformed

    def extend_batch(self, other: SpanBatch) -> None:
        self.extend(other)
        self.malformed += other.malformed

    def __repr__(self) -> str:
        return f"SpanBatch({list.__repr__(self)}, malformed={self.malformed})"
