"""The SDK, OTLP protobuf and OTLP/JSON paths give the same SpanViews for the same real spans.

Spans come from the real SDK, bytes from the official OTLP encoder, JSON from protobuf's own printer.
"""

from __future__ import annotations

import base64
import gzip
import io
import json
from pathlib import Path
from typing import Any

import pytest
import zstandard
from google.protobuf import json_format
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import (
    Link,
    NonRecordingSpan,
    SpanContext,
    SpanKind,
    Status,
    StatusCode,
    TraceFlags,
    set_span_in_context,
)

from otel_traj import spanview
from otel_traj.adapters import (
    from_readable_span,
    read_trace_file,
    read_trace_files,
    views_from_bytes,
    views_from_otlp_json,
    views_from_request,
)
from otel_traj.adapters.sdk import comparable
from tests.real_frameworks import recorded_traces

REMOTE_TRACE = 0x0AF7651916CD43DD8448EB211C80319C
REMOTE_PARENT = 0xB7AD6B7169203331
REAL = Path(__file__).parent / "fixtures" / "real"
ID_KEYS = {"traceId", "spanId", "parentSpanId"}

TOOL_ATTRIBUTES: dict[str, Any] = {
    "gen_ai.operation.name": "execute_tool",
    "gen_ai.tool.name": "lookup_order",
    "text.unicode": "Grüße, 世界",
    "text.empty": "",
    "flag": True,
    "count": 7,
    "big": 2**62,
    "negative": -3,
    "ratio": 0.125,
    "names": ("a", "b"),
    "bools": (True, False),
    "ints": (1, 2, 3),
    "floats": (0.5, 1.5),
}


def comparable_all(views: list[spanview.SpanView]) -> list[tuple[Any, ...]]:
    return sorted((comparable(v) for v in views), key=lambda c: (c[0], c[1]))


def _provider(resource: dict[str, Any]) -> tuple[TracerProvider, InMemorySpanExporter]:
    provider = TracerProvider(resource=Resource.create(resource), shutdown_on_exit=False)
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def _record_spans() -> list[ReadableSpan]:
    agent_provider, agent_spans = _provider(
        {"service.name": "support-agent", "service.version": "2.1.0", "replicas": 3, "weights": (0.5, 1.5)}
    )
    other_provider, other_spans = _provider({"service.name": "billing"})
    tracer = agent_provider.get_tracer("otel_traj.tests.agent", "0.1.0")
    plain_tracer = agent_provider.get_tracer("otel_traj.tests.plain")
    remote = SpanContext(
        REMOTE_TRACE, REMOTE_PARENT, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED)
    )
    linked = SpanContext(0x1234, 0x5678, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED))

    with tracer.start_as_current_span(
        "invoke_agent support",
        context=set_span_in_context(NonRecordingSpan(remote)),
        kind=SpanKind.SERVER,
        attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "support"},
    ) as agent:
        agent.add_event("gen_ai.user.message", {"content": "where is my order?"})
        with tracer.start_as_current_span(
            "execute_tool lookup_order",
            kind=SpanKind.CLIENT,
            attributes=TOOL_ATTRIBUTES,
            links=[Link(linked, {"link.reason": "retry-of"})],
        ) as tool:
            tool.add_event("gen_ai.tool.message", {"content": "{}", "size": 2, "parts": ("x", "y")})
            tool.set_status(Status(StatusCode.ERROR, "order not found"))
        with tracer.start_as_current_span("chat gpt-4o", kind=SpanKind.PRODUCER) as chat:
            chat.set_status(Status(StatusCode.OK))
        with plain_tracer.start_as_current_span("consume", kind=SpanKind.CONSUMER):
            pass
        try:
            with plain_tracer.start_as_current_span("failing step"):
                raise RuntimeError("boom")
        except RuntimeError:
            pass
    with other_provider.get_tracer("billing").start_as_current_span("charge"):
        pass
    return [*agent_spans.get_finished_spans(), *other_spans.get_finished_spans()]


@pytest.fixture(scope="module")
def spans() -> list[ReadableSpan]:
    return _record_spans()


@pytest.fixture(scope="module")
def request_message(spans: list[ReadableSpan]) -> ExportTraceServiceRequest:
    return encode_spans(spans)


def _hex_ids(node: Any) -> Any:
    """Protobuf's JSON printer writes ids as base64; the OTLP spec says hex."""
    if isinstance(node, dict):
        return {
            k: base64.b64decode(v).hex() if k in ID_KEYS and isinstance(v, str) else _hex_ids(v)
            for k, v in node.items()
        }
    if isinstance(node, list):
        return [_hex_ids(item) for item in node]
    return node


def _ints_as_numbers(node: Any) -> Any:
    if isinstance(node, dict):
        return {
            k: int(v) if k in ("intValue", "startTimeUnixNano", "endTimeUnixNano") else _ints_as_numbers(v)
            for k, v in node.items()
        }
    if isinstance(node, list):
        return [_ints_as_numbers(item) for item in node]
    return node


def spec_json(request: ExportTraceServiceRequest) -> dict[str, Any]:
    return _hex_ids(json_format.MessageToDict(request, use_integers_for_enums=True))  # type: ignore[no-any-return]


def test_protobuf_path_reads_what_the_sdk_recorded(request_message: ExportTraceServiceRequest) -> None:
    views = {v.name: v for v in views_from_request(request_message)}
    assert views_from_request(request_message).malformed == 0
    agent, tool = views["invoke_agent support"], views["execute_tool lookup_order"]
    assert agent.trace_id == REMOTE_TRACE
    assert (agent.parent_id, agent.parent_is_remote, agent.is_local_root) == (REMOTE_PARENT, True, True)
    assert (tool.parent_id, tool.parent_is_remote, tool.is_local_root) == (agent.span_id, False, False)
    assert dict(tool.attributes) == TOOL_ATTRIBUTES
    assert (tool.status_code, tool.status_message) == (spanview.STATUS_ERROR, "order not found")
    assert [(e.name, dict(e.attributes or {})) for e in tool.events] == [
        ("gen_ai.tool.message", {"content": "{}", "size": 2, "parts": ("x", "y")})
    ]
    assert tool.start_ns < tool.end_ns
    assert [views[n].kind for n in ("invoke_agent support", "execute_tool lookup_order")] == [
        spanview.KIND_SERVER,
        spanview.KIND_CLIENT,
    ]
    assert (views["chat gpt-4o"].kind, views["consume"].kind, views["failing step"].kind) == (
        spanview.KIND_PRODUCER,
        spanview.KIND_CONSUMER,
        spanview.KIND_INTERNAL,
    )
    assert (views["chat gpt-4o"].status_code, views["consume"].status_code) == (
        spanview.STATUS_OK,
        spanview.STATUS_UNSET,
    )
    assert views["failing step"].is_error
    assert [e.name for e in views["failing step"].events] == ["exception"]
    assert agent.resource["service.name"] == "support-agent"
    assert agent.resource["weights"] == (0.5, 1.5)
    assert (agent.scope_name, views["consume"].scope_name) == (
        "otel_traj.tests.agent",
        "otel_traj.tests.plain",
    )
    charge = views["charge"]
    assert (charge.parent_id, charge.parent_is_remote, charge.resource["service.name"]) == (
        None,
        False,
        "billing",
    )


def test_sdk_protobuf_and_json_paths_agree(
    spans: list[ReadableSpan], request_message: ExportTraceServiceRequest
) -> None:
    from_sdk = comparable_all([from_readable_span(s) for s in spans])
    assert len(from_sdk) == 6
    assert comparable_all(views_from_bytes(request_message.SerializeToString())) == from_sdk
    assert comparable_all(views_from_otlp_json(spec_json(request_message))) == from_sdk


def test_sdk_path_copies_no_attribute_value(spans: list[ReadableSpan]) -> None:
    span = next(s for s in spans if s.name == "execute_tool lookup_order")
    view = from_readable_span(span)
    assert [e.name for e in view.events] == [e.name for e in span.events]
    # Same objects as the span holds (identity, not equality), so no value was copied.
    assert all(a is b for a, b in zip(view.attributes.values(), span.attributes.values(), strict=True))


@pytest.mark.parametrize(
    "variant",
    ["base64 ids", "snake_case keys", "integers as numbers", "enum names"],
)
def test_json_variants_in_the_wild_agree(request_message: ExportTraceServiceRequest, variant: str) -> None:
    if variant == "base64 ids":
        doc = json_format.MessageToDict(request_message, use_integers_for_enums=True)
    elif variant == "snake_case keys":
        doc = json_format.MessageToDict(request_message, preserving_proto_field_name=True)
    elif variant == "integers as numbers":
        doc = _ints_as_numbers(spec_json(request_message))
    else:
        doc = _hex_ids(json_format.MessageToDict(request_message))
    assert comparable_all(views_from_otlp_json(doc)) == comparable_all(views_from_request(request_message))


def _prefixed(frame: bytes) -> bytes:
    return len(frame).to_bytes(4) + frame


def _zstd_stream(raw: bytes) -> bytes:
    """A zstd frame that does not state its size, as streaming compressors write them."""
    out = io.BytesIO()
    with zstandard.ZstdCompressor().stream_writer(out, closefd=False) as writer:
        writer.write(raw)
    return out.getvalue()


def _write_forms(request: ExportTraceServiceRequest, directory: Path) -> list[Path]:
    zstd = zstandard.ZstdCompressor()
    data = request.SerializeToString()
    spec = spec_json(request)
    parts = [ExportTraceServiceRequest(resource_spans=[rs]) for rs in request.resource_spans]
    halves = [spec_json(part) for part in parts]
    forms = {
        "trace.otlp.pb": data,
        "trace-without-extension": data,
        "trace.otlp.json": json.dumps(spec, indent=1).encode(),
        "list.json": json.dumps(halves).encode(),
        "lines.jsonl": "\n".join(json.dumps(h) for h in halves).encode(),
        "concatenated.json": "\n".join(json.dumps(h, indent=2) for h in halves).encode(),
        "trace.otlp.json.gz": gzip.compress(json.dumps(spec).encode()),
        "trace.pb.gz": gzip.compress(data),
        # The Collector file exporter's ``format: proto``: each message after its 4-byte length.
        "delimited.bin": b"".join(
            len(raw).to_bytes(4) + raw for raw in (part.SerializeToString() for part in parts)
        ),
        "bom.json": b"\xef\xbb\xbf" + json.dumps(spec).encode(),
        "trace.otlp.json.zst": zstd.compress(json.dumps(spec).encode()),
        # A file of two zstd frames (zstd files concatenated), written without content sizes.
        "trace.pb.zst": b"".join(
            _zstd_stream(raw) for raw in (data[: len(data) // 2], data[len(data) // 2 :])
        ),
        # The file exporter with ``compression: zstd``: each request compressed, then length-prefixed.
        "proto-zstd.bin": b"".join(_prefixed(zstd.compress(part.SerializeToString())) for part in parts),
        "json-zstd.bin": b"".join(_prefixed(zstd.compress(json.dumps(h).encode())) for h in halves),
    }
    for name, content in forms.items():
        (directory / name).write_bytes(content)
    return [directory / name for name in forms]


def test_every_file_form_reads_the_same_views(
    request_message: ExportTraceServiceRequest, tmp_path: Path
) -> None:
    expected = comparable_all(views_from_request(request_message))
    formats = {}
    for path in _write_forms(request_message, tmp_path):
        result = read_trace_file(path)
        assert comparable_all(result.views) == expected, path.name
        assert result.malformed == 0
        formats[path.name] = result.format
    assert formats == {
        "trace.otlp.pb": "otlp-protobuf",
        "trace-without-extension": "otlp-protobuf",
        "trace.otlp.json": "otlp-json",
        "list.json": "otlp-json",
        "lines.jsonl": "otlp-json lines",
        "concatenated.json": "otlp-json lines",
        "trace.otlp.json.gz": "otlp-json (gzip)",
        "trace.pb.gz": "otlp-protobuf (gzip)",
        "delimited.bin": "otlp-protobuf delimited",
        "bom.json": "otlp-json",
        "trace.otlp.json.zst": "otlp-json (zstd)",
        "trace.pb.zst": "otlp-protobuf (zstd)",
        "proto-zstd.bin": "otlp-protobuf delimited (zstd)",
        "json-zstd.bin": "otlp-json delimited (zstd)",
    }


REAL_PAIRS = recorded_traces()


@pytest.mark.parametrize("pb_path", REAL_PAIRS, ids=lambda p: str(p.relative_to(REAL)))
def test_real_fixture_protobuf_and_json_agree(pb_path: Path) -> None:
    json_path = pb_path.with_name(pb_path.name.removesuffix(".pb") + ".json")
    from_pb = read_trace_file(pb_path)
    from_json = read_trace_file(json_path)
    assert from_pb.malformed == from_json.malformed == 0
    assert len(from_pb.views) > 0
    assert comparable_all(from_json.views) == comparable_all(from_pb.views)


def test_directory_reads_each_span_once(request_message: ExportTraceServiceRequest, tmp_path: Path) -> None:
    expected = comparable_all(views_from_request(request_message))
    _write_forms(request_message, tmp_path)
    batch = read_trace_files([tmp_path])
    assert comparable_all(batch) == expected
    # 13 files with trace suffixes (the one without an extension is not picked up) hold the same spans.
    assert batch.duplicates == 12 * len(expected)
    assert batch.malformed == 0
