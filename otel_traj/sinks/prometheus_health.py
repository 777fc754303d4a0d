"""Pipeline health as Prometheus metrics, read from ``PipelineStats`` at scrape time.

The processor, the receiver and the sinks count spans, drops and errors in plain integers; a custom
collector turns them into metric families only when Prometheus scrapes (prometheus_client's way to
expose counts kept elsewhere), which keeps the metrics library off the span hot path entirely.

One collector per registry sums every ``PipelineStats`` registered with it, so two pipelines in one
process, or a sink shared by two pipelines, are all reported on one set of series.
"""

from __future__ import annotations

import threading
import weakref
from collections import Counter
from collections.abc import Iterable

from prometheus_client import CollectorRegistry
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from otel_traj.stats import SPAN_RESULTS, PipelineStats, StatsSnapshot

_collectors: weakref.WeakKeyDictionary[CollectorRegistry, PipelineHealthCollector] = (
    weakref.WeakKeyDictionary()
)
_collectors_lock = threading.Lock()


def register_pipeline_health(registry: CollectorRegistry, *stats: PipelineStats) -> None:
    """Report each of ``stats`` (a pipeline's, its sinks') in ``registry``'s pipeline-health metrics,
    added to any stats already there.

    Idempotent: the same ``stats`` object registered twice is counted once.
    """
    with _collectors_lock:
        collector = _collectors.get(registry)
        if collector is None:
            collector = PipelineHealthCollector()
            # Raises if the registry already holds these names (a collector registered by hand).
            registry.register(collector)
            _collectors[registry] = collector
    for each in stats:
        collector.add(each)


class PipelineHealthCollector(Collector):
    """Exposes ``otel_traj_spans_total{result}``, ``otel_traj_traces_in_flight``,
    ``otel_traj_dropped_total{reason}``, ``otel_traj_sink_errors_total{sink}``,
    ``otel_traj_internal_errors_total``, ``otel_traj_span_contradictions_total`` and
    ``otel_traj_sink_queue{sink}``, summed over the
    stats added to it.

    Stats are held for the collector's life: dropping one would make the summed counters go down,
    which Prometheus reads as a counter reset.
    """

    def __init__(self) -> None:
        # By identity: PipelineStats compares by value, and two pipelines' stats may be equal.
        self._stats: dict[int, PipelineStats] = {}
        self._lock = threading.Lock()

    def add(self, stats: PipelineStats) -> None:
        with self._lock:
            self._stats.setdefault(id(stats), stats)

    def describe(self) -> Iterable[Metric]:
        # Lets the registry detect name collisions without taking a snapshot.
        return _families(None)

    def collect(self) -> Iterable[Metric]:
        with self._lock:
            stats = list(self._stats.values())
        return _families(_sum(s.snapshot() for s in stats))


def _sum(snapshots: Iterable[StatsSnapshot]) -> StatsSnapshot:
    spans: Counter[str] = Counter()
    dropped: Counter[str] = Counter()
    sink_errors: Counter[str] = Counter()
    check_errors: Counter[str] = Counter()
    judge_calls: Counter[tuple[str, str]] = Counter()
    queued: Counter[str] = Counter()
    in_flight = internal = contradictions = held = 0
    for snap in snapshots:
        check_errors.update(snap.check_errors)
        judge_calls.update(snap.judge_calls)
        queued.update(snap.queued)
        spans.update(snap.spans)
        dropped.update(snap.dropped)
        sink_errors.update(snap.sink_errors)
        in_flight += snap.traces_in_flight
        held += snap.held_bytes
        internal += snap.internal_errors
        contradictions += snap.contradictions
    return StatsSnapshot(
        spans=dict(spans),
        dropped=dict(dropped),
        sink_errors=dict(sink_errors),
        traces_in_flight=in_flight,
        internal_errors=internal,
        check_errors=dict(check_errors),
        judge_calls=dict(judge_calls),
        contradictions=contradictions,
        queued=dict(queued),
        held_bytes=held,
    )


def _families(snap: StatsSnapshot | None) -> list[Metric]:
    spans = CounterMetricFamily(
        "otel_traj_spans", "Spans seen by the trajectory pipeline, by what became of them.", labels=["result"]
    )
    in_flight = GaugeMetricFamily("otel_traj_traces_in_flight", "Traces buffered and not yet graded.")
    held = GaugeMetricFamily(
        "otel_traj_held_bytes", "Bytes of memory the runs in flight hold (against OTEL_TRAJ_MAX_HELD_BYTES)."
    )
    dropped = CounterMetricFamily(
        "otel_traj_dropped",
        "Spans, steps or trajectories dropped by a cap or a full queue.",
        labels=["reason"],
    )
    sink_errors = CounterMetricFamily(
        "otel_traj_sink_errors", "Verdict exports that failed, by sink.", labels=["sink"]
    )
    internal = CounterMetricFamily(
        "otel_traj_internal_errors", "Errors caught inside the pipeline instead of reaching the application."
    )
    check_errors = CounterMetricFamily(
        "otel_traj_check_errors", "Custom checks that raised (graded as skipped), by check.", labels=["check"]
    )
    judge_calls = CounterMetricFamily(
        "otel_traj_judge_calls",
        "LLM judge calls by judge and result (ok, timeout, error, invalid, capped, queue_full, shutdown).",
        labels=["judge", "result"],
    )
    contradictions = CounterMetricFamily(
        "otel_traj_span_contradictions",
        "Spans whose kind keys disagreed about what the span is (settled by the documented rule).",
    )
    queues = GaugeMetricFamily(
        "otel_traj_sink_queue",
        "Items waiting in a sink's delivery queue or being delivered (verdicts, scores, judge runs).",
        labels=["sink"],
    )
    if snap is not None:
        for sink, depth in sorted(snap.queued.items()):
            queues.add_metric([sink], depth)
        contradictions.add_metric([], snap.contradictions)
        for check, count in sorted(snap.check_errors.items()):
            check_errors.add_metric([check], count)
        for (judge, result), count in sorted(snap.judge_calls.items()):
            judge_calls.add_metric([judge, result], count)
        # Every span result is always exposed so that rate() works from the first scrape.
        for result in SPAN_RESULTS:
            spans.add_metric([result], snap.spans.get(result, 0))
        for result, count in snap.spans.items():
            if result not in SPAN_RESULTS:
                spans.add_metric([result], count)
        in_flight.add_metric([], snap.traces_in_flight)
        held.add_metric([], snap.held_bytes)
        for reason, count in sorted(snap.dropped.items()):
            dropped.add_metric([reason], count)
        for sink, count in sorted(snap.sink_errors.items()):
            sink_errors.add_metric([sink], count)
        internal.add_metric([], snap.internal_errors)
    return [
        spans,
        in_flight,
        dropped,
        sink_errors,
        internal,
        check_errors,
        judge_calls,
        contradictions,
        queues,
        held,
    ]
