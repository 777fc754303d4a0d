"""Prometheus sink: verdicts as counters and histograms that alert rules and dashboards read.

Metric names and labels are a public contract (``dashboards/`` depends on them). Label values are
bounded here, not trusted to the traced application: agent and tool names come from allow-lists or
the first N seen, check names from a fixed set; everything else is ``other``. Trace ids travel as
exemplars (OpenMetrics exposition only), never as labels.

The series are plain numbers updated under one lock per verdict and turned into metric families
only when Prometheus scrapes, like the pipeline's health counters: a ``prometheus_client`` metric
object validates, locks and allocates on every update (about 2 µs each, twenty-odd per verdict),
which showed up in the receiver's throughput.
"""

from __future__ import annotations

import math
import os
import threading
import time
from bisect import bisect_left
from collections.abc import Callable, Iterable
from typing import Any

from prometheus_client import CollectorRegistry, make_asgi_app, make_wsgi_app
from prometheus_client import start_http_server as _start_http_server
from prometheus_client.metrics_core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector
from prometheus_client.samples import Exemplar
from prometheus_client.utils import floatToGoString

from otel_traj.cases.dimensions import SEVERITY as CASE_SEVERITY
from otel_traj.policy.models import Severities
from otel_traj.sinks.base import LiveViolation, Sink
from otel_traj.sinks.prometheus_health import PipelineHealthCollector
from otel_traj.steps import span_hex, trace_hex
from otel_traj.verdict import Verdict

OTHER = "other"
SCOPE_CHECK = "scope"

# Checks the grader can report: every policy check (one severity each) and every golden-case
# dimension. A name outside this set is exposed as ``other`` so that a custom or misspelled check
# cannot grow the label set.
CHECK_NAMES = frozenset(Severities.model_fields) | frozenset(CASE_SEVERITY)

# Agent runs range from a few hundred tokens to long tool loops of a million; steps of roughly 1.6x
# keep histogram_quantile() within the 1.5x budget-regression threshold the alert rules use.
TOKEN_BUCKETS = (
    100, 250, 500, 1_000, 1_500, 2_500, 4_000, 6_000, 10_000, 15_000, 25_000, 40_000, 60_000,
    100_000, 150_000, 250_000, 400_000, 600_000, 1_000_000,
)  # fmt: skip
STEP_BUCKETS = (0, 1, 2, 3, 4, 5, 6, 8, 10, 12, 15, 20, 25, 30, 40, 50, 75, 100)
DURATION_BUCKETS = (0.5, 1, 2, 3, 5, 8, 13, 20, 30, 45, 60, 90, 120, 180, 300, 600, 1200, 1800, 3600)

# Traces with a live violation whose verdict has not arrived yet; beyond this the oldest are
# forgotten (their violations may then be counted again at export).
MAX_PENDING_LIVE_TRACES = 10_000


class LabelBudget:
    """Maps raw names to a bounded set of label values.

    With an allow-list, names outside it are ``other``. Without one, the first ``max_values`` distinct
    names are kept as they are and later ones are ``other``: bounded, and stable for a process's life.
    """

    def __init__(self, allowlist: Iterable[str] | None, max_values: int) -> None:
        if max_values < 0:
            raise ValueError(f"max_values must be >= 0, got {max_values}")
        self._fixed = allowlist is not None
        self._values: set[str] = set(allowlist or ())
        self._max = max_values
        self._lock = threading.Lock()

    def label(self, name: str) -> str:
        if name in self._values:
            return name
        if self._fixed:
            return OTHER
        with self._lock:
            if name in self._values:
                return name
            if len(self._values) < self._max:
                self._values.add(name)
                return name
        return OTHER

    def __len__(self) -> int:
        return len(self._values)


Labels = tuple[str, ...]


# An exemplar as the series keep it, ``(labels, value, timestamp)``: a plain tuple, turned into
# prometheus_client's ``Exemplar`` only when scraped (its constructor is Python code, 0.3 µs each).
RawExemplar = tuple[dict[str, str], float, float]


def _exemplar(raw: RawExemplar | None) -> Exemplar | None:
    return Exemplar(*raw) if raw is not None else None


class CounterSeries:
    """A counter family: per label tuple its value, last exemplar and creation time. Callers hold
    the sink's lock."""

    def __init__(self, name: str, documentation: str, labelnames: Labels) -> None:
        self.name = name
        self.documentation = documentation
        self.labelnames = labelnames
        self.series: dict[Labels, list[Any]] = {}

    def inc(self, labels: Labels, amount: float = 1.0, exemplar: dict[str, str] | None = None) -> None:
        series = self.series.get(labels)
        if series is None:
            series = self.series[labels] = [0.0, None, time.time()]
        series[0] += amount
        if exemplar is not None:
            series[1] = (exemplar, amount, time.time())

    def inc_each(self, many: Iterable[Labels]) -> None:
        """``inc(labels)`` for each label tuple of ``many`` (repeats count again), in one call."""
        series = self.series
        for labels in many:
            values = series.get(labels)
            if values is None:
                values = series[labels] = [0.0, None, time.time()]
            values[0] += 1.0

    def family(self) -> CounterMetricFamily:
        family = CounterMetricFamily(self.name, self.documentation, labels=self.labelnames)
        for labels, (value, exemplar, created) in self.series.items():
            family.add_metric(labels, value, created=created, exemplar=_exemplar(exemplar))
        return family


class HistogramSeries:
    """A histogram family: per label tuple the count of each bucket (not cumulative), the sum, the
    last exemplar of each bucket and the creation time. Callers hold the sink's lock."""

    def __init__(self, name: str, documentation: str, labelnames: Labels, buckets: Iterable[float]) -> None:
        self.name = name
        self.documentation = documentation
        self.labelnames = labelnames
        self.bounds = (*(float(b) for b in buckets), math.inf)
        # Go's float formatting (``le="1e+06"``), as prometheus_client's own histograms write it.
        self._les: list[str] = [floatToGoString(b) for b in self.bounds]  # type: ignore[no-untyped-call]
        self.series: dict[Labels, list[Any]] = {}

    def observe(self, labels: Labels, amount: float, exemplar: dict[str, str] | None = None) -> None:
        series = self.series.get(labels)
        if series is None:
            n = len(self.bounds)
            series = self.series[labels] = [[0.0] * n, 0.0, [None] * n, time.time()]
        # Buckets are "less than or equal": the first bound not below the amount.
        i = bisect_left(self.bounds, amount)
        series[0][i] += 1.0
        series[1] += amount
        if exemplar is not None:
            series[2][i] = (exemplar, amount, time.time())

    def family(self) -> HistogramMetricFamily:
        family = HistogramMetricFamily(self.name, self.documentation, labels=self.labelnames)
        for labels, (counts, total, exemplars, created) in self.series.items():
            buckets: list[Any] = []
            cumulative = 0.0
            for le, count, exemplar in zip(self._les, counts, exemplars, strict=True):
                cumulative += count
                buckets.append(
                    (le, cumulative) if exemplar is None else (le, cumulative, _exemplar(exemplar))
                )
            family.add_metric(labels, buckets, total)
            family.add_sample(
                self.name + "_created", dict(zip(self.labelnames, labels, strict=True)), created
            )
        return family


class _SeriesCollector(Collector):
    def __init__(self, families: list[CounterSeries | HistogramSeries], lock: threading.Lock) -> None:
        self._families = families
        self._lock = lock

    def describe(self) -> Iterable[Metric]:
        # Names only, so the registry detects collisions without a snapshot.
        return [
            CounterMetricFamily(f.name, f.documentation, labels=f.labelnames)
            if isinstance(f, CounterSeries)
            else HistogramMetricFamily(f.name, f.documentation, labels=f.labelnames)
            for f in self._families
        ]

    def collect(self) -> Iterable[Metric]:
        with self._lock:
            return [f.family() for f in self._families]


def _env_list(name: str) -> list[str] | None:
    raw = os.environ.get(name, "").strip()
    return [part.strip() for part in raw.split(",") if part.strip()] if raw else None


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"{name} must be an integer, got {raw!r}") from None


class PrometheusSink(Sink):
    """Publishes verdicts as ``otel_traj_*`` metrics in its own ``CollectorRegistry``.

    Args:
        registry: where the metrics are registered; a fresh registry by default so the host
            application's metrics never collide with ours.
        tool_allowlist / agent_allowlist: the only tool / agent label values (others become
            ``other``). Default from ``OTEL_TRAJ_PROMETHEUS_TOOLS`` / ``OTEL_TRAJ_PROMETHEUS_AGENTS``
            (comma-separated); without one, the first ``max_tools`` / ``max_agents`` names seen.
        max_tools / max_agents: caps without an allow-list (``OTEL_TRAJ_PROMETHEUS_MAX_TOOLS``,
            default 50; ``OTEL_TRAJ_PROMETHEUS_MAX_AGENTS``, default 20).
        check_names: the check label values (default: the grader's checks).
    """

    def __init__(
        self,
        registry: CollectorRegistry | None = None,
        tool_allowlist: Iterable[str] | None = None,
        agent_allowlist: Iterable[str] | None = None,
        max_tools: int | None = None,
        max_agents: int | None = None,
        check_names: Iterable[str] = CHECK_NAMES,
    ) -> None:
        super().__init__()
        self.registry = registry if registry is not None else CollectorRegistry()
        if tool_allowlist is None:
            tool_allowlist = _env_list("OTEL_TRAJ_PROMETHEUS_TOOLS")
        if agent_allowlist is None:
            agent_allowlist = _env_list("OTEL_TRAJ_PROMETHEUS_AGENTS")
        if max_tools is None:
            max_tools = _env_int("OTEL_TRAJ_PROMETHEUS_MAX_TOOLS", 50)
        if max_agents is None:
            max_agents = _env_int("OTEL_TRAJ_PROMETHEUS_MAX_AGENTS", 20)
        self.tools = LabelBudget(tool_allowlist, max_tools)
        self.agents = LabelBudget(agent_allowlist, max_agents)
        self._check_names = frozenset(check_names)
        # Guards the series and the live steps; taken once per verdict.
        self._lock = threading.Lock()
        self._live_steps: dict[int, set[str]] = {}
        self._servers: list[tuple[Any, threading.Thread]] = []

        self.trajectories = CounterSeries(
            "otel_traj_trajectories", "Graded trajectories by outcome.", ("agent", "outcome")
        )
        self.check_results = CounterSeries(
            "otel_traj_check_results",
            "Check results of graded trajectories.",
            ("agent", "check", "status", "severity"),
        )
        self.scope_violations = CounterSeries(
            "otel_traj_scope_violations",
            "Tool calls that touched data outside the run's subject, counted when the tool span ends.",
            ("agent", "tool"),
        )
        self.tool_calls = CounterSeries(
            "otel_traj_tool_calls", "Tool calls of graded trajectories.", ("agent", "tool", "status")
        )
        self.trajectory_tool_calls = HistogramSeries(
            "otel_traj_trajectory_tool_calls", "Tool calls per trajectory.", ("agent",), STEP_BUCKETS
        )
        self.trajectory_model_turns = HistogramSeries(
            "otel_traj_trajectory_model_turns", "Model calls per trajectory.", ("agent",), STEP_BUCKETS
        )
        self.trajectory_tokens = HistogramSeries(
            "otel_traj_trajectory_tokens",
            "Tokens per trajectory (input, output, total).",
            ("agent", "type"),
            TOKEN_BUCKETS,
        )
        self.trajectory_duration = HistogramSeries(
            "otel_traj_trajectory_duration_seconds",
            "Wall time of the agent run.",
            ("agent",),
            DURATION_BUCKETS,
        )
        families: list[CounterSeries | HistogramSeries] = [
            self.trajectories,
            self.check_results,
            self.scope_violations,
            self.tool_calls,
            self.trajectory_tool_calls,
            self.trajectory_model_turns,
            self.trajectory_tokens,
            self.trajectory_duration,
        ]
        self.registry.register(_SeriesCollector(families, self._lock))
        self.registry.register(PipelineHealthCollector(lambda: self.stats))

    def export(self, verdict: Verdict) -> None:
        traj = verdict.trajectory
        agent = self.agents.label(traj.agent_label)
        exemplar = {"trace_id": traj.trace_hex}
        check_names = self._check_names
        passed: list[Labels] = []
        failed: list[Labels] = []
        for c in verdict.checks:
            labels = (agent, c.name if c.name in check_names else OTHER, c.status, c.severity)
            (failed if c.failed else passed).append(labels)
        tool_label = self.tools.label
        tools = [
            (
                agent,
                tool_label(call.name),
                "unobserved" if not call.observed else "ok" if call.ok else "error",
            )
            for call in traj.tool_calls
        ]
        tokens = traj.tokens
        violations = self._final_scope_violations(verdict)
        with self._lock:
            self.trajectories.inc((agent, verdict.outcome), exemplar=exemplar)
            self.check_results.inc_each(passed)
            for check_labels in failed:
                self.check_results.inc(check_labels, exemplar=exemplar)
            self.tool_calls.inc_each(tools)
            # Exemplars only on the series the dashboards plot.
            self.trajectory_tool_calls.observe((agent,), len(traj.tool_calls), exemplar)
            self.trajectory_model_turns.observe((agent,), len(traj.model_calls))
            self.trajectory_tokens.observe((agent, "input"), tokens.input)
            self.trajectory_tokens.observe((agent, "output"), tokens.output)
            self.trajectory_tokens.observe((agent, "total"), tokens.total, exemplar)
            self.trajectory_duration.observe((agent,), traj.duration_s, exemplar)
            seen_live = self._live_steps.pop(traj.trace_id, set())
            for step, tool in violations:
                if not (step and step in seen_live):
                    self.scope_violations.inc((agent, tool), exemplar=exemplar)

    def _final_scope_violations(self, verdict: Verdict) -> list[tuple[str, str]]:
        """(step id, tool label) of each violation the failed scope checks report."""
        failed = [c for c in verdict.checks if c.name == SCOPE_CHECK and c.failed]
        if not failed:
            return []
        traj = verdict.trajectory
        tools_by_step = {call.step_id or span_hex(call.span_id): call.name for call in traj.tool_calls}
        # A failed scope check without step ids is still one violation: paging must not depend on
        # the check pointing at a step.
        return [
            (step, self.tools.label(tools_by_step.get(step, "unknown")))
            for check in failed
            for step in check.steps or ("",)
        ]

    def on_live_violation(self, violation: LiveViolation) -> None:
        agent = self.agents.label(violation.agent)
        tool = self.tools.label(violation.tool)
        with self._lock:
            steps = self._live_steps.get(violation.trace_id)
            if steps is None:
                if len(self._live_steps) >= MAX_PENDING_LIVE_TRACES:
                    del self._live_steps[next(iter(self._live_steps))]
                steps = self._live_steps[violation.trace_id] = set()
            elif violation.step_id in steps:
                return
            steps.add(violation.step_id)
            exemplar = {"trace_id": trace_hex(violation.trace_id)}
            self.scope_violations.inc((agent, tool), exemplar=exemplar)

    # Serving: a standalone endpoint, or apps the host mounts on its own server.

    def start_http_server(self, port: int, addr: str = "127.0.0.1") -> int:
        """Serve ``/metrics`` (any path) on a daemon thread; port 0 picks a free one. Returns the port."""
        server, thread = _start_http_server(port, addr, registry=self.registry)
        self._servers.append((server, thread))
        return int(server.server_port)

    def wsgi_app(self) -> Callable[..., Any]:
        """A WSGI app serving this sink's registry (OpenMetrics when the scraper asks for it)."""
        return make_wsgi_app(self.registry)

    def asgi_app(self) -> Callable[..., Any]:
        """An ASGI app serving this sink's registry (OpenMetrics when the scraper asks for it)."""
        return make_asgi_app(self.registry)

    def shutdown(self) -> None:
        servers, self._servers = self._servers, []
        for server, thread in servers:
            server.shutdown()
            server.server_close()
            thread.join()
