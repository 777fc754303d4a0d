"""Unreadable files raise TraceFileError naming the file; bad spans inside good files are counted."""

from __future__ import annotations

import gzip
import json
import string
from pathlib import Path
from typing import Any

import pytest
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span

from otel_traj.adapters import (
    NotATraceFileError,
    TraceFile,
    TraceFileError,
    read_trace_file,
    read_trace_files,
    views_from_bytes,
    views_from_jaeger,
    views_from_otlp_json,
)
from otel_traj.spanview import MalformedSpan

TRACE_HEX = "5b8efff798038103d269b633813fc60c"
SPAN_HEX = "eee19b7ec3c1b173"
GOOD_SPAN = {"traceId": TRACE_HEX, "spanId": SPAN_HEX, "name": "ok", "startTimeUnixNano": "1"}


def _write(tmp_path: Path, name: str, content: bytes | str) -> Path:
    path = tmp_path / name
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    return path


def _error(path: Path) -> TraceFileError:
    with pytest.raises(TraceFileError) as info:
        read_trace_file(path)
    assert str(info.value).startswith(f"{path}: ")
    assert info.value.path == path
    return info.value


def test_missing_file(tmp_path: Path) -> None:
    assert "cannot read: No such file or directory" in str(_error(tmp_path / "missing.json"))


def test_directory_read_as_a_file(tmp_path: Path) -> None:
    assert "cannot read" in str(_error(tmp_path))


@pytest.mark.parametrize("content", ["", "  \n\t\n"])
def test_empty_file(tmp_path: Path, content: str) -> None:
    assert _error(_write(tmp_path, "empty.json", content)).reason == "empty file"


def test_invalid_json_names_the_line(tmp_path: Path) -> None:
    traces = tmp_path / "traces"
    traces.mkdir()
    path = _write(traces, "a.json", '{\n  "resourceSpans": [\n    {"resource": }\n  ]\n}\n')
    error = _error(path)
    assert error.reason.startswith("invalid JSON at line 3: Expecting value")


def test_invalid_json_lines_names_the_line(tmp_path: Path) -> None:
    line = json.dumps({"resourceSpans": []})
    path = _write(tmp_path, "c.jsonl", f"{line}\n{line}\n{{broken\n{line}\n")
    assert _error(path).reason.startswith("invalid JSON at line 3: ")


def test_unknown_json_shape(tmp_path: Path) -> None:
    traces = tmp_path / "traces"
    traces.mkdir()
    path = _write(traces, "a.json", '{"spans": []}')
    with pytest.raises(NotATraceFileError) as info:
        read_trace_file(path)
    assert str(info.value) == (
        f"{path}: not a trace file: JSON object has none of resourceSpans, batches, data, trace"
    )


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ("42", "not a trace file: a JSON number, not a trace object"),
        ('"text"', "not a trace file: a JSON string, not a trace object"),
        ("[1, 2]", "not a trace file: JSON array holds no trace objects"),
        ('{"resourceSpans": []}\nnull\n', "not a trace file: a JSON null, not a trace object"),
    ],
)
def test_json_values_that_are_not_traces(tmp_path: Path, content: str, reason: str) -> None:
    error = _error(_write(tmp_path, "v.json", content))
    assert isinstance(error, NotATraceFileError)
    assert error.reason == reason


def test_binary_that_is_not_protobuf(tmp_path: Path) -> None:
    error = _error(_write(tmp_path, "a.pb", b"\xff\xfe\x00garbage\x01"))
    assert error.reason.startswith("neither OTLP protobuf nor JSON")


def test_protobuf_of_another_message(tmp_path: Path) -> None:
    # Valid protobuf wire format (field 2, varint) that holds no resource spans.
    assert "not an OTLP trace export request" in _error(_write(tmp_path, "b.pb", b"\x10\x01")).reason


def test_text_that_is_not_json(tmp_path: Path) -> None:
    error = _error(_write(tmp_path, "notes.txt", "hello world\n"))
    assert error.reason == "invalid JSON at line 1: Expecting value"


def test_broken_gzip(tmp_path: Path) -> None:
    data = gzip.compress(b'{"resourceSpans": []}')[:-6]
    assert _error(_write(tmp_path, "t.json.gz", data)).reason.startswith("invalid gzip data")


def test_broken_zstd(tmp_path: Path) -> None:
    data = zstandard.ZstdCompressor().compress(b'{"resourceSpans": []}')[:-3]
    assert _error(_write(tmp_path, "t.json.zst", data)).reason.startswith("invalid zstd data")
    # A file exporter stream whose second frame is broken: the file is refused, not half read.
    good = zstandard.ZstdCompressor().compress(json.dumps({"resourceSpans": []}).encode())
    stream = b"".join(len(f).to_bytes(4) + f for f in (good, b"\x28\xb5\x2f\xfd broken"))
    assert _error(_write(tmp_path, "stream.bin", stream)).reason.startswith("invalid zstd data")


def test_directory_passes_over_other_json_but_not_broken_files(tmp_path: Path) -> None:
    good = {"resourceSpans": [{"scopeSpans": [{"spans": [GOOD_SPAN]}]}]}
    _write(tmp_path, "run.otlp.json", json.dumps(good))
    _write(tmp_path, "run.facts.json", json.dumps({"framework": "x"}))
    _write(tmp_path, "run.spans.txt", "not read: unknown suffix")
    batch = read_trace_files([tmp_path])
    assert [v.name for v in batch] == ["ok"]
    with pytest.raises(NotATraceFileError):
        read_trace_files([tmp_path / "run.facts.json"])
    (tmp_path / "sub").mkdir()
    _write(tmp_path / "sub", "broken.json", "{")
    with pytest.raises(TraceFileError, match=r"sub/broken\.json: invalid JSON at line 1"):
        read_trace_files([tmp_path])


def test_malformed_json_spans_are_counted_not_raised() -> None:
    bad_spans: list[Any] = [
        {**GOOD_SPAN, "spanId": None},
        {**GOOD_SPAN, "traceId": "xyz"},
        {**GOOD_SPAN, "spanId": "0000000000000000"},
        {**GOOD_SPAN, "name": 5},
        {**GOOD_SPAN, "startTimeUnixNano": "soon"},
        {**GOOD_SPAN, "attributes": [{"key": "k", "value": {"boolValue": "yes"}}]},
        {**GOOD_SPAN, "attributes": {"k": "v"}},
        "not a span",
    ]
    doc = {"resourceSpans": [{"scopeSpans": [{"spans": [GOOD_SPAN, *bad_spans]}]}, "junk"]}
    batch = views_from_otlp_json(doc)
    assert [v.name for v in batch if not isinstance(v, MalformedSpan)] == ["ok"]
    assert batch.malformed == len(bad_spans) + 1
    # Those whose trace id reads stay in their trace, saying which field was wrong.
    assert [(v.span_id, v.reason.split(":")[0]) for v in batch if isinstance(v, MalformedSpan)] == [
        (0, "spanId"),
        (0, "spanId"),
        (int(SPAN_HEX, 16), "name"),
        (int(SPAN_HEX, 16), "startTimeUnixNano"),
        (int(SPAN_HEX, 16), "attributes"),
        (int(SPAN_HEX, 16), "attributes"),
    ]


def test_malformed_jaeger_spans_are_counted_not_raised() -> None:
    good = {"traceID": TRACE_HEX, "spanID": "1", "operationName": "ok", "startTime": 1, "duration": 1}
    bad: list[Any] = [
        {**good, "spanID": "0x1"},
        {**good, "traceID": 7},
        {**good, "startTime": "later"},
        {**good, "tags": [{"key": "n", "type": "int64", "value": "many"}]},
        {**good, "references": "parent"},
        [],
    ]
    batch = views_from_jaeger({"data": [{"spans": [good, *bad]}, "junk"]})
    assert [v.name for v in batch if not isinstance(v, MalformedSpan)] == ["ok"]
    assert batch.malformed == len(bad) + 1
    assert [(v.span_id, v.reason.split(":")[0]) for v in batch if isinstance(v, MalformedSpan)] == [
        (0, "spanID"),
        (1, "startTime"),
        (1, "tags"),
        (1, "references"),
    ]


def test_malformed_protobuf_spans_are_counted_not_raised() -> None:
    def span(trace_id: bytes, span_id: bytes, parent: bytes = b"") -> Span:
        return Span(trace_id=trace_id, span_id=span_id, parent_span_id=parent, name="s")

    request = ExportTraceServiceRequest(
        resource_spans=[
            ResourceSpans(
                scope_spans=[
                    ScopeSpans(
                        spans=[
                            span(b"\x01" * 16, b"\x02" * 8),
                            span(b"", b"\x02" * 8),
                            span(b"\x01" * 16, b"\x02" * 7),
                            span(b"\x00" * 16, b"\x02" * 8),
                            span(b"\x01" * 16, b"\x02" * 8, parent=b"\x03" * 5),
                        ]
                    )
                ]
            )
        ]
    )
    batch = views_from_bytes(request.SerializeToString())
    assert [(v.trace_id, v.span_id, v.parent_id) for v in batch if not isinstance(v, MalformedSpan)] == [
        (int("01" * 16, 16), int("02" * 8, 16), None)
    ]
    assert batch.malformed == 4
    # The two whose trace id is valid stay in their trace, saying which id is wrong.
    assert [(v.span_id, v.reason) for v in batch if isinstance(v, MalformedSpan)] == [
        (0, "span_id: 7 bytes, not 8"),
        (int("02" * 8, 16), "parent_span_id: 5 bytes, not 8"),
    ]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "resourceSpans",
                    "scopeSpans",
                    "spans",
                    "traceId",
                    "spanId",
                    "attributes",
                    "key",
                    "value",
                    "stringValue",
                    "intValue",
                    "arrayValue",
                    "kvlistValue",
                    "values",
                    "batches",
                    "trace",
                    "data",
                    "result",
                    "processes",
                    "tags",
                    "type",
                    "references",
                    "logs",
                    "fields",
                    "traceID",
                    "spanID",
                    "events",
                    "status",
                    "code",
                    "kind",
                ]
            )
            | st.text(string.ascii_letters, max_size=8),
            children,
            max_size=5,
        )
    ),
    max_leaves=30,
)

HYPOTHESIS = settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def read_or_reject(path: Path) -> TraceFile | None:
    """Read ``path``; the one exception allowed is a TraceFileError that names the file (then None).
    What is read is the file's, and every span read has its ids."""
    try:
        result = read_trace_file(path)
    except TraceFileError as exc:
        assert str(exc).startswith(str(path))
        return None
    assert result.path == path
    assert all(v.trace_id > 0 and v.span_id > 0 for v in result.views)
    return result


def _span_entries(spans: Any) -> int:
    """How many span entries an OTLP/JSON ``spans`` value holds: ``null`` none, a list one per item,
    anything else one (a malformed entry where the list belongs)."""
    if spans is None:
        return 0
    return len(spans) if isinstance(spans, list) else 1


# Wrappers whose span count is known whatever the random document: it is the spans list, or the
# attributes and events of one well-formed span.
SPANS_IN = {"resourceSpans": _span_entries, "spans": lambda doc: 1}


@HYPOTHESIS
@given(data=st.binary(max_size=300))
def test_random_bytes_never_raise_anything_but_trace_file_error(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "random.bin"
    path.write_bytes(data)
    read_or_reject(path)


@HYPOTHESIS
@given(
    doc=json_values,
    wrapper=st.sampled_from(["bare", "resourceSpans", "batches", "data", "result", "spans", "gzip"]),
)
def test_random_json_never_raises_anything_but_trace_file_error(
    tmp_path: Path, doc: Any, wrapper: str
) -> None:
    original = doc
    if wrapper == "resourceSpans":
        doc = {"resourceSpans": [{"scopeSpans": [{"spans": doc}]}]}
    elif wrapper == "batches":
        doc = {"batches": [{"instrumentationLibrarySpans": doc}]}
    elif wrapper == "data":
        doc = {"data": [{"spans": doc, "processes": doc}]}
    elif wrapper == "result":
        doc = {"result": doc}
    elif wrapper == "spans":
        doc = {
            "resourceSpans": [{"scopeSpans": [{"spans": [{**GOOD_SPAN, "attributes": doc, "events": doc}]}]}]
        }
    content = json.dumps(doc).encode()
    path = tmp_path / "random.json"
    path.write_bytes(gzip.compress(content) if wrapper == "gzip" else content)
    result = read_or_reject(path)
    if wrapper in SPANS_IN:
        # A valid OTLP/JSON envelope: the file is read, and each span entry in it is either read or
        # counted as malformed (and then perhaps kept as a placeholder), never lost, never counted twice.
        assert result is not None
        read = [v for v in result.views if not isinstance(v, MalformedSpan)]
        assert len(read) + result.malformed == SPANS_IN[wrapper](original)
        assert len(result.views) - len(read) <= result.malformed
