"""Preforking servers (gunicorn with --preload, uWSGI, Celery's prefork pool) set up tracing and then
fork their workers. In a worker the processor, the SQLite store and the Langfuse sink run again on
threads and connections of their own, grade only the worker's runs, and deliver them."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider

from otel_traj.config import AssemblerConfig
from otel_traj.processor import TrajectoryProcessor
from otel_traj.sinks.langfuse import LangfuseSink
from otel_traj.sinks.store import SqliteSink, connect, read_verdicts
from tests.langfuse_server import LangfuseTestServer
from tests.live_helpers import AGENT, POLICY, tool
from tests.semconv_agent import emit
from tests.serve_helpers import refund_for


@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded")
def test_a_forked_worker_grades_stores_and_delivers_its_own_runs(tmp_path: Path) -> None:
    with LangfuseTestServer().running() as langfuse:
        store = SqliteSink(path=tmp_path / "verdicts.db")
        scores = LangfuseSink(
            public_key=langfuse.public_key,
            secret_key=langfuse.secret_key,
            base_url=langfuse.url,
            flush_interval=0.01,
            timeout=5.0,
        )
        processor = TrajectoryProcessor(
            policy=POLICY, sinks=[store, scores], config=AssemblerConfig(grace_s=0.0)
        )
        provider = TracerProvider(resource=Resource.create({"service.name": "support_agent"}))
        provider.add_span_processor(processor)
        tracer = provider.get_tracer("test")
        # The parent forks with a run of its own in flight: the worker must leave it to the parent.
        parent_run = tracer.start_span("invoke_agent support_agent", attributes=AGENT)
        with trace.use_span(parent_run):
            tool(tracer, "get_subscription", "C023")
        processor.pipeline.process()

        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # the forked worker: report through the pipe, never return into pytest
            code = 1
            try:
                os.close(read_end)
                graded: list[str] = []
                processor.add_callback(lambda v: graded.append(v.trajectory.trace_hex))
                run = f"{emit(tracer, refund_for('C028')):032x}"
                processor.shutdown()  # grades what this process holds, drains its sinks
                os.write(write_end, json.dumps({"run": run, "graded": graded}).encode())
                code = 0
            finally:
                os._exit(code)
        os.close(write_end)
        _, status = os.waitpid(pid, 0)
        with os.fdopen(read_end) as pipe:
            child = json.loads(pipe.read() or "{}")
        assert os.waitstatus_to_exitcode(status) == 0
        assert child["graded"] == [child["run"]]

        parent_run.end()
        assert processor.force_flush(10_000)
        parent_hex = f"{parent_run.get_span_context().trace_id:032x}"
        provider.shutdown()
        stored = {v["trace_id"]: v for v in read_verdicts(connect(tmp_path / "verdicts.db", readonly=True))}
        assert set(stored) == {child["run"], parent_hex}
        assert stored[child["run"]]["outcome"] == "unsafe"  # C028's run read C023's data
        assert stored[parent_hex]["complete"] is True
        assert {s["name"] for s in langfuse.scores_for(child["run"])} >= {"traj.scope", "traj.outcome"}
        assert {s["name"] for s in langfuse.scores_for(parent_hex)} >= {"traj.outcome"}
