"""Per-trace buffers: collect the steps of each trace and decide when its trajectory is complete.

Two ways to learn that a trace is done:

* in-process (with a ``SpanReader``): the span hooks queue every span start and end on
  ``OpenSpans`` without a lock; the worker drains them (``sync_open``), so a trace is complete once
  its local root has ended and no span of it is still open;
* received spans (service, files): only ended spans arrive, so a trace is complete once its root has
  arrived and no span points at a parent that has not arrived.

Either way a short grace period follows, and a trace whose root never ends expires after the TTL and
is emitted marked incomplete. Buffers are guarded by one lock, taken by the worker and by the
receiver's request threads, never by the application's span hooks.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from contextlib import suppress
from operator import attrgetter
from typing import Any, NamedTuple

from otel_traj.config import AssemblerConfig
from otel_traj.dialects.context import metadata_values
from otel_traj.open_spans import OpenSpans
from otel_traj.records import Finished, LiveBatch, RecordMaker, SpanRecord, TraceContext, nonempty_str
from otel_traj.spanview import SpanView, Wanted
from otel_traj.stats import PipelineStats
from otel_traj.steps import ModelCall, Step, ToolCall, Unreadable
from otel_traj.trace_buffer import TraceBuffer, keep_earliest, root_ended

logger = logging.getLogger("otel_traj")

# Ended spans one in-process worker pass reads (~0.1 s): a flood is read over several passes, and runs
# ready meanwhile are graded between them (one pass over 100k spans took 4.6 s while good runs waited).
SPANS_PER_PASS = 4096
_BY_START = attrgetter("start_ns")


class SpanReader(NamedTuple):
    """How the in-process worker reads the spans the hooks queued: their view (reading in full only
    the spans ``RecordMaker.wanted`` accepts), and the trace id of one whose view cannot be built (so
    that its trace's open count still goes down)."""

    view: Callable[[Any, Wanted], SpanView]
    trace_id: Callable[[Any], int]


class Assembler:
    def __init__(
        self,
        *,
        config: AssemblerConfig | None = None,
        stats: PipelineStats | None = None,
        reader: SpanReader | None = None,
    ) -> None:
        """``reader``: in-process (spans queued by the hooks on ``open_spans``, a trace complete
        once no span of it is open); without one, spans arrive ended (service, files) and a trace is
        complete once its root has arrived and every parent named has arrived."""
        self.config = config or AssemblerConfig()
        self._reader = reader
        self.track_starts = reader is not None
        self.stats = stats or PipelineStats()
        self._lock = threading.Lock()
        # In the order they were created: the oldest, and those past the TTL, come first.
        self._buffers: dict[int, TraceBuffer] = {}
        self._done: OrderedDict[int, None] = OrderedDict()
        self._live_dirty: set[int] = set()
        # Traces whose ``ready_at`` is set: with the expired ones, all that ``pop_ready`` looks at, so a
        # tick costs what is ready, not every run in flight.
        self._candidates: set[int] = set()
        # In-process runs evicted for ``max_traces``, handed over incomplete by the next ``pop_ready``.
        self._evicted: list[TraceBuffer] = []
        self.clock: Callable[[], float] = time.monotonic  # replaceable: tests move time on
        self.make_record = RecordMaker(self.config.capture_attributes, self.config.max_chars)
        # In-process only: open-span bookkeeping the span hooks feed without taking this lock.
        self.open_spans = OpenSpans()
        self.behind = False  # in-process: the last pass left ended spans queued
        self.held = 0  # bytes the runs in flight hold (``TraceBuffer.held``)
        # Span counts are written under this assembler's lock only, never the stats lock: no race.

    def restart_in_child(self) -> None:
        """After ``fork``: empty, with a lock of its own (the parent's runs are the parent's)."""
        self._lock = threading.Lock()
        self.behind = False
        self.held = 0
        self._buffers.clear()
        self._done.clear()
        self._live_dirty.clear()
        self._candidates.clear()
        self._evicted.clear()
        self.open_spans.clear()

    # -- hot path -------------------------------------------------------------------------------

    def add_all(
        self, records: Sequence[SpanRecord], max_traces: int | None = None, lost: Sequence[SpanRecord] = ()
    ) -> bool:
        """Record the spans of one received request under one hold of the lock, so the worker never
        grades a trace from part of them. ``lost``: in-process, spans whose step the backlog dropped.

        With ``max_traces`` (the receiver's all-or-nothing admission): if the spans would open buffers
        beyond it, record nothing and return False. An empty assembler takes any request, so one that
        alone opens more than ``max_traces`` traces still gets in.
        """
        track_starts = self.track_starts
        ready_at = self.clock() + self.config.grace_s
        accepted = ignored = late = malformed = unreadable = contradictions = 0
        with self._lock:
            buffers, done = self._buffers, self._done
            if max_traces is not None and not self._admits(records, max_traces):
                return False
            for lost_step, batch in ((False, records), (True, lost)):
                for record in batch:
                    trace_id, step = record.trace_id, record.step
                    if trace_id in done:
                        late += 1
                        continue
                    try:
                        buf = buffers.get(trace_id) or self._open(record, lost_step)
                        if buf is None:
                            ignored += 1
                            continue
                        self._record(buf, record)
                        contradictions += record.contradicted
                        if step is None:
                            ignored += 1
                            buf.backlog_steps += lost_step
                        else:
                            if isinstance(step, Unreadable):
                                # A malformed span's placeholder: its decoder counted it malformed.
                                unreadable += not step.malformed
                            else:
                                accepted += 1
                            self._add_step(buf, step, record.held)
                            if buf.metadata is None:
                                buf.metadata = record.metadata
                        if not track_starts and self._looks_complete(buf):
                            buf.ready_at = ready_at
                            self._candidates.add(trace_id)
                    except Exception:
                        # One hostile span costs that span, not the others of the request or tick.
                        malformed += 1
                        self.stats.count_internal_error()
        self.stats.count_span_results(
            {
                "accepted": accepted,
                "ignored": ignored,
                "late": late,
                "malformed": malformed,
                "unreadable": unreadable,
            },
            contradictions,
        )
        return True

    # -- internals (lock held) ------------------------------------------------------------------

    def _admits(self, records: Sequence[SpanRecord], max_traces: int) -> bool:
        """Whether the buffers the spans would open stay within ``max_traces``, and none opens while
        the runs in flight hold ``max_held_bytes`` (an empty assembler takes any request)."""
        buffers, done = self._buffers, self._done
        if not buffers:
            return True
        new = {r.trace_id for r in records if r.trace_id not in buffers and r.trace_id not in done}
        return not new or (len(buffers) + len(new) <= max_traces and not self.over_budget)

    @property
    def over_budget(self) -> bool:
        """The runs in flight hold ``max_held_bytes``: no new trace is taken until some are handed on."""
        return self.held >= self.config.max_held_bytes

    def _open(self, record: SpanRecord, lost_step: bool) -> TraceBuffer | None:
        """The buffer a trace's first span opens, or None. In-process, a span with nothing for us
        opens none (a root ending first means the trace had no GenAI step) unless its step was
        dropped: that run must be counted. Received spans always do: children may come."""
        opens = record.step is not None or lost_step
        if self.track_starts and not opens and (record.is_local_root or not record.captured):
            return None
        if self.track_starts and self.over_budget:  # a new run is not kept (the service refuses it)
            self.stats.count_dropped("max_held_bytes")
            return None
        return self._new_buffer(record)

    def _new_buffer(self, record: SpanRecord) -> TraceBuffer:
        # Only in-process runs, which cannot be refused, are evicted (the receiver's admission bounds).
        if self.track_starts and len(self._buffers) >= self.config.max_traces:
            self._evict_oldest()
        resource = record.resource
        ctx = TraceContext(
            trace_id=record.trace_id,
            service_name=nonempty_str(resource.get("service.name")),
            service_version=nonempty_str(resource.get("service.version")),
        )
        buf = TraceBuffer(context=ctx, created=self.clock())
        self._buffers[record.trace_id] = buf
        self.stats.traces_in_flight = len(self._buffers)
        return buf

    def _evict_oldest(self) -> None:
        # Out now, so that ``max_traces`` bounds what is held; its later spans count as late.
        trace_id = next(iter(self._buffers))
        self._evicted.append(self._take(trace_id))
        self.open_spans.forget(trace_id)

    def _take(self, trace_id: int) -> TraceBuffer:
        buf = self._buffers.pop(trace_id)
        self.held -= buf.held
        self.stats.held_bytes = self.held
        self._candidates.discard(trace_id)
        self._live_dirty.discard(trace_id)
        self._remember_done(trace_id)
        return buf

    def _record(self, buf: TraceBuffer, record: SpanRecord) -> None:
        """What a span tells about its trace besides its step: times, root, captured values and, for
        received spans, which parents are still to come."""
        ctx, start_ns = buf.context, record.start_ns
        if start_ns and (not ctx.start_ns or start_ns < ctx.start_ns):
            ctx.start_ns = start_ns
        if record.captured:
            keep_earliest(buf, record.captured, start_ns)
        ctx.end_ns = max(ctx.end_ns, record.end_ns)
        if record.is_local_root:
            root_ended(buf, record)
        if not self.track_starts:
            span_id, parent_id = record.span_id, record.parent_id
            buf.seen.add(span_id)
            buf.parents.discard(span_id)
            # A remote parent too: another process's spans of the trace may still arrive.
            if parent_id is not None and parent_id not in buf.seen:
                buf.parents.add(parent_id)

    def _add_step(self, buf: TraceBuffer, step: Step, held: int) -> None:
        """Keep ``step`` unless its run is at ``max_steps`` or ``max_trace_bytes``: a run that floods
        pays with its own steps, not other runs."""
        over = "max_steps" if len(buf.steps) >= self.config.max_steps else None
        if over is None and buf.held + held > self.config.max_trace_bytes:
            over = "max_trace_bytes"
        if over is not None:
            buf.context.dropped_steps += 1
            self.stats.count_dropped(over)
            return
        buf.steps.append(step)
        buf.held += held
        self.held += held
        self.stats.held_bytes = self.held
        if isinstance(step, ToolCall):
            self._live_dirty.add(buf.context.trace_id)

    def _looks_complete(self, buf: TraceBuffer) -> bool:
        if not buf.root_ended:
            return False
        if self.track_starts:
            return not self.open_spans.is_open(buf.context.trace_id)
        return not buf.parents

    # -- worker side ----------------------------------------------------------------------------

    def sync_open(self, everything: bool = False) -> None:
        """In-process: record the spans ended since the last tick (``SPANS_PER_PASS`` at most, all for a
        flush), then mark the traces whose root and spans have all ended ready (after the grace)."""
        assert self._reader is not None
        now = self.clock()
        ended, records, lost = self.open_spans.drain(now, None if everything else SPANS_PER_PASS)
        self.behind = len(ended) == SPANS_PER_PASS and bool(self.open_spans.ended_spans)
        make_record, read = self.make_record, self._reader.view
        malformed = 0
        unreadable: list[int] = []
        for raw in ended:
            try:
                records.append(make_record(read(raw, make_record.wanted)))
            except Exception:
                malformed += 1
                # Without even a trace id, that trace's count stays up until its TTL.
                with suppress(Exception):
                    unreadable.append(self._reader.trace_id(raw))
        self.add_all(records, lost=lost)
        self.stats.count_span_results({"malformed": malformed})
        touched = [r.trace_id for r in (*records, *lost)]
        self.open_spans.closed(touched + unreadable)
        ready_at = now + self.config.grace_s
        with self._lock:
            # Spans never ended: forgotten after the TTL, or with their trace's run when it is handed over.
            self.open_spans.expire(now - self.config.ttl_s, keep=self._buffers)
            for trace_id in {*touched, *unreadable}:
                buf = self._buffers.get(trace_id)
                if buf is not None and buf.ready_at is None and self._looks_complete(buf):
                    buf.ready_at = ready_at
                    self._candidates.add(trace_id)

    def pop_ready(self, flush: bool = False, expire_all: bool = False) -> list[Finished]:
        """Traces ready to grade. ``flush`` ignores the grace period of complete traces;
        ``expire_all`` also hands over every unfinished trace, marked incomplete (shutdown)."""
        now = self.clock()
        ttl = self.config.ttl_s
        with self._lock:
            taken = [(buf, False, True) for buf in self._evicted]
            self._evicted.clear()
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
                expired = now - buf.created >= ttl or expire_all
                if not (ready or expired):
                    continue
                self._take(trace_id)
                if not complete:
                    self.open_spans.forget(trace_id)
                taken.append((buf, complete, False))
            self.stats.traces_in_flight = len(self._buffers)
        return [run for run in (self._hand_over(*item) for item in taken) if run is not None]

    def _hand_over(self, buf: TraceBuffer, complete: bool, evicted: bool = False) -> Finished | None:
        # Guarded: a run that cannot be handed over costs that run only (counted).
        ctx = buf.context
        if not buf.steps:
            if buf.backlog_steps:
                self.stats.count_dropped("backlog_run")
            return None
        try:
            self._apply_metadata(buf)
        except Exception:
            self.stats.count_failed_run()
            logger.exception("otel-traj could not hand over trace %032x", ctx.trace_id)
            return None
        if evicted:
            self.stats.count_dropped("max_traces")
        return Finished(ctx, buf.steps, complete and not buf.backlog_steps, buf.backlog_steps)

    def _apply_metadata(self, buf: TraceBuffer) -> None:
        """Captured keys that only the run's metadata JSON holds (``metadata={"app.customer_id": …}``)."""
        if buf.metadata is None:
            return
        attributes = buf.context.attributes
        for key, value in metadata_values(buf.metadata, self.config.capture_attributes).items():
            attributes.setdefault(key, value)

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
                # Executions only: a span that records the model's request for a call is no call run,
                # and a part of a call (no name) is no call of its own.
                new = [
                    s
                    for s in buf.steps[buf.live_cursor :]
                    if isinstance(s, ToolCall) and s.observed and s.name
                ]
                buf.live_cursor = len(buf.steps)
                models = sorted((s for s in buf.steps if isinstance(s, ModelCall)), key=_BY_START)
                out.append(LiveBatch(buf.context, new, models))
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
