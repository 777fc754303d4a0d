"""The shared back half of every front door: assembler -> builder -> grader -> sinks.

One background worker drains finished traces from the assembler, builds and grades them, and hands the
verdicts to the sinks and callbacks. Neither the application's threads nor the receiver's ever build,
grade or export: they only add spans to the assembler.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Protocol

from otel_traj.assembler import Assembler, SpanReader
from otel_traj.builder import build_trajectory
from otel_traj.config import AssemblerConfig
from otel_traj.forks import after_fork_in_child, start_daemon
from otel_traj.grader import score
from otel_traj.records import Finished, LiveBatch, TraceContext
from otel_traj.sinks.base import LiveViolation, Sink
from otel_traj.stats import PipelineStats
from otel_traj.steps import ModelCall, ToolCall, span_hex
from otel_traj.trajectory import Trajectory
from otel_traj.verdict import CheckResult, Outcome, Verdict
from otel_traj.verification import dropped_result, unreadable_result
from otel_traj.versions import versions_of

if TYPE_CHECKING:
    from otel_traj.conversations import Conversations, ConversationVerdict

logger = logging.getLogger("otel_traj")

GradeFn = Callable[[Trajectory], Verdict]
# The verdicts of many trajectories at once, as a ``GradeFn`` would give them (``Grader.grade_all``).
GradeAllFn = Callable[[Sequence[Trajectory]], list[Verdict]]
VerdictCallback = Callable[[Verdict], None]


class LiveChecker(Protocol):
    """Checks that run per tool call while its trace is still open (scope: page immediately).
    ``models``: the run's model calls so far, in start order."""

    def observe(
        self, call: ToolCall, context: TraceContext, models: list[ModelCall]
    ) -> CheckResult | None: ...


LiveFactory = Callable[[TraceContext], LiveChecker | None]


def ungraded(trajectory: Trajectory) -> Verdict:
    """The verdict when no policy is configured: the trajectory only, no checks but the notes on
    spans that could not be read and steps dropped unread (``verification``). A run not fully read
    is ``incomplete`` or ``unverified``, never ``pass``."""
    found = (
        unreadable_result(trajectory.unreadable) if trajectory.unreadable else None,
        dropped_result(trajectory),
    )
    checks = tuple(check for check in found if check is not None)
    if not trajectory.complete:
        outcome: Outcome = "incomplete"
    else:
        outcome = "unverified" if trajectory.unreadable else "pass"
    return Verdict(
        trajectory=trajectory,
        checks=checks,
        outcome=outcome,
        score=score(checks),
        versions=versions_of(trajectory),
    )


class Pipeline:
    def __init__(
        self,
        *,
        grade: GradeFn | None = None,
        grade_all: GradeAllFn | None = None,
        sinks: Iterable[Sink] = (),
        callbacks: Iterable[VerdictCallback] = (),
        config: AssemblerConfig | None = None,
        stats: PipelineStats | None = None,
        reader: SpanReader | None = None,
        live: LiveFactory | None = None,
        conversations: Conversations | None = None,
        tick_s: float = 0.02,
        idle_tick_s: float = 0.25,
    ) -> None:
        """``reader``: in-process, how the worker reads the spans the hooks queue (see ``Assembler``).
        ``conversations``: where graded traces of conversations are held until the conversation is
        graded; its verdicts go to every sink's ``export_conversation`` and to the callbacks added
        with ``add_conversation_callback``."""
        self.stats = stats or PipelineStats()
        self.assembler = Assembler(config=config, stats=self.stats, reader=reader)
        self._grade = grade or ungraded
        self._grade_all = grade_all
        self._live = live
        self.conversations = conversations
        if conversations is not None:
            # Conversations the bounds make leave early are this pipeline's drops.
            conversations.stats = self.stats
        self._conversation_callbacks: list[Callable[[ConversationVerdict], None]] = []
        self._live_checkers: dict[int, LiveChecker | None] = {}
        self._agent_by_service: dict[str, str] = {}
        self.sinks = list(sinks)
        self._callbacks = list(callbacks)
        # In-process the worker holds each ended span until its next tick (or until the hooks wake
        # it, 256 spans on). Held longer, spans outlive the application's young-generation
        # collections and make every collection slower: measured on agent trees, a 50 ms tick cost
        # 1.13x application CPU, 20 ms 1.05x. With nothing in flight the worker waits longer, so an
        # idle process is not woken 50 times a second; the first spans of a burst wait for it at
        # most ``idle_tick_s`` (the hooks wake it 256 spans on, the receiver on its first request).
        self._tick = tick_s
        self._idle_tick = max(tick_s, idle_tick_s)
        self.wake = threading.Event()
        self._work_lock = threading.Lock()
        self._stopping = False
        self._worker = start_daemon(self._run, "otel-traj-worker")
        # Registered after the sinks' own hooks (they were built first): in a child they restart first.
        after_fork_in_child(self._restart_in_child)

    def _restart_in_child(self) -> None:
        """In a forked child: no runs, fresh locks, and a worker again (the parent's is gone)."""
        self._work_lock = threading.Lock()
        self.wake = threading.Event()
        self.stats.restart_in_child()
        self.assembler.restart_in_child()
        self._live_checkers.clear()
        if not self._stopping:
            self._worker = start_daemon(self._run, "otel-traj-worker")

    def add_callback(self, callback: VerdictCallback) -> None:
        self._callbacks.append(callback)

    def add_sink(self, sink: Sink) -> None:
        self.sinks.append(sink)

    # -- worker ---------------------------------------------------------------------------------

    def _run(self) -> None:
        while not self._stopping:
            self.wake.wait(self.next_wait())
            self.wake.clear()
            self.process()

    def next_wait(self) -> float:
        """Seconds the worker sleeps before its next look unless woken: none when its last pass left
        ended spans queued (a pass reads at most ``SPANS_PER_PASS``)."""
        if self.assembler.behind:
            return 0.0
        return self._idle_tick if self.assembler.idle else self._tick

    def process(self, flush: bool = False, expire_all: bool = False, timeout_s: float = -1) -> int:
        """Grade what is ready; returns how many verdicts were produced, or -1 when the worker held
        the work for longer than ``timeout_s`` (a sink blocking its export). Safe from any thread."""
        if not self._work_lock.acquire(timeout=timeout_s):
            return -1
        try:
            try:
                if self.assembler.track_starts:
                    self.assembler.sync_open(everything=flush)
                finished = self.assembler.pop_ready(flush=flush, expire_all=expire_all)
                # After pop_ready: runs finishing in this tick get their full verdict right away,
                # so a live pass over them would only repeat it.
                if self._live is not None:
                    self._check_live()
                self._finish(finished)
                if self.conversations is not None:
                    self._finish_conversations(self.conversations.ready(flush=flush))
                return len(finished)
            except Exception:
                self.stats.count_internal_error()
                logger.exception("otel-traj worker failed")
                return 0
        finally:
            self._work_lock.release()

    def _check_live(self) -> None:
        for batch in self.assembler.take_new_tool_calls():
            try:
                self._check_live_batch(batch)
            except Exception:
                # Runs finished in this tick are graded next; a live check must not take them along.
                self.stats.count_internal_error()
                logger.exception("live checks of trace %032x failed", batch.context.trace_id)

    def _check_live_batch(self, batch: LiveBatch) -> None:
        assert self._live is not None
        context = batch.context
        if context.trace_id not in self._live_checkers:
            self._live_checkers[context.trace_id] = self._live(context)
        checker = self._live_checkers[context.trace_id]
        if checker is None:
            return
        for call in batch.calls:
            result = checker.observe(call, context, batch.models)
            if result is not None:
                self._emit_live(context, call, result)

    def _emit_live(self, context: TraceContext, call: ToolCall, result: CheckResult) -> None:
        service = context.service_name or "unknown"
        violation = LiveViolation(
            trace_id=context.trace_id,
            # The agent span ends last, so its name is not known yet: use the agent this service's
            # earlier runs were graded as, so live and final metrics share one label.
            agent=self._agent_by_service.get(service, service),
            tool=call.name,
            step_id=call.step_id or span_hex(call.span_id),
            result=result,
        )
        for sink in self.sinks:
            try:
                sink.on_live_violation(violation)
            except Exception:
                self.stats.count_sink_error(type(sink).__name__)
                logger.exception("sink %s failed on a live violation", type(sink).__name__)

    def _finish(self, finished: list[Finished]) -> None:
        """Build every finished run, grade them together, hand each verdict on. One run that cannot be
        built or graded must not take the others with it."""
        trajectories: list[Trajectory] = []
        for item in finished:
            self._live_checkers.pop(item.context.trace_id, None)
            try:
                trajectory = build_trajectory(
                    item.context, item.steps, complete=item.complete, backlog_steps=item.backlog_steps
                )
            except Exception:
                self._failed(item.context.trace_id)
                continue
            if trajectory.service_name:
                self._agent_by_service[trajectory.service_name] = trajectory.agent_label
            trajectories.append(trajectory)
        verdicts = self._verdicts(trajectories)
        # Callbacks last: a callback sees a verdict every sink already has (one that flushes a sink,
        # as the receiver benchmark flushes the store, finds the verdict there).
        for sink in self.sinks:
            for verdict in verdicts:
                try:
                    sink.export(verdict)
                except Exception:
                    self.stats.count_sink_error(type(sink).__name__)
                    logger.exception("sink %s failed", type(sink).__name__)
        if self.conversations is not None:
            for verdict in verdicts:
                try:
                    self.conversations.observe(verdict)
                except Exception:
                    self.stats.count_internal_error()
                    logger.exception("conversation of trace %032x failed", verdict.trajectory.trace_id)
        for verdict in verdicts:
            for callback in self._callbacks:
                try:
                    callback(verdict)
                except Exception:
                    self.stats.count_internal_error()
                    logger.exception("verdict callback failed")

    def _finish_conversations(self, verdicts: list[ConversationVerdict]) -> None:
        for sink in self.sinks:
            for verdict in verdicts:
                try:
                    sink.export_conversation(verdict)
                except Exception:
                    self.stats.count_sink_error(type(sink).__name__)
                    logger.exception("sink %s failed on a conversation", type(sink).__name__)
        for verdict in verdicts:
            for callback in self._conversation_callbacks:
                try:
                    callback(verdict)
                except Exception:
                    self.stats.count_internal_error()
                    logger.exception("conversation callback failed")

    def add_conversation_callback(self, callback: Callable[[ConversationVerdict], None]) -> None:
        self._conversation_callbacks.append(callback)

    def _verdicts(self, trajectories: list[Trajectory]) -> list[Verdict]:
        """All at once where the grader can (check by check, faster); if that fails, one by one, so
        that only the runs that cannot be graded are lost (counted and logged). A verdict without the
        time it was graded (a grade function's own, ``ungraded``) is given the time now."""
        verdicts: list[Verdict] | None = None
        if self._grade_all is not None and trajectories:
            try:
                verdicts = self._grade_all(trajectories)
            except Exception:
                logger.debug("grading %d runs together failed, grading them one by one", len(trajectories))
        if verdicts is None:
            verdicts = []
            for trajectory in trajectories:
                try:
                    verdicts.append(self._grade(trajectory))
                except Exception:
                    self._failed(trajectory.trace_id)
        now = time.time_ns()
        return [
            verdict if verdict.graded_at_ns else replace(verdict, graded_at_ns=now) for verdict in verdicts
        ]

    def _failed(self, trace_id: int) -> None:
        self.stats.count_failed_run()
        logger.exception("otel-traj could not grade trace %032x", trace_id)

    # -- lifecycle ------------------------------------------------------------------------------

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Grade every trace that is complete now (without waiting for the grace period) and flush
        the sinks, within the timeout. False after shutdown, or when the time ran out."""
        if self._stopping:
            return False
        deadline = time.monotonic() + timeout_millis / 1000
        graded = self.process(flush=True, timeout_s=_left(deadline))
        return self._flush_sinks(deadline) and graded >= 0

    def _flush_sinks(self, deadline: float) -> bool:
        ok = True
        for sink in self.sinks:
            try:
                ok = sink.force_flush(_left_ms(deadline)) and ok
            except Exception:
                self.stats.count_sink_error(type(sink).__name__)
                ok = False
        return ok

    def shutdown(self, timeout_millis: int = 30_000) -> None:
        """Stop the worker, grade everything still buffered (unfinished traces marked incomplete),
        then flush and shut down the sinks, each with what is left of the deadline. Idempotent; from
        then on nothing is taken or retained."""
        if self._stopping:
            return
        deadline = time.monotonic() + timeout_millis / 1000
        self._stopping = True
        self.wake.set()
        self._worker.join(timeout=_left(deadline))
        if self.process(flush=True, expire_all=True, timeout_s=_left(deadline)) < 0:
            # The worker is stuck in a sink: what it holds cannot be graded within the deadline.
            self.stats.count_dropped("shutdown", self.assembler.in_flight)
            logger.warning("otel-traj shutdown: %d runs not graded in time", self.assembler.in_flight)
        self.assembler.open_spans.clear()
        self._flush_sinks(deadline)
        for sink in self.sinks:
            try:
                sink.shutdown(_left_ms(deadline))
            except Exception:
                self.stats.count_sink_error(type(sink).__name__)


def _left(deadline: float) -> float:
    return max(0.0, deadline - time.monotonic())


def _left_ms(deadline: float) -> int:
    return int(_left(deadline) * 1000)
