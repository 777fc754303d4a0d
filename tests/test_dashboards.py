"""dashboards/: rules pass promtool, and every Grafana query parses and reads metrics that exist."""

from __future__ import annotations

import re
import subprocess
from dataclasses import replace
from pathlib import Path

import yaml
from prometheus_client.samples import Sample

from otel_traj.conversations import TraceSummary, grade_conversation
from otel_traj.grader import Grader
from otel_traj.policy import Conversation
from otel_traj.serve.health import register_service_metrics
from otel_traj.serve.ingest import ReceiverStats
from otel_traj.serve.tls import ServedCertificate, TlsFiles
from otel_traj.sinks.prometheus import PrometheusSink
from otel_traj.sinks.prometheus_health import register_pipeline_health
from otel_traj.stats import PipelineStats
from tests.dashboard_helpers import DASHBOARD, PROM_DIR, dashboard, dashboard_queries, expand, require_binary
from tests.support_trajectories import example_policy, violating_run

PROMQL_WORDS = {
    "by", "without", "on", "ignoring", "group_left", "group_right", "offset", "bool", "and", "or", "unless",
    "inf", "nan",
}  # fmt: skip


def run_promtool(*args: str, cwd: Path = PROM_DIR) -> str:
    proc = subprocess.run(
        [require_binary("promtool"), *args], cwd=cwd, capture_output=True, text=True, timeout=120
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    return output


# rules_test.yml, and a file per further group of rules (rules_versions_test.yml).
RULE_TESTS = sorted(path.name for path in PROM_DIR.glob("rules*_test.yml"))


def rule_exprs() -> list[str]:
    groups = yaml.safe_load((PROM_DIR / "rules.yml").read_text())["groups"]
    return [rule["expr"] for group in groups for rule in group["rules"]]


def recorded_names() -> set[str]:
    groups = yaml.safe_load((PROM_DIR / "rules.yml").read_text())["groups"]
    return {rule["record"] for group in groups for rule in group["rules"] if "record" in rule}


def metric_names(expr: str) -> set[str]:
    """Series names an expression reads: identifiers left after removing strings, label matchers,
    ranges, grouping clauses and function calls."""
    expr = re.sub(r'"(?:[^"\\]|\\.)*"', "", expr)
    expr = re.sub(r"\{[^}]*\}", "", expr)
    expr = re.sub(r"\[[^\]]*\]", "", expr)
    expr = re.sub(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", expr)
    expr = re.sub(r"\boffset\s+\w+", "", expr)
    names = set()
    for match in re.finditer(r"(?<![\w.])([a-zA-Z_:][\w:]*)(\s*\()?", expr):
        if match.group(2) is None and match.group(1).lower() not in PROMQL_WORDS:
            names.add(match.group(1))
    return names


def exposed_samples() -> list[Sample]:
    """Every series of the sink's registry, as ``otel-traj serve`` exposes it (TLS on), once each
    kind of metric has a sample."""
    sink = PrometheusSink()
    pair = ServedCertificate(TlsFiles(Path("tls.crt"), Path("tls.key"), b"", b""))
    register_service_metrics(sink.registry, ReceiverStats(), pair)
    stats = PipelineStats()
    register_pipeline_health(sink.registry, stats)
    stats.count_dropped("queue_full")
    stats.count_sink_error("langfuse")
    sink.export(Grader(example_policy()).grade(violating_run()))
    trace = TraceSummary(
        trace_id=f"{1:032x}", conversation_id="c1", agent="support_agent", service_name=None,
        parent_span=None, start_ns=0, end_ns=10, outcome="pass", score=1.0, complete=True,
        tool_calls=1, model_turns=1, input_tokens=10, output_tokens=1,
    )  # fmt: skip
    sink.export_conversation(grade_conversation([trace], Conversation.model_validate({"scope": True})))
    # A run whose model is in the price database, for the cost histogram.
    run = violating_run()
    models = [replace(call, model="gpt-4o-mini", provider="openai") for call in run.model_calls]
    priced = replace(run, model_calls=models)
    sink.export(Grader(example_policy()).grade(priced))
    return [sample for family in sink.registry.collect() for sample in family.samples]


def exposed_names() -> set[str]:
    return {sample.name for sample in exposed_samples()}


def test_rules_pass_promtool_check() -> None:
    assert "SUCCESS" in run_promtool("check", "rules", "rules.yml")


def test_rules_unit_tests_pass() -> None:
    assert "rules_versions_test.yml" in RULE_TESTS
    assert "SUCCESS" in run_promtool("test", "rules", *RULE_TESTS)


def test_rules_unit_tests_cover_every_alert() -> None:
    tests = [test for name in RULE_TESTS for test in yaml.safe_load((PROM_DIR / name).read_text())["tests"]]
    cases = [case for test in tests for case in test.get("alert_rule_test", [])]
    groups = yaml.safe_load((PROM_DIR / "rules.yml").read_text())["groups"]
    alerts = {rule["alert"] for group in groups for rule in group["rules"] if "alert" in rule}
    for alert in alerts:
        outcomes = {bool(case["exp_alerts"]) for case in cases if case["alertname"] == alert}
        assert outcomes == {True, False}, f"{alert} needs a firing and a not-firing case"


def test_scrape_config_example_is_valid() -> None:
    assert "SUCCESS" in run_promtool("check", "config", "prometheus.yml")


def test_rules_read_only_exposed_metrics() -> None:
    # And what the rules record: the version alerts read the newest version recorded before them.
    known = exposed_names() | recorded_names()
    for expr in rule_exprs():
        assert metric_names(expr), expr
        assert metric_names(expr) <= known, f"unknown metrics {metric_names(expr) - known} in {expr}"


def test_every_dashboard_query_parses(tmp_path: Path) -> None:
    queries = dashboard_queries()
    rules = {
        "groups": [
            {
                "name": "dashboard",
                "rules": [
                    {"record": f"dashboard:query_{i}", "expr": expand(q)} for i, q in enumerate(queries)
                ],
            }
        ]
    }
    (tmp_path / "dashboard_rules.yml").write_text(yaml.safe_dump(rules))
    assert f"SUCCESS: {len(queries)} rules found" in run_promtool(
        "check", "rules", "dashboard_rules.yml", cwd=tmp_path
    )


def test_every_dashboard_query_reads_metrics_that_exist() -> None:
    known = exposed_names() | recorded_names()
    agent_variable = dashboard()["templating"]["list"][1]["definition"]
    match = re.fullmatch(r"label_values\((\w+), agent\)", agent_variable)
    assert match and match.group(1) in known, agent_variable
    for query in dashboard_queries():
        names = metric_names(expand(query))
        assert names, query
        assert names <= known, f"unknown metrics {names - known} in {query}"


def test_dashboard_uses_datasource_and_agent_variables() -> None:
    text = DASHBOARD.read_text()
    assert "DS_PROMETHEUS" not in text
    data = dashboard()
    variables = {v["name"]: v for v in data["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    assert variables["agent"]["multi"] is True
    per_agent = {sample.name for sample in exposed_samples() if "agent" in sample.labels}
    per_agent |= {name for name in recorded_names() if name.startswith("agent")}
    for panel in data["panels"]:
        if panel["type"] == "row":
            continue
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, panel["title"]
        for target in panel["targets"]:
            assert target["datasource"]["uid"] == "${datasource}"
            if metric_names(expand(target["expr"])) & per_agent:
                assert 'agent=~"$agent"' in target["expr"], (panel["title"], target["expr"])


def test_dashboard_has_the_panels_operators_need() -> None:
    titles = " | ".join(p["title"].lower() for p in dashboard()["panels"])
    for needle in (
        "outcome",
        "check failures by check",
        "failing runs by stage",
        "scope violations",
        "tokens per trajectory",
        "tool calls per trajectory",
        "budget-exceeded rate",
        "pipeline health",
        "dropped",
        "sink errors",
        "memory (otel-traj serve)",
        "unsafe conversations",
        "conversation check failures by check",
        "newest version per agent",
        "tokens per trajectory by version",
        "cost per trajectory by version",
        "check failure ratio by version",
    ):
        assert needle in titles, needle
