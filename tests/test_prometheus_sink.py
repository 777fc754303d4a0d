"""PrometheusSink: metric values, live/final scope-violation counting, label bounds, exposition."""

from __future__ import annotations

import asyncio
import socket
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from wsgiref.simple_server import WSGIRequestHandler, make_server

import pytest
import uvicorn
from prometheus_client import REGISTRY, CollectorRegistry, Counter, Histogram
from prometheus_client.openmetrics.exposition import generate_latest

from otel_traj.cases.dimensions import TRAJECTORY_MATCH
from otel_traj.grader import Grader
from otel_traj.sinks.base import LiveViolation
from otel_traj.sinks.prometheus import (
    OTHER,
    TOKEN_BUCKETS,
    CounterSeries,
    HistogramSeries,
    LabelBudget,
    PrometheusSink,
    _SeriesCollector,
)
from otel_traj.stats import PipelineStats
from otel_traj.verdict import CheckResult, Verdict
from tests.support_trajectories import call, clean_run, example_policy, violating_run

OPENMETRICS = "application/openmetrics-text; version=1.0.0; charset=utf-8"
VIOLATING_TRACE = 0xD6D0D2797B910CDDF53B5CDC1CDA8447
CLEAN_TRACE = 0x0AF7651916CD43DD8448EB211C80319C
GRADER = Grader(example_policy())
# The violating run's list_invoices(customer_id=C028).
VIOLATING_STEP = "s3"


def make_verdict(trace_id: int, violating: bool, agent: str = "support_agent") -> Verdict:
    """The refund scenario graded with the example policy: clean, or with repeats and a lookup of
    another customer's invoices (outcome unsafe)."""
    traj = violating_run() if violating else clean_run()
    traj.trace_id = trace_id
    traj.agent = agent
    return GRADER.grade(traj)


def live(trace_id: int, step_id: str, tool_name: str = "list_invoices") -> LiveViolation:
    result = CheckResult("scope", "fail", "critical", "list_invoices used customer_id=C028, subject is C023")
    return LiveViolation(trace_id, "support_agent", tool_name, step_id, result)


def value(target: PrometheusSink, name: str, **labels: str) -> float | None:
    return target.registry.get_sample_value(name, labels)


def label_values(target: PrometheusSink, metric: str, label: str) -> set[str]:
    return {s.labels[label] for m in target.registry.collect() if m.name == metric for s in m.samples}


def test_export_counts_outcomes_checks_tools_and_observes_histograms() -> None:
    sink = PrometheusSink()
    sink.export(make_verdict(CLEAN_TRACE, violating=False))
    sink.export(make_verdict(VIOLATING_TRACE, violating=True))

    assert value(sink, "otel_traj_trajectories_total", agent="support_agent", outcome="pass") == 1
    assert value(sink, "otel_traj_trajectories_total", agent="support_agent", outcome="unsafe") == 1
    scope = {"agent": "support_agent", "check": "scope", "severity": "critical"}
    assert value(sink, "otel_traj_check_results_total", status="fail", **scope) == 1
    assert value(sink, "otel_traj_check_results_total", status="pass", **scope) == 1
    assert (
        value(sink, "otel_traj_tool_calls_total", agent="support_agent", tool="list_invoices", status="ok")
        == 3
    )
    assert value(sink, "otel_traj_trajectory_tool_calls_count", agent="support_agent") == 2
    assert value(sink, "otel_traj_trajectory_tool_calls_sum", agent="support_agent") == 8
    assert value(sink, "otel_traj_trajectory_model_turns_sum", agent="support_agent") == 10
    assert value(sink, "otel_traj_trajectory_tokens_sum", agent="support_agent", type="total") == 1320 + 1980
    tokens = {"agent": "support_agent", "type": "total"}
    assert value(sink, "otel_traj_trajectory_tokens_bucket", le="1500.0", **tokens) == 1
    assert value(sink, "otel_traj_trajectory_duration_seconds_sum", agent="support_agent") == pytest.approx(
        0.94
    )
    # Counted at export: no live hook saw this violation.
    assert value(sink, "otel_traj_scope_violations_total", agent="support_agent", tool="list_invoices") == 1


def test_tool_call_status_distinguishes_errors_and_unobserved_calls() -> None:
    sink = PrometheusSink()
    verdict = make_verdict(CLEAN_TRACE, violating=False)
    verdict.trajectory.tool_calls = [
        call(1, "check_payment", ok=False),
        call(2, "check_payment"),
        call(3, "check_payment", observed=False),
    ]
    sink.export(verdict)
    for status in ("ok", "error", "unobserved"):
        assert (
            value(
                sink, "otel_traj_tool_calls_total", agent="support_agent", tool="check_payment", status=status
            )
            == 1
        )


def test_live_violation_is_counted_once_with_its_final_verdict() -> None:
    sink = PrometheusSink()
    sink.on_live_violation(live(VIOLATING_TRACE, VIOLATING_STEP))
    assert value(sink, "otel_traj_scope_violations_total", agent="support_agent", tool="list_invoices") == 1
    sink.on_live_violation(live(VIOLATING_TRACE, VIOLATING_STEP))
    sink.export(make_verdict(VIOLATING_TRACE, violating=True))
    assert value(sink, "otel_traj_scope_violations_total", agent="support_agent", tool="list_invoices") == 1

    # Once the verdict is exported the trace is forgotten: another run with the same ids counts again.
    sink.export(make_verdict(VIOLATING_TRACE, violating=True))
    assert value(sink, "otel_traj_scope_violations_total", agent="support_agent", tool="list_invoices") == 2


def test_final_verdict_counts_violations_the_live_hook_did_not_see() -> None:
    sink = PrometheusSink()
    verdict = make_verdict(VIOLATING_TRACE, violating=True)
    scope = next(c for c in verdict.checks if c.name == "scope")
    verdict.checks[verdict.checks.index(scope)] = CheckResult(
        "scope", "fail", "critical", scope.reason, (VIOLATING_STEP, "s1")
    )
    sink.on_live_violation(live(VIOLATING_TRACE, VIOLATING_STEP))
    sink.export(verdict)
    assert value(sink, "otel_traj_scope_violations_total", agent="support_agent", tool="list_invoices") == 1
    assert (
        value(sink, "otel_traj_scope_violations_total", agent="support_agent", tool="get_subscription") == 1
    )


def test_failed_scope_check_without_steps_still_counts_one_violation() -> None:
    sink = PrometheusSink()
    verdict = make_verdict(VIOLATING_TRACE, violating=True)
    verdict.checks = [CheckResult("scope", "fail", "critical", "subject C023, customer_id=C028 used")]
    sink.export(verdict)
    assert value(sink, "otel_traj_scope_violations_total", agent="support_agent", tool="unknown") == 1


def test_ten_thousand_tool_names_stay_within_the_label_cap() -> None:
    sink = PrometheusSink(max_tools=50, max_agents=5)
    verdict = make_verdict(CLEAN_TRACE, violating=False)
    for i in range(10_000):
        verdict.trajectory.trace_id = i + 1
        verdict.trajectory.agent = f"agent-{i % 100}"
        verdict.trajectory.tool_calls = [call(1, f"tool_{i}")]
        sink.export(verdict)
        sink.on_live_violation(LiveViolation(i + 1, f"agent-{i}", f"tool_{i}", "s1", live(1, "").result))

    tools = label_values(sink, "otel_traj_tool_calls", "tool")
    assert len(tools) == 51 and OTHER in tools
    assert label_values(sink, "otel_traj_scope_violations", "tool") <= tools
    assert len(label_values(sink, "otel_traj_trajectories", "agent")) == 6
    assert sum(len(m.samples) for m in sink.registry.collect()) < 2_000
    # Runs after the first 50 tools, of agents after the first 5: every one counted, none lost.
    expected = sum(1 for i in range(50, 10_000) if i % 100 >= 5)
    assert value(sink, "otel_traj_tool_calls_total", agent=OTHER, tool=OTHER, status="ok") == expected


def test_allowlists_map_everything_else_to_other() -> None:
    sink = PrometheusSink(tool_allowlist=["list_invoices"], agent_allowlist=["support_agent"])
    sink.export(make_verdict(CLEAN_TRACE, violating=False))
    sink.export(make_verdict(VIOLATING_TRACE, violating=True, agent="shadow_agent"))
    assert label_values(sink, "otel_traj_tool_calls", "tool") == {"list_invoices", OTHER}
    assert label_values(sink, "otel_traj_trajectories", "agent") == {"support_agent", OTHER}
    assert value(sink, "otel_traj_scope_violations_total", agent=OTHER, tool="list_invoices") == 1


def test_unknown_check_names_are_other() -> None:
    sink = PrometheusSink()
    verdict = make_verdict(CLEAN_TRACE, violating=False)
    verdict.checks.append(CheckResult("customer_xyz_check", "fail", "error", "custom"))
    sink.export(verdict)
    graded = {c.name for c in verdict.checks[:-1]}
    assert label_values(sink, "otel_traj_check_results", "check") == graded | {OTHER}
    labels = {"agent": "support_agent", "check": OTHER, "status": "fail", "severity": "error"}
    assert value(sink, "otel_traj_check_results_total", **labels) == 1


def test_golden_case_checks_keep_their_names() -> None:
    sink = PrometheusSink()
    verdict = make_verdict(CLEAN_TRACE, violating=False)
    verdict.checks.append(CheckResult(TRAJECTORY_MATCH, "fail", "error", "1 missing"))
    sink.export(verdict)
    labels = {
        "agent": "support_agent",
        "check": "case.trajectory_match",
        "status": "fail",
        "severity": "error",
    }
    assert value(sink, "otel_traj_check_results_total", **labels) == 1
    assert OTHER not in label_values(sink, "otel_traj_check_results", "check")


def test_label_budget_rejects_negative_cap() -> None:
    with pytest.raises(ValueError, match="max_values"):
        LabelBudget(None, -1)


def test_allowlists_and_caps_default_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_TRAJ_PROMETHEUS_TOOLS", "list_invoices, get_subscription")
    monkeypatch.setenv("OTEL_TRAJ_PROMETHEUS_MAX_AGENTS", "0")
    sink = PrometheusSink()
    sink.export(make_verdict(VIOLATING_TRACE, violating=True))
    assert label_values(sink, "otel_traj_tool_calls", "tool") == {"list_invoices", "get_subscription", OTHER}
    assert label_values(sink, "otel_traj_trajectories", "agent") == {OTHER}

    monkeypatch.setenv("OTEL_TRAJ_PROMETHEUS_MAX_TOOLS", "many")
    with pytest.raises(ValueError, match=r"OTEL_TRAJ_PROMETHEUS_MAX_TOOLS.*'many'"):
        PrometheusSink()


def test_pipeline_health_is_read_from_attached_stats_at_scrape_time() -> None:
    sink = PrometheusSink()
    assert value(sink, "otel_traj_spans_total", result="late") == 0
    stats = PipelineStats()
    sink.attach(stats)
    stats.count_spans("accepted", 12)
    stats.count_spans("malformed")
    stats.count_dropped("queue_full", 3)
    stats.count_sink_error("langfuse")
    stats.count_internal_error()
    stats.traces_in_flight = 4
    assert value(sink, "otel_traj_spans_total", result="accepted") == 12
    assert value(sink, "otel_traj_spans_total", result="malformed") == 1
    assert value(sink, "otel_traj_dropped_total", reason="queue_full") == 3
    assert value(sink, "otel_traj_sink_errors_total", sink="langfuse") == 1
    assert value(sink, "otel_traj_internal_errors_total") == 1
    assert value(sink, "otel_traj_traces_in_flight") == 4


def test_registries_are_isolated_and_collisions_detected() -> None:
    first, second = PrometheusSink(), PrometheusSink()
    first.export(make_verdict(CLEAN_TRACE, violating=False))
    assert value(second, "otel_traj_trajectories_total", agent="support_agent", outcome="pass") is None
    assert REGISTRY.get_sample_value("otel_traj_spans_total", {"result": "accepted"}) is None

    shared = CollectorRegistry()
    PrometheusSink(registry=shared)
    with pytest.raises(ValueError, match="Duplicated timeseries"):
        PrometheusSink(registry=shared)


def fetch(url: str, accept: str | None = None) -> tuple[str, str]:
    request = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
    with urllib.request.urlopen(request, timeout=5) as response:
        return response.headers["Content-Type"], response.read().decode()


def test_http_server_serves_openmetrics_exemplars_and_stops_on_shutdown() -> None:
    sink = PrometheusSink()
    sink.on_live_violation(live(VIOLATING_TRACE, VIOLATING_STEP))
    sink.export(make_verdict(VIOLATING_TRACE, violating=True))
    port = sink.start_http_server(0)
    assert port > 0
    try:
        content_type, body = fetch(f"http://127.0.0.1:{port}/metrics", OPENMETRICS)
        assert content_type.startswith("application/openmetrics-text")
        violation = next(
            line for line in body.splitlines() if line.startswith("otel_traj_scope_violations_total")
        )
        assert violation.endswith(f'# {{trace_id="{VIOLATING_TRACE:032x}"}} 1.0 ' + violation.split()[-1])
        assert f'{VIOLATING_TRACE:032x}"}} 1.0' in body

        # The classic text format has no exemplars, and trace ids are never labels.
        content_type, body = fetch(f"http://127.0.0.1:{port}/metrics")
        assert content_type.startswith("text/plain")
        assert f"{VIOLATING_TRACE:032x}" not in body
        assert 'otel_traj_scope_violations_total{agent="support_agent",tool="list_invoices"} 1.0' in body
    finally:
        sink.shutdown()
    with pytest.raises(urllib.error.URLError):
        fetch(f"http://127.0.0.1:{port}/metrics")


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


def test_wsgi_app_mounted_by_a_host_server() -> None:
    sink = PrometheusSink()
    sink.export(make_verdict(VIOLATING_TRACE, violating=True))
    server = make_server("127.0.0.1", 0, sink.wsgi_app(), handler_class=_QuietHandler)
    thread = threading.Thread(target=server.serve_forever)
    thread.start()
    try:
        content_type, body = fetch(f"http://127.0.0.1:{server.server_port}/metrics", OPENMETRICS)
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
    assert content_type.startswith("application/openmetrics-text")
    assert f'trace_id="{VIOLATING_TRACE:032x}"' in body
    assert body.rstrip().endswith("# EOF")


@pytest.fixture
def asgi_server() -> Iterator[tuple[PrometheusSink, int]]:
    sink = PrometheusSink()
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    # Listening before the server starts queues the first request instead of refusing it.
    sock.listen()
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(sink.asgi_app(), lifespan="off", log_level="warning"))
    thread = threading.Thread(target=lambda: asyncio.run(server.serve(sockets=[sock])))
    thread.start()
    try:
        yield sink, port
    finally:
        server.should_exit = True
        thread.join()
        sock.close()


def test_asgi_app_mounted_by_a_host_server(asgi_server: tuple[PrometheusSink, int]) -> None:
    sink, port = asgi_server
    sink.export(make_verdict(VIOLATING_TRACE, violating=True))
    content_type, body = fetch(f"http://127.0.0.1:{port}/metrics", OPENMETRICS)
    assert content_type.startswith("application/openmetrics-text")
    assert f'trace_id="{VIOLATING_TRACE:032x}"' in body
    assert 'otel_traj_trajectories_total{agent="support_agent",outcome="unsafe"} 1.0' in body


def _exposition(registry: CollectorRegistry) -> list[str]:
    """OpenMetrics lines without the timestamps (creation and exemplar times differ by run)."""
    lines = generate_latest(registry).decode().splitlines()  # type: ignore[no-untyped-call]
    return [line.rsplit(" ", 1)[0] if "_created" in line or " # {" in line else line for line in lines]


def test_series_expose_what_prometheus_client_metrics_would() -> None:
    ours, reference = CollectorRegistry(), CollectorRegistry()
    counter = CounterSeries("t_calls", "Calls.", ("agent", "status"))
    histogram = HistogramSeries("t_tokens", "Tokens.", ("agent",), TOKEN_BUCKETS)
    ours.register(_SeriesCollector([counter, histogram], threading.Lock()))
    ref_counter = Counter("t_calls", "Calls.", ["agent", "status"], registry=reference)
    ref_histogram = Histogram("t_tokens", "Tokens.", ["agent"], registry=reference, buckets=TOKEN_BUCKETS)
    exemplar = {"trace_id": f"{CLEAN_TRACE:032x}"}
    for agent, status in [("a", "ok"), ("a", "ok"), ("b", "error")]:
        counter.inc((agent, status), exemplar=exemplar if status == "error" else None)
        ref_counter.labels(agent, status).inc(exemplar=exemplar if status == "error" else None)
    # On a bound, between bounds, beyond the last bound (+Inf), zero.
    for agent, tokens in [("a", 1_000), ("a", 1_001), ("a", 2_000_000), ("b", 0)]:
        histogram.observe((agent,), tokens, exemplar)
        ref_histogram.labels(agent).observe(tokens, exemplar)
    assert _exposition(ours) == _exposition(reference)
    assert any('le="1e+06"' in line for line in _exposition(ours))
