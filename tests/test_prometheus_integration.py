"""End to end against a real Prometheus: TrajectoryProcessor fed with real fixture spans, PrometheusSink
scraped over OpenMetrics, the project's rules loaded; counters, alerts and exemplars checked through
the HTTP API. And prometheus_client's process-wide settings, which it reads when imported, in fresh
processes: no ``_created`` series when disabled, multiprocess mode summing the processes."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from prometheus_client import CollectorRegistry
from prometheus_client.multiprocess import MultiProcessCollector

from otel_traj.adapters.otlp_proto import views_from_bytes
from otel_traj.adapters.sdk import from_readable_span
from otel_traj.config import AssemblerConfig
from otel_traj.dialects import to_step
from otel_traj.grader import Grader
from otel_traj.processor import TrajectoryProcessor
from otel_traj.sinks.prometheus import PrometheusSink
from otel_traj.sinks.prometheus_health import register_pipeline_health
from otel_traj.steps import ToolCall
from otel_traj.verdict import Verdict
from tests.dashboard_helpers import dashboard_queries, expand, require_binary
from tests.replay import readable
from tests.support_trajectories import clean_run, example_policy, violating_run

ROOT = Path(__file__).resolve().parent.parent
RULES = ROOT / "dashboards" / "prometheus" / "rules.yml"
POLICY = ROOT / "examples" / "policies" / "support_agent.yaml"
FIXTURES = ROOT / "tests" / "fixtures" / "real"
# One framework per dialect family: GenAI semconv, OpenInference, Traceloop.
FRAMEWORKS = ["pydantic_ai", "openai_agents", "langgraph_traceloop"]
DEADLINE_S = 30.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class Prometheus:
    url: str

    def api(self, path: str, **params: str) -> Any:
        query = urllib.parse.urlencode(params)
        with urllib.request.urlopen(f"{self.url}{path}?{query}", timeout=5) as response:
            body = json.loads(response.read())
        assert body["status"] == "success", body
        return body["data"]

    def query(self, expr: str) -> list[dict[str, Any]]:
        result: list[dict[str, Any]] = self.api("/api/v1/query", query=expr)["result"]
        return result

    def scalar(self, expr: str) -> float | None:
        result = self.query(expr)
        return float(result[0]["value"][1]) if result else None

    def firing(self) -> set[str]:
        return {
            a["labels"]["alertname"] for a in self.api("/api/v1/alerts")["alerts"] if a["state"] == "firing"
        }


def wait_for(condition: Callable[[], Any], what: str) -> Any:
    """Poll the HTTP API until ``condition`` returns something truthy, within a bounded deadline."""
    deadline = time.monotonic() + DEADLINE_S
    while True:
        last = condition()
        if last:
            return last
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


@pytest.fixture
def sink() -> Iterator[PrometheusSink]:
    sink = PrometheusSink()
    yield sink
    sink.shutdown()


@pytest.fixture
def prometheus(sink: PrometheusSink, tmp_path: Path) -> Iterator[Prometheus]:
    binary = require_binary("prometheus")
    target = sink.start_http_server(0)
    config = tmp_path / "prometheus.yml"
    config.write_text(
        json.dumps(
            {
                "global": {"scrape_interval": "1s", "scrape_timeout": "1s", "evaluation_interval": "1s"},
                "rule_files": [str(RULES)],
                "scrape_configs": [
                    {"job_name": "otel-traj", "static_configs": [{"targets": [f"127.0.0.1:{target}"]}]}
                ],
            }
        )
    )
    port = free_port()
    log = (tmp_path / "prometheus.log").open("w")
    proc = subprocess.Popen(
        [
            binary,
            f"--config.file={config}",
            f"--storage.tsdb.path={tmp_path / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--enable-feature=exemplar-storage",
            "--log.level=warn",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    server = Prometheus(f"http://127.0.0.1:{port}")
    try:
        wait_for(lambda: proc.poll() is not None or _ready(server), "prometheus to start")
        assert proc.poll() is None, (tmp_path / "prometheus.log").read_text()
        yield server
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


def _ready(server: Prometheus) -> bool:
    try:
        with urllib.request.urlopen(f"{server.url}/-/ready", timeout=1) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def lifecycle(path: Path) -> list[tuple[str, ReadableSpan]]:
    """The recorded spans' starts and ends in time order."""
    spans = [readable(v) for v in views_from_bytes(path.read_bytes())]
    events = [(s.start_time or 0, 0, "start", s) for s in spans] + [
        (s.end_time or 0, 1, "end", s) for s in spans
    ]
    return [(kind, span) for _, _, kind, span in sorted(events, key=lambda e: (e[0], e[1]))]


def replay(processor: TrajectoryProcessor, events: list[tuple[str, ReadableSpan]]) -> None:
    for kind, span in events:
        if kind == "start":
            processor.on_start(span)  # type: ignore[arg-type]  # on_start reads only the context
        else:
            processor.on_end(span)


def is_foreign_lookup(kind: str, span: ReadableSpan) -> bool:
    """The end of the tool span that read another customer's (C028) data."""
    if kind != "end":
        return False
    step = to_step(from_readable_span(span), 4096)
    return isinstance(step, ToolCall) and "C028" in str(step.arguments or step.arguments_text)


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_scope_violation_pages_live_and_links_the_trace(
    framework: str, sink: PrometheusSink, prometheus: Prometheus
) -> None:
    verdicts: list[Verdict] = []
    processor = TrajectoryProcessor(
        policy=POLICY, sinks=[sink], on_verdict=verdicts.append, config=AssemblerConfig(grace_s=60)
    )
    register_pipeline_health(sink.registry, processor.stats)
    try:
        run_clean_and_violating(processor, prometheus, verdicts, FIXTURES / framework)
    finally:
        # Also shuts the sink's endpoint down.
        processor.shutdown()


def run_clean_and_violating(
    processor: TrajectoryProcessor, prometheus: Prometheus, verdicts: list[Verdict], fixtures: Path
) -> None:
    replay(processor, lifecycle(fixtures / "clean.otlp.pb"))
    assert processor.force_flush(5000)
    wait_for(lambda: prometheus.scalar("sum(otel_traj_trajectories_total)") == 1, "the clean run")
    assert prometheus.scalar("sum(otel_traj_scope_violations_total)") is None
    assert "OtelTrajScopeViolation" not in prometheus.firing()

    # The violating run, up to the end of the tool span that read another customer's invoices.
    events = lifecycle(fixtures / "violating.otlp.pb")
    cut = next(i for i, (kind, span) in enumerate(events) if is_foreign_lookup(kind, span))
    violating_trace = f"{events[cut][1].context.trace_id:032x}"
    replay(processor, events[: cut + 1])
    processor.pipeline.process()
    wait_for(lambda: "OtelTrajScopeViolation" in prometheus.firing(), "the scope alert, run still open")
    [series] = prometheus.query("otel_traj_scope_violations_total")
    assert series["metric"]["tool"] == "list_invoices"
    assert float(series["value"][1]) == 1
    assert prometheus.scalar('sum(otel_traj_trajectories_total{outcome="unsafe"})') is None

    replay(processor, events[cut + 1 :])
    assert processor.force_flush(5000)
    clean, violating = verdicts
    assert clean.outcome != "unsafe" and violating.outcome == "unsafe"
    assert violating.trajectory.trace_hex == violating_trace

    unsafe = 'sum(otel_traj_trajectories_total{outcome="unsafe"})'
    wait_for(lambda: prometheus.scalar(unsafe) == 1, "the unsafe verdict")
    assert prometheus.scalar("sum(otel_traj_trajectories_total)") == 2
    assert prometheus.scalar(f'sum(otel_traj_trajectories_total{{outcome="{clean.outcome}"}})') == 1
    # The failure stage: the scope violation broke the parameters link; the clean run broke none.
    assert violating.stage == "parameters"
    stages = {
        s["metric"]["stage"]: float(s["value"][1]) for s in prometheus.query("otel_traj_trajectories_total")
    }
    assert stages == {"parameters": 1, clean.stage or "none": 1}
    # Counted live, not again when the final verdict repeated it.
    assert prometheus.scalar("sum(otel_traj_scope_violations_total)") == 1
    assert prometheus.scalar('sum(otel_traj_check_results_total{check="scope",status="fail"})') == 1
    assert prometheus.scalar('sum(otel_traj_check_results_total{check="repeats",status="fail"})') == 1
    tool_calls = sum(len(v.trajectory.tool_calls) for v in verdicts)
    assert prometheus.scalar("sum(otel_traj_tool_calls_total)") == tool_calls
    assert prometheus.scalar('sum(otel_traj_tool_calls_total{tool="list_invoices"})') == 3
    assert prometheus.scalar('sum(otel_traj_trajectory_tokens_sum{type="total"})') == 1320 + 2640
    assert prometheus.scalar('otel_traj_spans_total{result="accepted"}') == processor.stats.spans["accepted"]
    wait_for(lambda: "OtelTrajUnsafeOutcome" in prometheus.firing(), "the unsafe-outcome alert")

    now = time.time()
    window = {"start": str(now - 600), "end": str(now + 60)}
    exemplars = prometheus.api("/api/v1/query_exemplars", query="otel_traj_scope_violations_total", **window)
    trace_ids = {e["labels"]["trace_id"] for series in exemplars for e in series["exemplars"]}
    assert trace_ids == {violating_trace}

    # Every dashboard query runs on the real server (Grafana's variables expanded).
    for query in dashboard_queries():
        prometheus.query(expand(query))


def start_python(code: str, *args: str, **env: str) -> subprocess.Popen[str]:
    """``code`` run by this interpreter in a fresh process (prometheus_client reads its environment
    variables when imported), from the repository root."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("PROMETHEUS_")}
    return subprocess.Popen(
        [sys.executable, "-c", code, *args],
        cwd=ROOT,
        env=clean | env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def output(proc: subprocess.Popen[str]) -> str:
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 0, stderr
    return stdout


EXPORT_RUNS = """
import sys
from otel_traj.grader import Grader
from otel_traj.sinks.prometheus import PrometheusSink
from tests.support_trajectories import clean_run, example_policy, violating_run

sink = PrometheusSink()
grader = Grader(example_policy())
for kind in sys.argv[1:]:
    sink.export(grader.grade(clean_run() if kind == "clean" else violating_run()))
"""

PRINT_EXPOSITION = """
from prometheus_client.openmetrics.exposition import generate_latest
print(generate_latest(sink.registry).decode())
"""


@pytest.mark.parametrize("disabled", ["True", "False"])
def test_disable_created_series_is_honoured(disabled: str) -> None:
    body = output(
        start_python(EXPORT_RUNS + PRINT_EXPOSITION, "violating", PROMETHEUS_DISABLE_CREATED_SERIES=disabled)
    )
    unsafe = 'agent="support_agent",outcome="unsafe",stage="parameters",version=""'
    assert f"otel_traj_trajectories_total{{{unsafe}}} 1.0" in body
    assert ("_created" in body) is (disabled == "False")


def value_samples(registry: CollectorRegistry) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for m in registry.collect()
        for s in m.samples
        if not s.name.endswith("_created")
    }


def test_multiprocess_mode_sums_the_processes(tmp_path: Path) -> None:
    # Two processes alive at once, as gunicorn's workers are.
    workers = [
        start_python(EXPORT_RUNS, *runs, PROMETHEUS_MULTIPROC_DIR=str(tmp_path))
        for runs in (["clean"], ["violating", "violating"])
    ]
    for worker in workers:
        output(worker)
    assert len(list(tmp_path.glob("counter_*.db"))) == 2
    assert len(list(tmp_path.glob("histogram_*.db"))) == 2

    merged = CollectorRegistry()
    MultiProcessCollector(merged, path=str(tmp_path))  # type: ignore[no-untyped-call]
    # What one process that exported all three runs reports.
    single = PrometheusSink()
    grader = Grader(example_policy())
    for run in (clean_run(), violating_run(), violating_run()):
        single.export(grader.grade(run))
    expected = value_samples(single.registry)
    assert value_samples(merged) == pytest.approx(expected)
    unsafe = {"agent": "support_agent", "version": "", "outcome": "unsafe", "stage": "parameters"}
    assert merged.get_sample_value("otel_traj_trajectories_total", unsafe) == 2
