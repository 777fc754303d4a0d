"""``serve`` receives OTLP logs as it receives traces: ``POST /v1/logs`` (protobuf, gzip, OTLP/JSON)
and ``LogsService/Export`` (the SDK's gRPC log exporter), behind the same bearer token and size limit,
with the same statuses. The records are real ``gen_ai.evaluation.result`` events of
``EvaluationEventSink``; each is counted by what became of it."""

from __future__ import annotations

import base64
import gzip
import json
import re
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import json_format
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter

from otel_traj.policy import load_policy
from otel_traj.sinks.evaluation_records import SUMMARY
from otel_traj.sinks.otel_events import EvaluationEventSink
from tests.conversation_runs import POLICY
from tests.serve_helpers import Served, post
from tests.test_otel_events import run_all

TOKEN = "logs-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
LOGS_EXPORT = "/opentelemetry.proto.collector.logs.v1.LogsService/Export"
# The runs: five traces in two conversations (one summary each) and one run outside any.
SUMMARIES = 5


def events_request() -> ExportLogsServiceRequest:
    """Every event of the conversation runs, as the Logs SDK's own encoder writes them."""
    memory = InMemoryLogRecordExporter()  # type: ignore[no-untyped-call]
    run_all(EvaluationEventSink(exporter=memory, policy=load_policy(POLICY)))
    return encode_logs(memory.get_finished_logs())


def records_of(request: ExportLogsServiceRequest) -> int:
    return sum(len(s.log_records) for r in request.resource_logs for s in r.scope_logs)


def otlp_json(request: ExportLogsServiceRequest) -> bytes:
    """The OTLP/JSON encoding: camelCase keys, enums as integers, hex trace and span ids."""
    doc = json_format.MessageToDict(request, use_integers_for_enums=True)
    for resource_logs in doc["resourceLogs"]:
        for scope_logs in resource_logs["scopeLogs"]:
            for record in scope_logs["logRecords"]:
                for key in ("traceId", "spanId"):
                    record[key] = base64.b64decode(record[key]).hex()
    return json.dumps(doc).encode()


@pytest.fixture
def served(tmp_path: Path) -> Any:
    service = Served(
        tmp_path, "--policy", str(POLICY), "--conversations-from", "logs",
        "--auth-token", TOKEN, "--max-request-bytes", "200000",
    )  # fmt: skip
    yield service
    assert service.stop() == 0


def post_logs(served: Served, body: bytes, content_type: str, headers: dict[str, str]) -> Any:
    return post(f"http://127.0.0.1:{served.http_port}/v1/logs", body, content_type, headers)


def test_http_protobuf_gzip_and_json_behind_the_token_and_the_size_limit(served: Served) -> None:
    request = events_request()
    body = request.SerializeToString()
    records = records_of(request)
    assert records > SUMMARIES
    status, headers, reply = post_logs(
        served, gzip.compress(body), "application/x-protobuf", {**AUTH, "Content-Encoding": "gzip"}
    )
    assert (status, headers["content-type"]) == (200, "application/x-protobuf")
    assert not ExportLogsServiceResponse.FromString(reply).HasField("partial_success")
    status, _, reply = post_logs(served, otlp_json(request), "application/json", AUTH)
    assert (status, json.loads(reply)) == (200, {})
    assert served.metric("otel_traj_log_records_total", result="summary") == 2 * SUMMARIES
    assert served.metric("otel_traj_log_records_total", result="ignored") == 2 * (records - SUMMARIES)
    assert served.metric("otel_traj_receiver_log_requests_total", transport="http", result="ok") == 2

    assert post_logs(served, body, "application/x-protobuf", {})[0] == 401
    assert post_logs(served, body, "application/x-protobuf", {"Authorization": "Bearer nope"})[0] == 401
    assert post_logs(served, b"\0" * 200_001, "application/x-protobuf", AUTH)[0] == 413
    assert post_logs(served, gzip.compress(b"\0" * 200_001), "application/x-protobuf", {
        **AUTH, "Content-Encoding": "gzip"})[0] == 413  # fmt: skip
    assert post_logs(served, body, "text/plain", AUTH)[0] == 415
    assert post_logs(served, b"\xff\xff\xff", "application/x-protobuf", AUTH)[0] == 400
    assert post_logs(served, b'{"resourceLogs": 5}', "application/json", AUTH)[0] == 400
    for result, n in (("unauthorized", 2), ("too_large", 2), ("invalid", 3)):
        assert served.metric("otel_traj_receiver_log_requests_total", transport="http", result=result) == n
    # The traces' counters are their own.
    assert served.metric("otel_traj_receiver_requests_total", transport="http", result="unauthorized") == 0


def test_an_unreadable_summary_is_rejected_in_partial_success_and_counted(served: Served) -> None:
    request = events_request()
    for resource_logs in request.resource_logs:
        for scope_logs in resource_logs.scope_logs:
            for record in scope_logs.log_records:
                for kv in record.attributes:
                    if kv.key == SUMMARY:
                        kv.value.string_value = kv.value.string_value.replace('"trace_id"', '"trace"')
    status, _, reply = post_logs(served, otlp_json(request), "application/json", AUTH)
    assert status == 200
    partial = json.loads(reply)["partialSuccess"]
    assert (
        int(partial["rejectedLogRecords"]) == SUMMARIES and "not a trace summary" in partial["errorMessage"]
    )
    assert served.metric("otel_traj_log_records_total", result="invalid") == SUMMARIES
    assert served.metric("otel_traj_log_records_total", result="summary") == 0
    assert served.metric("otel_traj_receiver_log_requests_total", transport="http", result="partial") == 1


def test_the_sdk_grpc_log_exporter_reaches_the_logs_service(served: Served) -> None:
    def export(token: str) -> EvaluationEventSink:
        exporter = OTLPLogExporter(
            endpoint=f"127.0.0.1:{served.grpc_port}",
            insecure=True,
            headers=(("authorization", f"Bearer {token}"),),
        )
        sink = EvaluationEventSink(exporter=exporter, policy=load_policy(POLICY))
        run_all(sink)  # shuts the processor down: the sink has exported every record
        return sink

    assert export(TOKEN).stats.snapshot().dropped == {}
    assert served.metric("otel_traj_log_records_total", result="summary") == SUMMARIES
    assert served.metric("otel_traj_receiver_log_requests_total", transport="grpc", result="ok") >= 1
    refused = export("wrong").stats.snapshot().dropped
    assert refused.get("otel_events_export_failed", 0) > 0  # UNAUTHENTICATED is not retried
    assert (
        served.metric("otel_traj_receiver_log_requests_total", transport="grpc", result="unauthorized") >= 1
    )
    assert served.metric("otel_traj_log_records_total", result="summary") == SUMMARIES

    with grpc.insecure_channel(f"127.0.0.1:{served.grpc_port}") as channel:
        call = channel.unary_unary(LOGS_EXPORT, request_serializer=None, response_deserializer=None)
        with pytest.raises(grpc.RpcError) as error:
            call(b"\xff\xff\xff", metadata=(("authorization", f"Bearer {TOKEN}"),), timeout=10)
    assert error.value.code() is grpc.StatusCode.INVALID_ARGUMENT


def test_hostile_numbers_in_a_summary_cost_only_their_own_record(served: Served) -> None:
    """Numbers JSON reads but a summary cannot hold (an infinite or 2**64 timestamp, a score beyond a
    float, versions that are not an object) are invalid records, not a failed request."""
    request = events_request()
    hostile = iter(
        (
            (r'"start_ns":\d+', '"start_ns":1e999'),
            (r'"end_ns":\d+', f'"end_ns":{2**64}'),
            (r'"score":[\d.]+', f'"score":{10**400}'),
            (r'"versions":\{[^}]*\}', '"versions":[1]'),
        )
    )
    for resource_logs in request.resource_logs:
        for scope_logs in resource_logs.scope_logs:
            for record in scope_logs.log_records:
                for kv in record.attributes:
                    if kv.key == SUMMARY and (change := next(hostile, None)) is not None:
                        changed = re.sub(change[0], change[1], kv.value.string_value, count=1)
                        assert changed != kv.value.string_value
                        kv.value.string_value = changed
    status, _, reply = post_logs(served, otlp_json(request), "application/json", AUTH)
    assert status == 200
    assert int(json.loads(reply)["partialSuccess"]["rejectedLogRecords"]) == 4
    assert served.metric("otel_traj_log_records_total", result="invalid") == 4
    assert served.metric("otel_traj_log_records_total", result="summary") == SUMMARIES - 4
