"""The metrics reference is the code's: every metric family the sinks and the service register is in
docs/metrics-and-alerts.md and nothing else is; every reason ``otel_traj_dropped_total`` can take is
listed there and explained in docs/reliability.md; the conversation metrics keep their published
names, types, labels and buckets (the dashboards and rules read them)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from otel_traj.conversations import ConversationVerdict, TraceSummary
from otel_traj.delivery import drop_reasons
from otel_traj.serve.ingest import REQUEST_RESULTS
from otel_traj.sinks.prometheus import PrometheusSink
from otel_traj.verdict import CheckResult
from tests.prometheus_contract import assert_contract

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "otel_traj"
METRICS_DOC = ROOT / "docs" / "metrics-and-alerts.md"
RELIABILITY_DOC = ROOT / "docs" / "reliability.md"
# prometheus_client's metric classes and the families custom collectors yield.
COUNTERS = {"Counter", "CounterMetricFamily"}
OTHERS = {"Gauge", "Histogram", "Summary", "Info", "Enum", "GaugeMetricFamily", "HistogramMetricFamily"}


def _called(node: ast.Call) -> str | None:
    func = node.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None


def registered_metrics() -> set[str]:
    """Exposed names of the families built in the Prometheus sinks and the service: counters as
    ``<name>_total``, as the exposition and the docs write them."""
    sources = [*PACKAGE.glob("sinks/prometheus*.py"), *PACKAGE.glob("serve/*.py")]
    names: set[str] = set()
    for path in sources:
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call) or _called(node) not in COUNTERS | OTHERS or not node.args:
                continue
            name = node.args[0].value if isinstance(node.args[0], ast.Constant) else None
            if isinstance(name, str) and name.startswith("otel_traj_"):
                names.add(name + ("_total" if _called(node) in COUNTERS else ""))
    return names


def _keyword(call: ast.Call, name: str) -> object:
    value = next((k.value for k in call.keywords if k.arg == name), None)
    return value.value if isinstance(value, ast.Constant) else value


def delivery_reasons(tree: ast.Module) -> set[str]:
    """The reasons of each ``Delivery`` that counts its own drops (no ``on_drop``)."""
    reasons: set[str] = set()
    for call in ast.walk(tree):
        if not isinstance(call, ast.Call) or _called(call) != "Delivery" or _keyword(call, "on_drop"):
            continue
        name, when_full = _keyword(call, "name"), _keyword(call, "when_full")
        assert isinstance(name, str) and when_full in ("block", "drop_oldest", "drop_newest")
        reasons.update(drop_reasons(name, when_full, _keyword(call, "stale") is not None))
    return reasons


def all_drop_reasons() -> set[str]:
    """Every reason passed to ``count_dropped``: a literal, a module constant, or (for a sink that
    passes its reason along) the module's ``DROP*`` constants; and the reasons of the deliveries."""
    reasons: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text())
        reasons |= delivery_reasons(tree)
        constants = {
            target.id: node.value.value
            for node in tree.body
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
            for target in node.targets
            if isinstance(target, ast.Name) and isinstance(node.value.value, str)
        }
        calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and _called(n) == "count_dropped"]
        for call in calls:
            if not call.args or isinstance(call.func, ast.Name):
                continue  # the definition's own helpers, not a count
            arg = call.args[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                reasons.add(arg.value)
            elif isinstance(arg, ast.Name) and arg.id in constants:
                reasons.add(constants[arg.id])
            else:
                reasons.update(v for k, v in constants.items() if k.startswith("DROP"))
    return reasons


def documented_metrics() -> dict[str, str]:
    """The metrics tables' rows: metric name -> the rest of its row."""
    rows = re.findall(r"^\| `(otel_traj_\w+)` \|(.*)$", METRICS_DOC.read_text(), flags=re.MULTILINE)
    return dict(rows)


def test_every_registered_metric_is_documented_and_every_documented_one_registered() -> None:
    registered = registered_metrics()
    assert {"otel_traj_conversations_total", "otel_traj_judge_results_total"} <= registered
    assert registered == set(documented_metrics())


def test_every_request_result_is_listed() -> None:
    for metric in ("otel_traj_receiver_requests_total", "otel_traj_receiver_log_requests_total"):
        assert metric in documented_metrics()
    results = documented_metrics()["otel_traj_receiver_requests_total"].split("`result`", 1)[1]
    assert [result for result in REQUEST_RESULTS if f"`{result}`" not in results] == []


def test_every_drop_reason_is_listed_and_explained() -> None:
    reasons = all_drop_reasons()
    assert {
        "max_conversations",
        "langfuse_queue_full",
        "otel_events_queue_full",
        "backlog",
        "store",
    } <= reasons
    row = documented_metrics()["otel_traj_dropped_total"]
    listed = set(re.findall(r"`(\w+)`", row))
    assert reasons <= listed, sorted(reasons - listed)
    explained = set(re.findall(r"`(\w+)`", RELIABILITY_DOC.read_text()))
    assert reasons <= explained, sorted(reasons - explained)


# The conversation families as exposed: a changed name, label or ``le`` breaks the conversation
# panels of the dashboard and the rules over them.
CONVERSATION_CONTRACT = {
    "otel_traj_conversations": ("counter", {"agent", "outcome"}, None),
    "otel_traj_conversation_check_results": ("counter", {"agent", "check", "status", "severity"}, None),
    "otel_traj_conversation_traces": (
        "histogram",
        {"agent"},
        "1.0 2.0 3.0 4.0 5.0 6.0 8.0 10.0 12.0 15.0 20.0 25.0 30.0 40.0 50.0 75.0 100.0 +Inf",
    ),
    "otel_traj_conversation_tool_calls": (
        "histogram",
        {"agent"},
        "0.0 1.0 2.0 5.0 10.0 15.0 20.0 30.0 40.0 60.0 80.0 100.0 150.0 200.0 300.0 500.0 +Inf",
    ),
    "otel_traj_conversation_tokens": (
        "histogram",
        {"agent", "type"},
        "1000.0 2500.0 5000.0 10000.0 25000.0 50000.0 100000.0 200000.0 400000.0 1e+06 2.5e+06 +Inf",
    ),
    "otel_traj_conversation_duration_seconds": (
        "histogram",
        {"agent"},
        "10.0 30.0 60.0 120.0 300.0 600.0 900.0 1800.0 3600.0 7200.0 14400.0 28800.0 86400.0 +Inf",
    ),
}


def test_conversation_metrics_are_the_published_contract() -> None:
    sink = PrometheusSink()
    before = {m.name for m in sink.registry.collect()}
    assert not before & set(CONVERSATION_CONTRACT)  # none before the first conversation
    trace = TraceSummary(
        trace_id=f"{1:032x}", conversation_id="c1", agent="support_agent", service_name=None,
        parent_span=f"{1:016x}", start_ns=0, end_ns=10, outcome="pass", score=1.0, complete=True,
        tool_calls=3, model_turns=2, input_tokens=100, output_tokens=10,
    )  # fmt: skip
    check = CheckResult("conversation_scope", "pass", "critical", "one subject")
    sink.export_conversation(ConversationVerdict("c1", "support_agent", [trace], checks=[check]))
    families = {m.name: m for m in sink.registry.collect() if m.name not in before}
    assert_contract(families, CONVERSATION_CONTRACT)
    for name, (kind, _, _) in CONVERSATION_CONTRACT.items():
        assert f"`{name}{'_total' if kind == 'counter' else ''}`" in METRICS_DOC.read_text(), name
