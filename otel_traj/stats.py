"""Pipeline health counters, shared by the processor, the receiver and the sinks.

Plain integers updated under one lock and read at scrape time by the Prometheus sink, so the hot path
never touches a metrics library.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

# ``unreadable``: spans with GenAI evidence that yielded no complete step (kept as unreadable steps).
SPAN_RESULTS = ("accepted", "ignored", "malformed", "late", "unreadable")


@dataclass(slots=True)
class StatsSnapshot:
    spans: dict[str, int]
    dropped: dict[str, int]
    sink_errors: dict[str, int]
    traces_in_flight: int
    internal_errors: int
    check_errors: dict[str, int] = field(default_factory=dict)
    judge_calls: dict[tuple[str, str], int] = field(default_factory=dict)
    contradictions: int = 0
    queued: dict[str, int] = field(default_factory=dict)
    held_bytes: int = 0


@dataclass
class PipelineStats:
    spans: dict[str, int] = field(default_factory=lambda: dict.fromkeys(SPAN_RESULTS, 0))
    dropped: dict[str, int] = field(default_factory=dict)
    sink_errors: dict[str, int] = field(default_factory=dict)
    traces_in_flight: int = 0
    # Bytes of memory the runs in flight hold (the assembler's ``held``).
    held_bytes: int = 0
    internal_errors: int = 0
    # Custom checks that raised or returned no CheckResult, by check name.
    check_errors: dict[str, int] = field(default_factory=dict)
    # LLM judge calls by (judge, result): ok, timeout, error, invalid, capped, queue_full, shutdown.
    judge_calls: dict[tuple[str, str], int] = field(default_factory=dict)
    # Spans whose kind vocabularies disagreed (settled by ``dialects.recognize``'s rule).
    contradictions: int = 0
    # Items waiting in each delivery queue (``otel_traj.delivery``), read when a snapshot is taken.
    queues: dict[str, Callable[[], int]] = field(default_factory=dict, repr=False, compare=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def count_spans(self, result: str, n: int = 1) -> None:
        with self._lock:
            self.spans[result] = self.spans.get(result, 0) + n

    def count_span_results(self, results: dict[str, int], contradictions: int = 0) -> None:
        """Several span results at once (one request's or one tick's), under this lock only."""
        with self._lock:
            spans = self.spans
            for result, n in results.items():
                if n:
                    spans[result] = spans.get(result, 0) + n
            self.contradictions += contradictions

    def count_dropped(self, reason: str, n: int = 1) -> None:
        with self._lock:
            self.dropped[reason] = self.dropped.get(reason, 0) + n

    def count_sink_error(self, sink: str, n: int = 1) -> None:
        with self._lock:
            self.sink_errors[sink] = self.sink_errors.get(sink, 0) + n

    def count_internal_error(self) -> None:
        with self._lock:
            self.internal_errors += 1

    def count_check_error(self, check: str) -> None:
        with self._lock:
            self.check_errors[check] = self.check_errors.get(check, 0) + 1

    def count_judge_call(self, judge: str, result: str) -> None:
        with self._lock:
            key = (judge, result)
            self.judge_calls[key] = self.judge_calls.get(key, 0) + 1

    def count_failed_run(self) -> None:
        """A run lost to an error inside otel-traj: an internal error, and a run dropped because of it."""
        with self._lock:
            self.internal_errors += 1
            self.dropped["internal_error"] = self.dropped.get("internal_error", 0) + 1

    def watch_queue(self, name: str, depth: Callable[[], int]) -> None:
        with self._lock:
            self.queues[name] = depth

    def restart_in_child(self) -> None:
        """After ``fork``: a lock the parent held at that moment would stay held here."""
        self._lock = threading.Lock()
        self.traces_in_flight = 0
        self.held_bytes = 0

    def snapshot(self) -> StatsSnapshot:
        with self._lock:
            return StatsSnapshot(
                spans=dict(self.spans),
                dropped=dict(self.dropped),
                sink_errors=dict(self.sink_errors),
                traces_in_flight=self.traces_in_flight,
                internal_errors=self.internal_errors,
                check_errors=dict(self.check_errors),
                judge_calls=dict(self.judge_calls),
                contradictions=self.contradictions,
                queued={name: depth() for name, depth in self.queues.items()},
                held_bytes=self.held_bytes,
            )
