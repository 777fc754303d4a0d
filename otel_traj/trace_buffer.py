"""One trace's buffer in the assembler: its steps, context and bookkeeping until it is handed on."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from otel_traj.records import SpanRecord, TraceContext
from otel_traj.steps import Step


@dataclass(slots=True)
class TraceBuffer:
    """What the assembler holds of one trace until it is handed on."""

    context: TraceContext
    created: float
    steps: list[Step] = field(default_factory=list)
    # Earliest-start value per captured attribute, so arrival order never changes the result.
    captured_at: dict[str, int] = field(default_factory=dict)
    root_ended: bool = False
    # Whether the root recorded has no parent at all (the trace's root, not a process's local root).
    root_is_trace_root: bool = False
    ready_at: float | None = None
    seen: set[int] = field(default_factory=set)
    parents: set[int] = field(default_factory=set)
    live_cursor: int = 0
    # Run metadata as JSON text (``dialects.context``), parsed off the hot path.
    metadata: str | None = None
    # Steps dropped unread because the worker was ``max_backlog`` spans behind.
    backlog_steps: int = 0
    # Bytes of memory its steps hold (``SpanRecord.held``), against ``max_trace_bytes``.
    held: int = 0


def keep_earliest(buf: TraceBuffer, values: list[tuple[str, Any]], start_ns: int) -> None:
    """Keep each captured attribute's value from the earliest span, whatever order spans arrive in."""
    for key, value in values:
        if key not in buf.captured_at or start_ns < buf.captured_at[key]:
            buf.captured_at[key] = start_ns
            buf.context.attributes[key] = value


def root_ended(buf: TraceBuffer, record: SpanRecord) -> None:
    """Keep the trace's root: a span without a parent wins over a process's local root (parent in
    another process), then the earliest."""
    trace_root = record.parent_id is None
    ctx = buf.context
    if buf.root_ended and (
        buf.root_is_trace_root > trace_root
        or (buf.root_is_trace_root == trace_root and ctx.root_start_ns <= record.start_ns)
    ):
        return
    buf.root_ended, buf.root_is_trace_root = True, trace_root
    ctx.root_span_id, ctx.root_start_ns, ctx.root_end_ns = record.span_id, record.start_ns, record.end_ns
