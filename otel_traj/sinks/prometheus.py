"""Prometheus sink: verdicts as counters and histograms that alert rules and dashboards read.

Metric names and labels are a public contract (``dashboards/`` depends on them). Label values are
bounded here, not trusted to the traced application: agent and tool names come from allow-lists or
the first N seen, check names from a fixed set; everything else is ``other``. Trace ids travel as
exemplars (OpenMetrics exposition only), never as labels.

The series are ``prometheus_client``'s own metrics, so its settings apply as users expect:
``PROMETHEUS_DISABLE_CREATED_SERIES`` and multiprocess mode (``PROMETHEUS_MULTIPROC_DIR``, see
``docs/prometheus.md``). Pipeline health is not registered here: the pipeline's owner registers it
with ``register_pipeline_health``.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, Counter, Histogram, make_asgi_app, make_wsgi_app
from prometheus_client import start_http_server as _start_http_server
from prometheus_client.metrics import MetricWrapperBase

from otel_traj import env
from otel_traj.cases.dimensions import SEVERITY as CASE_SEVERITY
from otel_traj.check_catalog import NAMES, SCOPE_VIOLATIONS
from otel_traj.cost import run_cost
from otel_traj.sinks.base import LiveViolation, Sink
from otel_traj.sinks.prometheus_conversations import ConversationMetrics
from otel_traj.steps import ToolCall, span_hex, trace_hex
from otel_traj.verdict import Verdict
from otel_traj.verification import NAME as UNREADABLE

if TYPE_CHECKING:
    from otel_traj.conversations import ConversationVerdict

if TYPE_CHECKING:
    from otel_traj.judge.result import JudgeResult

OTHER = "other"

# Checks the grader can report: every policy check (one severity each) and every golden-case
# dimension. A name outside this set is exposed as ``other`` so that a custom or misspelled check
# cannot grow the label set.
# ``dropped_steps``: the pipeline's own note on a run that lost steps to the caps.
CHECK_NAMES = frozenset(NAMES) | frozenset(CASE_SEVERITY) | {"dropped_steps", UNREADABLE}

# Agent runs range from a few hundred tokens to long tool loops of a million; steps of roughly 1.6x
# keep histogram_quantile() within the 1.5x budget-regression threshold the alert rules use.
TOKEN_BUCKETS = (
    100, 250, 500, 1_000, 1_500, 2_500, 4_000, 6_000, 10_000, 15_000, 25_000, 40_000, 60_000,
    100_000, 150_000, 250_000, 400_000, 600_000, 1_000_000,
)  # fmt: skip
STEP_BUCKETS = (0, 1, 2, 3, 4, 5, 6, 8, 10, 12, 15, 20, 25, 30, 40, 50, 75, 100)
DURATION_BUCKETS = (0.5, 1, 2, 3, 5, 8, 13, 20, 30, 45, 60, 90, 120, 180, 300, 600, 1200, 1800, 3600)
# US dollars per run, from a cent's hundredth to tens of dollars, in steps of about 1.6x.
COST_BUCKETS = (
    0.0001, 0.00025, 0.0005, 0.001, 0.0015, 0.0025, 0.004, 0.006, 0.01, 0.015, 0.025, 0.04, 0.06,
    0.1, 0.15, 0.25, 0.4, 0.6, 1, 1.5, 2.5, 4, 6, 10, 25, 50,
)  # fmt: skip
# The ``version`` label of a run whose agent version is not known (Prometheus reads an empty value
# as the label being absent, so unversioned series keep the labels they had).
UNVERSIONED = ""
# The ``stage`` label of a run that broke no link (it passed, or failed only warnings); the other
# values are the links of ``otel_traj.stages.STAGES``, so the label is bounded.
NO_STAGE = "none"

# Traces with a live violation whose verdict has not arrived yet; beyond this the oldest are
# forgotten (their violations may then be counted again at export).
MAX_PENDING_LIVE_TRACES = 10_000


class LabelBudget:
    """Maps raw names to a bounded set of label values.

    With an allow-list, names outside it are ``other``. Without one, the first ``max_values`` distinct
    names are kept as they are and later ones are ``other``: bounded, and stable for a process's life.
    """

    def __init__(self, allowlist: Iterable[str] | None, max_values: int) -> None:
        env.SIZE.require("max_values", max_values)
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


def _call_status(call: ToolCall) -> str:
    if not call.observed:
        return "unobserved"
    return "ok" if call.ok else "error"


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
        version_allowlist / max_versions: the same for the ``version`` label, the agent's version
            (``OTEL_TRAJ_PROMETHEUS_VERSIONS``; ``OTEL_TRAJ_PROMETHEUS_MAX_VERSIONS``, default 20).
        check_names: the check label values (default: the grader's checks).
    """

    def __init__(
        self,
        *,
        registry: CollectorRegistry | None = None,
        tool_allowlist: Iterable[str] | None = None,
        agent_allowlist: Iterable[str] | None = None,
        max_tools: int | None = None,
        max_agents: int | None = None,
        version_allowlist: Iterable[str] | None = None,
        max_versions: int | None = None,
        check_names: Iterable[str] = CHECK_NAMES,
    ) -> None:
        super().__init__()
        self.registry = registry if registry is not None else CollectorRegistry()
        self.tools = LabelBudget(
            tool_allowlist if tool_allowlist is not None else env.PROMETHEUS_TOOLS.read(),
            max_tools if max_tools is not None else env.PROMETHEUS_MAX_TOOLS.read(),
        )
        self.agents = LabelBudget(
            agent_allowlist if agent_allowlist is not None else env.PROMETHEUS_AGENTS.read(),
            max_agents if max_agents is not None else env.PROMETHEUS_MAX_AGENTS.read(),
        )
        self.versions = LabelBudget(
            version_allowlist if version_allowlist is not None else env.PROMETHEUS_VERSIONS.read(),
            max_versions if max_versions is not None else env.PROMETHEUS_MAX_VERSIONS.read(),
        )
        self._check_names = frozenset(check_names)
        # Registered with the first conversation verdict: a deployment without conversations has no
        # empty conversation series.
        self._conversations: ConversationMetrics | None = None
        # Trace id -> step ids already counted live; the final verdict skips those.
        self._live_steps: dict[int, set[str]] = {}
        self._live_lock = threading.Lock()
        self._servers: list[tuple[Any, threading.Thread]] = []
        # (metric, label values) -> its child. Label values are bounded (LabelBudget, the check
        # names), and ``labels()`` checks and locks on every call: two thirds of an increment's cost.
        self._children: dict[tuple[MetricWrapperBase, tuple[str, ...]], Any] = {}

        registry = self.registry
        self.trajectories = Counter(
            "otel_traj_trajectories",
            "Graded trajectories by outcome and failure stage (the earliest broken link; none).",
            ["agent", "version", "outcome", "stage"],
            registry=registry,
        )
        self.check_results = Counter(
            "otel_traj_check_results",
            "Check results of graded trajectories.",
            ["agent", "version", "check", "status", "severity"],
            registry=registry,
        )
        self.scope_violations = Counter(
            "otel_traj_scope_violations",
            "Tool calls that touched data outside the run's subject, counted when the tool span ends.",
            ["agent", "tool"],
            registry=registry,
        )
        self.tool_calls = Counter(
            "otel_traj_tool_calls",
            "Tool calls of graded trajectories.",
            ["agent", "tool", "status"],
            registry=registry,
        )
        self.trajectory_tool_calls = Histogram(
            "otel_traj_trajectory_tool_calls",
            "Tool calls per trajectory.",
            ["agent", "version"],
            registry=registry,
            buckets=STEP_BUCKETS,
        )
        self.trajectory_model_turns = Histogram(
            "otel_traj_trajectory_model_turns",
            "Model calls per trajectory.",
            ["agent", "version"],
            registry=registry,
            buckets=STEP_BUCKETS,
        )
        self.trajectory_tokens = Histogram(
            "otel_traj_trajectory_tokens",
            "Tokens per trajectory (input, output, total).",
            ["agent", "version", "type"],
            registry=registry,
            buckets=TOKEN_BUCKETS,
        )
        self.judge_results = Counter(
            "otel_traj_judge_results",
            "LLM judge results by judge and label (given after the verdict, never part of it).",
            ["agent", "judge", "label"],
            registry=registry,
        )
        self.trajectory_duration = Histogram(
            "otel_traj_trajectory_duration_seconds",
            "Wall time of the agent run.",
            ["agent", "version"],
            registry=registry,
            buckets=DURATION_BUCKETS,
        )
        self.trajectory_cost = Histogram(
            "otel_traj_trajectory_cost_usd",
            "Cost of the agent run's model calls in US dollars (runs whose cost is known).",
            ["agent", "version"],
            registry=registry,
            buckets=COST_BUCKETS,
        )
        self.unpriced = Counter(
            "otel_traj_trajectories_unpriced",
            "Graded trajectories whose cost is unknown (a model not in the price database, no tokens).",
            ["agent", "version"],
            registry=registry,
        )

    def export(self, verdict: Verdict) -> None:
        traj = verdict.trajectory
        agent = self.agents.label(traj.agent_label)
        version = verdict.versions.agent
        version = self.versions.label(version) if version else UNVERSIONED
        exemplar = {"trace_id": traj.trace_hex}
        stage = verdict.stage or NO_STAGE
        self._series(self.trajectories, agent, version, verdict.outcome, stage).inc(exemplar=exemplar)
        for check in verdict.checks:
            name = check.name if check.name in self._check_names else OTHER
            # Exemplars on failures only: a failed check's trace is the one worth opening.
            self._series(self.check_results, agent, version, name, check.status, check.severity).inc(
                exemplar=exemplar if check.failed else None
            )
        # Long runs call the same few tools many times: one increment per distinct series.
        calls = collections.Counter(
            (self.tools.label(call.name), _call_status(call)) for call in traj.tool_calls
        )
        for (tool, status), count in calls.items():
            self._series(self.tool_calls, agent, tool, status).inc(count)
        # Exemplars only on the series the dashboards plot.
        self._series(self.trajectory_tool_calls, agent, version).observe(len(traj.tool_calls), exemplar)
        self._series(self.trajectory_model_turns, agent, version).observe(len(traj.model_calls))
        tokens = traj.tokens
        self._series(self.trajectory_tokens, agent, version, "input").observe(tokens.input)
        self._series(self.trajectory_tokens, agent, version, "output").observe(tokens.output)
        self._series(self.trajectory_tokens, agent, version, "total").observe(tokens.total, exemplar)
        self._series(self.trajectory_duration, agent, version).observe(traj.duration_s, exemplar)
        cost = run_cost(traj).total_usd
        if cost is None:
            self._series(self.unpriced, agent, version).inc()
        else:
            self._series(self.trajectory_cost, agent, version).observe(cost, exemplar)

        violations = self._final_scope_violations(verdict)
        with self._live_lock:
            seen_live = self._live_steps.pop(traj.trace_id, set())
        for step, tool in violations:
            if not (step and step in seen_live):
                self._series(self.scope_violations, agent, tool).inc(exemplar=exemplar)

    def export_conversation(self, verdict: ConversationVerdict) -> None:
        if self._conversations is None:
            self._conversations = ConversationMetrics(self.registry)
        self._conversations.observe(verdict, self.agents.label(verdict.agent))

    def _series(self, metric: MetricWrapperBase, *labels: str) -> Any:
        """``metric.labels(*labels)``, kept for the next verdict."""
        key = (metric, labels)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = metric.labels(*labels)
        return child

    def _final_scope_violations(self, verdict: Verdict) -> list[tuple[str, str]]:
        """(step id, tool label) of each violation the failed scope checks report."""
        failed = [c for c in verdict.checks if c.name in SCOPE_VIOLATIONS and c.failed]
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

    def on_judgement(self, result: JudgeResult) -> None:
        # Judge names come from the policy and labels from each judge's own list: both are bounded.
        agent = self.agents.label(result.agent)
        self._series(self.judge_results, agent, result.judge, result.label).inc(
            exemplar={"trace_id": result.trace_hex}
        )

    def on_live_violation(self, violation: LiveViolation) -> None:
        with self._live_lock:
            steps = self._live_steps.get(violation.trace_id)
            if steps is None:
                if len(self._live_steps) >= MAX_PENDING_LIVE_TRACES:
                    del self._live_steps[next(iter(self._live_steps))]
                steps = self._live_steps[violation.trace_id] = set()
            elif violation.step_id in steps:
                return
            steps.add(violation.step_id)
        agent, tool = self.agents.label(violation.agent), self.tools.label(violation.tool)
        self._series(self.scope_violations, agent, tool).inc(
            exemplar={"trace_id": trace_hex(violation.trace_id)}
        )

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

    def shutdown(self, timeout_millis: int = 30_000) -> None:
        # server.shutdown() returns once serve_forever has stopped (it polls every 0.5 s) and waits
        # on no peer, so there is nothing for the deadline to bound.
        servers, self._servers = self._servers, []
        for server, thread in servers:
            server.shutdown()
            server.server_close()
            thread.join()
