"""Judge results in every sink (Langfuse, the store, Prometheus), in-process behind the verdict, and
offline with ``grade --judge``."""

from __future__ import annotations

import sqlite3
import textwrap
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from prometheus_client import CollectorRegistry

from otel_traj.cli import main
from otel_traj.processor import TrajectoryProcessor
from otel_traj.sinks.prometheus import PrometheusSink
from otel_traj.sinks.prometheus_health import register_pipeline_health
from otel_traj.sinks.store import SqliteSink, read_verdicts
from otel_traj.sinks.store_judgements import read_judgements
from otel_traj.verdict import Verdict
from tests.judge_helpers import RUBRIC, judge_policy, judge_sink, verdict
from tests.judge_server import answer, judge_server
from tests.langfuse_helpers import fast_sink
from tests.langfuse_server import LangfuseTestServer
from tests.semconv_agent import clean_refund, emit

JUDGE = "answer_addresses_request"
FIXTURE = Path(__file__).parent / "fixtures" / "real" / "langgraph_openinference" / "clean.otlp.json"


def test_langfuse_gets_a_numeric_judge_score_marked_source_judge() -> None:
    graded = verdict(0xFEED)
    with (
        LangfuseTestServer().running() as langfuse,
        judge_server(reply=lambda r: answer(0.4, "fail", "Vague.")) as llm,
    ):
        lf = fast_sink(langfuse)
        sink = judge_sink(llm, judge_policy(), [], sinks=(lf,))
        sink.export(graded)
        assert sink.force_flush(10_000)
        sink.shutdown()
        assert lf.force_flush(10_000)
        lf.shutdown()
        [score] = langfuse.scores_for(graded.trajectory.trace_hex)
    assert (score["name"], score["value"], score["dataType"]) == (f"judge.{JUDGE}", 0.4, "NUMERIC")
    assert score["comment"] == "Vague."
    assert score["metadata"]["source"] == "judge"
    assert score["metadata"]["label"] == "fail"
    assert lf.report().delivered == 1


def test_the_store_keeps_judgements_apart_from_the_verdict(tmp_path: Path) -> None:
    graded = verdict(0xBEEF)
    store = SqliteSink(path=tmp_path / "store.db")
    with judge_server(reply=lambda r: answer(1.0, "pass", "Mail jane@example.com confirmed.")) as llm:
        sink = judge_sink(llm, judge_policy(), [], sinks=(store,))
        store.export(graded)
        sink.export(graded)
        assert sink.force_flush(10_000)
        sink.shutdown()
    assert store.force_flush(10_000)
    store.shutdown()
    with sqlite3.connect(tmp_path / "store.db") as conn:
        [row] = read_judgements(conn, graded.trajectory.trace_hex)
        [stored] = read_verdicts(conn)
    assert (row["judge"], row["score"], row["label"], row["source"]) == (JUDGE, 1.0, "pass", "judge")
    assert row["explanation"] == "Mail [REDACTED] confirmed."
    assert stored["outcome"] == graded.outcome
    assert JUDGE not in {c["name"] for c in stored["checks"]}


def test_a_store_without_judgements_reads_none(tmp_path: Path) -> None:
    store = SqliteSink(path=tmp_path / "store.db")
    store.shutdown()
    with sqlite3.connect(tmp_path / "store.db") as conn:
        assert read_judgements(conn) == []


def test_prometheus_counts_results_by_label_and_calls_by_result() -> None:
    prometheus = PrometheusSink(registry=CollectorRegistry())
    labels = iter(["pass", "fail", "pass"])
    with judge_server(reply=lambda r: answer(label=next(labels))) as llm:
        sink = judge_sink(llm, judge_policy(), [], sinks=(prometheus,))
        register_pipeline_health(prometheus.registry, sink.stats)
        for trace_id in (1, 2, 3):
            sink.export(verdict(trace_id))
        assert sink.force_flush(10_000)
        sink.shutdown()
    sample = prometheus.registry.get_sample_value
    base = {"agent": "support_agent", "judge": JUDGE}
    assert sample("otel_traj_judge_results_total", {**base, "label": "pass"}) == 2
    assert sample("otel_traj_judge_results_total", {**base, "label": "fail"}) == 1
    assert sample("otel_traj_judge_calls_total", {"judge": JUDGE, "result": "ok"}) == 3


def test_in_process_the_verdict_is_out_before_the_slow_judge_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    verdicts: list[Verdict] = []
    prometheus = PrometheusSink(registry=CollectorRegistry())
    with judge_server(hold=True) as llm:
        monkeypatch.setenv("OPENAI_BASE_URL", llm.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        processor = TrajectoryProcessor(policy=judge_policy(), sinks=[prometheus], on_verdict=verdicts.append)
        provider = TracerProvider()
        provider.add_span_processor(processor)
        trace_id = emit(provider.get_tracer("agent"), clean_refund())
        # The model holds its answer until released: the judge cannot be done, the verdict is out.
        assert processor.force_flush(100) is False
        assert [v.trajectory.trace_id for v in verdicts] == [trace_id]
        assert llm.received.acquire(timeout=10)
        llm.release.set()
        assert processor.force_flush(10_000)
        provider.shutdown()
    labels = {"agent": "support_agent", "judge": JUDGE, "label": "pass"}
    assert prometheus.registry.get_sample_value("otel_traj_judge_results_total", labels) == 1
    assert (
        prometheus.registry.get_sample_value("otel_traj_judge_calls_total", {"judge": JUDGE, "result": "ok"})
        == 1
    )
    assert verdicts[0].outcome == "pass"


def test_grade_judge_runs_every_run_offline_and_leaves_the_exit_code_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text(
        textwrap.dedent(
            f"""
            defaults:
              judges:
                - {{name: {JUDGE}, rubric: "{RUBRIC}", sample: 0.0, max_calls_per_hour: 10}}
            """
        )
    )
    with judge_server(reply=lambda r: answer(0.8, "pass", "Answered.")) as llm:
        monkeypatch.setenv("OPENAI_BASE_URL", llm.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        assert main(["grade", str(FIXTURE), "--policy", str(policy)]) == 0
        assert llm.requests == []
        assert main(["grade", str(FIXTURE), "--policy", str(policy), "--judge"]) == 0
        assert len(llm.requests) == 1
    err = capsys.readouterr().err
    assert f"otel-traj: judge {JUDGE} on " in err
    assert ": 0.80 pass: Answered." in err
    assert "otel-traj: judges: 1 ok" in err


def test_grade_judge_without_judges_is_an_input_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["grade", str(FIXTURE), "--judge"]) == 2
    assert "--judge: the policy has no judges" in capsys.readouterr().err
