"""A request that fails inside otel-traj (a bug, not the payload): both transports answer with a
non-retryable internal error, count it where the alerts look, and the service goes on."""

from __future__ import annotations

import urllib.request
from pathlib import Path

import grpc
import pytest
from google.rpc import code_pb2, status_pb2

from otel_traj.serve import Service
from otel_traj.serve.ingest import INTERNAL_ERROR
from otel_traj.verdict import Verdict
from tests.serve_helpers import FIXTURES, export_raw, local_settings, post

RUN = FIXTURES / "pydantic_ai" / "clean.otlp.pb"


def test_a_request_failing_inside_is_an_internal_error_and_the_service_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = local_settings(tmp_path)
    verdicts: list[Verdict] = []
    body = RUN.read_bytes()

    def broken(batch: object) -> None:
        raise RuntimeError("a bug in admission")

    service = Service(settings)
    try:
        service.pipeline.add_callback(verdicts.append)
        ports = service.start()
        monkeypatch.setattr(service.ingest, "accept", broken)
        grpc_target = f"127.0.0.1:{ports.grpc}"
        with pytest.raises(grpc.RpcError) as raised:
            export_raw(grpc_target, body)
        assert (raised.value.code(), raised.value.details()) == (grpc.StatusCode.INTERNAL, INTERNAL_ERROR)

        status_code, _, reply = post(f"http://127.0.0.1:{ports.http}/v1/traces", body)
        assert status_code == 500
        status = status_pb2.Status.FromString(reply)
        assert (status.code, status.message) == (code_pb2.INTERNAL, INTERNAL_ERROR)

        requests, _, _ = service.ingest.stats.snapshot()
        assert requests == {("grpc", "internal_error"): 1, ("http", "internal_error"): 1}
        assert service.stats.snapshot().internal_errors == 2
        metrics = urllib.request.urlopen(f"http://127.0.0.1:{ports.metrics}/metrics", timeout=10).read()
        counted = b'otel_traj_receiver_requests_total{result="internal_error",transport="grpc"} 1.0'
        assert counted in metrics

        monkeypatch.undo()
        assert not export_raw(grpc_target, body).HasField("partial_success")
        assert service.pipeline.force_flush(10_000)
        assert [v.trajectory.agent for v in verdicts] == ["support_agent"]
    finally:
        service.stop()
