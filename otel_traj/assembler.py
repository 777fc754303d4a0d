"""Per-trace buffers: collect the steps of each trace and decide when its trajectory is complete.

Two ways to learn that a trace is done:

* in-process (``track_starts=True``): the span hooks queue every span start and end on
  ``OpenSpans`` without a lock; the worker drains them (``sync_open``), so a trace is complete once
  its local root has ended and no span of it is still open;
* received spans (service, files): only ended spans arrive, so a trace is complete once its root has
  arrived and no span points at a parent that has not arrived.

Either way a short grace period follows, and a trace whose root never ends expires after the TTL and
is emitted marked incomplete. Buffers are guarded by one lock, taken by the worker and by the
receiver's request threads, never by the application's span hooks.
"""

from __future__ import annotations

import json
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from otel_traj.builder import TraceContext, nonempty_str
from otel_traj.config import AssemblerConfig
from otel_traj.dialects import MARKERS, to_step
from otel_traj.open_spans import OpenSpans
from otel_traj.spanview import SpanView
from otel_traj.stats import PipelineStats
from otel_traj.steps import ModelCall, Step, ToolCall

# One ended span for ``Assembler.add_all``: trace id, span id, parent id, is root, start, end, step,
# attributes, resource.
SpanRecord = tuple[int, int, int | None, bool, int, int, Step | None, Mapping[str, Any], Mapping[str, Any]]


@dataclass(slots=True)
class _Buffer:
    context: TraceContext
    created: float
    steps: list[Step] = field(default_factory=list)
    # Earliest-start value per captured attribute, so arrival order never changes the result.
    captured_at: dict[str, int] = field(default_factory=dict)
    root_ended: bool = False
    ready_at: float | None = None
    seen: set[int] = field(default_factory=set)
    parents: set[int] = field(default_factory=set)
    live_cursor: int = 0
    # The earliest model call so far: its request holds the user's message, which the live scope
    # check may need to find the subject before the agent span has ended.
    opening_turn: ModelCall | None = None
    # Run metadata as JSON text (pydantic-ai, OpenInference ``metadata``), parsed off the hot path.
    metadata: str | None = None


@dataclass(slots=True)
class LiveBatch:
    """A run in flight: the tool calls ended since the last look, and its earliest model call."""

    context: TraceContext
    calls: list[ToolCall]
    opening_turn: ModelCall | None


@dataclass(slots=True)
class Finished:
    """A trace handed over for building and grading."""

    context: TraceContext
    steps: list[Step]
    complete: bool


class Assembler:
    def __init__(
        self,
        config: AssemblerConfig | None = None,
        stats: PipelineStats | None = None,
        track_starts: bool = False,
        view_of: Callable[[Any], SpanView] | None = None,
    ) -> None:
        self.config = config or AssemblerConfig()
        self._view_of = view_of
        self.stats = stats or PipelineStats()
        self.track_starts = track_starts
        self._lock = threading.Lock()
        # In the order they were created: the oldest, and those past the TTL, come first.
        self._buffers: dict[int, _Buffer] = {}
        self._done: OrderedDict[int, None] = OrderedDict()
        self._live_dirty: set[int] = set()
        # Traces whose ``ready_at`` is set: with the expired ones, all that ``pop_ready`` looks at, so a
        # tick costs what is ready, not every run in flight.
        self._candidates: set[int] = set()
        # Captured keys, also as Traceloop association properties (run metadata lands there).
        self._capture_as = {k: k for k in self.config.capture_attributes} | {
            f"traceloop.association.properties.{k}": k for k in self.config.capture_attributes
        }
        self._capture = frozenset(self._capture_as)
        # In-process only: open-span bookkeeping the span hooks feed without taking this lock.
        self.open_spans = OpenSpans(MARKERS | self._capture)
        # Span counts are written under this assembler's lock only, never the stats lock: no race.
        self._spans = self.stats.spans

    def restart_in_child(self) -> None:
        """After ``fork``: empty, with a lock of its own (the parent's runs are the parent's)."""
        self._lock = threading.Lock()
        self._buffers.clear()
        self._done.clear()
        self._live_dirty.clear()
        self._candidates.clear()
        self.open_spans.clear()

    # -- hot path -------------------------------------------------------------------------------

    def add_all(self, records: Sequence[SpanRecord], max_traces: int | None = None) -> bool:
        """Record the spans of one received request under one hold of the lock, so the worker never
        grades a trace from part of them.

        With ``max_traces`` (the receiver's all-or-nothing admission): if the spans would open buffers
        beyond it, record nothing and return False. An empty assembler takes any request, so one that
        alone opens more than ``max_traces`` traces still gets in.
        """
        capture = self._capture
        captured = [None if r[7].keys().isdisjoint(capture) else self._captured(r[7]) for r in records]
        # Every received span passes through this loop: its state lives in locals, not attributes.
        track_starts = self.track_starts
        ready_at = time.monotonic() + self.config.grace_s
        accepted = ignored = late = 0
        with self._lock:
            buffers, done = self._buffers, self._done
            if max_traces is not None and buffers:
                new = {r[0] for r in records if r[0] not in buffers and r[0] not in done}
                if new and len(buffers) + len(new) > max_traces:
                    return False
            for record, capture_values in zip(records, captured, strict=True):
                trace_id, span_id, parent_id, is_root, start_ns, end_ns, step, attributes, resource = record
                if trace_id in done:
                    late += 1
                    continue
                buf = buffers.get(trace_id)
                if buf is None:
                    # In-process, a span with nothing for us opens no buffer (a root ending first
                    # means the trace had no GenAI step). Received spans always do: children may
                    # come later.
                    if step is None and track_starts and (is_root or not capture_values):
                        ignored += 1
                        continue
                    buf = self._new_buffer(trace_id, resource)
                ctx = buf.context
                if start_ns and (not ctx.start_ns or start_ns < ctx.start_ns):
                    ctx.start_ns = start_ns
                if capture_values:
                    _keep_earliest(buf, capture_values, start_ns)
                if is_root:
                    _root_ended(buf, span_id, start_ns, end_ns)
                elif end_ns > ctx.end_ns:
                    ctx.end_ns = end_ns
                if not track_starts:
                    seen, parents = buf.seen, buf.parents
                    seen.add(span_id)
                    parents.discard(span_id)
                    if parent_id is not None and not is_root and parent_id not in seen:
                        parents.add(parent_id)
                if step is None:
                    ignored += 1
                else:
                    accepted += 1
                    self._add_step(buf, step)
                    if buf.metadata is None:
                        meta = attributes.get("metadata")
                        buf.metadata = meta if isinstance(meta, str) else None
                if not track_starts and buf.root_ended and not buf.parents:
                    buf.ready_at = ready_at
                    self._candidates.add(trace_id)
            spans = self._spans
            spans["accepted"] += accepted
            spans["ignored"] += ignored
            spans["late"] += late
        return True

    def _captured(self, attributes: Mapping[str, Any]) -> list[tuple[str, Any]]:
        # In the configured order, not a set's: a trace's attributes keep one order in every process.
        return [(name, attributes[key]) for key, name in self._capture_as.items() if key in attributes]

    # -- internals (lock held) ------------------------------------------------------------------

    def _new_buffer(self, trace_id: int, resource: Mapping[str, Any]) -> _Buffer:
        if len(self._buffers) >= self.config.max_traces:
            self._evict_oldest()
        ctx = TraceContext(
            trace_id=trace_id,
            service_name=nonempty_str(resource.get("service.name")),
            service_version=nonempty_str(resource.get("service.version")),
        )
        buf = _Buffer(context=ctx, created=time.monotonic())
        self._buffers[trace_id] = buf
        self.stats.traces_in_flight = len(self._buffers)
        return buf

    def _evict_oldest(self) -> None:
        oldest = next(iter(self._buffers.values()))
        oldest.ready_at = 0.0
        self._candidates.add(oldest.context.trace_id)
        self.stats.count_dropped("max_traces")

    def _add_step(self, buf: _Buffer, step: Step) -> None:
        if len(buf.steps) >= self.config.max_steps:
            buf.context.dropped_steps += 1
            self.stats.count_dropped("max_steps")
            return
        buf.steps.append(step)
        if isinstance(step, ToolCall):
            self._live_dirty.add(buf.context.trace_id)
        elif isinstance(step, ModelCall) and (
            buf.opening_turn is None or step.start_ns < buf.opening_turn.start_ns
        ):
            buf.opening_turn = step

    def _looks_complete(self, buf: _Buffer) -> bool:
        if not buf.root_ended:
            return False
        if self.track_starts:
            return not self.open_spans.is_open(buf.context.trace_id)
        return not buf.parents

    # -- worker side ----------------------------------------------------------------------------

    def sync_open(self) -> None:
        """In-process: apply the span starts and ends recorded since the last tick, then mark the
        traces whose root has ended and whose spans have all ended as ready (after the grace)."""
        drained = self.open_spans.drain()
        self._add_candidates(drained.candidates)
        ready_at = time.monotonic() + self.config.grace_s
        with self._lock:
            buffers, spans = self._buffers, self._spans
            spans["malformed"] += drained.malformed
            for trace_id in drained.plain_ends:
                if trace_id in self._done and trace_id not in buffers:
                    spans["late"] += 1
                else:
                    spans["ignored"] += 1
            for trace_id, span_id, start_ns, end_ns in drained.roots:
                buf = buffers.get(trace_id)
                if buf is not None:
                    _root_ended(buf, span_id, start_ns, end_ns)
                    drained.touched.add(trace_id)
            for trace_id in drained.touched:
                buf = buffers.get(trace_id)
                if buf is not None and buf.ready_at is None and self._looks_complete(buf):
                    buf.ready_at = ready_at
                    self._candidates.add(trace_id)

    def _add_candidates(self, spans: list[Any]) -> None:
        """Parse the raw spans the span hooks queued since the last tick and record them."""
        assert self._view_of is not None
        max_chars = self.config.max_chars
        records: list[SpanRecord] = []
        malformed = 0
        for raw in spans:
            try:
                view = self._view_of(raw)
                step = to_step(view, max_chars)
            except Exception:
                malformed += 1
                continue
            records.append(
                (
                    view.trace_id,
                    view.span_id,
                    view.parent_id,
                    view.is_local_root,
                    view.start_ns,
                    view.end_ns,
                    step,
                    view.attributes,
                    view.resource,
                )
            )
        self.add_all(records)
        if malformed:
            with self._lock:
                self._spans["malformed"] += malformed

    def pop_ready(self, flush: bool = False, expire_all: bool = False) -> list[Finished]:
        """Traces ready to grade. ``flush`` ignores the grace period of complete traces;
        ``expire_all`` also hands over every unfinished trace, marked incomplete (shutdown)."""
        now = time.monotonic()
        ttl = self.config.ttl_s
        out: list[Finished] = []
        taken: list[tuple[_Buffer, bool]] = []
        with self._lock:
            buffers = self._buffers
            due = set(buffers) if expire_all else set(self._candidates)
            for trace_id, buf in buffers.items():  # the expired ones lead
                if now - buf.created < ttl:
                    break
                due.add(trace_id)
            for trace_id in sorted(due, key=lambda t: buffers[t].created):
                buf = buffers[trace_id]
                complete = self._looks_complete(buf)
                ready = buf.ready_at is not None and (flush or buf.ready_at <= now) and complete
                expired = now - buf.created >= ttl or buf.ready_at == 0.0 or expire_all
                if not (ready or expired):
                    continue
                del buffers[trace_id]
                self._candidates.discard(trace_id)
                self._live_dirty.discard(trace_id)
                self._remember_done(trace_id)
                if buf.steps:
                    taken.append((buf, complete))
            self.stats.traces_in_flight = len(self._buffers)
        for buf, complete in taken:
            self._apply_metadata(buf)
            out.append(Finished(buf.context, buf.steps, complete))
        return out

    def _apply_metadata(self, buf: _Buffer) -> None:
        """Captured keys that only the run's metadata JSON holds (``metadata={"app.customer_id": …}``)."""
        if buf.metadata is None:
            return
        try:
            meta = json.loads(buf.metadata)
        except ValueError:
            return
        if not isinstance(meta, dict):
            return
        for key in self.config.capture_attributes:
            value = meta.get(key)
            if key not in buf.context.attributes and isinstance(value, str | int | float | bool):
                buf.context.attributes[key] = value

    def take_new_tool_calls(self) -> list[LiveBatch]:
        """Tool calls that ended since the last call, per trace, for checks that must not wait for
        the run to finish (scope violations page immediately). Runs that look complete are left out:
        their full verdict follows within the grace period and repeats the same checks."""
        out: list[LiveBatch] = []
        with self._lock:
            for trace_id in self._live_dirty:
                buf = self._buffers.get(trace_id)
                if buf is None or buf.ready_at is not None:
                    continue
                new = [s for s in buf.steps[buf.live_cursor :] if isinstance(s, ToolCall)]
                buf.live_cursor = len(buf.steps)
                out.append(LiveBatch(buf.context, new, buf.opening_turn))
            self._live_dirty.clear()
        return out

    def _remember_done(self, trace_id: int) -> None:
        self._done[trace_id] = None
        if len(self._done) > self.config.late_memory:
            self._done.popitem(last=False)

    @property
    def in_flight(self) -> int:
        return len(self._buffers)

    @property
    def idle(self) -> bool:
        """No trace in flight and, in-process, no span open or queued: nothing can become ready."""
        return not self._buffers and self.open_spans.idle


def _keep_earliest(buf: _Buffer, values: list[tuple[str, Any]], start_ns: int) -> None:
    """Keep each captured attribute's value from the earliest span, whatever order spans arrive in."""
    captured_at = buf.captured_at
    for key, value in values:
        if key not in captured_at or start_ns < captured_at[key]:
            captured_at[key] = start_ns
            buf.context.attributes[key] = value


def _root_ended(buf: _Buffer, span_id: int, start_ns: int, end_ns: int) -> None:
    ctx = buf.context
    buf.root_ended = True
    ctx.root_span_id, ctx.root_start_ns, ctx.root_end_ns = span_id, start_ns, end_ns
    ctx.end_ns = max(ctx.end_ns, end_ns)
