"""SpanBatch: the views decoded from one payload, and how many spans could not be read."""

from __future__ import annotations

from collections.abc import Iterable

from otel_traj.spanview import MalformedSpan, SpanView


class SpanBatch(list[SpanView]):
    """A ``list`` of SpanViews, with counts of the spans that were left out.

    ``malformed``: spans without a valid trace or span id, or with a wrongly typed field; one bad
    span never costs the rest of the payload. Those whose trace id was read are in the list too, as
    ``MalformedSpan`` placeholders that keep their runs from being graded as whole. ``duplicates``:
    spans already read from another file (same trace and span id), as when a directory holds both
    the protobuf and the JSON of a run.
    Being a list, a batch goes wherever views are expected, and the counts travel with it to whoever
    reports pipeline health.
    """

    __slots__ = ("duplicates", "malformed")

    def __init__(self, views: Iterable[SpanView] = (), malformed: int = 0, duplicates: int = 0) -> None:
        super().__init__(views)
        self.malformed = malformed
        self.duplicates = duplicates

    def extend_batch(self, other: SpanBatch) -> None:
        self.extend(other)
        self.malformed += other.malformed
        self.duplicates += other.duplicates

    def append_once(self, view: SpanView, seen: dict[tuple[int, int], int]) -> None:
        """Append ``view`` unless a span of its trace and span id is in the batch (``seen``: the
        index of each); one that is counted in ``duplicates``, except that a span read whole takes
        the place of its ``MalformedSpan``. A malformed span whose id could not be read (0) is no
        other span's duplicate."""
        key = (view.trace_id, view.span_id)
        kept = seen.get(key) if view.span_id else None
        if kept is None:
            if view.span_id:
                seen[key] = len(self)
            self.append(view)
            return
        self.duplicates += 1
        if isinstance(self[kept], MalformedSpan) and not isinstance(view, MalformedSpan):
            self[kept] = view

    def __repr__(self) -> str:
        return f"SpanBatch({list.__repr__(self)}, malformed={self.malformed}, duplicates={self.duplicates})"
