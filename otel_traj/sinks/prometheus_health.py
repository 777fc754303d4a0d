"""Pipeline health as Prometheus metrics, read from ``PipelineStats`` at scrape time.

The processor and receiver count spans, drops and errors in plain integers; turning them into metric
families only when Prometheus scrapes keeps the metrics library off the span hot path entirely.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from otel_traj.stats import SPAN_RESULTS, PipelineStats, StatsSnapshot


class PipelineHealthCollector(Collector):
    """Exposes ``otel_traj_spans_total{result}``, ``otel_traj_traces_in_flight``,
    ``otel_traj_dropped_total{reason}``, ``otel_traj_sink_errors_total{sink}`` and
    ``otel_traj_internal_errors_total``.

    ``stats`` is a callable so that a sink re-attached to the pipeline's shared stats is read, not
    the object it held when the collector was registered.
    """

    def __init__(self, stats: Callable[[], PipelineStats]) -> None:
        self._stats = stats

    def describe(self) -> Iterable[Metric]:
        # Lets the registry detect name collisions without taking a snapshot.
        return _families(None)

    def collect(self) -> Iterable[Metric]:
        return _families(self._stats().snapshot())


def _families(snap: StatsSnapshot | None) -> list[Metric]:
    spans = CounterMetricFamily(
        "otel_traj_spans", "Spans seen by the trajectory pipeline, by what became of them.", labels=["result"]
    )
    in_flight = GaugeMetricFamily("otel_traj_traces_in_flight", "Traces buffered and not yet graded.")
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
    if snap is not None:
        # Every span result is always exposed so that rate() works from the first scrape.
        for result in SPAN_RESULTS:
            spans.add_metric([result], snap.spans.get(result, 0))
        for result, count in snap.spans.items():
            if result not in SPAN_RESULTS:
                spans.add_metric([result], count)
        in_flight.add_metric([], snap.traces_in_flight)
        for reason, count in sorted(snap.dropped.items()):
            dropped.add_metric([reason], count)
        for sink, count in sorted(snap.sink_errors.items()):
            sink_errors.add_metric([sink], count)
        internal.add_metric([], snap.internal_errors)
    return [spans, in_flight, dropped, sink_errors, internal]
