"""The operations port: ``/metrics`` (Prometheus), ``/healthz`` (alive) and ``/readyz`` (accepting).

Readiness turns false while shutting down, and while a receiver is starved: every one of its
decoding slots held longer than the body timeout, so that nothing sent to it can be taken whatever the
exporters do. It deliberately stays true under overload: with the collector's DNS or k8s resolver, a
replica leaving the endpoint list reshuffles which replica owns which trace, which splits traces in
flight; overload is answered per request with 503/UNAVAILABLE.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from prometheus_client import (
    CollectorRegistry,
    GCCollector,
    PlatformCollector,
    ProcessCollector,
    make_asgi_app,
)
from prometheus_client.metrics_core import CounterMetricFamily, Metric
from prometheus_client.registry import Collector

from otel_traj.serve.http_receiver import Receive, Scope, Send
from otel_traj.serve.ingest import REQUEST_RESULTS, ReceiverStats
from otel_traj.serve.tls import ServedCertificate


def register_service_metrics(
    registry: CollectorRegistry,
    stats: ReceiverStats,
    tls: ServedCertificate | None = None,
    starvations: Callable[[], Mapping[str, int]] | None = None,
) -> None:
    """What the service adds to the Prometheus sink's registry: its receiver and reload counters, and
    its process (memory, CPU, file descriptors, GC, ``python_info``) as every client exposes it."""
    registry.register(ReceiverCollector(stats, tls, starvations))
    for collector in (ProcessCollector, PlatformCollector, GCCollector):
        collector(registry=registry)


class ReceiverCollector(Collector):
    """``otel_traj_receiver_requests_total{transport,result}``, the policy reload counters, with
    ``starvations`` (by transport, looked at on each scrape) ``otel_traj_receiver_starved_total`` and,
    with TLS, the certificate reload counters."""

    def __init__(
        self,
        stats: ReceiverStats,
        tls: ServedCertificate | None = None,
        starvations: Callable[[], Mapping[str, int]] | None = None,
    ) -> None:
        self._stats = stats
        self._tls = tls
        self._starvations = starvations

    def collect(self) -> Iterable[Metric]:
        requests, reloads, reload_errors = self._stats.snapshot()
        family = CounterMetricFamily(
            "otel_traj_receiver_requests",
            "OTLP export requests received, by transport and result.",
            labels=["transport", "result"],
        )
        for transport in ("grpc", "http"):
            for result in REQUEST_RESULTS:
                family.add_metric([transport, result], requests.get((transport, result), 0))
        yield family
        if self._starvations is not None:
            starved = CounterMetricFamily(
                "otel_traj_receiver_starved",
                "Times a receiver was found starved: every decoding slot held longer than the body "
                "timeout (/readyz answers 503 meanwhile).",
                labels=["transport"],
            )
            for transport, times in sorted(self._starvations().items()):
                starved.add_metric([transport], times)
            yield starved
        yield CounterMetricFamily(
            "otel_traj_policy_reloads", "Policy reloads (SIGHUP) that took effect.", reloads
        )
        yield CounterMetricFamily(
            "otel_traj_policy_reload_errors",
            "Policy reloads (SIGHUP) refused because the file was invalid; the old policy stays.",
            reload_errors,
        )
        if self._tls is not None:
            yield CounterMetricFamily(
                "otel_traj_tls_reloads",
                "Changed TLS certificate files served from the next handshake on.",
                self._tls.reloads,
            )
            yield CounterMetricFamily(
                "otel_traj_tls_reload_errors",
                "Changed TLS certificate files that did not load; the previous certificate is still "
                "served and will expire.",
                self._tls.reload_errors,
            )


class HealthApp:
    """``/healthz`` answers 200 ``ok`` while the process serves, with a line per dependency that is
    not on the ingest path (``details``: a PostgreSQL store's state); ``/readyz`` 200 while it accepts
    spans, 503 with the reason (``ready()`` gives it, None when ready) once it drains or starves."""

    def __init__(
        self,
        registry: CollectorRegistry,
        ready: Callable[[], str | None],
        details: Callable[[], list[str]] = list,
    ) -> None:
        self._metrics = make_asgi_app(registry)
        self._ready = ready
        self._details = details

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        path = scope["path"]
        if path == "/metrics":
            await self._metrics(scope, receive, send)
            return
        if path == "/healthz":
            await _text(send, 200, "".join(f"{line}\n" for line in ["ok", *self._details()]).encode())
        elif path == "/readyz":
            why = self._ready()
            await _text(send, 200 if why is None else 503, f"{why or 'ready'}\n".encode())
        else:
            await _text(send, 404, b"not found: /metrics, /healthz, /readyz\n")


async def _text(send: Any, status: int, body: bytes) -> None:
    headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
