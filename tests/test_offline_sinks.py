"""The offline path delivers through the service's sinks: ``grade --store`` writes the store that
``report`` reads (real SQLite), and any ``Sink`` given to ``grade_runs`` receives every verdict and
every conversation verdict, is flushed between batches and shut down once; ``--emit-otel`` and
``--store`` are served from one pass."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from otel_traj.cli import main
from otel_traj.conversations import ConversationVerdict
from otel_traj.offline import grade_runs, read_runs
from otel_traj.policy import load_policy
from otel_traj.sinks.base import Sink
from otel_traj.sinks.evaluation_records import TARGET
from otel_traj.verdict import Verdict
from tests.conversation_runs import POLICY, write_otlp
from tests.otlp_logs_receiver import logs_receiver


class Recording(Sink):
    """Every call the offline path makes, in order."""

    def __init__(self, fail_on_export: bool = False) -> None:
        super().__init__()
        self.calls: list[tuple[str, Any]] = []
        self.fail_on_export = fail_on_export

    def export(self, verdict: Verdict) -> None:
        self.calls.append(("export", verdict))
        if self.fail_on_export:
            raise RuntimeError("this sink is broken")

    def export_conversation(self, verdict: ConversationVerdict) -> None:
        self.calls.append(("conversation", verdict))

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        self.calls.append(("flush", timeout_millis))
        return True

    def shutdown(self, timeout_millis: int = 30_000) -> None:
        self.calls.append(("shutdown", timeout_millis))

    def of(self, kind: str) -> list[Any]:
        return [arg for name, arg in self.calls if name == kind]


def _json(out: str) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(out)
    return document


def test_grade_store_then_report_reads_the_same_runs_and_conversations(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    traces = write_otlp(tmp_path / "conversations.otlp.pb")
    store = tmp_path / "verdicts.db"

    assert (
        main(["grade", str(traces), "--policy", str(POLICY), "--store", str(store), "--format", "json"]) == 1
    )
    out, err = capsys.readouterr()
    graded = _json(out)
    assert f"otel-traj: store: {len(graded['trajectories'])} verdicts written to {store}" in err

    assert main(["report", "--store", str(store), "--format", "json"]) == 0
    stored = _json(capsys.readouterr().out)["trajectories"]
    assert main(["report", "--store", str(store), "--conversations", "--format", "json"]) == 0
    talks = _json(capsys.readouterr().out)["conversations"]

    def runs(records: list[dict[str, Any]]) -> dict[str, tuple[str, float, str | None]]:
        return {r["trace_id"]: (r["outcome"], r["score"], r["conversation_id"]) for r in records}

    assert len(graded["trajectories"]) == 5
    assert runs(stored) == runs(graded["trajectories"])
    assert (
        sorted((c["conversation_id"], c["outcome"]) for c in talks)
        == sorted((c["conversation_id"], c["outcome"]) for c in graded["conversations"])
        == [("conv-clean", "pass"), ("conv-switch", "unsafe")]
    )


def test_grade_with_a_store_that_cannot_be_opened_exits_2_before_grading(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    traces = write_otlp(tmp_path / "conversations.otlp.pb")
    assert main(["grade", str(traces), "--policy", str(POLICY), "--store", str(tmp_path)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert "otel-traj: --store: " in err


def test_every_verdict_and_conversation_reaches_a_custom_sink(tmp_path: Path) -> None:
    policy = load_policy(POLICY)
    runs = read_runs([write_otlp(tmp_path / "conversations.otlp.pb")], policy=policy)
    sink = Recording()

    graded = grade_runs(runs.trajectories, policy=policy, sinks=[sink], batch_size=4, timeout_millis=5_000)

    assert [v.trajectory.trace_id for v in graded.verdicts] == [t.trace_id for t in runs.trajectories]
    assert sink.of("export") == graded.verdicts
    assert graded.conversations is not None and len(graded.conversations) == 2
    assert sink.of("conversation") == graded.conversations
    # 5 runs in batches of 4, then the conversations: each flushed before the next, then once more.
    names = [name for name, _ in sink.calls]
    assert names == [
        *["export"] * 4,
        "flush",
        "export",
        "flush",
        *["conversation"] * 2,
        "flush",
        "flush",
        "shutdown",
    ]
    assert all(0 <= t <= 5_000 for t in (*sink.of("flush"), *sink.of("shutdown")))


def test_a_sink_that_raises_is_counted_and_the_others_get_everything(tmp_path: Path) -> None:
    policy = load_policy(POLICY)
    runs = read_runs([write_otlp(tmp_path / "conversations.otlp.pb")], policy=policy)
    broken, working = Recording(fail_on_export=True), Recording()

    graded = grade_runs(runs.trajectories, policy=policy, sinks=[broken, working])

    assert working.of("export") == graded.verdicts
    assert broken.stats.snapshot().sink_errors == {"Recording": len(graded.verdicts)}
    assert len(broken.of("shutdown")) == len(working.of("shutdown")) == 1


def test_without_sinks_the_verdicts_are_the_graders() -> None:
    """``gate`` and ``policy suggest`` take the same path with no sink: the verdicts are those the
    grader gives one run at a time."""
    from otel_traj.grader import Grader
    from tests.real_frameworks import run_files

    policy = load_policy(Path(__file__).parent.parent / "examples" / "policies" / "support_agent.yaml")
    runs = read_runs(run_files("pydantic_ai", "clean"), policy=policy)
    graded = grade_runs(runs.trajectories, policy=policy, batch_size=1)
    one_by_one = [Grader(policy).grade(t) for t in runs.trajectories]
    assert [(v.outcome, v.score, [c.name for c in v.checks]) for v in graded.verdicts] == [
        (v.outcome, v.score, [c.name for c in v.checks]) for v in one_by_one
    ]


def test_grade_emits_the_events_and_writes_the_store_in_one_pass(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    traces = write_otlp(tmp_path / "conversations.otlp.pb")
    store = tmp_path / "verdicts.db"
    with logs_receiver() as receiver:
        code = main(
            [
                "grade",
                str(traces),
                "--policy",
                str(POLICY),
                "--emit-otel",
                receiver.url,
                "--store",
                str(store),
            ]
        )
        events = list(receiver.events)
    assert code == 1
    err = capsys.readouterr().err
    assert f"otel-traj: events: {len(events)} records to {receiver.url}/v1/logs" in err
    assert {e.attributes[TARGET] for e in events} == {"trajectory", "conversation"}
    assert "otel-traj: store: 5 verdicts written to" in err
