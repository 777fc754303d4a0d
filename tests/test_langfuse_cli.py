"""``otel-traj grade --policy ... --langfuse``: offline verdicts land on the traces the agent exported."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from otel_traj.cli import main
from tests.langfuse_helpers import POLICY, Agent, fast_sink, violating_run
from tests.langfuse_server import LangfuseTestServer
from tests.semconv_agent import emit


def test_grade_langfuse_scores_the_exported_trace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with LangfuseTestServer().running() as server:
        sink = fast_sink(server)
        agent = Agent(server, sink)
        trace = f"{emit(agent.tracer, violating_run('C099')):032x}"
        agent.flush()
        agent.provider.shutdown()
        sink.shutdown()
        live = {s["id"]: s for s in server.scores_for(trace)}
        for i, body in enumerate(server.otlp_bodies):
            (tmp_path / f"export-{i}.otlp.pb").write_bytes(body)
        policy_file = tmp_path / "policy.json"
        policy_file.write_text(json.dumps(POLICY))
        monkeypatch.setenv("LANGFUSE_PUBLIC_KEY", server.public_key)
        monkeypatch.setenv("LANGFUSE_SECRET_KEY", server.secret_key)
        monkeypatch.setenv("LANGFUSE_BASE_URL", server.url)
        writes = server.score_writes

        code = main(["grade", str(tmp_path), "--policy", str(policy_file), "--langfuse", "--format", "json"])

        assert code == 1  # the run is unsafe
        err = capsys.readouterr().err
        assert "langfuse: 6 scores delivered, 0 rejected, 0 dropped, 0 pending" in err
        assert server.score_writes == writes + 6
        offline = {s["id"]: s for s in server.scores_for(trace)}
        assert offline.keys() == live.keys()  # same ids: the live scores were overwritten, not doubled
        assert {k: (s["name"], s["value"], s["timestamp"]) for k, s in offline.items()} == {
            k: (s["name"], s["value"], s["timestamp"]) for k, s in live.items()
        }
        assert all("C099" not in str(s.get("comment")) for s in offline.values())


def test_grade_langfuse_without_keys_is_a_configuration_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("LANGFUSE_PUBLIC_KEY", raising=False)
    monkeypatch.delenv("LANGFUSE_SECRET_KEY", raising=False)
    fixture = Path(__file__).parent / "fixtures" / "real" / "pydantic_ai" / "clean.otlp.pb"
    assert main(["grade", str(fixture), "--langfuse"]) == 2
    assert "LANGFUSE_PUBLIC_KEY" in capsys.readouterr().err


def test_offline_delivery_is_configured_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fixture = Path(__file__).parent / "fixtures" / "real" / "pydantic_ai" / "clean.otlp.pb"
    with LangfuseTestServer().running() as server:
        monkeypatch.setenv("LANGFUSE_PUBLIC_KEY", server.public_key)
        monkeypatch.setenv("LANGFUSE_SECRET_KEY", server.secret_key)
        monkeypatch.delenv("LANGFUSE_BASE_URL", raising=False)
        monkeypatch.setenv("LANGFUSE_HOST", server.url)
        monkeypatch.setenv("LANGFUSE_TRACING_ENVIRONMENT", "staging")
        assert main(["grade", str(fixture), "--langfuse", "--format", "json"]) == 0
        scores = list(server.scores.values())
    # Without a policy: the score and the outcome of the one run.
    assert len(scores) == 2
    assert "langfuse: 2 scores delivered, 0 rejected, 0 dropped, 0 pending" in capsys.readouterr().err
    assert {s["environment"] for s in scores} == {"staging"}
