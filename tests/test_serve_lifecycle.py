"""``otel-traj serve`` lifecycle: SIGTERM drains and flushes, restarts keep verdicts, SIGHUP reloads the
policy, and a flood meets the OTLP retryable status without losing or double-counting a span."""

from __future__ import annotations

import gc
import json
import signal
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExportResult

from otel_traj.serve.service import GC_GEN0_THRESHOLD, tune_gc
from tests.semconv_agent import emit
from tests.serve_helpers import (
    FIXTURES,
    POLICY,
    STACK_DUMP,
    Served,
    provider,
    refund_for,
    trace_ids_of,
    wait_for,
)


def test_sigterm_grades_what_is_buffered_and_a_restart_keeps_it(
    served: Callable[..., Served], tmp_path: Path
) -> None:
    # A grace period far longer than the test: nothing is graded until the shutdown flushes.
    server = served("--policy", str(POLICY), "--grace", "600")
    sent: set[str] = set()
    for name in ("openai_v2/clean", "strands/violating"):
        data = (FIXTURES / f"{name}.otlp.pb").read_bytes()
        server.export_raw(data)
        sent |= trace_ids_of(data)
    assert server.verdicts() == {}
    assert server.stop() == 0
    stored = server.verdicts()
    assert set(stored) == sent
    assert all(v["complete"] for v in stored.values())
    assert {v["outcome"] for v in stored.values()} == {"pass", "unsafe"}

    again = served("--policy", str(POLICY), store=server.store)
    more = (FIXTURES / "pydantic_ai" / "clean.otlp.pb").read_bytes()
    again.export_raw(more)
    assert again.stop() == 0
    after = again.verdicts()
    assert set(after) == sent | trace_ids_of(more)
    assert {k: after[k] for k in sent} == stored


def test_sighup_reloads_the_policy_and_keeps_the_old_one_when_invalid(
    served: Callable[..., Served], tmp_path: Path
) -> None:
    policy = tmp_path / "policy.yaml"
    original = POLICY.read_text()
    policy.write_text(original)
    server = served("--policy", str(policy))

    def graded(name: str) -> dict[str, Any]:
        data = (FIXTURES / f"{name}.otlp.pb").read_bytes()
        server.export_raw(data)
        (trace_id,) = trace_ids_of(data)
        return server.wait_verdicts({trace_id})[trace_id]

    first = graded("openai_v2/clean")
    assert first["policy_version"].startswith("1@")

    policy.write_text("version: 2\ndefaults:\n  budget: {max_tool_calls: -1}\n")
    server.signal(signal.SIGHUP)
    wait_for(lambda: server.metric("otel_traj_policy_reload_errors_total") == 1, what="the failed reload")
    assert graded("openai_v2/violating")["policy_version"] == first["policy_version"]

    # Version 2 denies a tool the clean run calls: the reloaded policy must change the outcome.
    policy.write_text(
        original.replace("version: 1", "version: 2").replace(
            "deny: [delete_account]", "deny: [check_payment]"
        )
    )
    server.signal(signal.SIGHUP)
    wait_for(lambda: server.metric("otel_traj_policy_reloads_total") == 1, what="the reload")
    reloaded = graded("pydantic_ai/clean")
    assert reloaded["policy_version"].startswith("2@")
    assert reloaded["outcome"] == "unsafe"
    assert any(c["name"] == "tools" and c["status"] == "fail" for c in reloaded["checks"])
    assert server.proc.poll() is None
    assert server.stop() == 0


# -- backpressure --------------------------------------------------------------------------------------


def _runs(count: int, offset: int = 0) -> list[tuple[str, list[ReadableSpan]]]:
    """``count`` distinct agent runs, each as (trace id, its spans in export order: root last)."""
    tp, memory = provider("support-agent")
    tracer = tp.get_tracer("agent")
    runs = []
    for i in range(count):
        memory.clear()
        trace_id = emit(tracer, refund_for(f"C{offset + i:03d}"))
        runs.append((f"{trace_id:032x}", list(memory.get_finished_spans())))
    tp.shutdown()
    return runs


def _exporter(server: Served, transport: str) -> Any:
    if transport == "grpc":
        return GrpcExporter(endpoint=server.grpc_target, insecure=True, timeout=20)
    return HttpExporter(endpoint=server.http_url, timeout=20)


def test_refused_requests_succeed_on_retry_once_capacity_frees(served: Callable[..., Served]) -> None:
    server = served("--max-traces", "4", "--retry-after", "0.3")
    held = _runs(4)
    waiting = _runs(2, offset=100)
    # One exporter per thread, as the SDK's batch processor uses them: on UNAVAILABLE the gRPC exporter
    # closes and reopens its channel, which a call from another thread could meet closed.
    grpc_exporter = _exporter(server, "grpc")
    refused_grpc_exporter = _exporter(server, "grpc")
    http_exporter = _exporter(server, "http")
    # Four traces without their roots fill the receiver: they stay until their roots arrive.
    for _, spans in held:
        assert grpc_exporter.export(spans[:-1]) == SpanExportResult.SUCCESS

    results: dict[str, SpanExportResult] = {}

    def export(transport: str, exporter: Any, spans: Sequence[ReadableSpan]) -> None:
        results[transport] = exporter.export(spans)

    threads = [
        threading.Thread(target=export, args=("grpc", refused_grpc_exporter, waiting[0][1])),
        threading.Thread(target=export, args=("http", http_exporter, waiting[1][1])),
    ]
    for thread in threads:
        thread.start()
    for transport in ("grpc", "http"):
        wait_for(
            lambda t=transport: (
                server.metric("otel_traj_receiver_requests_total", transport=t, result="overloaded") >= 1
            ),
            what=f"a refused {transport} request",
        )
    # The roots belong to buffered traces, so they are admitted while new traces are refused.
    for _, spans in held:
        assert grpc_exporter.export(spans[-1:]) == SpanExportResult.SUCCESS
    for thread in threads:
        thread.join()
    assert results == {"grpc": SpanExportResult.SUCCESS, "http": SpanExportResult.SUCCESS}

    everything = held + waiting
    # Every export has returned, and the receiver counts spans before it answers.
    spans_seen = _spans_seen(server)
    assert server.stop() == 0
    stored = server.verdicts()
    assert set(stored) == {trace_id for trace_id, _ in everything}
    for trace_id, _ in everything:
        assert len(stored[trace_id]["tool_calls"]) == 4  # each span counted once despite the retries
    assert spans_seen == sum(len(spans) for _, spans in everything)


def _spans_seen(server: Served) -> float:
    accepted = server.metric("otel_traj_spans_total", result="accepted")
    return accepted + server.metric("otel_traj_spans_total", result="ignored")


def test_flood_loses_nothing_silently(served: Callable[..., Served]) -> None:
    # Long grace: every trace holds its slot for a while, so a flood of 24 traces through a
    # 3-trace receiver must be refused; exporters give up after their retries on some of them.
    server = served("--max-traces", "3", "--retry-after", "0.05", "--grace", "0.3")
    runs = _runs(24, offset=200)
    outcome: dict[str, SpanExportResult] = {}
    lock = threading.Lock()

    def worker(transport: str, share: list[tuple[str, list[ReadableSpan]]]) -> None:
        exporter = _exporter(server, transport)
        for trace_id, spans in share:
            result = exporter.export(spans)
            with lock:
                outcome[trace_id] = result
        exporter.shutdown()

    threads = [
        threading.Thread(target=worker, args=("grpc" if i % 2 else "http", runs[i::6])) for i in range(6)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    accepted = {t for t, r in outcome.items() if r == SpanExportResult.SUCCESS}
    failed = set(outcome) - accepted
    assert len(outcome) == 24
    refused = sum(
        server.metric("otel_traj_receiver_requests_total", transport=t, result="overloaded")
        for t in ("grpc", "http")
    )
    spans_seen = _spans_seen(server)
    assert server.stop() == 0
    stored = server.verdicts()
    assert refused > 0 and accepted
    # All or nothing: every accepted export is one complete trajectory, every failed one left nothing.
    assert set(stored) == accepted
    assert not failed & set(stored)
    assert all(len(v["tool_calls"]) == 4 and v["complete"] for v in stored.values())
    spans_per_run = {trace_id: len(spans) for trace_id, spans in runs}
    assert spans_seen == sum(spans_per_run[t] for t in accepted)


def test_tune_gc_freezes_startup_objects_and_raises_the_young_threshold() -> None:
    threshold = gc.get_threshold()
    try:
        tune_gc()
        assert gc.get_threshold() == (GC_GEN0_THRESHOLD, *threshold[1:])
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
        gc.set_threshold(*threshold)


def test_json_logs_are_one_object_per_line(served: Callable[..., Served]) -> None:
    server = served("--log-format", "json")
    assert server.stop() == 0
    records = [json.loads(line) for line in server.log.read_text().splitlines() if line.strip()]
    shutdown = {"logger": "otel_traj.serve", "level": "INFO", "message": "received SIGTERM, shutting down"}
    assert any(shutdown.items() <= record.items() for record in records), records
    for record in records:
        assert set(record) >= {"time", "level", "logger", "message"}
        assert record["time"].endswith("Z")


def test_sigusr1_dumps_every_thread_and_the_service_goes_on(served: Callable[..., Served]) -> None:
    server = served()
    server.signal(signal.SIGUSR1)
    # The process writes the dump thread by thread: wait until the grading worker's is in it.
    wait_for(
        lambda: STACK_DUMP in (dump := server.log.read_text()) and "otel_traj/pipeline.py" in dump,
        what="the grading worker's stack in the dump",
    )
    assert server.metric("otel_traj_traces_in_flight") == 0  # still serving
    assert server.stop() == 0
