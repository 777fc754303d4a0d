"""Throughput of ``otel-traj serve``: spans per second into graded, stored verdicts, against the same
payloads only decoded, in the same run; and memory under a flood of distinct traces.

The service runs in this process with the example policy, a SQLite store and the Prometheus sink,
under the garbage-collector settings ``otel-traj serve`` applies to its process (``tune_gc``).
"Decode only" is the same service with admission replaced by a no-op: transport, decompression and
protobuf decoding to SpanViews are paid, classification, assembly, grading and storage are not. A
client process (so the client does not share the server's GIL) sends real framework traces
(``tests/fixtures/real``), each copy under a fresh trace id, 16 traces per request, over 4 connections.
The clock runs from the first request to the last reply (decode only) or to the last verdict committed
to the store (graded); the client interpreter's start and exit are outside it. 4,800 traces per run
(68,569 spans) measure the steady state. Target: graded throughput >= 50% of decode-only. Also
printed: microseconds per span of each stage in-process (the sinks' share measured again on their
own, and the store's file size per run), grading per run one by one and a tick's worth at a time,
and RSS under a flood of distinct traces.

    python benchmarks/receiver.py [--traces N] [--flood-rounds R]
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
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from pathlib import Path
from typing import Any

import grpc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from otel_traj.adapters.batch import SpanBatch
from otel_traj.config import AssemblerConfig
from otel_traj.grader import Grader
from otel_traj.policy import load_policy
from otel_traj.serve import Accepted, Ingest, ServeSettings, Service
from otel_traj.serve.codec import decode_protobuf
from otel_traj.serve.service import tune_gc
from otel_traj.sinks.prometheus import PrometheusSink
from otel_traj.sinks.store import connect, write_verdicts
from otel_traj.verdict import Verdict

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "real"
POLICY = ROOT / "examples" / "policies" / "support_agent.yaml"
EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
TRACES_PER_REQUEST = 16
CONNECTIONS = 4
STORE_BATCH = 500  # SqliteSink's default batch size
GRADE_BATCH = 35  # the runs a worker's tick grades at this benchmark's rate


class DecodeOnly(Ingest):
    """Admits nothing into the pipeline: the baseline pays transport and decoding only."""

    def accept(self, batch: SpanBatch) -> Accepted:
        return Accepted(spans=len(batch), rejected=batch.malformed)


def payloads(traces: int, offset: int) -> tuple[list[bytes], int]:
    """Requests of ``TRACES_PER_REQUEST`` fixture traces each, every copy under a new trace id."""
    sources = [
        ExportTraceServiceRequest.FromString(p.read_bytes())
        for p in sorted(FIXTURES.glob("*/*.otlp.pb"))
        if "langgraph_traceloop" not in str(p)  # 100+ KB of flattened prompts per run: an outlier
    ]
    requests: list[bytes] = []
    spans = 0
    current = ExportTraceServiceRequest()
    for i in range(traces):
        copy = ExportTraceServiceRequest()
        copy.CopyFrom(sources[i % len(sources)])
        trace_id = (offset + i + 1).to_bytes(16, "big")
        for rs in copy.resource_spans:
            for ss in rs.scope_spans:
                for span in ss.spans:
                    span.trace_id = trace_id
                    spans += 1
        current.resource_spans.extend(copy.resource_spans)
        if (i + 1) % TRACES_PER_REQUEST == 0:
            requests.append(current.SerializeToString())
            current = ExportTraceServiceRequest()
    if current.resource_spans:
        requests.append(current.SerializeToString())
    return requests, spans


# -- client (separate process) -------------------------------------------------------------------------


def _send_grpc(target: str, bodies: Sequence[bytes]) -> None:
    with grpc.insecure_channel(target) as channel:
        export = channel.unary_unary(
            EXPORT, request_serializer=None, response_deserializer=ExportTraceServiceResponse.FromString
        )
        for body in bodies:
            export(body, timeout=60)


def _send_http(port: int, bodies: Sequence[bytes]) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    headers = {"Content-Type": "application/x-protobuf"}
    for body in bodies:
        conn.request("POST", "/v1/traces", body, headers)
        reply = conn.getresponse()
        reply.read()
        if reply.status != 200:
            raise RuntimeError(f"HTTP {reply.status}")
    conn.close()


def client(transport: str, address: str, bodies: list[bytes], ready: Any, go: Any, last_reply: Any) -> None:
    """Sends ``bodies`` over ``CONNECTIONS`` connections; ``last_reply`` gets the time (``perf_counter``,
    the same clock in both processes) of the last reply, before this interpreter's own shutdown."""
    shares = [bodies[i::CONNECTIONS] for i in range(CONNECTIONS)]
    ready.set()
    go.wait()
    with ThreadPoolExecutor(CONNECTIONS) as pool:
        if transport == "grpc":
            futures = [pool.submit(_send_grpc, address, share) for share in shares]
        else:
            futures = [pool.submit(_send_http, int(address), share) for share in shares]
        for future in futures:
            future.result()
    last_reply.value = time.perf_counter()


# -- server side ---------------------------------------------------------------------------------------


class Counter:
    def __init__(self) -> None:
        self.count = 0
        self.done = threading.Event()
        self.target = 0

    def __call__(self, verdict: Verdict) -> None:
        self.count += 1
        if self.count >= self.target:
            self.done.set()


def start_service(
    store: Path, decode_only: bool, max_traces: int = 100_000, grace_s: float = 0.0
) -> tuple[Service, Counter]:
    settings = ServeSettings(
        host="127.0.0.1",
        grpc_port=0,
        http_port=0,
        metrics_port=0,
        policy=str(POLICY),
        store=str(store),
        auth_token=None,
        assembler=AssemblerConfig(grace_s=grace_s, ttl_s=600.0, max_traces=max_traces),
    )
    service = Service(settings)
    if decode_only:
        service.ingest = DecodeOnly(service.pipeline)
    counter = Counter()
    service.pipeline.add_callback(counter)
    return service, counter


def spawn_client(transport: str, address: str, bodies: list[bytes]) -> tuple[Any, Any, Any]:
    """A client process, started and waiting for ``go`` (its interpreter start and shutdown are not
    measured); returns the process, ``go`` and the shared value of its last reply's time."""
    ctx = multiprocessing.get_context("spawn")
    ready, go, last_reply = ctx.Event(), ctx.Event(), ctx.Value("d", 0.0)
    proc = ctx.Process(target=client, args=(transport, address, bodies, ready, go, last_reply))
    proc.start()
    if not ready.wait(60):
        raise RuntimeError("client did not start")
    return proc, go, last_reply


def run_once(transport: str, decode_only: bool, bodies: list[bytes], traces: int) -> float:
    """Seconds from the first request to the last verdict committed (decode only: the last reply)."""
    with tempfile.TemporaryDirectory() as tmp:
        service, counter = start_service(Path(tmp) / "verdicts.db", decode_only)
        counter.target = traces
        ports = service.start()
        address = f"127.0.0.1:{ports.grpc}" if transport == "grpc" else str(ports.http)
        proc, go, last_reply = spawn_client(transport, address, bodies)
        gc.collect()
        started = time.perf_counter()
        go.set()
        finished = 0.0
        if not decode_only:
            if not counter.done.wait(120):
                raise RuntimeError(f"only {counter.count} of {traces} verdicts")
            assert service.store is not None
            service.store.force_flush()
            finished = time.perf_counter()
        proc.join()
        if proc.exitcode != 0:
            raise RuntimeError("client failed")
        service.stop()
        return max(finished, last_reply.value) - started


def rss_mib() -> float:
    with open(f"/proc/{os.getpid()}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def flood(rounds: int, traces: int) -> list[float]:
    """RSS after each round of ``traces`` new distinct traces through one long-running service."""
    with tempfile.TemporaryDirectory() as tmp:
        service, counter = start_service(Path(tmp) / "verdicts.db", decode_only=False, max_traces=2_000)
        ports = service.start()
        samples = []
        for r in range(rounds):
            bodies, _ = payloads(traces, offset=(r + 1) * 10_000_000)
            counter.target = counter.count + traces
            counter.done.clear()
            proc, go, _ = spawn_client("grpc", f"127.0.0.1:{ports.grpc}", bodies)
            go.set()
            proc.join()
            if not counter.done.wait(120):
                raise RuntimeError("flood round did not finish")
            assert service.store is not None
            service.store.force_flush()
            gc.collect()
            samples.append(rss_mib())
        service.stop()
        return samples


def stages(bodies: list[bytes], spans: int, traces: int) -> dict[str, float]:
    """Microseconds per span of each stage, in-process without the network, the worker held back so
    that stages do not overlap: where the difference between the two throughputs goes."""
    with tempfile.TemporaryDirectory() as tmp:
        # A grace period longer than the run keeps the worker idle until the explicit flush.
        service, counter = start_service(Path(tmp) / "verdicts.db", decode_only=False, grace_s=3600.0)
        counter.target = traces
        verdicts: list[Verdict] = []
        service.pipeline.add_callback(verdicts.append)
        assert service.store is not None
        gc.collect()
        t0 = time.perf_counter()
        batches = [decode_protobuf(body) for body in bodies]
        t1 = time.perf_counter()
        for batch in batches:
            service.ingest.accept(batch)
        t2 = time.perf_counter()
        service.pipeline.process(flush=True)
        t3 = time.perf_counter()
        service.store.force_flush()
        t4 = time.perf_counter()
        service.stop()
    if counter.count != traces:
        raise RuntimeError(f"{counter.count} of {traces} verdicts")
    per_span = 1e6 / spans
    return {
        "decode": round((t1 - t0) * per_span, 1),
        "classify_and_assemble": round((t2 - t1) * per_span, 1),
        "build_grade_and_sinks": round((t3 - t2) * per_span, 1),
        "store_commit": round((t4 - t3) * per_span, 1),
        **sink_costs(verdicts, spans),
        **grading_costs(verdicts),
    }


def grading_costs(verdicts: list[Verdict]) -> dict[str, float]:
    """Microseconds per run of grading the same runs again: one by one, and a tick's worth at a time
    as the worker does (``Grader.grade_all``, check by check)."""
    grader = Grader(load_policy(POLICY))
    runs = [v.trajectory for v in verdicts]
    t0 = time.perf_counter()
    for run in runs:
        grader.grade(run)
    t1 = time.perf_counter()
    for i in range(0, len(runs), GRADE_BATCH):
        grader.grade_all(runs[i : i + GRADE_BATCH])
    t2 = time.perf_counter()
    return {
        "grade_us_per_run_one_by_one": round((t1 - t0) * 1e6 / len(runs), 1),
        f"grade_us_per_run_{GRADE_BATCH}_at_a_time": round((t2 - t1) * 1e6 / len(runs), 1),
    }


def sink_costs(verdicts: list[Verdict], spans: int) -> dict[str, float]:
    """The sinks once more on their own over the same verdicts. The store writes on its own thread
    while the worker grades, so the stages above cannot separate its share of the interpreter."""
    prometheus = PrometheusSink()
    t0 = time.perf_counter()
    for verdict in verdicts:
        prometheus.export(verdict)
    t1 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp, closing(connect(Path(tmp) / "alone.db")) as conn:
        t2 = time.perf_counter()
        for i in range(0, len(verdicts), STORE_BATCH):
            write_verdicts(conn, verdicts[i : i + STORE_BATCH])
        t3 = time.perf_counter()
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        size = (Path(tmp) / "alone.db").stat().st_size
    per_span = 1e6 / spans
    return {
        "of_which_prometheus_export": round((t1 - t0) * per_span, 1),
        "of_which_store_serialize_and_write": round((t3 - t2) * per_span, 1),
        "store_bytes_per_run": round(size / len(verdicts)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--traces", type=int, default=4_800)
    parser.add_argument("--rounds", type=int, default=5, help="alternating measurement rounds (median)")
    parser.add_argument("--flood-rounds", type=int, default=5)
    args = parser.parse_args()
    bodies, spans = payloads(args.traces, offset=0)
    tune_gc()
    result: dict[str, Any] = {
        "traces": args.traces,
        "spans": spans,
        "requests": len(bodies),
    }
    for transport in ("grpc", "http"):
        graded: list[float] = []
        decoded: list[float] = []
        for _ in range(args.rounds):
            decoded.append(run_once(transport, True, bodies, args.traces))
            graded.append(run_once(transport, False, bodies, args.traces))
        decode_rate = spans / sorted(decoded)[len(decoded) // 2]
        graded_rate = spans / sorted(graded)[len(graded) // 2]
        result[transport] = {
            "decode_only_spans_per_s": round(decode_rate),
            "graded_spans_per_s": round(graded_rate),
            "ratio": round(graded_rate / decode_rate, 3),
            # Each round's graded / decode-only ratio: the spread a single figure hides.
            "round_ratios": [round(d / g, 3) for d, g in zip(decoded, graded, strict=True)],
        }
    result["in_process_us_per_span"] = stages(bodies, spans, args.traces)
    samples = flood(args.flood_rounds, args.traces)
    result["flood_rss_mib"] = [round(s, 1) for s in samples]
    result["flood_growth_after_first_round_mib"] = round(samples[-1] - samples[0], 1)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
