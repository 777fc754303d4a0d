"""``otel-traj serve`` as a subprocess for the tests that drive it: start it on free ports, send it
OTLP (raw requests or the SDK's exporters), read its store and its metrics, stop it.

A test waits for a running service only where it has to see something while the service goes on (a
policy reload, a refused request): the service is another process, so that wait polls what the process
exposes. Everything else is read after ``stop()``, which grades what is buffered and flushes the store
before the process exits.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from contextlib import suppress
from itertools import count
from pathlib import Path
from typing import Any

import grpc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_traj.adapters.otlp_proto import parse_request
from otel_traj.config import AssemblerConfig
from otel_traj.serve.settings import ServeSettings
from otel_traj.sinks.store import connect, read_verdicts
from tests.semconv_agent import Run, clean_refund

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "real"
POLICY = ROOT / "examples" / "policies" / "support_agent.yaml"
STARTED = re.compile(r"grpc=\S+:(\d+) http=\S+:(\d+) metrics=\S+:(\d+)")
EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
# What faulthandler writes for each thread when serve gets SIGUSR1.
STACK_DUMP = "(most recent call first)"
_LOGS = count()


def local_settings(tmp_path: Path) -> ServeSettings:
    """An in-process service on free loopback ports, grading with the example policy into a store
    in ``tmp_path``, with no grace period."""
    return ServeSettings(
        host="127.0.0.1",
        grpc_port=0,
        http_port=0,
        metrics_port=0,
        policy=str(POLICY),
        store=str(tmp_path / "verdicts.db"),
        auth_token=None,
        assembler=AssemblerConfig(grace_s=0.0),
    )


def cli_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "LANGFUSE_"))}
    env["PYTHONPATH"] = str(ROOT)
    return env


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "otel_traj.cli", *args],
        cwd=ROOT,
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )


def wait_for(condition: Callable[[], bool], timeout: float = 15.0, what: str = "condition") -> None:
    """Poll another process's observable state (its store, its /metrics, its log) until ``condition``.

    Only for what a running ``serve`` process does on its own time (a signal handled, a verdict
    written, a request refused while the exporter retries): nothing in this process is told when it
    happens, so there is no event to wait on. Whatever can be read after ``Served.stop()`` is.
    """
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


class Served:
    """One ``otel-traj serve`` process on free ports, its store in ``directory``; ``env`` adds to the
    environment it runs in (which has no ``OTEL_*`` variables of its own)."""

    def __init__(
        self, directory: Path, *args: str, store: Path | None = None, env: dict[str, str] | None = None
    ) -> None:
        self.store = store or directory / "verdicts.db"
        self.log = directory / f"serve-{next(_LOGS)}.log"
        with self.log.open("w") as log:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "otel_traj.cli",
                    "serve",
                    "--grpc-port",
                    "0",
                    "--http-port",
                    "0",
                    "--metrics-port",
                    "0",
                    "--store",
                    str(self.store),
                    "--grace",
                    "0.05",
                    *args,
                ],
                cwd=ROOT,
                env={**cli_env(), **(env or {})},
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
            )
        assert self.proc.stdout is not None
        self.started = line = self.proc.stdout.readline()
        match = STARTED.search(line)
        if match is None:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"serve did not start: {line!r}\n{self.log.read_text()}")
        self.grpc_port, self.http_port, self.metrics_port = (int(g) for g in match.groups())
        self.grpc_target = f"127.0.0.1:{self.grpc_port}"
        self.http_url = f"http://127.0.0.1:{self.http_port}/v1/traces"

    def signal(self, sig: signal.Signals) -> None:
        self.proc.send_signal(sig)

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            # Stuck: have it write every thread's stack to its log, then fail with the log.
            self.proc.send_signal(signal.SIGUSR1)
            with suppress(AssertionError):
                wait_for(lambda: STACK_DUMP in self.log.read_text(), timeout=5, what="a stack dump")
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(
                f"serve did not exit within 60 s of SIGTERM:\n{self.log.read_text()}"
            ) from None
        assert self.proc.stdout is not None
        self.proc.stdout.close()
        return code

    def verdicts(self) -> dict[str, dict[str, Any]]:
        if not self.store.exists():
            return {}
        conn = connect(self.store, readonly=True)
        try:
            return {v["trace_id"]: v for v in read_verdicts(conn)}
        finally:
            conn.close()

    def wait_verdicts(self, trace_ids: set[str]) -> dict[str, dict[str, Any]]:
        """The stored verdicts once ``trace_ids`` are among them, the service still running."""
        wait_for(lambda: trace_ids <= set(self.verdicts()), what=f"verdicts for {sorted(trace_ids)}")
        return self.verdicts()

    def metrics(self) -> str:
        url = f"http://127.0.0.1:{self.metrics_port}/metrics"
        with urllib.request.urlopen(url, timeout=10) as reply:
            return str(reply.read().decode())

    def metric(self, name: str, **labels: str) -> float:
        selector = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
        pattern = re.compile(rf"^{re.escape(name)}(?:\{{{re.escape(selector)}\}})? (\S+)$", re.M)
        match = pattern.search(self.metrics())
        return float(match.group(1)) if match else 0.0

    def export_raw(
        self, data: bytes, metadata: tuple[tuple[str, str], ...] = ()
    ) -> ExportTraceServiceResponse:
        return export_raw(self.grpc_target, data, metadata)

    def post(
        self, body: bytes, content_type: str = "application/x-protobuf", headers: dict[str, str] | None = None
    ) -> tuple[int, dict[str, str], bytes]:
        return post(self.http_url, body, content_type, headers)


def export_raw(
    target: str, data: bytes, metadata: tuple[tuple[str, str], ...] = ()
) -> ExportTraceServiceResponse:
    """One ``TraceService/Export`` call with ``data`` as the request bytes, as sent."""
    with grpc.insecure_channel(target) as channel:
        call = channel.unary_unary(
            EXPORT, request_serializer=None, response_deserializer=ExportTraceServiceResponse.FromString
        )
        return call(data, metadata=metadata, timeout=10)


def post(
    url: str, body: bytes, content_type: str = "application/x-protobuf", headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str], bytes]:
    """``(status, headers, body)`` of one OTLP/HTTP POST, error statuses included."""
    request = urllib.request.Request(
        url, data=body, method="POST", headers={"Content-Type": content_type, **(headers or {})}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as reply:
            return reply.status, dict(reply.headers), reply.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


def trace_ids_of(data: bytes) -> set[str]:
    request = parse_request(data)
    return {
        span.trace_id.hex() for rs in request.resource_spans for ss in rs.scope_spans for span in ss.spans
    }


def provider(service: str) -> tuple[TracerProvider, InMemorySpanExporter]:
    tp = TracerProvider(resource=Resource.create({"service.name": service}))
    memory = InMemorySpanExporter()
    tp.add_span_processor(SimpleSpanProcessor(memory))
    return tp, memory


def refund_for(customer: str) -> Run:
    """The clean refund run, on behalf of ``customer`` (C023's data is used: C028 breaks scope)."""
    run = clean_refund(f"conv-{customer}")
    run.root_attributes = {"app.customer_id": customer}
    return run
