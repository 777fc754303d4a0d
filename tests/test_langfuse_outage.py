"""A Langfuse outage longer than the retry window loses no score by itself: scores stay queued and
delivery goes on at the capped backoff; only the queue's cap and the maximum age drop them, counted
exactly. Against the test server (every body validated with the ``langfuse`` package's models)."""

from __future__ import annotations

import logging
import threading

import pytest

from otel_traj import env
from otel_traj.sinks.langfuse import (
    DROP_EXPIRED,
    DROP_QUEUE_FULL,
    MAX_RETRY_AFTER_S,
    LangfuseSink,
)
from tests.langfuse_helpers import SCORES, SCORES_PER_VERDICT, fast_sink, make_verdict
from tests.langfuse_server import LangfuseTestServer

WAIT_S = 20.0


class FakeClock:
    """The sink's clock for score ages: moves only when the test says so."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _failures(server: LangfuseTestServer) -> int:
    return sum(r.status == 503 for r in server.posts(SCORES))


def _set_failing(server: LangfuseTestServer, times: int) -> None:
    with server.lock:
        server.faults.fail_status = 503
        server.faults.fail_times = times


def test_an_outage_longer_than_max_retries_loses_nothing() -> None:
    """503 for four times the attempts ``max_retries`` allows one batch, then the server recovers:
    every score arrives and nothing is counted as dropped."""
    with LangfuseTestServer().running() as server:
        _set_failing(server, 12)
        sink = fast_sink(server, max_retries=2)
        for i in range(10):
            sink.export(make_verdict(0x3000 + i))
        assert sink.force_flush(int(WAIT_S * 1000))
        report = sink.report()
        assert (report.delivered, report.dropped, report.rejected, report.pending) == (
            10 * SCORES_PER_VERDICT,
            0,
            0,
            0,
        )
        assert len(server.scores) == 10 * SCORES_PER_VERDICT
        assert _failures(server) == 12 > sink.max_retries + 1
        assert sink.stats.snapshot().dropped == {}
        sink.shutdown()


def test_during_an_outage_only_the_queue_cap_drops_the_oldest() -> None:
    """A batch put back after ``max_retries`` counts against the cap like any queued score."""
    with LangfuseTestServer().running() as server:
        gate = threading.Event()
        with server.lock:
            server.faults.gate = gate  # no answer before every verdict is queued
        _set_failing(server, 10**9)
        sink = fast_sink(server, max_retries=1, batch_size=5, max_queue=10)
        for i in range(12):
            sink.export(make_verdict(0x4000 + i))
        gate.set()
        # Two failed attempts put the batch back; a third request shows it was taken again.
        assert server.wait_for_requests(SCORES, 3, WAIT_S)
        assert sink.report().pending == 10
        _set_failing(server, 0)
        assert sink.force_flush(int(WAIT_S * 1000))
        report = sink.report()
        assert (report.delivered, report.dropped, report.pending) == (10, 12 * SCORES_PER_VERDICT - 10, 0)
        assert sink.stats.snapshot().dropped == {DROP_QUEUE_FULL: 12 * SCORES_PER_VERDICT - 10}
        assert len(server.scores) == 10
        sink.shutdown()


def test_scores_older_than_max_age_are_dropped_and_counted_exactly() -> None:
    clock = FakeClock()
    with LangfuseTestServer().running() as server:
        _set_failing(server, 10**9)
        sink = fast_sink(server, max_retries=1, max_age_s=60.0, clock=clock)
        old = [make_verdict(0x5000 + i) for i in range(4)]
        for verdict in old:
            sink.export(verdict)
        assert server.wait_for_requests(SCORES, 3, WAIT_S)  # failed, put back, taken again
        clock.now += 61.0
        new = [make_verdict(0x6000 + i) for i in range(2)]
        for verdict in new:
            sink.export(verdict)
        # The request after next was sent after the clock moved: the old scores had expired by then.
        seen = len(server.posts(SCORES))
        assert server.wait_for_requests(SCORES, seen + 2, WAIT_S)
        assert sink.stats.snapshot().dropped == {DROP_EXPIRED: 4 * SCORES_PER_VERDICT}
        _set_failing(server, 0)
        assert sink.force_flush(int(WAIT_S * 1000))
        report = sink.report()
        assert (report.delivered, report.dropped, report.pending) == (
            2 * SCORES_PER_VERDICT,
            4 * SCORES_PER_VERDICT,
            0,
        )
        assert sink.stats.snapshot().dropped == {DROP_EXPIRED: 4 * SCORES_PER_VERDICT}
        assert {s["traceId"] for s in server.scores.values()} == {v.trajectory.trace_hex for v in new}
        sink.shutdown()


def test_backoff_stays_capped_however_long_the_outage() -> None:
    with LangfuseTestServer().running() as server:
        sink = fast_sink(server, backoff_max=0.01)
        assert 0 < sink._backoff(100_000, None) <= 0.01
        assert sink._backoff(100_000, 10**9) == MAX_RETRY_AFTER_S
        sink.shutdown()


def test_max_age_setting(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    with LangfuseTestServer().running() as server:
        sinks = [fast_sink(server)]
        assert sinks[0].max_age_s == env.LANGFUSE_MAX_AGE_S.default == 3600.0
        monkeypatch.setenv("OTEL_TRAJ_LANGFUSE_MAX_AGE_S", "90")
        sinks.append(fast_sink(server))
        assert sinks[-1].max_age_s == 90.0
        sinks.append(fast_sink(server, max_age_s=5.0))
        assert sinks[-1].max_age_s == 5.0
        monkeypatch.setenv("OTEL_TRAJ_LANGFUSE_MAX_AGE_S", "soon")
        with caplog.at_level(logging.WARNING, logger="otel_traj"):
            sinks.append(fast_sink(server))
        assert sinks[-1].max_age_s == env.LANGFUSE_MAX_AGE_S.default
        assert "OTEL_TRAJ_LANGFUSE_MAX_AGE_S='soon'" in caplog.text
        with pytest.raises(ValueError, match="max_age_s=0"):
            LangfuseSink(public_key="pk", secret_key="sk", base_url=server.url, max_age_s=0)
        for sink in sinks:
            sink.shutdown()
