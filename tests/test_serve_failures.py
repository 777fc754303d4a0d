"""A request that fails inside otel-traj (a bug, not the payload): both transports answer with a
non-retryable internal error, count it where the alerts look, and the service goes on."""

from __future__ import annotations

import urllib.error
import urllib.request
from pathlib import Path

import grpc
import pytest
from google.rpc import code_pb2, status_pb2
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from otel_traj.config import AssemblerConfig
from otel_traj.serve import ServeSettings, Service
from otel_traj.serve.ingest import INTERNAL_ERROR
from otel_traj.verdict import Verdict

ROOT = Path(__file__).resolve().parent.parent
RUN = ROOT / "tests" / "fixtures" / "real" / "pydantic_ai" / "clean.otlp.pb"
POLICY = ROOT / "examples" / "policies" / "support_agent.yaml"
EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"


def test_a_request_failing_inside_is_an_internal_error_and_the_service_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = ServeSettings(
        host="127.0.0.1",
        grpc_port=0,
        http_port=0,
        metrics_port=0,
        policy=str(POLICY),
        store=str(tmp_path / "verdicts.db"),
        auth_token=None,
        assembler=AssemblerConfig(grace_s=0.0),
    )
    service = Service(settings)
    verdicts: list[Verdict] = []
    service.pipeline.add_callback(verdicts.append)
    ports = service.start()
    body = RUN.read_bytes()

    def broken(batch: object) -> None:
        raise RuntimeError("a bug in admission")

    try:
        monkeypatch.setattr(service.ingest, "accept", broken)
        with grpc.insecure_channel(f"127.0.0.1:{ports.grpc}") as channel:
            export = channel.unary_unary(
                EXPORT, request_serializer=None, response_deserializer=ExportTraceServiceResponse.FromString
            )
            with pytest.raises(grpc.RpcError) as raised:
                export(body, timeout=10)
            assert (raised.value.code(), raised.value.details()) == (grpc.StatusCode.INTERNAL, INTERNAL_ERROR)

            request = urllib.request.Request(
                f"http://127.0.0.1:{ports.http}/v1/traces",
                data=body,
                method="POST",
                headers={"Content-Type": "application/x-protobuf"},
            )
            with pytest.raises(urllib.error.HTTPError) as http_error:
                urllib.request.urlopen(request, timeout=10)
            assert http_error.value.code == 500
            status = status_pb2.Status.FromString(http_error.value.read())
            assert (status.code, status.message) == (code_pb2.INTERNAL, INTERNAL_ERROR)

            requests, _, _ = service.ingest.stats.snapshot()
            assert requests == {("grpc", "internal_error"): 1, ("http", "internal_error"): 1}
            assert service.stats.snapshot().internal_errors == 2
            metrics = urllib.request.urlopen(f"http://127.0.0.1:{ports.metrics}/metrics", timeout=10).read()
            counted = b'otel_traj_receiver_requests_total{result="internal_error",transport="grpc"} 1.0'
            assert counted in metrics

            monkeypatch.undo()
            assert not export(body, timeout=10).HasField("partial_success")
        assert service.pipeline.force_flush(10_000)
        assert [v.trajectory.agent for v in verdicts] == ["support_agent"]
    finally:
        service.stop()
