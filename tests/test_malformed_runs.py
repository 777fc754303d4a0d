"""A span that cannot be read, in a run that otherwise can: the run is never graded as whole.

For every trace-file format and for ``serve``'s decoders, one span of a good run is broken (a bad
time, a span id that is not one, a field of the wrong type): it is counted malformed as before, and,
its trace id being readable, kept in its run as an unreadable step whose reason says what was wrong
(and, in a file, names the file). A broken span whose trace id cannot be read is only counted.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span

from otel_traj.adapters.files import read_trace_inputs
from otel_traj.cli import main
from otel_traj.config import AssemblerConfig
from otel_traj.grader import Grader
from otel_traj.offline import trajectories_from_views
from otel_traj.pipeline import Pipeline
from otel_traj.serve.codec import decode_json, decode_protobuf
from otel_traj.serve.ingest import Ingest
from otel_traj.spanview import MalformedSpan
from otel_traj.trajectory import Trajectory
from otel_traj.verdict import Verdict

TRACE = "5b8efff798038103d269b633813fc60c"
ROOT, CHAT, TOOL, EXTRA = "00000000000000a1", "00000000000000a2", "00000000000000a3", "00000000000000a4"
# (span id, parent, name, start s, end s, attributes): an agent run, its model call and its tool call.
RUN: list[tuple[str, str, str, int, int, dict[str, str]]] = [
    (
        ROOT,
        "",
        "invoke_agent support",
        1,
        9,
        {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "support"},
    ),
    (CHAT, ROOT, "chat gpt-4o", 2, 3, {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o"}),
    (
        TOOL,
        ROOT,
        "execute_tool lookup",
        4,
        5,
        {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup"},
    ),
    (
        EXTRA,
        ROOT,
        "execute_tool lookup",
        6,
        7,
        {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup"},
    ),
]
SECOND = 1_000_000_000


def _otlp_span(
    span_id: str, parent: str, name: str, start: int, end: int, attrs: dict[str, str]
) -> dict[str, Any]:
    return {
        "traceId": TRACE,
        "spanId": span_id,
        "parentSpanId": parent,
        "name": name,
        "startTimeUnixNano": str(start * SECOND),
        "endTimeUnixNano": str(end * SECOND),
        "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attrs.items()],
    }


def _otlp_doc(spans: list[dict[str, Any]]) -> dict[str, Any]:
    return {"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}


def _jaeger_span(
    span_id: str, parent: str, name: str, start: int, end: int, attrs: dict[str, str]
) -> dict[str, Any]:
    refs = [{"refType": "CHILD_OF", "traceID": TRACE, "spanID": parent}] if parent else []
    return {
        "traceID": TRACE,
        "spanID": span_id,
        "operationName": name,
        "references": refs,
        "startTime": start * 1_000_000,
        "duration": (end - start) * 1_000_000,
        "tags": [{"key": k, "type": "string", "value": v} for k, v in attrs.items()],
    }


def _proto_span(span_id: str, parent: str, name: str, start: int, end: int, attrs: dict[str, str]) -> Span:
    return Span(
        trace_id=bytes.fromhex(TRACE),
        span_id=bytes.fromhex(span_id),
        parent_span_id=bytes.fromhex(parent),
        name=name,
        start_time_unix_nano=start * SECOND,
        end_time_unix_nano=end * SECOND,
        attributes=[KeyValue(key=k, value=AnyValue(string_value=v)) for k, v in attrs.items()],
    )


def _proto_request(spans: list[Span]) -> bytes:
    request = ExportTraceServiceRequest(resource_spans=[ResourceSpans(scope_spans=[ScopeSpans(spans=spans)])])
    return request.SerializeToString()


def _json_file(broken: Callable[[dict[str, Any]], None]) -> bytes:
    spans = [_otlp_span(*span) for span in RUN]
    broken(spans[-1])
    return json.dumps(_otlp_doc(spans)).encode()


def _jsonl_file(broken: Callable[[dict[str, Any]], None]) -> bytes:
    """The Collector file exporter's JSON Lines: the broken span in a request of its own."""
    spans = [_otlp_span(*span) for span in RUN]
    broken(spans[-1])
    return b"\n".join(json.dumps(_otlp_doc([span])).encode() for span in spans)


def _jaeger_file(broken: Callable[[dict[str, Any]], None]) -> bytes:
    spans = [_jaeger_span(*span) for span in RUN]
    broken(spans[-1])
    return json.dumps({"data": [{"traceID": TRACE, "spans": spans, "processes": {}}]}).encode()


def _proto_file(broken: Callable[[Span], None]) -> bytes:
    spans = [_proto_span(*span) for span in RUN]
    broken(spans[-1])
    return _proto_request(spans)


def _set(key: str, value: Any) -> Callable[[Any], None]:
    def broken(span: Any) -> None:
        if isinstance(span, Span):
            setattr(span, key, value)
        else:
            span[key] = value

    return broken


def _whole(span: Any) -> None:
    """Leaves the span as it is: the run the others break."""


# Per format: the file's name, how it is written, a span broken with its trace id readable, what the
# reason then says, and a span broken down to its trace id.
FORMATS = {
    "otlp-json": (
        "run.json",
        _json_file,
        _set("startTimeUnixNano", "soon"),
        "startTimeUnixNano: 'soon' is not an integer",
        _set("traceId", "xyz"),
    ),
    "otlp-json lines": (
        "run.jsonl",
        _jsonl_file,
        _set("spanId", "not-hex"),
        "spanId: id 'not-hex' is neither hex nor base64",
        _set("traceId", 7),
    ),
    "jaeger": (
        "run.jaeger.json",
        _jaeger_file,
        _set("tags", [{"key": "n", "type": "int64", "value": "many"}]),
        "tags: 'many' is not an integer",
        _set("traceID", "not hex"),
    ),
    "otlp-protobuf": (
        "run.pb",
        _proto_file,
        _set("span_id", b"\x01" * 7),
        "span_id: 7 bytes, not 8",
        _set("trace_id", b"\x01" * 5),
    ),
}


def _write(tmp_path: Path, fmt: str, broken: Callable[[Any], None]) -> Path:
    name, write, _, _, _ = FORMATS[fmt]
    path = tmp_path / name
    path.write_bytes(write(broken))
    return path


def _runs(path: Path) -> list[Trajectory]:
    return trajectories_from_views(read_trace_inputs([path]).views)


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_the_run_of_a_malformed_span_is_not_graded_as_whole(tmp_path: Path, fmt: str) -> None:
    (tmp_path / "good").mkdir()
    (good,) = _runs(_write(tmp_path / "good", fmt, _whole))
    assert good.complete and not good.unreadable
    assert Grader().grade(good).outcome == "pass"

    _, _, broken, why, _ = FORMATS[fmt]
    path = _write(tmp_path, fmt, broken)
    inputs = read_trace_inputs([path])
    assert inputs.views.malformed == 1
    (run,) = trajectories_from_views(inputs.views)
    assert [call.name for call in run.tool_calls] == ["lookup"]  # the other call, read whole
    (step,) = run.unreadable
    assert step.reason == f"{path}: malformed span: {why}"
    verdict = Grader().grade(run)
    assert verdict.outcome not in ("pass", "pass_with_warnings")
    assert why in next(c.reason for c in verdict.checks if c.name == "unreadable_steps")


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_a_malformed_span_without_a_trace_id_is_only_counted(
    tmp_path: Path, fmt: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path, fmt, FORMATS[fmt][4])
    inputs = read_trace_inputs([path])
    assert inputs.views.malformed == 1
    assert not any(isinstance(view, MalformedSpan) for view in inputs.views)
    (run,) = trajectories_from_views(inputs.views)
    assert not run.unreadable
    assert main(["grade", "-v", str(path)]) == 0
    err = capsys.readouterr().err
    assert "3 spans, 1 malformed spans not read: an id that is not hex" in err


def test_grade_says_how_many_malformed_spans_it_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, _, broken, why, _ = FORMATS["otlp-json"]
    path = _write(tmp_path, "otlp-json", broken)
    assert main(["grade", "-v", "--format", "json", str(path)]) == 0
    out, err = capsys.readouterr()
    (graded,) = json.loads(out)["trajectories"]
    assert graded["outcome"] == "unverified"
    assert [u["reason"] for u in graded["unreadable"]] == [f"{path}: malformed span: {why}"]
    assert "3 spans, 1 malformed spans not read (1 kept as unreadable steps of their runs)" in err


def test_a_span_read_whole_in_another_file_stands_in_for_its_malformed_copy(tmp_path: Path) -> None:
    _write(tmp_path, "otlp-json", FORMATS["otlp-json"][2])
    _write(tmp_path, "otlp-protobuf", _whole)
    inputs = read_trace_inputs([tmp_path])
    assert inputs.views.malformed == 1
    (run,) = trajectories_from_views(inputs.views)
    assert run.complete and not run.unreadable
    assert len(run.tool_calls) == 2


def _serve(body: bytes, decode: Callable[[bytes], Any]) -> tuple[Verdict, int]:
    """The verdict ``serve`` gives the one run of a request body, and the spans it rejected."""
    verdicts: list[Verdict] = []
    graded = threading.Event()

    def done(verdict: Verdict) -> None:
        verdicts.append(verdict)
        graded.set()

    pipeline = Pipeline(grade=Grader().grade, callbacks=[done], config=AssemblerConfig(grace_s=0))
    try:
        accepted = Ingest(pipeline).accept(decode(body))
        pipeline.force_flush()
        assert graded.wait(30)
    finally:
        pipeline.shutdown()
    (verdict,) = verdicts
    return verdict, accepted.rejected


@pytest.mark.parametrize(
    ("write", "decode", "broken", "why"),
    [
        (
            _json_file,
            decode_json,
            _set("startTimeUnixNano", "soon"),
            "startTimeUnixNano: 'soon' is not an integer",
        ),
        (_proto_file, decode_protobuf, _set("span_id", b"\x01" * 7), "span_id: 7 bytes, not 8"),
    ],
    ids=["otlp-json", "otlp-protobuf"],
)
def test_serve_keeps_a_malformed_span_in_its_run(
    write: Callable[[Any], bytes], decode: Callable[[bytes], Any], broken: Callable[[Any], None], why: str
) -> None:
    verdict, rejected = _serve(write(_whole), decode)
    assert (verdict.outcome, rejected) == ("pass", 0)
    verdict, rejected = _serve(write(broken), decode)
    # Still reported to the sender as a span not taken, and the run it belongs to is not whole.
    assert rejected == 1
    assert verdict.outcome not in ("pass", "pass_with_warnings")
    (step,) = verdict.trajectory.unreadable
    assert step.reason == why
