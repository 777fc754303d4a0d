"""Conversation verdicts as Langfuse session scores: the conversation runs (real SDK spans) exported to
the Langfuse-compatible server over OTLP while ``TrajectoryProcessor`` grades them, and every score
body validated there with the ``langfuse`` package's own models, in each wire form."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from otel_traj import TrajectoryProcessor
from otel_traj.cli import main
from otel_traj.conversations import ConversationVerdict
from otel_traj.sinks.langfuse import LangfuseSink
from otel_traj.sinks.langfuse_sessions import OUTCOME_NAME, session_score_id
from tests.conversation_runs import POLICY, emit_all, redacting_policy, write_otlp
from tests.langfuse_helpers import fast_sink
from tests.langfuse_server import LangfuseTestServer, Version


def grade_conversations(server: LangfuseTestServer, sink: LangfuseSink) -> list[ConversationVerdict]:
    """The runs through an instrumented provider: spans to the server over OTLP, verdicts to ``sink``."""
    policy = redacting_policy()
    got: list[ConversationVerdict] = []
    processor = TrajectoryProcessor(policy=policy, sinks=[sink], on_conversation=got.append)
    provider = TracerProvider()
    provider.add_span_processor(processor)
    exporter = OTLPSpanExporter(
        endpoint=f"{server.url}/api/public/otel/v1/traces", headers={"Authorization": server.auth_header}
    )
    provider.add_span_processor(BatchSpanProcessor(exporter))
    emit_all(provider)
    assert provider.force_flush(10_000)  # grades the open conversations and flushes the sink
    provider.shutdown()
    return got


def session_scores(server: LangfuseTestServer, session: str) -> dict[str, dict[str, Any]]:
    with server.lock:
        return {s["name"]: s for s in server.scores.values() if s.get("sessionId") == session}


@pytest.mark.parametrize("version", ["v5", "v4-single", "v3"])
def test_each_conversation_check_and_its_outcome_become_scores_on_its_session(version: Version) -> None:
    with LangfuseTestServer(version=version).running() as server:
        sink = fast_sink(server, redact=redacting_policy().is_sensitive)
        verdicts = grade_conversations(server, sink)
        report = sink.report()
    assert report.ok and report.rejected == 0, report.summary()
    assert sorted(v.conversation_id for v in verdicts) == ["conv-clean", "conv-switch"]
    switch = session_scores(server, "conv-switch")
    assert sorted(switch) == [
        "traj.conversation_budget",
        OUTCOME_NAME,
        "traj.conversation_repeats",
        "traj.conversation_scope",
    ]
    assert all("traceId" not in s and "observationId" not in s for s in switch.values())
    outcome = switch[OUTCOME_NAME]
    assert (outcome["dataType"], outcome["value"]) == ("CATEGORICAL", "unsafe")
    assert outcome["comment"].startswith("unsafe: 2 of 3 checks failed over 3 traces")
    verdict = next(v for v in verdicts if v.conversation_id == "conv-switch")
    assert outcome["metadata"]["trace_ids"] == verdict.trace_ids
    assert outcome["metadata"]["score"] == round(verdict.score, 4)
    # As a run's scores do: the versions that produced the conversation and what it cost.
    assert verdict.total_cost_usd is not None and verdict.versions.models == ("gpt-4o-mini",)
    for score in switch.values():
        assert score["metadata"]["versions"] == verdict.versions.to_dict()
        assert score["metadata"]["total_cost_usd"] == pytest.approx(verdict.total_cost_usd)
    scope = switch["traj.conversation_scope"]
    assert (scope["dataType"], scope["value"], scope["metadata"]["severity"]) == ("BOOLEAN", 0, "critical")
    assert scope["id"] == session_score_id("conv-switch", "traj.conversation_scope")
    # The reason names the trace and step; the policy's sensitive values never leave the process.
    assert f"trace {verdict.trace_ids[2]}" in scope["comment"]
    assert "customer_id=[REDACTED]" in scope["comment"] and "C077" not in scope["comment"]
    assert switch["traj.conversation_budget"]["value"] == 1
    clean = session_scores(server, "conv-clean")
    assert clean[OUTCOME_NAME]["value"] == "pass" and clean["traj.conversation_scope"]["value"] == 1
    # The runs' own scores are still on their traces, and the traces reached the server.
    traces = {t for v in verdicts for t in v.trace_ids}
    assert {t for t, _ in server.span_ids()} == traces
    with server.lock:
        assert {s["traceId"] for s in server.scores.values() if "traceId" in s} == traces


def test_a_conversation_graded_again_overwrites_its_session_scores() -> None:
    with LangfuseTestServer().running() as server:
        first = fast_sink(server)
        grade_conversations(server, first)
        second = fast_sink(server)
        grade_conversations(server, second)
        assert first.report().delivered == second.report().delivered > 0
    with server.lock:
        sessions = [s for s in server.scores.values() if "sessionId" in s]
    assert len(sessions) == 8  # 4 per conversation, each written twice under the same id
    assert server.score_writes > len(server.scores)


def test_session_scores_are_retried_through_an_outage_and_counted_when_the_queue_overflows() -> None:
    with LangfuseTestServer().running() as server:
        server.faults.fail_times, server.faults.fail_status = 3, 503
        sink = fast_sink(server)
        grade_conversations(server, sink)
        assert sink.report().ok and len(session_scores(server, "conv-switch")) == 4

        small = fast_sink(server, max_queue=2, flush_interval=60.0)
        small.export_conversation(next(iter(grade_conversations(server, fast_sink(server)))))
        small.shutdown(10_000)
    dropped = small.stats.snapshot().dropped
    assert dropped == {"langfuse_queue_full": 2}
    assert small.report().delivered == 2 and small.report().dropped == 2


def test_grade_langfuse_sends_the_conversations_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_otlp(tmp_path / "conversations.otlp.pb")
    with LangfuseTestServer().running() as server:
        monkeypatch.setenv("LANGFUSE_PUBLIC_KEY", server.public_key)
        monkeypatch.setenv("LANGFUSE_SECRET_KEY", server.secret_key)
        monkeypatch.setenv("LANGFUSE_BASE_URL", server.url)
        assert main(["grade", str(path), "--policy", str(POLICY), "--langfuse"]) == 1
        err = capsys.readouterr().err
        switch = session_scores(server, "conv-switch")
    assert "0 rejected, 0 dropped, 0 pending" in err
    assert switch[OUTCOME_NAME]["value"] == "unsafe" and switch["traj.conversation_scope"]["value"] == 0
    assert len(session_scores(server, "conv-clean")) == 4
