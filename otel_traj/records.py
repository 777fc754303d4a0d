"""What the assembler receives and hands on: one record per ended span, the trace's context.

Every front door (the in-process processor, ``serve``'s ingest, files) turns a ``SpanView`` into a
``SpanRecord`` with ``RecordMaker``, so the dialects run at the same stage and a local root means the
same thing whichever way a span arrives: a span without a parent, or whose parent is in another
process (``SpanView.is_local_root``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from otel_traj import env
from otel_traj.dialects import DEFAULT_MAX_CHARS, may_be_step, read_span
from otel_traj.dialects._base import clip_text
from otel_traj.dialects.context import capture_sources, captured_values, metadata_text
from otel_traj.held import held_bytes
from otel_traj.spanview import SpanView
from otel_traj.steps import ModelCall, Step, ToolCall, Unreadable
from otel_traj.throttle import Throttle

logger = logging.getLogger("otel_traj")
# Unreadable spans: counted by the assembler every time, logged at most once a minute per (step kind,
# field) with the span's id.
_UNREADABLE_LOG = Throttle(logger)


def _log_unreadable(step: Unreadable) -> None:
    _UNREADABLE_LOG.warning(
        (step.expected, step.field),
        "unreadable %s span %s %r (%s): %s: %s",
        step.expected or ("malformed" if step.malformed else "GenAI"),
        step.step_id,
        step.span_name,
        step.dialect or "no dialect",
        step.field,
        step.reason,
    )


def nonempty_str(value: object) -> str | None:
    """A non-empty string value (service name, conversation id) as valid text (see ``dialects._base``)."""
    return clip_text(value, DEFAULT_MAX_CHARS) if isinstance(value, str) and value else None


@dataclass(slots=True)
class TraceContext:
    """What the assembler learned about a trace besides its steps."""

    trace_id: int
    service_name: str | None = None
    service_version: str | None = None
    attributes: dict[str, Any] = field(default_factory=dict)
    root_span_id: int | None = None
    root_start_ns: int = 0
    root_end_ns: int = 0
    start_ns: int = 0
    end_ns: int = 0
    dropped_steps: int = 0


@dataclass(slots=True)
class SpanRecord:
    """One ended span as the assembler needs it: its place in the trace, its step if any, and the
    trace-level values it carries. Read-only; not frozen because one is built for every span and a
    frozen dataclass sets each field through ``object.__setattr__``."""

    trace_id: int
    span_id: int
    parent_id: int | None
    is_local_root: bool
    start_ns: int
    end_ns: int
    step: Step | None
    # (captured name, value) of the captured attributes present on the span.
    captured: list[tuple[str, Any]]
    # Run metadata JSON (see ``dialects.context``), parsed only when the run is handed on.
    metadata: str | None
    # The resource's attributes, read only by the span that opens its trace's buffer.
    resource: Mapping[str, Any]
    # The span's kind vocabularies disagreed (``dialects.recognize``): settled, and counted.
    contradicted: bool = False
    # Bytes of memory its step, captured values and metadata hold (``held.held_bytes``).
    held: int = 0


class RecordMaker:
    """Builds the records of one assembler's configuration (what to capture, how much text to keep)."""

    def __init__(self, capture: Iterable[str], max_chars: int) -> None:
        capture = tuple(capture)
        self.sources = capture_sources(capture)
        self._capture = capture
        self._keys = frozenset(self.sources)
        self._max_chars = env.COUNT.require("max_chars", max_chars)

    def wanted(self, name: str, attributes: Mapping[str, Any]) -> bool:
        """Whether a span of this name and these attributes may carry a step or a captured value:
        for others only the span's place in its trace is read."""
        return may_be_step(name, attributes) or not self._keys.isdisjoint(attributes)

    def __call__(self, view: SpanView) -> SpanRecord:
        step, contradicted = read_span(view, self._max_chars)
        if isinstance(step, Unreadable):
            _log_unreadable(step)
        return self.record(view, step, contradicted)

    def record(self, view: SpanView, step: Step | None, contradicted: bool = False) -> SpanRecord:
        attributes = view.attributes
        captured = (
            []
            if self._keys.isdisjoint(attributes)
            else captured_values(attributes, self.sources, self._max_chars)
        )
        metadata = metadata_text(attributes, self._capture, self._max_chars) if step is not None else None
        return SpanRecord(
            trace_id=view.trace_id,
            span_id=view.span_id,
            parent_id=view.parent_id,
            is_local_root=view.is_local_root,
            start_ns=view.start_ns,
            end_ns=view.end_ns,
            step=step,
            captured=captured,
            metadata=metadata,
            resource=view.resource,
            contradicted=contradicted,
            held=held_bytes(step) + held_bytes(captured) + held_bytes(metadata),
        )


@dataclass(slots=True)
class LiveBatch:
    """A run in flight: the tool calls ended since the last look, and its model calls so far in start
    order (their requests hold the calls' arguments and the user's message)."""

    context: TraceContext
    calls: list[ToolCall]
    models: list[ModelCall]


@dataclass(slots=True)
class Finished:
    """A trace handed over for building and grading."""

    context: TraceContext
    steps: list[Step]
    complete: bool
    # Steps the backlog dropped: the run is incomplete whatever the steps left say.
    backlog_steps: int = 0
