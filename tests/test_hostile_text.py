"""Hostile input at the boundary: text that cannot be encoded, values too large to keep, and JSON that
Python's decoder refuses. Each is made harmless where spans are read, so no sink, scrape or report
fails on it later and no payload is answered as if otel-traj had failed."""

from __future__ import annotations

import dataclasses
import gc
import json
import sys
import types
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import json_format
from google.rpc import code_pb2, status_pb2
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode, Tracer
from prometheus_client import generate_latest

from otel_traj.adapters import TraceFileError, read_trace_file
from otel_traj.adapters.otlp_proto import views_from_bytes
from otel_traj.adapters.sdk import from_readable_span
from otel_traj.assembler import Assembler
from otel_traj.config import DEFAULT_CAPTURE, AssemblerConfig
from otel_traj.processor import TrajectoryProcessor
from otel_traj.records import RecordMaker
from otel_traj.serve import Service
from otel_traj.sinks.prometheus import PrometheusSink
from otel_traj.sinks.store import SqliteSink
from otel_traj.steps import AgentRun, ModelCall, ToolCall
from tests.properties import examples
from tests.serve_helpers import FIXTURES, POLICY, cli, local_settings, post

DEEP = b'{"resourceSpans": ' + b"[" * 3000 + b"]" * 3000 + b"}"
SPAN_START = b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"startTimeUnixNano": '
LONG_INTEGER = SPAN_START + b"7" * 5000 + b"}]}]}]}"


@pytest.fixture
def http_url(tmp_path: Path) -> Iterator[str]:
    settings = local_settings(tmp_path)
    service = Service(settings)
    try:
        ports = service.start()
        yield f"http://127.0.0.1:{ports.http}/v1/traces"
    finally:
        service.stop()


@pytest.mark.parametrize(
    ("body", "reason"),
    [(DEEP, "nested too deeply"), (LONG_INTEGER, "Exceeds the limit")],
    ids=["nested-3000-deep", "5000-digit-integer"],
)
def test_json_the_decoder_refuses_is_an_invalid_request_and_the_service_goes_on(
    http_url: str, body: bytes, reason: str
) -> None:
    status_code, headers, reply = post(http_url, body, "application/json")
    assert status_code == 400
    assert headers["content-type"] == "application/json"
    status = status_pb2.Status()
    json_format.Parse(reply, status)
    assert status.code == code_pb2.INVALID_ARGUMENT
    assert status.message.startswith("invalid JSON: ") and reason in status.message
    # The next request is served as usual.
    run = (FIXTURES / "pydantic_ai" / "clean.otlp.pb").read_bytes()
    assert post(http_url, run)[0] == 200


def test_a_trace_file_holding_an_integer_too_long_to_convert_is_named_with_the_reason(
    tmp_path: Path,
) -> None:
    path = tmp_path / "hostile.json"
    path.write_bytes(LONG_INTEGER)
    with pytest.raises(TraceFileError) as raised:
        read_trace_file(path)
    assert str(path) in str(raised.value) and "invalid JSON: Exceeds the limit" in str(raised.value)


# --- text no encoder accepts ----------------------------------------------------------------------

LONE = "\ud800"
MAX_CHARS = 64
# Text as instrumentation may hand it over: any code point, lone surrogates (of either half) often.
# (Built from lists: ``st.text`` never draws a surrogate, whatever its alphabet.)
hostile_text = st.lists(
    st.one_of(st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF, categories=["Cs"]), st.characters()),
    max_size=3 * MAX_CHARS,
).map("".join)


def _strings(value: Any) -> Iterator[str]:
    """Every string a step or record holds, however nested."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _strings(key)
            yield from _strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)
    elif dataclasses.is_dataclass(value):
        for f in dataclasses.fields(value):
            yield from _strings(getattr(value, f.name))


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _hostile_run(tracer: Tracer, text: str) -> None:
    """An agent run whose names, arguments (raw and as JSON escapes), result, error and captured
    attribute all hold ``text``."""
    root = tracer.start_span(
        f"invoke_agent agent{text}",
        attributes={
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": f"agent{text}",
            "app.customer_id": f"C{text}",
            "gen_ai.input.messages": json.dumps([{"role": "user", "content": f"hello{text}"}]),
        },
    )
    context = trace.set_span_in_context(root)
    tool = f"tool{text}"
    chat = tracer.start_span(
        "chat m",
        context=context,
        attributes={
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": f"m{text}",
            "gen_ai.usage.input_tokens": 10,
            "gen_ai.usage.output_tokens": 1,
            "gen_ai.output.messages": json.dumps(
                [
                    {
                        "role": "assistant",
                        "parts": [{"type": "tool_call", "name": tool, "arguments": {"q": text}}],
                    }
                ]
            ),
        },
    )
    chat.end()
    for ensure_ascii in (False, True):
        span = tracer.start_span(
            f"execute_tool {tool}",
            context=context,
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": tool,
                "gen_ai.tool.call.arguments": json.dumps({"q": text}, ensure_ascii=ensure_ascii),
                "gen_ai.tool.call.result": json.dumps({"r": text}, ensure_ascii=ensure_ascii),
            },
        )
        if ensure_ascii:
            span.set_status(Status(StatusCode.ERROR, f"failed{text}"))
        span.end()
    root.end()


def test_a_lone_surrogate_in_names_arguments_and_results_breaks_neither_scrape_nor_report(
    tmp_path: Path,
) -> None:
    store = tmp_path / "verdicts.db"
    prometheus = PrometheusSink()
    processor = TrajectoryProcessor(
        policy=POLICY, sinks=[prometheus, SqliteSink(path=store)], config=AssemblerConfig(grace_s=60)
    )
    provider = TracerProvider()
    provider.add_span_processor(processor)
    _hostile_run(provider.get_tracer("test"), LONE)
    assert processor.force_flush(10_000)
    provider.shutdown()

    exposition = generate_latest(prometheus.registry).decode()
    assert 'agent="agent\ufffd"' in exposition
    assert 'tool="tool\ufffd"' in exposition
    assert "otel_traj_internal_errors_total 0.0" in exposition

    table = cli("report", "--store", str(store))
    assert table.returncode == 0, table.stderr
    assert "agent\ufffd" in table.stdout
    document = cli("report", "--store", str(store), "--format", "json")
    assert document.returncode == 0, document.stderr
    [run] = json.loads(document.stdout)["trajectories"]
    assert [call["name"] for call in run["tool_calls"]] == ["tool\ufffd", "tool\ufffd"]
    assert [call["arguments"] for call in run["tool_calls"]] == [{"q": "\ufffd"}, {"q": "\ufffd"}]
    assert run["attributes"]["app.customer_id"] == "C\ufffd"
    assert all(_encodable(text) for text in _strings(run))


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=hostile_text)
def test_every_string_a_record_holds_is_encodable_and_within_the_cap(text: str) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    _hostile_run(provider.get_tracer("test"), text)
    provider.shutdown()
    make_record = RecordMaker(DEFAULT_CAPTURE, MAX_CHARS)
    records = [make_record(from_readable_span(span)) for span in exporter.get_finished_spans()]
    assert [r.step is not None for r in records] == [True] * 4
    held: list[str] = []
    for record in records:
        held += _strings(record.step)
        held += _strings(record.captured)
        if isinstance(record.step, ModelCall | AgentRun):
            held += _strings(record.step.input_text)
        if isinstance(record.step, ToolCall) and record.step.arguments_text and not record.step.truncated:
            # What the trajectory builder will decode from the text is valid too.
            held += _strings(json.loads(record.step.arguments_text))
    assert all(_encodable(s) for s in held)
    assert all(len(s) <= MAX_CHARS for s in held)


# --- values too large to keep ---------------------------------------------------------------------

MB10 = 10 * 1024 * 1024


def _held(value: Any) -> Iterator[str]:
    """Every string ``value`` keeps alive: through its fields, containers and deferred parses (any
    object it references, short of functions, classes and modules)."""
    seen: set[int] = set()
    stack = [value]
    while stack:
        obj = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, str):
            yield obj
        elif not isinstance(obj, type | types.ModuleType | types.FunctionType | types.BuiltinFunctionType):
            stack.extend(gc.get_referents(obj))


def _huge_run(tracer: Tracer) -> None:
    """An agent run whose every value of interest is 10 MB: a captured attribute (text and list), the
    input messages, run metadata, tool arguments and result."""
    filler = "x" * MB10
    history = [{"role": "user", "content": filler}, {"role": "user", "content": "refund INV-1"}]
    root = tracer.start_span(
        "invoke_agent support",
        attributes={
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "support",
            "app.customer_id": filler,
            "enduser.id": (filler, filler),
            "gen_ai.input.messages": json.dumps(history),
            "metadata": json.dumps({"session.id": "s-1", "blob": "y" * 60_000}),
        },
    )
    context = trace.set_span_in_context(root)
    chat = tracer.start_span(
        "chat m",
        context=context,
        attributes={
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": "m",
            "gen_ai.input.messages": json.dumps(history),
            "gen_ai.output.messages": json.dumps(
                [
                    {
                        "role": "assistant",
                        "parts": [{"type": "tool_call", "name": "t", "arguments": {"q": filler}}],
                    }
                ]
            ),
            "metadata": json.dumps({"user.id": filler}),
        },
    )
    chat.end()
    tool = tracer.start_span(
        "execute_tool t",
        context=context,
        attributes={
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "t",
            "gen_ai.tool.call.arguments": json.dumps({"q": filler}),
            "gen_ai.tool.call.result": filler,
        },
    )
    tool.end()
    root.end()


def test_a_run_of_10_mb_attributes_keeps_every_value_within_the_cap() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    _huge_run(provider.get_tracer("test"))
    provider.shutdown()
    views = views_from_bytes(encode_spans(exporter.get_finished_spans()).SerializeToString())
    exporter.clear()
    max_chars = 1000
    assembler = Assembler(config=AssemblerConfig(grace_s=0.0, max_chars=max_chars))
    assembler.add_all([assembler.make_record(view) for view in views])
    del views

    [buffer] = assembler._buffers.values()
    held = [s for step in buffer.steps for s in _held(step)]
    held += _strings(buffer.context.attributes)
    held += _strings(buffer.metadata)
    assert len(held) > 10
    # The largest a string of ``max_chars`` characters can be: four bytes each.
    cap = sys.getsizeof("\U0001f600" * max_chars)
    assert max(map(sys.getsizeof, held)) <= cap

    [finished] = assembler.pop_ready(flush=True)
    [run] = [s for s in finished.steps if isinstance(s, AgentRun)]
    assert run.input_text == "refund INV-1"
    assert finished.context.attributes["session.id"] == "s-1"
    assert finished.context.attributes["app.customer_id"] == "x" * max_chars
