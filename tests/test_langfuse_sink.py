"""LangfuseSink against the Langfuse-compatible test server: wire format, idempotence, faults."""

from __future__ import annotations

import logging
import threading
from dataclasses import replace

import pytest

from otel_traj.offline import grade_runs
from otel_traj.sinks.langfuse import (
    DROP_QUEUE_FULL,
    DROP_REJECTED,
    DROP_SHUTDOWN,
    DeliveryReport,
    LangfuseSink,
)
from otel_traj.sinks.langfuse_scores import score_id
from tests.langfuse_helpers import SCORES, SCORES_PER_VERDICT, SECRET, fast_sink, make_verdict
from tests.langfuse_server import LangfuseTestServer, free_port


@pytest.fixture
def server():
    with LangfuseTestServer().running() as srv:
        yield srv


def test_scores_land_on_trace_and_offending_observation(server: LangfuseTestServer) -> None:
    sink = fast_sink(server)
    sink.export(make_verdict(0xABC))
    assert sink.force_flush(5000)
    trace = f"{0xABC:032x}"
    scores = server.scores_for(trace)
    by_key = {(s["name"], s.get("observationId")): s for s in scores}
    assert set(by_key) == {
        ("traj.tools", None),
        ("traj.tools", f"{0x22:016x}"),
        ("traj.order", None),
        ("traj.score", None),
        ("traj.outcome", None),
    }
    assert (
        by_key[("traj.tools", None)]["value"] == 0 and by_key[("traj.tools", None)]["dataType"] == "BOOLEAN"
    )
    assert by_key[("traj.order", None)]["value"] == 1
    assert by_key[("traj.score", None)]["dataType"] == "NUMERIC"
    assert by_key[("traj.score", None)]["value"] == 0.5
    outcome = by_key[("traj.outcome", None)]
    assert (outcome["dataType"], outcome["value"]) == ("CATEGORICAL", "unsafe")
    assert outcome["metadata"]["skipped_checks"] == ["arguments"]
    for s in scores:
        assert s["environment"] == "test"
        assert s["timestamp"].startswith("2026-01-01T00:00:00")
        assert {k: s["metadata"][k] for k in ("policy_version", "agent", "service_version")} == {
            "policy_version": "3@abc",
            "agent": "support_agent",
            "service_version": "2.1.0",
        }
        assert s["id"] == score_id(trace, s.get("observationId"), s["name"])
    assert by_key[("traj.tools", None)]["comment"] == "delete_account is denied"
    assert sink.report() == DeliveryReport(delivered=SCORES_PER_VERDICT, form="scores")
    sink.shutdown()


def test_flush_interval_delivers_a_partial_batch_without_flush(server: LangfuseTestServer) -> None:
    sink = fast_sink(server, batch_size=1000, flush_interval=0.05)
    sink.export(make_verdict(0xAB0))
    assert server.wait_for_scores(SCORES_PER_VERDICT, timeout=5)
    sink.shutdown()
    held = fast_sink(server, batch_size=1000, flush_interval=3600)
    held.export(make_verdict(0xAB1))
    # Sent at once, the scores would be stored well within this wait; held, they are not.
    assert not server.wait_for_scores(2 * SCORES_PER_VERDICT, timeout=0.2)
    assert held.force_flush(5000) and len(server.scores) == 2 * SCORES_PER_VERDICT
    held.shutdown()


def test_comments_never_carry_sensitive_values(server: LangfuseTestServer) -> None:
    sink = fast_sink(server)
    sink.export(make_verdict(0xABD))
    assert sink.force_flush(5000)
    stored = server.scores_for(f"{0xABD:032x}")
    text = " ".join(str(s.get("comment")) + str(s.get("metadata")) for s in stored)
    assert SECRET not in text and "bob@example.com" not in text
    assert "api_key=[REDACTED], mail [REDACTED]" in text
    sink.shutdown()


def test_regrading_overwrites_one_score_per_name(server: LangfuseTestServer) -> None:
    sink = fast_sink(server)
    sink.export(make_verdict(0xABE))
    assert sink.force_flush(5000)
    regraded = make_verdict(0xABE)
    regraded = replace(regraded, score=0.25, graded_at_ns=regraded.graded_at_ns + 60_000_000_000)
    sink.export(regraded)
    assert sink.force_flush(5000)
    scores = server.scores_for(f"{0xABE:032x}")
    keys = [(s["name"], s.get("observationId")) for s in scores]
    assert len(keys) == len(set(keys)) == SCORES_PER_VERDICT
    assert server.score_writes == 2 * SCORES_PER_VERDICT
    assert next(s for s in scores if s["name"] == "traj.score")["value"] == 0.25
    sink.shutdown()


def test_server_down_at_start_then_up_loses_nothing() -> None:
    port = free_port()
    down = LangfuseTestServer(port=port)
    sink = fast_sink(down, max_retries=100_000, batch_size=7)
    stats = sink.stats
    for i in range(20):
        sink.export(make_verdict(0x1000 + i))
    assert not sink.force_flush(200)
    assert sink.report().pending == 20 * SCORES_PER_VERDICT
    with LangfuseTestServer(port=port).running() as up:
        assert sink.force_flush(10_000)
        assert len(up.scores) == 20 * SCORES_PER_VERDICT
    report = sink.report()
    assert (report.delivered, report.dropped, report.rejected) == (20 * SCORES_PER_VERDICT, 0, 0)
    assert stats.snapshot().dropped == {}
    sink.shutdown()


def test_queue_cap_drops_oldest_and_counts_them() -> None:
    port = free_port()
    sink = fast_sink(LangfuseTestServer(port=port), max_retries=100_000, batch_size=5, max_queue=10)
    stats = sink.stats
    total = 12 * SCORES_PER_VERDICT
    for i in range(12):
        sink.export(make_verdict(0x2000 + i))
    with LangfuseTestServer(port=port).running() as up:
        assert sink.force_flush(10_000)
        report = sink.report()
        snapshot = stats.snapshot()
        assert report.delivered + report.dropped == total
        # At most one batch was already in flight when the queue overflowed.
        assert total - 10 - 5 <= report.dropped <= total - 10
        assert snapshot.dropped == {DROP_QUEUE_FULL: report.dropped}
        assert snapshot.sink_errors == {"langfuse": report.dropped}
        assert len(up.scores) == report.delivered
        # The newest verdict survives whole.
        assert len(up.scores_for(f"{0x2000 + 11:032x}")) == SCORES_PER_VERDICT
    sink.shutdown()


@pytest.mark.parametrize("status", [500, 503, 429])
def test_transient_failures_are_retried(server: LangfuseTestServer, status: int) -> None:
    server.faults.fail_times, server.faults.fail_status = 3, status
    sink = fast_sink(server)
    sink.export(make_verdict(0x3000))
    assert sink.force_flush(5000)
    assert [r.status for r in server.posts(SCORES)] == [status, status, status, 202]
    assert len(server.scores) == SCORES_PER_VERDICT
    assert sink.report().dropped == 0
    sink.shutdown()


def test_retry_after_is_honoured_and_shutdown_ends_the_wait(server: LangfuseTestServer) -> None:
    server.faults.fail_times, server.faults.fail_status, server.faults.retry_after = 1, 429, "3600"
    sink = fast_sink(server)
    sink.export(make_verdict(0x3100))
    assert server.wait_for_requests(SCORES, 1, timeout=5)
    # Backoff alone would retry within 10 ms; the server asked for an hour (capped at five minutes).
    assert not sink.force_flush(200)
    assert len(server.posts(SCORES)) == 1 and sink.report().pending == SCORES_PER_VERDICT
    sink.shutdown(timeout_millis=0)
    assert sink.stats.snapshot().dropped == {DROP_SHUTDOWN: SCORES_PER_VERDICT}
    assert len(server.posts(SCORES)) == 1


def test_permanent_400_is_dropped_counted_and_logged_once(
    server: LangfuseTestServer, caplog: pytest.LogCaptureFixture
) -> None:
    server.faults.reject_status, server.faults.reject_message = 400, "score config mismatch"
    sink = fast_sink(server, api_mode="scores")
    stats = sink.stats
    caplog.set_level(logging.WARNING, logger="otel_traj.sinks.langfuse")
    sink.export(make_verdict(0x4000))
    assert sink.force_flush(5000)
    sink.export(make_verdict(0x4001))
    assert sink.force_flush(5000)
    assert len(server.posts(SCORES)) == 2  # one attempt per batch, never retried
    report = sink.report()
    assert (report.delivered, report.rejected) == (0, 2 * SCORES_PER_VERDICT)
    assert report.errors == ("HTTP 400: score config mismatch",)
    assert stats.snapshot().dropped == {DROP_REJECTED: 2 * SCORES_PER_VERDICT}
    assert stats.snapshot().sink_errors == {"langfuse": 2 * SCORES_PER_VERDICT}
    assert [r.getMessage() for r in caplog.records].count(
        "Langfuse rejected scores (not retried): HTTP 400: score config mismatch"
    ) == 1
    sink.shutdown()


def test_wrong_credentials_are_permanent(server: LangfuseTestServer) -> None:
    sink = fast_sink(server, secret_key="sk-wrong", api_mode="scores")
    sink.export(make_verdict(0x4100))
    assert sink.force_flush(5000)
    assert sink.report().rejected == SCORES_PER_VERDICT
    assert [r.status for r in server.requests] == [401]
    sink.shutdown()


def test_207_retries_only_transient_rejections(server: LangfuseTestServer) -> None:
    server.faults.partial = {"traj.outcome": [503, 1], "traj.tools": [400, -1]}
    sink = fast_sink(server)
    sink.export(make_verdict(0x5000))
    assert sink.force_flush(5000)
    posts = server.posts(SCORES)
    assert [(r.status, r.scores) for r in posts] == [(207, 2), (202, 1)]
    names = sorted(s["name"] for s in server.scores.values())
    assert names == ["traj.order", "traj.outcome", "traj.score"]
    report = sink.report()
    assert (report.delivered, report.rejected, report.dropped) == (3, 2, 0)
    sink.shutdown()


@pytest.mark.parametrize(
    ("version", "form", "path"),
    [("v4-single", "single", SCORES), ("v3", "ingestion", "/api/public/ingestion")],
)
def test_older_servers_are_detected_once(version: str, form: str, path: str) -> None:
    with LangfuseTestServer(version=version).running() as server:  # type: ignore[arg-type]
        sink = fast_sink(server)
        sink.export(make_verdict(0x6000))
        assert sink.force_flush(5000)
        assert sink.report().form == form
        before = len(server.requests)
        sink.export(make_verdict(0x6001))
        assert sink.force_flush(5000)
        later = server.requests[before:]
        assert {r.path for r in later} == {path}
        assert all(200 <= r.status < 300 for r in later)
        assert len(server.scores) == 2 * SCORES_PER_VERDICT
        assert len(server.scores_for(f"{0x6001:032x}")) == SCORES_PER_VERDICT
        sink.shutdown()


def test_v3_ingestion_partial_errors_retry_transient_only() -> None:
    with LangfuseTestServer(version="v3").running() as server:
        server.faults.partial = {"traj.score": [500, 1], "traj.order": [400, -1]}
        sink = fast_sink(server, api_mode="ingestion")
        sink.export(make_verdict(0x6100))
        assert sink.force_flush(5000)
        assert sorted(s["name"] for s in server.scores.values()) == [
            "traj.outcome",
            "traj.score",
            "traj.tools",
            "traj.tools",
        ]
        assert sink.report().rejected == 1
        sink.shutdown()


# Far below the sink's request timeout in the tests below, so a shutdown that waited for the server
# would still be running when the join gives up.
JOIN_MARGIN_S = 3.0


def shutdown_in_thread(sink: LangfuseSink, timeout_millis: int) -> threading.Thread:
    """Run ``sink.shutdown`` on a thread joined a little past its deadline: alive means it overran."""
    thread = threading.Thread(target=sink.shutdown, kwargs={"timeout_millis": timeout_millis})
    thread.start()
    thread.join(timeout=timeout_millis / 1000 + JOIN_MARGIN_S)
    return thread


def test_shutdown_flushes_pending_within_timeout(server: LangfuseTestServer) -> None:
    server.faults.delay = 0.05
    sink = fast_sink(server, batch_size=5, flush_interval=60)
    for i in range(6):
        sink.export(make_verdict(0x7000 + i))
    assert not shutdown_in_thread(sink, 5000).is_alive()
    assert len(server.scores) == 6 * SCORES_PER_VERDICT
    assert sink.report().delivered == 6 * SCORES_PER_VERDICT


def test_shutdown_returns_by_its_deadline_from_a_server_that_never_answers(
    server: LangfuseTestServer,
) -> None:
    gate = threading.Event()
    server.faults.gate = gate
    sink = fast_sink(server, batch_size=SCORES_PER_VERDICT, timeout=60.0)
    try:
        for i in range(3):
            sink.export(make_verdict(0x7100 + i))
        assert server.wait_for_held(1, timeout=5)  # one batch in flight, two queued behind it
        assert not sink.force_flush(100)  # force_flush too returns by its deadline
        assert not shutdown_in_thread(sink, 300).is_alive()
    finally:
        gate.set()
    report = sink.report()
    assert (report.delivered, report.dropped, report.pending) == (0, 3 * SCORES_PER_VERDICT, 0)
    assert sink.stats.snapshot().dropped == {DROP_SHUTDOWN: 3 * SCORES_PER_VERDICT}
    assert sink.stats.snapshot().sink_errors == {"langfuse": 3 * SCORES_PER_VERDICT}


def test_shutdown_gives_up_retrying_at_the_timeout_and_counts() -> None:
    sink = fast_sink(LangfuseTestServer(port=free_port()), max_retries=100_000, timeout=60.0)
    for i in range(4):
        sink.export(make_verdict(0x7200 + i))
    assert not shutdown_in_thread(sink, 200).is_alive()
    report = sink.report()
    assert (report.delivered, report.dropped, report.pending) == (0, 4 * SCORES_PER_VERDICT, 0)
    assert sink.stats.snapshot().dropped == {DROP_SHUTDOWN: 4 * SCORES_PER_VERDICT}


def test_after_shutdown_export_retains_nothing(server: LangfuseTestServer) -> None:
    sink = fast_sink(server)
    sink.shutdown()
    sink.export(make_verdict(0x7300))
    assert sink.report().pending == 0 and sink.force_flush(0)
    assert sink.stats.snapshot().dropped == {DROP_SHUTDOWN: SCORES_PER_VERDICT}
    sink.shutdown()  # a second call returns at once
    assert not server.requests


def test_offline_delivery_waits_for_room_in_a_short_queue(server: LangfuseTestServer) -> None:
    sink = fast_sink(server, max_queue=8)
    runs = [make_verdict(0x8000 + i).trajectory for i in range(10)]
    graded = grade_runs(runs, sinks=[sink], timeout_millis=10_000, batch_size=1)
    report = sink.report()
    assert [v.trajectory.trace_id for v in graded.verdicts] == [r.trace_id for r in runs]
    # Two scores a run (score and outcome): 20 through a queue of 8, none dropped.
    assert report.ok and report.delivered == len(server.scores) == 20
    assert sink.stats.snapshot().dropped == {}


def test_invalid_configuration_names_the_field(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LANGFUSE_PUBLIC_KEY", raising=False)
    with pytest.raises(ValueError, match="LANGFUSE_PUBLIC_KEY"):
        LangfuseSink(secret_key="s")
    with pytest.raises(ValueError, match="environment='Prod'"):
        LangfuseSink(public_key="p", secret_key="s", environment="Prod")
    with pytest.raises(ValueError, match="api_mode='v2'"):
        LangfuseSink(public_key="p", secret_key="s", api_mode="v2")  # type: ignore[arg-type]
