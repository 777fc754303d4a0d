"""One retrieval, one read: a context read nested in another read of the same operation is the same
retrieval seen by two layers.

A framework may record one search twice, an outer retriever span with the documents and an inner one
with the query object and the documents' reprs; where the reading cannot tell them apart (a span
rewritten to the conventions' ``retrieval`` without the kind that told the inner one from the outer),
both read as retrievals. The outer read is the retrieval: its documents win, and the inner one only
fills what the outer left unrecorded (its query, its source). Nested means a child of the outer span,
or a span strictly within its time: two reads side by side that a coarse clock stamps with the same
times are two reads. Writes are never merged: each changed the store.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from otel_traj.steps import ContextOperation


def distinct_reads(operations: Sequence[ContextOperation]) -> list[ContextOperation]:
    """The run's context operations, in their order, with each read nested in another read of the same
    operation merged into the outermost one."""
    reads = sorted((op for op in operations if not op.writes), key=lambda op: (op.start_ns, -op.end_ns))
    merged: dict[int, ContextOperation] = {}
    dropped: set[int] = set()
    # The outermost reads not yet ended: a read that ended before this one started encloses neither it
    # nor any later one (the work stays linear in the reads of a run).
    running: list[ContextOperation] = []
    for read in reads:
        running[:] = [outer for outer in running if outer.end_ns >= read.start_ns]
        outer = next((o for o in reversed(running) if _encloses(o, read)), None)
        if outer is None:
            running.append(read)
            continue
        dropped.add(read.span_id)
        merged[outer.span_id] = _merged(merged.get(outer.span_id, outer), read)
    if not dropped:
        return list(operations)
    return [merged.get(op.span_id, op) for op in operations if op.span_id not in dropped]


def _encloses(outer: ContextOperation, inner: ContextOperation) -> bool:
    if outer.operation != inner.operation or outer.span_id == inner.span_id:
        return False
    if not (outer.start_ns <= inner.start_ns and inner.end_ns <= outer.end_ns):
        return False
    same_window = (outer.start_ns, outer.end_ns) == (inner.start_ns, inner.end_ns)
    return inner.parent_id == outer.span_id or not same_window


def _merged(outer: ContextOperation, inner: ContextOperation) -> ContextOperation:
    if outer.text is not None:
        return replace(outer, query=outer.query or inner.query, source=outer.source or inner.source)
    return replace(
        outer,
        query=outer.query or inner.query,
        source=outer.source or inner.source,
        text=inner.text,
        truncated=inner.truncated,
    )
