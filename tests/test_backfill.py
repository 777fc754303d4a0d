"""otel-traj backfill --from langfuse against the test Langfuse server: runs recorded by real
frameworks, stored as Langfuse's OpenTelemetry ingestion stores them, backfilled into the same
verdicts as grading their OTLP files (given back by a server that keeps no span attributes: the same
verdicts, or runs that say they were not fully read); pages, rate limits, 5xx, an interrupted run
resumed with ``--since last``, and a second backfill that adds no score."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from otel_traj.backfill.fidelity import ATTRIBUTES_NOT_KEPT
from otel_traj.backfill.http import PoliteClient
from otel_traj.backfill.langfuse import LangfuseReader, TraceFilter
from otel_traj.backfill.run import read_langfuse_runs
from otel_traj.cli import main
from otel_traj.offline import grade_runs, offline_config, read_runs
from otel_traj.policy import load_policy
from otel_traj.sinks.store_cursors import read_cursor
from otel_traj.verdict import Verdict
from tests.langfuse_events import event_observations_from_otlp
from tests.langfuse_reads import observations_from_otlp
from tests.langfuse_server import LangfuseTestServer
from tests.real_frameworks import recorded_traces
from tests.support_trajectories import EXAMPLE_POLICY

REAL = Path(__file__).parent / "fixtures" / "real"
FILES = recorded_traces("otlp.json")
# Runs Langfuse cannot give back whole, whose backfilled run says it was not fully read (not
# complete, the reason in its errors) instead of passing silently: parallel tool calls that started
# in the same millisecond with no requesting turn to order them (Langfuse keeps times to the
# millisecond, and BeeAI's model observations keep no response); what a framework records in span
# events only, which Langfuse does not keep (LlamaIndex's own integration: its model calls; Strands
# with the latest conventions: its model messages in ``gen_ai.client.inference.operation.details``).
# Every other run backfills to the very verdict grading its OTLP file gives.
NOT_FULLY_READ = {
    "beeai_openinference/clean", "llamaindex_otel/clean", "llamaindex_otel/violating", "strands_latest/clean",
    "strands_latest/violating",
}  # fmt: skip
# Given back by a server that writes observations to its events table (no span attributes, only the typed
# fields; tests/langfuse_events.py), the 122 recorded runs: 4 backfill to grade's verdict (the Langfuse
# SDK's own spans, whose typed fields are all it wrote), 118 are not fully read (112 whose runs are marked
# so; 6 traces in which no GenAI observation is recognized, skipped with that reason: Genkit's, Haystack's
# and LlamaIndex's own integrations), none differs. Read from the typed fields alone, without saying so, of
# the 119 before the memory recordings 53 would equal grade's verdict, 3 be not fully read for other reasons
# and 63 differ or go missing silently (tool names from span names, failures not recorded as a level,
# requested calls and token kinds only in attributes; runs of one framework on both sides): nothing the
# events table gives back names the instrumentation, so no other span's typed fields are trusted.
EQUAL_WITHOUT_ATTRIBUTES = {
    "langfuse_sdk/clean", "langfuse_sdk/violating", "langgraph_langfuse/clean",
    "langgraph_langfuse/violating",
}  # fmt: skip
POLICY = load_policy(EXAMPLE_POLICY)


def _name(path: Path) -> str:
    return str(path.relative_to(REAL)).removesuffix(".otlp.json")


def _key(verdict: Verdict) -> tuple[Any, ...]:
    run = verdict.trajectory
    return (
        run.trace_hex,
        verdict.outcome,
        round(verdict.score, 6),
        [(c.name, c.status) for c in verdict.checks],
        [(t.name, t.arguments, t.ok) for t in run.tool_calls],
        len(run.model_calls),
        run.tokens.total,
        run.complete,
    )


def _stored(server: LangfuseTestServer, *paths: Path, events_table: bool = False) -> None:
    """Stores each file's spans as Langfuse's ingestion does, or as its events table gives them back."""
    stored = event_observations_from_otlp if events_table else observations_from_otlp
    for path in paths:
        server.reads.add(stored(json.loads(path.read_text())))


def _reader(server: LangfuseTestServer, page_size: int = 100, **client: Any) -> LangfuseReader:
    auth = httpx.BasicAuth(server.public_key, server.secret_key)
    settings: dict[str, Any] = {"auth": auth, "rps": 1000.0, **client}
    return LangfuseReader(PoliteClient(server.url, **settings), page_size=page_size)


@pytest.mark.parametrize("path", FILES, ids=_name)
def test_backfilled_runs_equal_the_same_runs_graded_from_otlp(path: Path) -> None:
    expected = grade_runs(read_runs([path], policy=POLICY).trajectories, policy=POLICY).verdicts
    with LangfuseTestServer().running() as server:
        _stored(server, path)
        read = read_langfuse_runs(_reader(server), TraceFilter(), limit=None, config=offline_config(POLICY))
    assert read.failure is None and read.listed >= len(expected)
    backfilled = grade_runs(read.runs, policy=POLICY).verdicts
    if _name(path) in NOT_FULLY_READ:
        assert len(backfilled) == len(expected) and read.incomplete == len(backfilled)
        for verdict in backfilled:
            assert not verdict.trajectory.complete and verdict.outcome != "pass"
            assert any(e.startswith("not fully read from Langfuse: ") for e in verdict.trajectory.errors)
        return
    assert [_key(v) for v in backfilled] == [_key(v) for v in expected]


@pytest.mark.parametrize("path", FILES, ids=_name)
def test_runs_without_span_attributes_equal_grades_verdict_or_say_they_are_not_fully_read(path: Path) -> None:
    expected = grade_runs(read_runs([path], policy=POLICY).trajectories, policy=POLICY).verdicts
    with LangfuseTestServer().running() as server:
        _stored(server, path, events_table=True)
        read = read_langfuse_runs(_reader(server), TraceFilter(), limit=None, config=offline_config(POLICY))
    assert read.failure is None
    backfilled = grade_runs(read.runs, policy=POLICY).verdicts
    if _name(path) in EQUAL_WITHOUT_ATTRIBUTES:
        assert [_key(v) for v in backfilled] == [_key(v) for v in expected]
        return
    if not backfilled:
        assert read.skipped == {ATTRIBUTES_NOT_KEPT: len({v.trajectory.trace_hex for v in expected})}
        return
    assert read.incomplete == len(backfilled)
    for verdict in backfilled:
        assert not verdict.trajectory.complete and verdict.outcome != "pass"
        (error,) = [e for e in verdict.trajectory.errors if e.startswith("not fully read from Langfuse: ")]
        assert ATTRIBUTES_NOT_KEPT in error


def test_traces_are_listed_over_several_pages_and_each_read_once() -> None:
    paths = [REAL / "openai_v2" / "clean.otlp.json", REAL / "openai_v2" / "violating.otlp.json"]
    paths.append(REAL / "langfuse_sdk" / "clean.otlp.json")
    with LangfuseTestServer().running() as server:
        _stored(server, *paths)
        reader = _reader(server, page_size=2)
        refs = reader.traces(TraceFilter())
        observations = reader.observations(refs[0].trace_id)
        listing = [q for q in server.reads.queries if "traceId" not in q]
    assert len(refs) == 3 and [r.start_ns for r in refs] == sorted(r.start_ns for r in refs)
    # Three root observations two a page: two pages, the second asked for with the first's cursor.
    assert len(listing) == 2 and "cursor" not in listing[0] and listing[1]["cursor"]
    assert len(observations) > 2 and {o["traceId"] for o in observations} == {refs[0].trace_id}


def test_a_429_is_waited_out_for_its_retry_after_and_a_5xx_retried() -> None:
    slept: list[float] = []
    with LangfuseTestServer().running() as server:
        _stored(server, REAL / "openai_v2" / "clean.otlp.json")
        server.reads.faults.answers = [(429, {"Retry-After": "7"}), (503, {})]
        reader = _reader(server, sleep=slept.append, backoff_initial=0.01, backoff_max=0.02)
        refs = reader.traces(TraceFilter())
    assert len(refs) == 1
    counts = reader.client.counts
    assert (counts.requests, counts.retries, counts.throttled) == (3, 2, 1)
    waits = [s for s in slept if s > 0.001]
    assert waits[0] >= 7.0 and waits[1] <= 0.02


def _backfill(server: LangfuseTestServer, monkeypatch: pytest.MonkeyPatch, *args: str) -> int:
    monkeypatch.setenv("LANGFUSE_PUBLIC_KEY", server.public_key)
    monkeypatch.setenv("LANGFUSE_SECRET_KEY", server.secret_key)
    monkeypatch.setenv("LANGFUSE_BASE_URL", server.url)
    monkeypatch.delenv("LANGFUSE_HOST", raising=False)
    return main(["backfill", "--from", "langfuse", "--policy", str(EXAMPLE_POLICY), "--rps", "1000", *args])


def test_backfill_writes_the_scores_once_and_exits_as_grade_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = [REAL / "openai_v2" / "clean.otlp.json", REAL / "openai_v2" / "violating.otlp.json"]
    graded = main(["grade", "--policy", str(EXAMPLE_POLICY), "--format", "json", *map(str, paths)])
    expected = json.loads(capsys.readouterr().out)
    with LangfuseTestServer().running() as server:
        _stored(server, *paths)
        assert _backfill(server, monkeypatch, "--format", "json") == graded == 1
        first = dict(server.scores)
        out, err = capsys.readouterr()
        assert _backfill(server, monkeypatch, "--format", "json") == 1
        capsys.readouterr()
        assert server.score_writes == 2 * len(first)
        # The second backfill wrote every score again under the same ids: no score was added.
        assert server.scores.keys() == first.keys()
    backfilled = json.loads(out)
    assert [(v["trace_id"], v["outcome"]) for v in backfilled["trajectories"]] == [
        (v["trace_id"], v["outcome"]) for v in expected["trajectories"]
    ]
    assert {s["traceId"] for s in first.values()} == {v["trace_id"] for v in expected["trajectories"]}
    assert "2 traces listed, 2 read, 2 runs graded (0 not fully read), skipped: none" in err
    assert f"langfuse: {len(first)} scores delivered" in err


def test_dry_run_grades_and_writes_no_score(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with LangfuseTestServer().running() as server:
        _stored(server, REAL / "openai_v2" / "violating.otlp.json")
        assert _backfill(server, monkeypatch, "--dry-run") == 1
        assert not server.scores and not server.posts("/api/public/scores")
    out, err = capsys.readouterr()
    assert "unsafe" in out and "langfuse:" not in err


def test_an_interrupted_backfill_resumes_with_since_last(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    store = str(tmp_path / "verdicts.db")
    clean, violating = REAL / "openai_v2" / "clean.otlp.json", REAL / "openai_v2" / "violating.otlp.json"
    with LangfuseTestServer().running() as server:
        _stored(server, clean, violating)
        refs = _reader(server).traces(TraceFilter())
        server.reads.faults.failing_traces = {refs[1].trace_id}
        server.reads.faults.failing_status = 403
        assert _backfill(server, monkeypatch, "--since", "last", "--store", store) == 2
        err = capsys.readouterr().err
        assert {s["traceId"] for s in server.scores.values()} == {refs[0].trace_id}
        project = f"{server.url} {server.public_key}"
        assert read_cursor(store, "langfuse", project) == refs[1].start_ns
        server.reads.faults.failing_traces = set()
        assert _backfill(server, monkeypatch, "--since", "last", "--store", store) == 1
        resumed = capsys.readouterr().err
        assert {s["traceId"] for s in server.scores.values()} == {r.trace_id for r in refs}
    assert f"reading stopped: trace {refs[1].trace_id}" in err
    assert "1 traces listed, 1 read" in resumed
    assert read_cursor(store, "langfuse", project) == refs[1].start_ns
