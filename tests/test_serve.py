"""``otel-traj serve`` as a real subprocess, driven by real OTLP exporters and raw OTLP requests.

Verdicts the service stores must equal what ``otel-traj grade`` says about the same files.
"""

from __future__ import annotations

import gzip
import json
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
import zstandard
from google.rpc import status_pb2
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter
from opentelemetry.exporter.otlp.proto.http import Compression as HttpCompression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

from otel_traj.adapters import read_trace_files
from otel_traj.adapters.otlp_proto import parse_request
from otel_traj.config import AssemblerConfig
from otel_traj.grader import Grader
from otel_traj.live import subject_attributes
from otel_traj.offline import trajectories_from_views
from otel_traj.policy import load_policy
from otel_traj.redact import Redactor
from otel_traj.serialize import verdict_to_dict
from tests.semconv_agent import emit
from tests.serve_helpers import (
    FIXTURES,
    POLICY,
    Served,
    cli,
    post,
    provider,
    refund_for,
    trace_ids_of,
)

FRAMEWORKS = sorted(p.name for p in FIXTURES.iterdir() if (p / "clean.otlp.pb").exists())


def fixture_paths(ext: str) -> list[Path]:
    return [FIXTURES / f / f"{s}.{ext}" for f in FRAMEWORKS for s in ("clean", "violating")]


# The runs' GenAI events recorded as log records, where the instrumentation emits the messages so.
LOG_PATHS = sorted(FIXTURES.glob("*/*.logs.json"))


def offline(paths: list[Path]) -> dict[str, dict[str, Any]]:
    """The verdicts ``otel-traj grade`` gives the same files, masked as the service's store masks them
    (the policy's ``redact`` keys: the refund's ``reason``)."""
    result = cli("grade", "--policy", str(POLICY), "--format", "json", *map(str, paths))
    assert result.returncode in (0, 1), result.stderr
    printed = {v["trace_id"]: v for v in json.loads(result.stdout)["trajectories"]}
    policy = load_policy(POLICY)
    redactor = Redactor(policy.is_sensitive)
    config = AssemblerConfig().with_capture(subject_attributes(policy))
    masked = {
        v.trajectory.trace_hex: verdict_to_dict(v, redactor)
        for v in map(Grader(policy).grade, trajectories_from_views(read_trace_files(paths), config))
    }
    # Masking changes only the values of sensitive keys: the same runs, checks and outcomes.
    assert {k: (v["outcome"], v["checks"]) for k, v in printed.items()} == {
        k: (v["outcome"], v["checks"]) for k, v in masked.items()
    }
    return masked


def report(store: Path, *args: str) -> list[dict[str, Any]]:
    result = cli("report", "--store", str(store), "--format", "json", *args)
    assert result.returncode == 0, result.stderr
    trajectories: list[dict[str, Any]] = json.loads(result.stdout)["trajectories"]
    return trajectories


# -- real framework fixtures: stored verdicts == offline verdicts --------------------------------------


COMPRESS = {"gzip": gzip.compress, "zstd": zstandard.ZstdCompressor().compress}


@pytest.mark.parametrize(
    "transport", ["grpc", "http-protobuf", "http-json", "http-protobuf-gzip", "http-json-zstd"]
)
def test_fixture_verdicts_equal_offline_grade(served: Callable[..., Served], transport: str) -> None:
    server = served("--policy", str(POLICY))
    ext = "otlp.json" if transport.startswith("http-json") else "otlp.pb"
    paths = fixture_paths(ext)
    # The log records first, as the SDKs' batch processors usually deliver them: each waits for its span.
    for path in LOG_PATHS:
        logs_url = f"http://127.0.0.1:{server.http_port}/v1/logs"
        assert post(logs_url, path.read_bytes(), "application/json")[0] == 200
    ids_per_file: list[set[str]] = []
    for path in paths:
        data = path.read_bytes()
        ids_per_file.append(trace_ids_of((path.parent / path.name.replace(ext, "otlp.pb")).read_bytes()))
        if transport == "grpc":
            reply = server.export_raw(data)
            assert not reply.HasField("partial_success")
        else:
            encoding = transport.rsplit("-", 1)[-1]
            headers = {"Content-Encoding": encoding} if encoding in COMPRESS else {}
            body = COMPRESS[encoding](data) if headers else data
            kind = "application/json" if ext == "otlp.json" else "application/x-protobuf"
            status, reply_headers, _ = server.post(body, kind, headers)
            assert status == 200
            assert reply_headers["content-type"] == kind
    assert server.stop() == 0
    stored = {v["trace_id"]: v for v in report(server.store)}
    # Every recorded run is graded; a trace without steps (AutoGen's ``create_agent``) is no run.
    assert all(ids & set(stored) for ids in ids_per_file)
    assert set(stored) <= set().union(*ids_per_file)
    assert stored == offline(paths + LOG_PATHS)
    # The policy's redact keys never reach the disk: the refund's free-text reason is masked.
    refunds = [c for v in stored.values() for c in v["tool_calls"] if c["name"] == "create_refund_request"]
    assert refunds and all(c["arguments"]["reason"] != "duplicate charge" for c in refunds)
    outcomes = {v["outcome"] for v in stored.values()}
    assert "unsafe" in outcomes  # the violating runs touched another customer's data


def test_report_filters_by_outcome_and_time(served: Callable[..., Served]) -> None:
    server = served("--policy", str(POLICY))
    data = (FIXTURES / "openai_v2" / "violating.otlp.pb").read_bytes()
    clean = (FIXTURES / "openai_v2" / "clean.otlp.pb").read_bytes()
    server.export_raw(data)
    server.export_raw(clean)
    assert server.stop() == 0
    unsafe = report(server.store, "--outcome", "unsafe", "--since", "2000-01-01", "--agent", "support_agent")
    assert [v["trace_id"] for v in unsafe] == sorted(trace_ids_of(data))
    assert report(server.store, "--since", "2100-01-01T00:00:00") == []
    assert [v["trace_id"] for v in report(server.store, "--failed", "scope")] == sorted(trace_ids_of(data))
    assert report(server.store, "--failed", "no-such-check") == []
    table = cli("report", "--store", str(server.store))
    assert table.returncode == 0
    assert "unsafe" in table.stdout and "2 trajectories: 1 unsafe, 1 pass" in table.stdout


# -- spans of one trace from two processes ---------------------------------------------------------


def test_spans_from_two_processes_make_one_trajectory(served: Callable[..., Served]) -> None:
    server = served("--policy", str(POLICY))
    # Process A runs the agent (root span); process B runs a tool for it, under the propagated
    # (remote) parent, and exports first: the receiver waits for the root before grading.
    tp_a, _ = provider("support-agent")
    tp_b, _ = provider("billing-tools")
    exporter_a = GrpcExporter(endpoint=server.grpc_target, insecure=True)
    exporter_b = HttpExporter(endpoint=server.http_url)
    tp_a.add_span_processor(SimpleSpanProcessor(exporter_a))
    tp_b.add_span_processor(SimpleSpanProcessor(exporter_b))

    root = tp_a.get_tracer("agent").start_span(
        "invoke_agent support_agent",
        attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "support_agent"},
    )
    ctx = root.get_span_context()
    remote = SpanContext(
        ctx.trace_id, ctx.span_id, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED)
    )
    parent = trace.set_span_in_context(NonRecordingSpan(remote))
    tool = tp_b.get_tracer("tools").start_span(
        "execute_tool list_invoices",
        context=parent,
        attributes={
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "list_invoices",
            "gen_ai.tool.call.arguments": json.dumps({"customer_id": "C023"}),
        },
    )
    tool.end()
    trace_hex = f"{ctx.trace_id:032x}"
    # The export returned: the receiver counts spans before it answers.
    assert server.metric("otel_traj_spans_total", result="accepted") == 1
    assert trace_hex not in server.verdicts()  # no root yet: not graded on its own
    root.end()
    tp_a.shutdown()
    tp_b.shutdown()
    assert server.stop() == 0
    verdicts = server.verdicts()
    assert list(verdicts) == [trace_hex]
    verdict = verdicts[trace_hex]
    assert verdict["agent"] == "support_agent"
    assert verdict["complete"] is True
    assert [c["name"] for c in verdict["tool_calls"]] == ["list_invoices"]


# -- the SDK's own exporters, checked against the offline path of the very same spans -----------------


@pytest.mark.parametrize("transport", ["grpc", "grpc-gzip", "http", "http-gzip"])
def test_sdk_exporters_against_offline(served: Callable[..., Served], tmp_path: Path, transport: str) -> None:
    server = served("--policy", str(POLICY))
    tp, memory = provider("support-agent")
    gzip_on = transport.endswith("gzip")
    exporter = (
        GrpcExporter(
            endpoint=server.grpc_target, insecure=True, compression=grpc.Compression.Gzip if gzip_on else None
        )
        if transport.startswith("grpc")
        else HttpExporter(endpoint=server.http_url, compression=HttpCompression.Gzip if gzip_on else None)
    )
    tp.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = tp.get_tracer("agent")
    ids = {f"{emit(tracer, refund_for(customer)):032x}" for customer in ("C023", "C028")}
    tp.shutdown()
    assert server.stop() == 0
    spans_file = tmp_path / "spans.otlp.pb"
    spans_file.write_bytes(encode_spans(memory.get_finished_spans()).SerializeToString())
    stored = {v["trace_id"]: v for v in report(server.store)}
    assert set(stored) == ids
    assert stored == offline([spans_file])


# -- request errors ----------------------------------------------------------------------------------


def test_invalid_payloads_are_400_and_invalid_argument(served: Callable[..., Served]) -> None:
    server = served()
    status, _, body = server.post(b"\xff\xff\xff not protobuf")
    assert status == 400
    assert "ExportTraceServiceRequest" in status_pb2.Status.FromString(body).message
    status, _, body = server.post(b"{not json", "application/json")
    assert status == 400
    assert json.loads(body)["message"].startswith("invalid JSON")
    status, _, body = server.post(b'{"hello": 1}', "application/json")
    assert status == 400
    assert "not OTLP/JSON" in json.loads(body)["message"]
    status, _, _ = server.post(b"x", "text/plain")
    assert status == 415
    status, _, _ = server.post(gzip.compress(b"abc")[:-6], headers={"Content-Encoding": "gzip"})
    assert status == 400
    status, _, body = server.post(COMPRESS["zstd"](b"abc")[:-2], headers={"Content-Encoding": "zstd"})
    assert status == 400
    assert status_pb2.Status.FromString(body).message == "invalid zstd body: the data ends inside a frame"
    with pytest.raises(grpc.RpcError) as caught:
        server.export_raw(b"\xff\xff\xff not protobuf")
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert server.proc.poll() is None  # still serving
    reply = server.export_raw(ExportTraceServiceRequest().SerializeToString())
    assert not reply.HasField("partial_success")
    assert server.metric("otel_traj_receiver_requests_total", transport="http", result="invalid") == 6
    assert server.metric("otel_traj_receiver_requests_total", transport="grpc", result="invalid") == 1
    assert server.stop() == 0


def test_malformed_spans_are_rejected_in_partial_success(served: Callable[..., Served]) -> None:
    server = served()
    request = parse_request((FIXTURES / "openai_v2" / "clean.otlp.pb").read_bytes())
    spans = request.resource_spans[0].scope_spans[0].spans
    total = sum(len(ss.spans) for rs in request.resource_spans for ss in rs.scope_spans)
    spans[0].trace_id = b"\x01\x02\x03"
    spans[1].span_id = b""
    reply = server.export_raw(request.SerializeToString())
    assert reply.partial_success.rejected_spans == 2
    assert "trace/span id" in reply.partial_success.error_message

    document = json.loads((FIXTURES / "openai_v2" / "violating.otlp.json").read_text())
    document["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["spanId"] = "zz"
    status, _, body = server.post(json.dumps(document).encode(), "application/json")
    assert status == 200
    partial = json.loads(body)["partialSuccess"]
    assert int(partial["rejectedSpans"]) == 1 and partial["errorMessage"]
    assert server.metric("otel_traj_spans_total", result="malformed") == 3
    readable = total - 2 + sum(1 for _ in _json_spans(document)) - 1
    seen = server.metric("otel_traj_spans_total", result="accepted") + server.metric(
        "otel_traj_spans_total", result="ignored"
    )
    assert seen == readable
    assert server.metric("otel_traj_receiver_requests_total", transport="grpc", result="partial") == 1
    assert server.stop() == 0


def _json_spans(document: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for rs in document["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            yield from ss["spans"]


def test_request_size_limit_is_413(served: Callable[..., Served]) -> None:
    server = served("--max-request-bytes", "100000")
    status, _, body = server.post(b"\0" * 150_000)
    assert status == 413
    assert "exceeds" in status_pb2.Status.FromString(body).message
    bomb = gzip.compress(b"\0" * 5_000_000)
    assert len(bomb) < 100_000
    status, _, _ = server.post(bomb, headers={"Content-Encoding": "gzip"})
    assert status == 413
    zstd_bomb = COMPRESS["zstd"](b"\0" * 50_000_000)
    assert len(zstd_bomb) < 10_000
    status, _, _ = server.post(zstd_bomb, headers={"Content-Encoding": "zstd"})
    assert status == 413
    fits = (FIXTURES / "openai_v2" / "clean.otlp.pb").read_bytes()
    status, _, _ = server.post(fits)
    assert status == 200
    with pytest.raises(grpc.RpcError) as caught:
        server.export_raw(b"\0" * 150_000)
    assert caught.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert server.metric("otel_traj_receiver_requests_total", transport="http", result="too_large") == 3
    assert server.stop() == 0


def test_bearer_token_is_required(served: Callable[..., Served]) -> None:
    server = served("--auth-token", "s3cret")
    data = (FIXTURES / "openai_v2" / "clean.otlp.pb").read_bytes()
    status, headers, _ = server.post(data)
    assert status == 401
    assert headers["www-authenticate"] == "Bearer"
    status, _, _ = server.post(data, headers={"Authorization": "Bearer wrong"})
    assert status == 401
    with pytest.raises(grpc.RpcError) as caught:
        server.export_raw(data)
    assert caught.value.code() == grpc.StatusCode.UNAUTHENTICATED

    tp, _ = provider("support-agent")
    denied = GrpcExporter(endpoint=server.grpc_target, insecure=True)
    assert denied.export(_one_span(tp)) == SpanExportResult.FAILURE
    allowed = HttpExporter(endpoint=server.http_url, headers={"authorization": "Bearer s3cret"})
    assert allowed.export(_one_span(tp)) == SpanExportResult.SUCCESS
    granted = GrpcExporter(
        endpoint=server.grpc_target, insecure=True, headers=(("authorization", "Bearer s3cret"),)
    )
    assert granted.export(_one_span(tp)) == SpanExportResult.SUCCESS
    status, _, _ = server.post(data, headers={"Authorization": "Bearer s3cret"})
    assert status == 200
    assert server.metric("otel_traj_receiver_requests_total", transport="grpc", result="unauthorized") == 2
    assert server.metric("otel_traj_receiver_requests_total", transport="http", result="unauthorized") == 2
    assert server.metric("otel_traj_receiver_requests_total", transport="http", result="ok") == 2
    for exporter in (denied, allowed, granted):
        exporter.shutdown()
    assert server.stop() == 0


def _one_span(tp: TracerProvider) -> list[Any]:
    memory = InMemorySpanExporter()
    tp.add_span_processor(SimpleSpanProcessor(memory))
    tp.get_tracer("t").start_span(
        "invoke_agent a", attributes={"gen_ai.operation.name": "invoke_agent"}
    ).end()
    return list(memory.get_finished_spans())[-1:]


def test_an_invalid_policy_stops_startup(tmp_path: Path) -> None:
    bad = tmp_path / "policy.yaml"
    bad.write_text("defaults:\n  budget: {max_tool_calls: -1}\n")
    result = cli("serve", "--policy", str(bad), "--grpc-port", "0", "--http-port", "0", "--metrics-port", "0")
    assert result.returncode == 2
    assert "max_tool_calls" in result.stderr
    assert result.stdout == ""


def test_health_endpoints(served: Callable[..., Served]) -> None:
    server = served()
    base = f"http://127.0.0.1:{server.metrics_port}"
    for path, expected in (("/healthz", b"ok\n"), ("/readyz", b"ready\n")):
        with urllib.request.urlopen(base + path, timeout=10) as reply:
            assert reply.status == 200 and reply.read() == expected
    metrics = server.metrics()
    assert "otel_traj_traces_in_flight" in metrics
    # A service's own process, as every Prometheus client library exposes it.
    assert server.metric("process_resident_memory_bytes") > 10 * 2**20
    assert server.metric("process_open_fds") > 0
    assert 'python_info{implementation="CPython"' in metrics
    assert "python_gc_collections_total" in metrics
    assert server.stop() == 0
