"""Hostile OTLP bodies, protobuf and JSON, generated: whatever a sender puts in a request, decoding
either gives spans or a clear invalid-request error, and grading what was decoded never raises.

The strategies build structurally valid requests with hostile contents (ids of any length, huge and
negative times, unknown enums, attribute values of every AnyValue kind nested deep, GenAI keys with
values of the wrong type) and arbitrary bytes and JSON trees; the service answers such a body with
200 or 400, never 500, and goes on serving.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import json_format
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

from otel_traj.adapters.batch import SpanBatch
from otel_traj.dialects import MARKERS, to_step
from otel_traj.dialects.fields import TABLE
from otel_traj.offline import trajectories_from_views
from otel_traj.records import RecordMaker
from otel_traj.serve import Service
from otel_traj.serve.codec import decode_json, decode_protobuf
from otel_traj.serve.ingest import InvalidRequest
from otel_traj.spanview import MalformedSpan, SpanView
from tests.properties import examples
from tests.serve_helpers import FIXTURES, local_settings, post
from tests.test_adapters_errors import json_values

# Every key the dialects read (markers and the evidence table's sources), so that hostile values
# reach the parsers rather than being ignored.
GENAI_KEYS = sorted(
    MARKERS
    | {s.trigger for sources in TABLE.values() for s in sources if s.trigger}
    | {"metadata", "app.customer_id"}
)
OPERATIONS = ["execute_tool", "chat", "invoke_agent", "TOOL", "LLM", "AGENT", "tool", "generation"]
JSON_TEXT = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=15,
).map(lambda value: json.dumps(value, allow_nan=True))
INT64 = st.integers(-(2**63), 2**63 - 1)


def _any_value(depth: int = 0) -> st.SearchStrategy[AnyValue]:
    leaves = st.one_of(
        st.text(max_size=40).map(lambda v: AnyValue(string_value=v)),
        JSON_TEXT.map(lambda v: AnyValue(string_value=v)),
        st.sampled_from(OPERATIONS).map(lambda v: AnyValue(string_value=v)),
        st.booleans().map(lambda v: AnyValue(bool_value=v)),
        INT64.map(lambda v: AnyValue(int_value=v)),
        st.floats(allow_nan=True, allow_infinity=True).map(lambda v: AnyValue(double_value=v)),
        st.binary(max_size=20).map(lambda v: AnyValue(bytes_value=v)),
        st.just(AnyValue()),
    )
    if depth >= 4:
        return leaves
    nested = _any_value(depth + 1)
    return st.one_of(
        leaves,
        st.lists(nested, max_size=3).map(_array),
        st.lists(st.tuples(st.text(max_size=8), nested), max_size=3).map(_kvlist),
    )


def _array(values: list[AnyValue]) -> AnyValue:
    value = AnyValue()
    value.array_value.values.extend(values)
    return value


def _kvlist(pairs: list[tuple[str, AnyValue]]) -> AnyValue:
    value = AnyValue()
    value.kvlist_value.values.extend(KeyValue(key=k, value=v) for k, v in pairs)
    return value


_attributes = st.lists(
    st.tuples(st.sampled_from(GENAI_KEYS) | st.text(max_size=12), _any_value()), max_size=8
).map(lambda pairs: [KeyValue(key=k, value=v) for k, v in pairs])
_ids = st.sampled_from([1, 2, 3]).map(lambda n: n.to_bytes(8, "big")) | st.binary(max_size=20)
_trace_ids = st.just(b"\x01" * 16) | st.binary(max_size=20)


@st.composite
def requests(draw: st.DrawFn) -> ExportTraceServiceRequest:
    request = ExportTraceServiceRequest()
    for _ in range(draw(st.integers(0, 2))):
        resource_spans = request.resource_spans.add()
        resource_spans.resource.attributes.extend(draw(_attributes))
        scope_spans = resource_spans.scope_spans.add()
        scope_spans.scope.name = draw(st.text(max_size=10))
        for _ in range(draw(st.integers(0, 5))):
            span = scope_spans.spans.add()
            span.trace_id = draw(_trace_ids)
            span.span_id = draw(_ids)
            span.parent_span_id = draw(_ids | st.just(b""))
            span.name = draw(
                st.sampled_from(["execute_tool t", "chat m", "invoke_agent a", "running tool"])
                | st.text(max_size=20)
            )
            span.kind = draw(st.integers(0, 2**31 - 1))
            span.start_time_unix_nano = draw(st.integers(0, 2**64 - 1))
            span.end_time_unix_nano = draw(st.integers(0, 2**64 - 1))
            span.flags = draw(st.integers(0, 2**32 - 1))
            span.status.code = draw(st.integers(0, 2**31 - 1))
            span.status.message = draw(st.text(max_size=20))
            span.attributes.extend(draw(_attributes))
            for _ in range(draw(st.integers(0, 2))):
                event = span.events.add()
                event.name = draw(
                    st.sampled_from(["exception", "gen_ai.choice", "gen_ai.tool.message"])
                    | st.text(max_size=10)
                )
                event.time_unix_nano = draw(st.integers(0, 2**64 - 1))
                event.attributes.extend(draw(_attributes))
    return request


def _grade_everything(batch: SpanBatch) -> None:
    """What every front door does with decoded spans; none of it may raise."""
    views = list(batch)
    maker = RecordMaker(("app.customer_id", "session.id"), 64)
    for view in views:
        record = maker(view)
        assert (record.step is None) == (to_step(view, 64) is None)
    for trajectory in trajectories_from_views(views):
        assert trajectory.trace_id > 0
        assert all(isinstance(call.name, str) for call in trajectory.tool_calls)


def _read_whole(batch: SpanBatch) -> list[SpanView]:
    """The spans read whole; the others, counted malformed, stay only as placeholders of their
    trace (their trace id read) and say what was wrong."""
    placeholders = [view for view in batch if isinstance(view, MalformedSpan)]
    assert len(placeholders) <= batch.malformed
    assert all(view.trace_id > 0 and view.reason for view in placeholders)
    return [view for view in batch if not isinstance(view, MalformedSpan)]


def _span_count(request: ExportTraceServiceRequest) -> int:
    return sum(len(ss.spans) for rs in request.resource_spans for ss in rs.scope_spans)


@settings(max_examples=examples(250), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(requests())
def test_hostile_protobuf_requests_decode_to_valid_spans_or_count_them_malformed(
    request: ExportTraceServiceRequest,
) -> None:
    batch = decode_protobuf(request.SerializeToString())
    views = _read_whole(batch)
    assert len(views) + batch.malformed == _span_count(request)
    for view in views:
        assert view.trace_id > 0 and view.span_id > 0
        assert view.trace_id < 2**128 and view.span_id < 2**64
    _grade_everything(batch)


@settings(max_examples=examples(300), deadline=None)
@given(st.binary(max_size=300))
def test_arbitrary_bytes_are_spans_or_an_invalid_request(data: bytes) -> None:
    try:
        batch = decode_protobuf(data)
    except InvalidRequest as exc:
        assert str(exc).startswith("not an ExportTraceServiceRequest")
        return
    _grade_everything(batch)


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(json_values)
def test_hostile_json_documents_are_spans_or_an_invalid_request(doc: Any) -> None:
    try:
        batch = decode_json(json.dumps(doc).encode())
    except InvalidRequest as exc:
        assert str(exc)
        return
    _grade_everything(batch)


_ID_FIELDS = frozenset({"traceId", "spanId", "parentSpanId"})


def _otlp_json(node: Any) -> Any:
    """protobuf's JSON form of a request as OTLP/JSON writes it: ids as hex, not base64."""
    if isinstance(node, dict):
        return {
            k: base64.b64decode(v).hex() if k in _ID_FIELDS and isinstance(v, str) else _otlp_json(v)
            for k, v in node.items()
        }
    if isinstance(node, list):
        return [_otlp_json(v) for v in node]
    return node


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(requests())
def test_hostile_otlp_json_requests_decode_like_their_protobuf_form(
    request: ExportTraceServiceRequest,
) -> None:
    doc = _otlp_json(json_format.MessageToDict(request))
    proto = decode_protobuf(request.SerializeToString())
    try:
        batch = decode_json(json.dumps(doc).encode())
    except InvalidRequest as exc:
        # Refused as a whole only for a value JSON cannot carry for its field.
        assert str(exc)
        return
    whole = _read_whole(batch)
    assert len(whole) + batch.malformed == _span_count(request)
    assert [(v.trace_id, v.span_id, v.name) for v in whole] == [
        (v.trace_id, v.span_id, v.name) for v in _read_whole(proto)
    ]
    _grade_everything(batch)


@pytest.fixture
def http_url(tmp_path: Path) -> Iterator[str]:
    # One service for all the examples of the test (hypothesis runs them in one call of the test).
    service = Service(local_settings(tmp_path))
    try:
        ports = service.start()
        yield f"http://127.0.0.1:{ports.http}/v1/traces"
    finally:
        service.stop()


@settings(
    max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(request=requests(), garbage=st.binary(max_size=64))
def test_the_service_answers_hostile_bodies_200_or_400_and_goes_on(
    http_url: str, request: ExportTraceServiceRequest, garbage: bytes
) -> None:
    assert post(http_url, request.SerializeToString())[0] == 200
    assert post(http_url, garbage)[0] in (200, 400)
    assert post(http_url, garbage, "application/json")[0] in (200, 400)
    assert post(http_url, (FIXTURES / "openai_v2" / "clean.otlp.pb").read_bytes())[0] == 200
