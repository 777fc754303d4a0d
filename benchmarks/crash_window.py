"""What a ``kill -9`` of ``otel-traj serve`` loses: runs whose spans were acknowledged (HTTP 200) but
whose verdicts were not yet committed to the store.

Each round starts ``otel-traj serve`` as a subprocess (example policy, a fresh store, the given grace
period), floods it over OTLP/HTTP with distinct complete runs (the real framework recordings in
``tests/fixtures/real``, each copy under a new trace id, 16 runs per request, over 4 connections),
kills it with SIGKILL after ``--kill-after`` seconds of flood, then reads the store
(``connect``/``read_verdicts``) and counts the acknowledged runs that are not in it. A sampler reads
``otel_traj_traces_in_flight`` from ``/metrics`` while the flood runs: the assembler's share of the
window just before the kill.

The window is what is in flight between the 200 and the commit:

    runs waiting in the assembler  (grace period + the worker's tick; at most --max-traces)
  + runs the worker is grading     (one tick's worth, already out of the assembler)
  + verdicts queued for the writer (at most OTEL_TRAJ_STORE_QUEUE)
  + the batch being committed      (at most the store's batch size, 500)

so at a steady rate R of runs per second the loss is about R x (grace + tick + one commit), and in
any case at most max_traces + one tick's runs + store queue + batch size. The writer never waits to
fill a batch: it commits whatever is queued as soon as it is woken.

With ``--stall-store`` another connection holds the store's write lock during the flood (the worst
case: the writer cannot commit, so every bounded buffer fills and the receiver refuses with 503).

    python benchmarks/crash_window.py [--rounds N] [--kill-after S] [--grace S] [--stall-store]
        [-- --max-traces N --store-queue N]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from otel_traj.sinks.store import SqliteSink, connect, read_verdicts

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "real"
POLICY = ROOT / "examples" / "policies" / "support_agent.yaml"
STARTED = re.compile(r"grpc=\S+:(\d+) http=\S+:(\d+) metrics=\S+:(\d+)")
IN_FLIGHT = re.compile(r"^otel_traj_traces_in_flight (\S+)$", re.M)
RUNS_PER_REQUEST = 16
CONNECTIONS = 4
WORKER_TICK_S = 0.02  # Pipeline's tick_s while runs are in flight


def sources() -> list[ExportTraceServiceRequest]:
    return [
        ExportTraceServiceRequest.FromString(p.read_bytes())
        for p in sorted(FIXTURES.glob("*/*.otlp.pb"))
        if "langgraph_traceloop" not in str(p)  # 100+ KB of flattened prompts per run: an outlier
    ]


def requests(connection: int, base: list[ExportTraceServiceRequest]) -> Iterator[tuple[bytes, list[str]]]:
    """Endless requests of ``RUNS_PER_REQUEST`` runs each, every run under a trace id of its own
    (the connection's number in the high bytes keeps the connections' ids apart)."""
    n = 0
    while True:
        request = ExportTraceServiceRequest()
        ids: list[str] = []
        for _ in range(RUNS_PER_REQUEST):
            copy = ExportTraceServiceRequest()
            copy.CopyFrom(base[n % len(base)])
            n += 1
            trace_id = ((connection + 1) << 96 | n).to_bytes(16, "big")
            for rs in copy.resource_spans:
                for ss in rs.scope_spans:
                    for span in ss.spans:
                        span.trace_id = trace_id
            request.resource_spans.extend(copy.resource_spans)
            ids.append(trace_id.hex())
        yield request.SerializeToString(), ids


class Flood:
    """``CONNECTIONS`` threads posting distinct runs until the service dies; ``acked`` holds the trace
    ids of every request answered 200, ``refused`` counts 503s (over capacity, not acknowledged)."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.acked: list[str] = []
        self.refused = 0
        self.first_ack = 0.0
        self.lock = threading.Lock()
        base = sources()
        # Built before the clock starts, so the flood is not paced by protobuf copies.
        self._bodies = [list(_take(requests(c, base), 150)) for c in range(CONNECTIONS)]
        self._threads = [
            threading.Thread(target=self._send, args=(c,), daemon=True) for c in range(CONNECTIONS)
        ]

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def join(self) -> None:
        for thread in self._threads:
            thread.join(30)

    def _send(self, connection: int) -> None:
        headers = {"Content-Type": "application/x-protobuf"}
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            for body, ids in self._bodies[connection]:
                conn.request("POST", "/v1/traces", body, headers)
                reply = conn.getresponse()
                reply.read()
                with self.lock:
                    if reply.status == 200:
                        if not self.acked:
                            self.first_ack = time.monotonic()
                        self.acked.extend(ids)
                    elif reply.status == 503:
                        self.refused += 1
        except (OSError, http.client.HTTPException):
            return  # the service was killed: what was not answered was not acknowledged
        finally:
            conn.close()


def _take(it: Iterator[tuple[bytes, list[str]]], n: int) -> Iterator[tuple[bytes, list[str]]]:
    for _ in range(n):
        yield next(it)


def in_flight(metrics_port: int) -> float | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=2) as reply:
            match = IN_FLIGHT.search(reply.read().decode())
    except OSError:
        return None
    return float(match.group(1)) if match else None


def stored(path: Path) -> set[str]:
    conn = connect(path, readonly=True)
    try:
        return {v["trace_id"] for v in read_verdicts(conn)}
    finally:
        conn.close()


def round_once(
    directory: Path, kill_after: float, grace: float, extra: list[str], stall: bool
) -> dict[str, Any]:
    store = directory / "verdicts.db"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "LANGFUSE_"))}
    env["PYTHONPATH"] = str(ROOT)
    log = (directory / "serve.log").open("w")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "otel_traj.cli",
            "serve",
            "--policy",
            str(POLICY),
            "--store",
            str(store),
            "--grpc-port",
            "0",
            "--http-port",
            "0",
            "--metrics-port",
            "0",
            "--grace",
            str(grace),
            "--log-level",
            "WARNING",
            *extra,
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
    )
    try:
        assert proc.stdout is not None
        match = STARTED.search(proc.stdout.readline())
        if match is None:
            raise RuntimeError(f"serve did not start: {(directory / 'serve.log').read_text()}")
        _, http_port, metrics_port = (int(g) for g in match.groups())
        flood = Flood(http_port)
        if stall:
            # Another writer holds the store's lock for the whole flood (as a long report export
            # or a backup would): the writer waits, its queue fills, the worker blocks on it,
            # the assembler fills up to max_traces and the receiver refuses (503).
            blocker = sqlite3.connect(store, isolation_level=None)
            blocker.execute("BEGIN IMMEDIATE")
        flood.start()
        samples: list[float] = []
        deadline = time.monotonic() + kill_after
        while time.monotonic() < deadline:
            value = in_flight(metrics_port)
            if value is not None:
                samples.append(value)
            time.sleep(0.1)
        with flood.lock:  # the count at the moment of the kill
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            killed = time.monotonic()
            acked = set(flood.acked)
            rate = len(acked) / max(killed - flood.first_ack, 1e-9)
        flood.join()
        if stall:
            blocker.rollback()
            blocker.close()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        log.close()
    kept = stored(store)
    lost = acked - kept
    return {
        "acked_runs": len(acked),
        "stored_runs": len(kept),
        "lost_runs": len(lost),
        "stored_not_acked": len(kept - acked),  # committed, their 200 not read before the kill
        "acked_runs_per_s": round(rate),
        "in_flight_last_sample": samples[-1] if samples else None,
        "in_flight_max_sample": max(samples) if samples else None,
        "refused_requests": flood.refused,
    }


def _flag(args: list[str], name: str, default: int) -> int:
    """The value of ``name`` among the serve flags passed on, else serve's default."""
    return int(args[args.index(name) + 1]) if name in args[:-1] else default


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--kill-after", type=float, default=3.0, help="seconds of flood before SIGKILL")
    parser.add_argument("--grace", type=float, default=0.5, help="serve --grace (its default: 0.5)")
    parser.add_argument(
        "--stall-store",
        action="store_true",
        help="hold the store's write lock from another connection during the flood (the worst case)",
    )
    parser.add_argument("serve_args", nargs="*", help="more serve flags, after --")
    args = parser.parse_args()
    rounds = []
    for _ in range(args.rounds):
        with tempfile.TemporaryDirectory() as tmp:
            rounds.append(
                round_once(Path(tmp), args.kill_after, args.grace, args.serve_args, args.stall_store)
            )
    losses = sorted(r["lost_runs"] for r in rounds)
    rates = sorted(r["acked_runs_per_s"] for r in rounds)
    rate = rates[len(rates) // 2]
    sink = SqliteSink.__init__.__kwdefaults__ or {}
    result = {
        "grace_s": args.grace,
        "stalled_store": args.stall_store,
        "serve_args": args.serve_args,
        "rounds": rounds,
        "lost_per_kill": {"min": losses[0], "median": losses[len(losses) // 2], "max": losses[-1]},
        "bound": {
            "worker_tick_s": WORKER_TICK_S,
            "store_batch_size": sink.get("batch_size"),
            "max_traces": _flag(args.serve_args, "--max-traces", 10_000),
            "store_queue": _flag(args.serve_args, "--store-queue", 10_000),
            "expected_at_median_rate": round(rate * (args.grace + WORKER_TICK_S)),
            # A stalled store: the assembler full, the worker blocked in the middle of a tick's
            # runs (already out of the assembler), the queue full, the writer holding a batch.
            "worst_case_without_the_tick": _flag(args.serve_args, "--max-traces", 10_000)
            + _flag(args.serve_args, "--store-queue", 10_000)
            + (sink.get("batch_size") or 0),
            "formula": "rate x (grace + tick) + verdicts queued + the batch being committed; "
            "at most max_traces + one tick's runs + store queue + batch size",
        },
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
