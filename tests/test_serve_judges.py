"""``otel-traj serve`` runs the policy's LLM judges: a real serve process, runs sent by the SDK's
OTLP/HTTP exporter, the judge asked through the official openai client on the local chat server.

The verdict is stored whatever the judge does (answers, errs, times out); a result reaches the store,
/metrics and the evaluation events (the real OTLP logs receiver); a reload changes the judges; a
custom check that raises is counted on /metrics; judges without an API key stop startup.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from otel_traj.sinks.store import connect
from otel_traj.sinks.store_judgements import read_judgements
from tests.judge_server import JudgeServer, answer, judge_server
from tests.otlp_logs_receiver import logs_receiver
from tests.semconv_agent import clean_refund, emit
from tests.serve_helpers import Served, cli, wait_for

JUDGE = "answer_addresses_request"
POLICY = """\
version: 1
defaults:
  budget: {{max_tool_calls: 8}}
  custom:
    - {{name: broken_check, function: "tests.plugins.broken:raises", severity: warning}}
  judges:
    - name: {judge}
      rubric: Does the final answer address what the user asked for?
      sample: 1.0
      timeout_s: 2
"""


def policy_file(directory: Path, judge: str = JUDGE) -> Path:
    path = directory / "policy.yaml"
    path.write_text(POLICY.format(judge=judge))
    return path


@pytest.fixture
def judged(served: Callable[..., Served], monkeypatch: pytest.MonkeyPatch) -> Callable[..., Served]:
    """``judged(llm, *flags)``: a serve process whose judges ask ``llm`` (it inherits OPENAI_*)."""

    def start(llm: JudgeServer, *args: str) -> Served:
        monkeypatch.setenv("OPENAI_BASE_URL", llm.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        return served(*args)

    return start


def send_run(server: Served) -> str:
    """One clean refund run through the SDK's OTLP/HTTP exporter; its trace id."""
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=server.http_url)))
    trace_id = emit(provider.get_tracer("agent"), clean_refund())
    provider.shutdown()
    return f"{trace_id:032x}"


def judge_calls(server: Served, result: str, judge: str = JUDGE) -> float:
    return server.metric("otel_traj_judge_calls_total", judge=judge, result=result)


def judge_results(server: Served, label: str, judge: str = JUDGE) -> float:
    return server.metric("otel_traj_judge_results_total", agent="support_agent", judge=judge, label=label)


def stored_judgements(server: Served) -> list[dict[str, Any]]:
    conn = connect(server.store, readonly=True)
    try:
        return read_judgements(conn)
    finally:
        conn.close()


def rules_of(verdict: dict[str, Any]) -> tuple[Any, ...]:
    return verdict["outcome"], [(c["name"], c["status"], c["reason"]) for c in verdict["checks"]]


def test_verdicts_are_stored_whether_the_judge_answers_errs_or_times_out(
    judged: Callable[..., Served], tmp_path: Path
) -> None:
    with (
        logs_receiver() as events,
        judge_server(reply=lambda r: answer(0.3, "fail", "Mail jane@example.com was not answered.")) as llm,
    ):
        server = judged(llm, "--policy", str(policy_file(tmp_path)), "--emit-otel", events.url)
        answered = send_run(server)
        wait_for(lambda: judge_results(server, "fail") == 1, what="the judge's result on /metrics")
        assert llm.received.acquire(timeout=0)

        llm.status = 500
        erred = send_run(server)
        wait_for(lambda: judge_calls(server, "error") == 1, what="the failed judge call")
        assert llm.received.acquire(timeout=0)

        llm.status, llm.hold = 200, True
        held = send_run(server)
        assert llm.received.acquire(timeout=15)  # the held run's call is in flight
        # The model has not answered: the verdict is out all the same.
        server.wait_verdicts({held})
        wait_for(lambda: judge_calls(server, "timeout") == 1, what="the judge call timing out")

        assert judge_calls(server, "ok") == 1
        # A custom check that raises is graded skipped on every run and counted.
        assert server.metric("otel_traj_check_errors_total", check="broken_check") == 3
        assert server.stop() == 0
        received = events.wait_for(1)
    verdicts = server.verdicts()
    assert {answered, erred, held} == set(verdicts)
    # The judge changed none of them: the three verdicts are the rules' own, equal.
    assert rules_of(verdicts[answered]) == rules_of(verdicts[erred]) == rules_of(verdicts[held])
    assert ("broken_check", "skipped") in [(c["name"], c["status"]) for c in verdicts[held]["checks"]]
    [judgement] = stored_judgements(server)
    assert (judgement["trace_id"], judgement["judge"], judgement["label"]) == (answered, JUDGE, "fail")
    assert (judgement["score"], judgement["source"]) == (0.3, "judge")
    assert "jane@example.com" not in judgement["explanation"]
    [judged] = [e for e in received if e.attributes["gen_ai.evaluation.name"] == f"otel_traj.judge.{JUDGE}"]
    [outcome] = [
        e
        for e in received
        if e.attributes["gen_ai.evaluation.name"] == "otel_traj.outcome" and e.trace_id == answered
    ]
    assert (judged.trace_id, judged.span_id) == (outcome.trace_id, outcome.span_id)
    assert judged.attributes["otel_traj.evaluation.source"] == "judge"
    assert judged.attributes["gen_ai.evaluation.score.label"] == "fail"


def test_a_reload_changes_the_judges_of_the_runs_graded_after_it(
    judged: Callable[..., Served], tmp_path: Path
) -> None:
    policy = policy_file(tmp_path)
    with judge_server() as llm:
        server = judged(llm, "--policy", str(policy))
        send_run(server)
        wait_for(lambda: judge_results(server, "pass") == 1, what="the first judge's result")

        policy_file(tmp_path, judge="second_judge")
        server.signal(signal.SIGHUP)
        wait_for(lambda: server.metric("otel_traj_policy_reloads_total") == 1, what="the reload")
        send_run(server)
        wait_for(lambda: judge_results(server, "pass", "second_judge") == 1, what="the new judge's result")
        assert judge_results(server, "pass") == 1

        policy.write_text("version: 1\ndefaults:\n  budget: {max_tool_calls: 8}\n")
        server.signal(signal.SIGHUP)
        wait_for(lambda: server.metric("otel_traj_policy_reloads_total") == 2, what="the second reload")
        last = send_run(server)
        server.wait_verdicts({last})
        assert server.stop() == 0
    # The policy without judges judged nothing more.
    assert len(llm.requests) == 2
    assert sorted(j["judge"] for j in stored_judgements(server)) == [JUDGE, "second_judge"]


def test_judges_added_by_a_reload_wait_for_a_restart(judged: Callable[..., Served], tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text("version: 1\ndefaults:\n  budget: {max_tool_calls: 8}\n")
    with judge_server() as llm:
        server = judged(llm, "--policy", str(policy))
        policy_file(tmp_path)
        server.signal(signal.SIGHUP)
        wait_for(lambda: server.metric("otel_traj_policy_reloads_total") == 1, what="the reload")
        server.wait_verdicts({send_run(server)})
        assert server.stop() == 0
    assert llm.requests == []
    assert "restart the service for them to run" in server.log.read_text()


def test_judges_without_an_api_key_stop_startup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    ports = ("--grpc-port", "0", "--http-port", "0", "--metrics-port", "0")
    done = cli("serve", "--policy", str(policy_file(tmp_path)), "--store", "", *ports)
    assert done.returncode == 2
    assert "OPENAI_API_KEY" in done.stderr
