"""PrometheusSink: metric values, live/final scope-violation counting, label bounds, exposition."""

from __future__ import annotations

import logging
from dataclasses import replace

import pytest
from prometheus_client import REGISTRY, CollectorRegistry

from otel_traj.cases.dimensions import TRAJECTORY_MATCH
from otel_traj.env import SettingError, strict_settings
from otel_traj.grader import Grader
from otel_traj.judge.result import JudgeResult
from otel_traj.sinks.base import LiveViolation
from otel_traj.sinks.prometheus import OTHER, LabelBudget, PrometheusSink
from otel_traj.sinks.prometheus_health import register_pipeline_health
from otel_traj.stats import PipelineStats
from otel_traj.verdict import CheckResult, Verdict
from tests.prometheus_contract import assert_contract
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
    return GRADER.grade(replace(traj, trace_id=trace_id, agent=agent))


def live(trace_id: int, step_id: str, tool_name: str = "list_invoices") -> LiveViolation:
    result = CheckResult("scope", "fail", "critical", "list_invoices used customer_id=C028, subject is C023")
    return LiveViolation(trace_id, "support_agent", tool_name, step_id, result)


# Metrics of a graded run carry its agent version; these runs have none (label value "").
VERSIONED = ("otel_traj_trajectories", "otel_traj_check_results", "otel_traj_trajectory_")


# The runs' ``otel_traj_trajectories_total`` series: the scope violation broke the chain at the
# parameters link (the failure stage); the clean run broke none.
PASSED = {"agent": "support_agent", "outcome": "pass", "stage": "none"}
UNSAFE = {"agent": "support_agent", "outcome": "unsafe", "stage": "parameters"}


def value(target: PrometheusSink, name: str, **labels: str) -> float | None:
    if name.startswith(VERSIONED):
        labels.setdefault("version", "")
    return target.registry.get_sample_value(name, labels)


def label_values(target: PrometheusSink, metric: str, label: str) -> set[str]:
    return {s.labels[label] for m in target.registry.collect() if m.name == metric for s in m.samples}


def test_export_counts_outcomes_checks_tools_and_observes_histograms() -> None:
    sink = PrometheusSink()
    sink.export(make_verdict(CLEAN_TRACE, violating=False))
    sink.export(make_verdict(VIOLATING_TRACE, violating=True))

    assert value(sink, "otel_traj_trajectories_total", **PASSED) == 1
    assert value(sink, "otel_traj_trajectories_total", **UNSAFE) == 1
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
    calls = [
        call(1, "check_payment", ok=False),
        call(2, "check_payment"),
        call(3, "check_payment", observed=False),
    ]
    sink.export(replace(verdict, trajectory=replace(verdict.trajectory, tool_calls=calls)))
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
    both = CheckResult("scope", "fail", "critical", scope.reason, (VIOLATING_STEP, "s1"))
    verdict = replace(verdict, checks=tuple(both if c is scope else c for c in verdict.checks))
    sink.on_live_violation(live(VIOLATING_TRACE, VIOLATING_STEP))
    sink.export(verdict)
    assert value(sink, "otel_traj_scope_violations_total", agent="support_agent", tool="list_invoices") == 1
    assert (
        value(sink, "otel_traj_scope_violations_total", agent="support_agent", tool="get_subscription") == 1
    )


def test_failed_scope_check_without_steps_still_counts_one_violation() -> None:
    sink = PrometheusSink()
    verdict = make_verdict(VIOLATING_TRACE, violating=True)
    verdict = replace(
        verdict, checks=(CheckResult("scope", "fail", "critical", "subject C023, customer_id=C028 used"),)
    )
    sink.export(verdict)
    assert value(sink, "otel_traj_scope_violations_total", agent="support_agent", tool="unknown") == 1


def test_ten_thousand_tool_names_stay_within_the_label_cap() -> None:
    sink = PrometheusSink(max_tools=50, max_agents=5)
    verdict = make_verdict(CLEAN_TRACE, violating=False)
    for i in range(10_000):
        trajectory = replace(
            verdict.trajectory, trace_id=i + 1, agent=f"agent-{i % 100}", tool_calls=[call(1, f"tool_{i}")]
        )
        sink.export(replace(verdict, trajectory=trajectory))
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
    verdict = replace(
        verdict, checks=(*verdict.checks, CheckResult("customer_xyz_check", "fail", "error", "custom"))
    )
    sink.export(verdict)
    graded = {c.name for c in verdict.checks[:-1]}
    assert label_values(sink, "otel_traj_check_results", "check") == graded | {OTHER}
    labels = {"agent": "support_agent", "check": OTHER, "status": "fail", "severity": "error"}
    assert value(sink, "otel_traj_check_results_total", **labels) == 1


def test_golden_case_checks_keep_their_names() -> None:
    sink = PrometheusSink()
    verdict = make_verdict(CLEAN_TRACE, violating=False)
    verdict = replace(
        verdict, checks=(*verdict.checks, CheckResult(TRAJECTORY_MATCH, "fail", "error", "1 missing"))
    )
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


def test_allowlists_and_caps_default_from_environment(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("OTEL_TRAJ_PROMETHEUS_TOOLS", "list_invoices, get_subscription")
    monkeypatch.setenv("OTEL_TRAJ_PROMETHEUS_MAX_AGENTS", "0")
    sink = PrometheusSink()
    sink.export(make_verdict(VIOLATING_TRACE, violating=True))
    assert label_values(sink, "otel_traj_tool_calls", "tool") == {"list_invoices", "get_subscription", OTHER}
    assert label_values(sink, "otel_traj_trajectories", "agent") == {OTHER}

    # A library logs a bad value and keeps the default; a service's startup refuses it.
    monkeypatch.delenv("OTEL_TRAJ_PROMETHEUS_TOOLS")
    monkeypatch.setenv("OTEL_TRAJ_PROMETHEUS_MAX_TOOLS", "many")
    with caplog.at_level(logging.WARNING, logger="otel_traj"):
        sink = PrometheusSink()
    assert "OTEL_TRAJ_PROMETHEUS_MAX_TOOLS='many'" in caplog.text
    assert len({sink.tools.label(f"tool_{i}") for i in range(60)}) == 50 + 1
    with strict_settings(), pytest.raises(SettingError, match=r"OTEL_TRAJ_PROMETHEUS_MAX_TOOLS.*'many'"):
        PrometheusSink()


def test_sink_does_not_register_pipeline_health_itself() -> None:
    sink = PrometheusSink()
    sink.stats.count_sink_error("prometheus")
    assert value(sink, "otel_traj_sink_errors_total", sink="prometheus") is None
    register_pipeline_health(sink.registry, sink.stats)
    assert value(sink, "otel_traj_sink_errors_total", sink="prometheus") == 1
    # Read at scrape time, not copied when registered.
    sink.stats.count_sink_error("prometheus")
    assert value(sink, "otel_traj_sink_errors_total", sink="prometheus") == 2


def test_pipeline_health_sums_the_stats_of_one_registry_each_counted_once() -> None:
    registry, other = CollectorRegistry(), CollectorRegistry()
    # Equal by value: only identity tells them apart.
    first, second = PipelineStats(), PipelineStats()
    register_pipeline_health(registry, first)
    register_pipeline_health(registry, second)
    register_pipeline_health(registry, first)
    register_pipeline_health(other, second)
    assert registry.get_sample_value("otel_traj_spans_total", {"result": "late"}) == 0

    first.count_spans("accepted", 12)
    second.count_spans("accepted", 3)
    first.count_dropped("queue_full", 3)
    second.count_dropped("queue_full", 2)
    second.count_dropped("max_traces")
    first.count_sink_error("langfuse")
    second.count_sink_error("langfuse")
    second.count_internal_error()
    first.traces_in_flight, second.traces_in_flight = 4, 5
    sample = registry.get_sample_value
    assert sample("otel_traj_spans_total", {"result": "accepted"}) == 15
    assert sample("otel_traj_dropped_total", {"reason": "queue_full"}) == 5
    assert sample("otel_traj_dropped_total", {"reason": "max_traces"}) == 1
    assert sample("otel_traj_sink_errors_total", {"sink": "langfuse"}) == 2
    assert sample("otel_traj_internal_errors_total") == 1
    assert sample("otel_traj_traces_in_flight") == 9
    # Another registry reports only its own stats.
    assert other.get_sample_value("otel_traj_spans_total", {"result": "accepted"}) == 3


def test_registries_are_isolated_and_collisions_detected() -> None:
    first, second = PrometheusSink(), PrometheusSink()
    first.export(make_verdict(CLEAN_TRACE, violating=False))
    assert value(first, "otel_traj_trajectories_total", **PASSED) == 1
    assert value(second, "otel_traj_trajectories_total", **PASSED) is None
    assert REGISTRY.get_sample_value("otel_traj_trajectories_total", {"agent": "support_agent"}) is None

    shared = CollectorRegistry()
    PrometheusSink(registry=shared)
    with pytest.raises(ValueError, match="Duplicated timeseries"):
        PrometheusSink(registry=shared)
    with pytest.raises(TypeError):
        PrometheusSink(shared)  # type: ignore[call-arg]


STEPS_LE = "0.0 1.0 2.0 3.0 4.0 5.0 6.0 8.0 10.0 12.0 15.0 20.0 25.0 30.0 40.0 50.0 75.0 100.0 +Inf"
CONTRACT = {
    "otel_traj_trajectories": ("counter", {"agent", "version", "outcome", "stage"}, None),
    "otel_traj_check_results": ("counter", {"agent", "version", "check", "status", "severity"}, None),
    "otel_traj_scope_violations": ("counter", {"agent", "tool"}, None),
    "otel_traj_tool_calls": ("counter", {"agent", "tool", "status"}, None),
    "otel_traj_trajectory_tool_calls": ("histogram", {"agent", "version"}, STEPS_LE),
    "otel_traj_trajectory_model_turns": ("histogram", {"agent", "version"}, STEPS_LE),
    "otel_traj_trajectory_tokens": (
        "histogram",
        {"agent", "version", "type"},
        "100.0 250.0 500.0 1000.0 1500.0 2500.0 4000.0 6000.0 10000.0 15000.0 25000.0 40000.0 60000.0 "
        "100000.0 150000.0 250000.0 400000.0 600000.0 1e+06 +Inf",
    ),
    "otel_traj_trajectory_duration_seconds": (
        "histogram",
        {"agent", "version"},
        "0.5 1.0 2.0 3.0 5.0 8.0 13.0 20.0 30.0 45.0 60.0 90.0 120.0 180.0 300.0 600.0 1200.0 1800.0 "
        "3600.0 +Inf",
    ),
    "otel_traj_trajectory_cost_usd": (
        "histogram",
        {"agent", "version"},
        "0.0001 0.00025 0.0005 0.001 0.0015 0.0025 0.004 0.006 0.01 0.015 0.025 0.04 0.06 0.1 0.15 0.25 "
        "0.4 0.6 1.0 1.5 2.5 4.0 6.0 10.0 25.0 50.0 +Inf",
    ),
    "otel_traj_trajectories_unpriced": ("counter", {"agent", "version"}, None),
    "otel_traj_judge_results": ("counter", {"agent", "judge", "label"}, None),
}


def test_metric_names_labels_and_buckets_are_the_published_contract() -> None:
    sink = PrometheusSink()
    sink.export(make_verdict(VIOLATING_TRACE, violating=True))
    run = violating_run()
    models = [replace(model, model="gpt-4o-mini", provider="openai") for model in run.model_calls]
    priced = replace(run, model_calls=models)
    sink.export(GRADER.grade(priced))
    judged = JudgeResult(
        trace_id=VIOLATING_TRACE, agent="support_agent", judge="answer", model="m", score=1.0,
        label="pass", explanation="ok", severity="info", end_ns=1, judged_at_ns=2,
    )  # fmt: skip
    sink.on_judgement(judged)
    assert_contract({m.name: m for m in sink.registry.collect()}, CONTRACT)
