"""An instrumented agent exports its spans to the Langfuse-compatible server with the real
``OTLPSpanExporter`` while ``TrajectoryProcessor`` grades the runs and ``LangfuseSink`` writes scores:
the scores must reference exactly the traces and spans the server received."""

from __future__ import annotations

import statistics
import threading
import time

import httpx
from opentelemetry.instrumentation.httpx import HTTPXClientInstrumentor
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import set_span_in_context

from otel_traj.adapters.otlp_proto import views_from_bytes
from otel_traj.offline import grade_views
from tests.langfuse_helpers import (
    SCORES,
    SCORES_PER_VERDICT,
    Agent,
    fast_sink,
    make_verdict,
    policy,
    violating_run,
)
from tests.langfuse_server import LangfuseTestServer
from tests.semconv_agent import emit


def test_scores_reference_the_exported_traces_and_spans() -> None:
    with LangfuseTestServer().running() as server:
        sink = fast_sink(server, redact=policy().is_sensitive)
        agent = Agent(server, sink)
        trace_ids = {f"{emit(agent.tracer, violating_run(f'C09{i}')):032x}" for i in range(3)}
        agent.flush()
        assert sink.force_flush(10_000)

        received = server.span_ids()
        assert {t for t, _ in received} == trace_ids
        scores = list(server.scores.values())
        assert {s["traceId"] for s in scores} == trace_ids
        on_spans = [s for s in scores if "observationId" in s]
        assert on_spans and all((s["traceId"], s["observationId"]) in received for s in on_spans)
        names = {(s.trace_id, s.span_id): s.name for s in server.spans}
        for s in on_spans:
            expected = (
                "execute_tool delete_account" if s["name"] == "traj.tools" else "execute_tool list_invoices"
            )
            assert names[(s["traceId"], s["observationId"])] == expected
        for trace in trace_ids:
            keys = sorted((s["name"], "observationId" in s) for s in server.scores_for(trace))
            assert keys == [
                ("traj.outcome", False),
                ("traj.scope", False),
                ("traj.scope", True),
                ("traj.score", False),
                ("traj.tools", False),
                ("traj.tools", True),
            ]
        scope_comments = {s["comment"] for s in scores if s["name"] == "traj.scope"}
        assert scope_comments == {"list_invoices used customer_id=[REDACTED], subject is C023"}
        assert {s["metadata"]["policy_version"] for s in scores} == {f"3@{agent.pol.content_hash}"}
        agent.provider.shutdown()
        sink.shutdown()


def test_regrading_the_same_trace_leaves_one_score_per_name() -> None:
    """The live processor scores a run; grading the spans the server received again (what
    ``otel-traj grade --langfuse`` does) overwrites those scores instead of adding new ones."""
    with LangfuseTestServer().running() as server:
        sink = fast_sink(server)
        agent = Agent(server, sink)
        trace = f"{emit(agent.tracer, violating_run('C099')):032x}"
        agent.flush()
        assert sink.force_flush(10_000)
        live = {
            s["id"]: (s["name"], s.get("observationId"), s["timestamp"]) for s in server.scores_for(trace)
        }
        assert len(live) == 6

        for _ in range(2):
            views = [v for body in server.otlp_bodies for v in views_from_bytes(body)]
            offline = fast_sink(server)
            grade_views(views, policy=policy(), sinks=[offline], timeout_millis=10_000)
            report = offline.report()
            assert report.ok and report.delivered == 6

        stored = server.scores_for(trace)
        assert {s["id"]: (s["name"], s.get("observationId"), s["timestamp"]) for s in stored} == live
        assert server.score_writes == 3 * 6
        agent.provider.shutdown()
        sink.shutdown()


def _end_latencies(agent: Agent, runs: int) -> list[float]:
    """``span.end()`` durations (µs) of the agent's root and tool spans."""
    tracer = agent.tracer
    samples: list[float] = []
    for i in range(runs):
        root = tracer.start_span(
            "invoke_agent support_agent",
            attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "support_agent"},
        )
        ctx = set_span_in_context(root)
        tool = tracer.start_span(
            "execute_tool delete_account",
            context=ctx,
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "delete_account",
                "gen_ai.tool.call.arguments": f'{{"customer_id": "C{i}"}}',
            },
        )
        for span in (tool, root):
            started = time.perf_counter_ns()
            span.end()
            samples.append((time.perf_counter_ns() - started) / 1000)
    return samples


def test_slow_server_does_not_slow_span_end() -> None:
    """The agent's ``span.end()`` latency with a responsive server and with one that does not answer
    while the spans end: unchanged, because grading and delivery happen on background threads."""
    results: dict[str, tuple[float, float, float]] = {}
    for label in ("fast", "slow"):
        with LangfuseTestServer().running() as server:
            gate = threading.Event()
            if label == "slow":
                server.faults.gate = gate
            sink = fast_sink(server, batch_size=500, max_queue=50_000, flush_interval=0.02)
            agent = Agent(server, sink, export_spans=False)
            _end_latencies(agent, 100)  # warm-up; its verdicts start the first delivery
            if label == "slow":
                assert server.wait_for_held(1, timeout=10)  # the delivery thread waits on the server
            samples = sorted(_end_latencies(agent, 600))
            if label == "slow":
                assert server.held >= 1 and not server.scores  # still unanswered after the last span
            gate.set()
            agent.flush()
            assert sink.report().delivered == len(server.scores) > 0
            results[label] = (statistics.median(samples), samples[int(len(samples) * 0.99)], samples[-1])
            sink.shutdown()
            agent.provider.shutdown()
    # The latencies are printed, not asserted (this machine's timing is not the test): what shows that
    # span.end() never waits on the network is that all 600 runs ended while the server held the
    # delivery unanswered.
    print(f"span.end() µs (median, p99, max): fast={results['fast']} slow={results['slow']}")


def test_the_hosts_httpx_instrumentation_does_not_trace_score_delivery() -> None:
    """An application that instruments httpx traces its own requests, not the sink's: those would be
    noise in its traces (and, exported to Langfuse, spans about delivering scores)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor = HTTPXClientInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        with LangfuseTestServer().running() as server:
            sink = fast_sink(server)  # made after instrument(): its client is an instrumented one
            sink.export(make_verdict(0xB000))
            assert sink.force_flush(5000)
            sink.shutdown()
            assert len(server.scores) == SCORES_PER_VERDICT and server.posts(SCORES)
            # The application's own request, on the same instrumented httpx, is traced.
            httpx.get(server.url + SCORES, headers={"Authorization": server.auth_header})
    finally:
        instrumentor.uninstrument()
    methods = [
        span.attributes.get("http.request.method", span.attributes.get("http.method"))
        for span in exporter.get_finished_spans()
        if span.attributes is not None
    ]
    assert methods == ["GET"]
