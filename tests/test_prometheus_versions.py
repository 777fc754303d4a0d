"""The version rules on a real Prometheus: a day of runs of two agents, each rolling out a new version two
hours ago, exported by a real PrometheusSink and written into Prometheus's storage with promtool's
backfill (a day of scrapes cannot be waited for). The rules loaded from rules.yml then evaluate on the
server: support_agent's new version regresses in tokens, tool calls, cost and failing checks, and its
alerts go pending; billing_agent's new version behaves like the old one, and nothing goes pending for it.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from otel_traj.cost import run_cost
from otel_traj.grader import Grader
from otel_traj.sinks.prometheus import PrometheusSink
from otel_traj.trajectory import Tokens, Trajectory
from otel_traj.verdict import Verdict
from tests.dashboard_helpers import require_binary
from tests.support_trajectories import clean_run, example_policy, violating_run
from tests.test_prometheus_integration import RULES, Prometheus, free_port, wait_for

# What the version rules read; the rest of the sink's series play no part.
FAMILIES = {
    "otel_traj_trajectories",
    "otel_traj_check_results",
    "otel_traj_trajectory_tokens",
    "otel_traj_trajectory_tool_calls",
    "otel_traj_trajectory_cost_usd",
}
STEP_S = 120
HISTORY_S = 25 * 3600
ROLLOUT_S = 2 * 3600
VERSION_ALERTS = {
    "OtelTrajVersionTokenRegression",
    "OtelTrajVersionToolCallRegression",
    "OtelTrajVersionCostRegression",
}
# The alerts that compare runs over time (an unsafe run alerts on its own, whatever its version).
REGRESSION_ALERTS = VERSION_ALERTS | {
    "OtelTrajVersionCheckFailureRegression",
    "OtelTrajTokenBudgetRegression",
    "OtelTrajToolCallBudgetRegression",
    "OtelTrajCheckFailureRateRising",
}


def run(base: Trajectory, agent: str, version: str, token_factor: int = 1) -> Trajectory:
    """``base`` as a run of ``agent`` ``version`` on a model of the price database."""
    models = [
        replace(
            call,
            model="gpt-4o-mini",
            provider="openai",
            input_tokens=(call.input_tokens or 0) * token_factor,
            output_tokens=(call.output_tokens or 0) * token_factor,
        )
        for call in base.model_calls
    ]
    tokens = Tokens(input=base.tokens.input * token_factor, output=base.tokens.output * token_factor)
    return replace(base, agent=agent, service_version=version, model_calls=models, tokens=tokens)


def graded() -> dict[str, tuple[Verdict, Verdict]]:
    """Per agent, a run of its old version and one of its new version."""
    grader = Grader(example_policy())
    return {
        "support_agent": (
            grader.grade(run(clean_run(), "support_agent", "1.4.0")),
            grader.grade(run(violating_run(), "support_agent", "1.5.0", token_factor=2)),
        ),
        "billing_agent": (
            grader.grade(run(clean_run(), "billing_agent", "3.1")),
            grader.grade(run(clean_run(), "billing_agent", "3.2")),
        ),
    }


def labels_text(labels: dict[str, str]) -> str:
    return ",".join(f"{k}={json.dumps(v)}" for k, v in sorted(labels.items()))


def history(now: float, runs: dict[str, tuple[Verdict, Verdict]]) -> str:
    """OpenMetrics text of the sink's series scraped every STEP_S over HISTORY_S up to ``now``: each
    step one run of every old version, and of every new version during the last ROLLOUT_S."""
    sink = PrometheusSink()
    families: dict[str, tuple[str, list[str]]] = {}
    for at in range(int(now) - HISTORY_S, int(now), STEP_S):
        for old, new in runs.values():
            sink.export(old)
            if at >= now - ROLLOUT_S:
                sink.export(new)
        for family in sink.registry.collect():
            if family.name not in FAMILIES:
                continue
            lines = families.setdefault(family.name, (family.type, []))[1]
            lines.extend(
                f"{s.name}{{{labels_text(s.labels)}}} {s.value} {at}"
                for s in family.samples
                if not s.name.endswith("_created")
            )
    text = [f"# TYPE {name} {kind}\n" + "\n".join(lines) for name, (kind, lines) in families.items()]
    return "\n".join(text) + "\n# EOF\n"


@pytest.fixture
def backfilled(tmp_path: Path) -> Iterator[tuple[Prometheus, dict[str, tuple[Verdict, Verdict]]]]:
    runs = graded()
    data = tmp_path / "data"
    source = tmp_path / "history.om"
    source.write_text(history(time.time() - 60, runs))
    backfill = subprocess.run(
        [require_binary("promtool"), "tsdb", "create-blocks-from", "openmetrics", str(source), str(data)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert backfill.returncode == 0, backfill.stdout + backfill.stderr
    config = tmp_path / "prometheus.yml"
    config.write_text(json.dumps({"global": {"evaluation_interval": "1s"}, "rule_files": [str(RULES)]}))
    port = free_port()
    with (tmp_path / "prometheus.log").open("w") as log:
        proc = subprocess.Popen(
            [
                require_binary("prometheus"),
                f"--config.file={config}",
                f"--storage.tsdb.path={data}",
                f"--web.listen-address=127.0.0.1:{port}",
                "--log.level=warn",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            yield Prometheus(f"http://127.0.0.1:{port}"), runs
        finally:
            proc.terminate()
            proc.wait(timeout=30)


def last_evaluation(prometheus: Prometheus, group: str) -> str:
    groups = prometheus.api("/api/v1/rules")["groups"]
    return str(next(g["lastEvaluation"] for g in groups if g["name"] == group))


def active(prometheus: Prometheus) -> set[tuple[str, str, str, str]]:
    """(alert, agent, version, check) of every pending or firing regression alert."""
    try:
        alerts = prometheus.api("/api/v1/alerts")["alerts"]
    except OSError:
        return set()
    labels = [a["labels"] for a in alerts if a["state"] in {"pending", "firing"}]
    return {
        (x["alertname"], x["agent"], x.get("version", ""), x.get("check", ""))
        for x in labels
        if x["alertname"] in REGRESSION_ALERTS
    }


def test_a_regressing_version_alerts_and_a_steady_one_does_not(
    backfilled: tuple[Prometheus, dict[str, tuple[Verdict, Verdict]]],
) -> None:
    prometheus, runs = backfilled
    old, new = runs["support_agent"]
    assert not old.failed_checks
    failing = {c.name for c in new.failed_checks}
    assert "scope" in failing
    costs = [run_cost(v.trajectory).total_usd for v in (old, new)]
    assert None not in costs
    expected = {(alert, "support_agent", "1.5.0", "") for alert in VERSION_ALERTS} | {
        ("OtelTrajVersionCheckFailureRegression", "support_agent", "1.5.0", check) for check in failing
    }
    # The rules need one evaluation for the newest version and one more for the alerts reading it.
    wait_for(lambda: expected <= active(prometheus), "the version alerts of support_agent 1.5.0")
    # Groups run concurrently: one more evaluation of the same-hour-yesterday alerts, now that the
    # newest versions are recorded.
    seen = last_evaluation(prometheus, "otel-traj-alerts")
    wait_for(lambda: last_evaluation(prometheus, "otel-traj-alerts") != seen, "the alerts' next evaluation")

    newest = {
        (s["metric"]["agent"], s["metric"]["version"])
        for s in prometheus.query("agent_version:otel_traj_newest_version:1d")
    }
    assert newest == {("support_agent", "1.5.0"), ("billing_agent", "3.2")}
    # Nothing for billing_agent, whose new version runs as the old one did; the same-hour-yesterday
    # alerts leave both agents to the version alerts while they roll out.
    assert active(prometheus) == expected
