"""``otel-traj gate --store``: the two sides are stored runs of live traffic selected by
``--baseline-where`` / ``--candidate-where``, paired and judged as runs from files, on SQLite and on
PostgreSQL alike."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from otel_traj.cli import main
from otel_traj.gate.stored import parse_where
from otel_traj.offline import grade_runs, read_runs
from otel_traj.policy import load_policy
from otel_traj.sinks.base import Sink
from otel_traj.sinks.store import SqliteSink
from otel_traj.sinks.store_postgres import PostgresSink
from otel_traj.verdict import Verdict

REAL = Path(__file__).parent / "fixtures" / "real" / "pydantic_ai"
POLICY = Path(__file__).parent.parent / "examples" / "policies" / "support_agent.yaml"


def deployed(file: Path, version: str, track: str) -> Verdict:
    """The run of ``file`` graded as a service of ``version`` on the ``track`` deployment."""
    policy = load_policy(POLICY)
    runs = read_runs([file], policy=policy)
    (graded,) = grade_runs(runs.trajectories, policy=policy).verdicts
    traj = dataclasses.replace(
        graded.trajectory,
        service_version=version,
        attributes={**graded.trajectory.attributes, "deployment.track": track},
    )
    return dataclasses.replace(graded, trajectory=traj)


def fill(sink: Sink) -> None:
    sink.export(deployed(REAL / "clean.otlp.pb", "1.4.0", "stable"))
    sink.export(deployed(REAL / "violating.otlp.pb", "1.5.0", "canary"))
    sink.shutdown()


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        path = tmp_path / "fleet.db"
        fill(SqliteSink(path=path))
        return str(path)
    url: str = request.getfixturevalue("postgres_url")
    fill(PostgresSink(url=url))
    return url


def gate(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, Any, str]:
    code = main(["gate", "--format", "json", *args])
    out, err = capsys.readouterr()
    return code, json.loads(out) if out else None, err


def test_a_canary_that_adds_a_scope_violation_is_blocked_from_live_runs(
    store: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, report, _ = gate(
        capsys,
        "--store",
        store,
        "--baseline-where",
        "service_version=1.4.0",
        "--candidate-where",
        "service_version=1.5.0",
        "--since",
        "3650d",
    )
    assert code == 1
    assert report["allowed"] is False
    assert "check scope (critical) fails on 1 runs, baseline 0" in report["reasons"]
    (case,) = report["cases"]
    assert case["baseline"]["outcomes"] == ["pass"]
    assert case["candidate"]["outcomes"] == ["unsafe"]


def test_attributes_and_versions_select_runs_and_an_equal_side_is_allowed(
    store: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, report, _ = gate(
        capsys,
        "--store",
        store,
        "--baseline-where",
        "attributes.deployment.track=stable",
        "--candidate-where",
        "service_version=1.4.0",
        "--candidate-where",
        "attributes.deployment.track=stable",
    )
    assert code == 0
    assert report["allowed"] is True


def test_a_side_without_stored_runs_exits_2_naming_its_condition(
    store: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = gate(
        capsys,
        "--store",
        store,
        "--baseline-where",
        "service_version=1.4.0",
        "--candidate-where",
        "versions.prompt=v9",
    )
    assert code == 2
    assert "--candidate-where versions.prompt=v9: no run in" in err


def test_where_names_a_verdict_field_a_version_or_an_attribute(capsys: pytest.CaptureFixture[str]) -> None:
    assert parse_where("versions.models=gpt-4o").matches({"versions": {"models": ["gpt-4o", "o3"]}})
    assert parse_where("attributes.tier=1").matches({"attributes": {"tier": 1}})
    assert not parse_where("agent=a").matches({"agent": "b"})
    for bad in ("service_version", "outcome=pass", "versions.=x", "other.key=x"):
        with pytest.raises(ValueError, match="expected KEY=VALUE"):
            parse_where(bad)
    with pytest.raises(SystemExit):
        main(["gate", "--store", "x.db", "--baseline-where", "outcome=pass", "--candidate-where", "agent=a"])
    assert "expected KEY=VALUE" in capsys.readouterr().err
    code = main(["gate", "--baseline-where", "agent=a", "--candidate-where", "agent=b"])
    assert code == 2
    assert "read --store: give it" in capsys.readouterr().err
