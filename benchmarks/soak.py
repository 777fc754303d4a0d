"""Memory under a long flood of distinct traces, a share of them never finished: does RSS stay flat?

Two modes, each in a process of its own. ``inprocess``: a TracerProvider with a TrajectoryProcessor
(example policy) creates 3-span agent runs in bursts of 50 with a 5 ms pause, so the worker keeps up
(``--no-pause``: flat out; ``max_traces`` then evicts the oldest, graded ``incomplete``, counted).
``serve``: ``otel-traj serve`` in this process (SQLite store, Prometheus sink) receives the same runs
as OTLP/HTTP protobuf from a client process, 50 traces per request over 2 connections; a refused
request (503) is sent again 20 ms later. For ``--open-share`` of the traces (5%) the root never ends:
the run is graded ``incomplete`` after ``ttl_s``.

Every trace has new ids, its own session id and tool arguments. The caps are small so that they are
reached at once: ``max_traces`` 1,000, ``ttl_s`` 2 s, ``grace_s`` 0.05 s (complete runs in their grace
period do not fill ``max_traces``); every other size is its default. After a warm-up and after each
further 100,000 traces, the run waits until every trace has its verdict and prints this process's
RSS (``VmRSS``) and peak (``VmHWM``), then the growth per 100,000 traces after the warm-up (goal:
about 0, what a run holds is bounded by the caps, not by the traffic). It asserts nothing.

    python benchmarks/soak.py [--traces N] [--warmup N] [--open-share F] [--no-pause]
                              [--mode inprocess|serve|both]
"""

from __future__ import annotations

import argparse
import gc
import http.client
import json
import multiprocessing
import os
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from opentelemetry import trace
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, ArrayValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span as ProtoSpan
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import Tracer

from otel_traj.config import AssemblerConfig
from otel_traj.processor import TrajectoryProcessor
from otel_traj.serve import ServeSettings, Service
from otel_traj.serve.service import tune_gc
from otel_traj.verdict import Verdict

ROOT = Path(__file__).resolve().parent.parent
POLICY = ROOT / "examples" / "policies" / "support_agent.yaml"
CONFIG = AssemblerConfig(max_traces=1_000, ttl_s=2.0, grace_s=0.05)
STEP = 100_000  # traces between RSS samples
TRACES_PER_REQUEST = 50
CONNECTIONS = 2
RETRY_S = 0.02
BURST = 50  # in-process traces between pauses
PAUSE_S = 0.005


def status_mib(field: str) -> float:
    """A ``/proc/self/status`` memory field (``VmRSS``, ``VmHWM``) in MiB."""
    with open(f"/proc/{os.getpid()}/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return 0.0


def is_open(i: int, open_share: float) -> bool:
    """Whether trace ``i`` is one whose root never ends: spread evenly through the flood."""
    return int((i + 1) * open_share) != int(i * open_share)


class Counter:
    """Verdicts received, and how many were incomplete."""

    def __init__(self) -> None:
        self.count = 0
        self.incomplete = 0
        self._lock = threading.Lock()
        self.reached = threading.Condition(self._lock)

    def __call__(self, verdict: Verdict) -> None:
        with self._lock:
            self.count += 1
            if verdict.outcome == "incomplete":
                self.incomplete += 1
            self.reached.notify_all()

    def wait_for(self, target: int, timeout: float) -> None:
        with self._lock:
            if not self.reached.wait_for(lambda: self.count >= target, timeout):
                raise RuntimeError(f"only {self.count} of {target} verdicts after {timeout:.0f} s")


def agent_run(tracer: Tracer, i: int, root_ends: bool) -> None:
    """One agent run of 3 spans with values of its own; without ``root_ends`` the root stays open."""
    root = tracer.start_span(
        "invoke_agent support_agent",
        attributes={
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "support_agent",
            "session.id": f"session-{i}",
        },
    )
    with trace.use_span(root, end_on_exit=root_ends):
        with tracer.start_as_current_span(
            "chat gpt-4o-mini",
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.provider.name": "openai",
                "gen_ai.request.model": "gpt-4o-mini",
                "gen_ai.usage.input_tokens": 120,
                "gen_ai.usage.output_tokens": 12,
                "gen_ai.response.finish_reasons": ("tool_calls",),
            },
        ):
            pass
        if root_ends:
            with tracer.start_as_current_span(
                "execute_tool get_subscription",
                attributes={
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": "get_subscription",
                    "gen_ai.tool.call.id": f"call_{i}",
                    "gen_ai.tool.call.arguments": json.dumps({"customer_id": f"C{i:07d}"}),
                    "gen_ai.tool.call.result": json.dumps({"customer_id": f"C{i:07d}", "plan": "pro"}),
                },
            ):
                pass


def run_inprocess(
    warmup: int, total: int, open_share: float, report: Callable[[str, int], None], pause_s: float
) -> dict[str, Any]:
    counter = Counter()
    processor = TrajectoryProcessor(policy=POLICY, config=CONFIG, on_verdict=counter)
    provider = TracerProvider()
    provider.add_span_processor(processor)
    tracer = provider.get_tracer("soak")
    sent = 0
    for target in checkpoints(warmup, total):
        for i in range(sent, target):
            agent_run(tracer, i, root_ends=not is_open(i, open_share))
            if pause_s and i % BURST == BURST - 1:
                time.sleep(pause_s)
        sent = target
        processor.force_flush()
        counter.wait_for(sent, timeout=60 + 2 * CONFIG.ttl_s)
        report("inprocess", sent)
    stats = processor.stats.snapshot()
    provider.shutdown()
    return {"verdicts": counter.count, "incomplete": counter.incomplete, "dropped": stats.dropped}


def _kv(key: str, value: Any) -> KeyValue:
    if isinstance(value, bool | int):
        return KeyValue(key=key, value=AnyValue(int_value=value))
    if isinstance(value, tuple):
        items = [AnyValue(string_value=v) for v in value]
        return KeyValue(key=key, value=AnyValue(array_value=ArrayValue(values=items)))
    return KeyValue(key=key, value=AnyValue(string_value=value))


def _template(name: str, attributes: dict[str, Any]) -> ProtoSpan:
    span = ProtoSpan(name=name, kind=ProtoSpan.SPAN_KIND_INTERNAL)
    span.attributes.extend(_kv(k, v) for k, v in attributes.items())
    return span


ROOT_SPAN = _template(
    "invoke_agent support_agent",
    {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "support_agent", "session.id": ""},
)
CHAT_SPAN = _template(
    "chat gpt-4o-mini",
    {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.usage.input_tokens": 120,
        "gen_ai.usage.output_tokens": 12,
        "gen_ai.response.finish_reasons": ("tool_calls",),
    },
)
TOOL_SPAN = _template(
    "execute_tool get_subscription",
    {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "get_subscription",
        "gen_ai.tool.call.id": "",
        "gen_ai.tool.call.arguments": "",
        "gen_ai.tool.call.result": "",
    },
)


def request_body(first: int, count: int, open_share: float) -> bytes:
    """An OTLP/HTTP protobuf request holding traces ``first`` .. ``first + count - 1``."""
    request = ExportTraceServiceRequest()
    rs = request.resource_spans.add()
    rs.resource.attributes.append(_kv("service.name", "soak-agent"))
    spans = rs.scope_spans.add().spans
    now = time.time_ns()
    for i in range(first, first + count):
        trace_id = (i + 1).to_bytes(16, "big")
        root_id, chat_id, tool_id = ((i * 3 + k + 1).to_bytes(8, "big") for k in range(3))
        parts = [(CHAT_SPAN, chat_id, now + 1_000, now + 400_000)]
        if not is_open(i, open_share):
            parts += [
                (ROOT_SPAN, root_id, now, now + 900_000),
                (TOOL_SPAN, tool_id, now + 500_000, now + 800_000),
            ]
        for template, span_id, start, end in parts:
            span = spans.add()
            span.CopyFrom(template)
            span.trace_id, span.span_id = trace_id, span_id
            span.start_time_unix_nano, span.end_time_unix_nano = start, end
            if template is not ROOT_SPAN:
                span.parent_span_id = root_id
            if template is ROOT_SPAN:
                span.attributes[2].value.string_value = f"session-{i}"
            elif template is TOOL_SPAN:
                args = json.dumps({"customer_id": f"C{i:07d}"})
                span.attributes[2].value.string_value = f"call_{i}"
                span.attributes[3].value.string_value = args
                span.attributes[4].value.string_value = json.dumps(
                    {"customer_id": f"C{i:07d}", "plan": "pro"}
                )
    return request.SerializeToString()


def _send(port: int, first: int, end: int, open_share: float) -> int:
    """Sends traces ``first`` .. ``end - 1`` in requests; returns how many refusals it retried."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    headers = {"Content-Type": "application/x-protobuf"}
    refused = 0
    for start in range(first, end, TRACES_PER_REQUEST):
        body = request_body(start, min(TRACES_PER_REQUEST, end - start), open_share)
        while True:
            conn.request("POST", "/v1/traces", body, headers)
            reply = conn.getresponse()
            reply.read()
            if reply.status == 200:
                break
            if reply.status != 503:
                raise RuntimeError(f"HTTP {reply.status}")
            refused += 1
            time.sleep(RETRY_S)
    conn.close()
    return refused


def client(port: int, first: int, end: int, open_share: float, refused: Any) -> None:
    """Traces ``first`` .. ``end - 1`` over ``CONNECTIONS`` connections, requests interleaved."""
    step = TRACES_PER_REQUEST * CONNECTIONS
    with ThreadPoolExecutor(CONNECTIONS) as pool:
        futures = [
            pool.submit(_send_share, port, first + c * TRACES_PER_REQUEST, end, step, open_share)
            for c in range(CONNECTIONS)
        ]
        refused.value = sum(f.result() for f in futures)


def _send_share(port: int, first: int, end: int, step: int, open_share: float) -> int:
    refused = 0
    for start in range(first, end, step):
        refused += _send(port, start, min(start + TRACES_PER_REQUEST, end), open_share)
    return refused


def run_serve(
    warmup: int, total: int, open_share: float, report: Callable[[str, int], None], pause_s: float
) -> dict[str, Any]:
    for name in ("LANGFUSE_PUBLIC_KEY", "LANGFUSE_SECRET_KEY"):  # no Langfuse sink in this benchmark
        os.environ.pop(name, None)
    tune_gc()
    ctx = multiprocessing.get_context("spawn")
    refused = 0
    with tempfile.TemporaryDirectory() as tmp:
        settings = ServeSettings(
            host="127.0.0.1",
            grpc_port=0,
            http_port=0,
            metrics_port=0,
            policy=str(POLICY),
            store=str(Path(tmp) / "verdicts.db"),
            auth_token=None,
            assembler=CONFIG,
        )
        service = Service(settings)
        counter = Counter()
        service.pipeline.add_callback(counter)
        ports = service.start()
        sent = 0
        for target in checkpoints(warmup, total):
            value = ctx.Value("q", 0)
            proc = ctx.Process(target=client, args=(ports.http, sent, target, open_share, value))
            proc.start()
            proc.join()
            if proc.exitcode != 0:
                raise RuntimeError("client failed")
            refused += value.value
            sent = target
            counter.wait_for(sent, timeout=60 + 2 * CONFIG.ttl_s)
            report("serve", sent)
        stats = service.pipeline.stats.snapshot()
        service.stop()
    return {
        "verdicts": counter.count,
        "incomplete": counter.incomplete,
        "dropped": stats.dropped,
        "requests_refused_and_retried": refused,
    }


def checkpoints(warmup: int, total: int) -> list[int]:
    """Traces sent at each RSS sample: the warm-up, then every ``STEP`` more up to ``warmup + total``."""
    points = [warmup]
    while points[-1] < warmup + total:
        points.append(min(points[-1] + STEP, warmup + total))
    return points


def run_mode(mode: str, warmup: int, total: int, open_share: float, pause_s: float) -> dict[str, Any]:
    samples: list[tuple[int, float]] = []
    started = time.perf_counter()

    def report(label: str, sent: int) -> None:
        rss = status_mib("VmRSS")
        samples.append((sent, rss))
        print(
            f"  {label:<9} {sent:>9,} traces  RSS {rss:7.1f} MiB  peak {status_mib('VmHWM'):7.1f} MiB"
            f"  {time.perf_counter() - started:6.1f} s",
            flush=True,
        )

    run = run_inprocess if mode == "inprocess" else run_serve
    result = run(warmup, total, open_share, report, pause_s)
    (first, rss0), (last, rss1) = samples[0], samples[-1]
    growth = (rss1 - rss0) / (last - first) * STEP if last > first else 0.0
    return {
        "rss_mib": [round(rss, 1) for _, rss in samples],
        "growth_mib_per_100k_traces_after_warmup": round(growth, 1),
        "peak_rss_mib": round(status_mib("VmHWM"), 1),
        "seconds": round(time.perf_counter() - started, 1),
        **result,
    }


def child(mode: str, warmup: int, total: int, open_share: float, pause_s: float, out: Any) -> None:
    out.put(run_mode(mode, warmup, total, open_share, pause_s))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--traces", type=int, default=600_000, help="traces after the warm-up, per mode")
    parser.add_argument("--warmup", type=int, default=20_000)
    parser.add_argument("--open-share", type=float, default=0.05, help="share of roots that never end")
    parser.add_argument(
        "--no-pause",
        action="store_true",
        help="in-process: no pause between bursts (the worker falls behind)",
    )
    parser.add_argument("--mode", choices=("inprocess", "serve", "both"), default="both")
    args = parser.parse_args()
    modes = ("inprocess", "serve") if args.mode == "both" else (args.mode,)
    result: dict[str, Any] = {
        "caps": {"max_traces": CONFIG.max_traces, "ttl_s": CONFIG.ttl_s, "grace_s": CONFIG.grace_s},
        "open_share": args.open_share,
    }
    pause_s = 0.0 if args.no_pause else PAUSE_S
    if "inprocess" in modes:
        result["inprocess_pause_s_every_50_traces"] = pause_s
    ctx = multiprocessing.get_context("spawn")
    for mode in modes:
        # Each mode in a process of its own, so neither inherits the other's heap.
        print(f"{mode}:", flush=True)
        out = ctx.Queue()
        proc = ctx.Process(target=child, args=(mode, args.warmup, args.traces, args.open_share, pause_s, out))
        proc.start()
        result[mode] = out.get()
        proc.join()
    gc.collect()
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
