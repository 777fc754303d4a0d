"""GenAI events sent as log records (the messages of the contrib botocore instrumentation's Bedrock
spans, among others), joined to the spans they were emitted in: from OTLP/JSON logs files next to the
traces, in-process through the Logs SDK, and in ``serve`` over OTLP; with nothing but the model spans
and those records a run is rebuilt whole."""

from __future__ import annotations

import base64
import json
import tracemalloc
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import json_format
from opentelemetry._logs import LogRecord
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import set_span_in_context

from otel_traj import TrajectoryProcessor
from otel_traj.adapters.files import read_trace_inputs
from otel_traj.adapters.log_events import (
    MAX_EVENTS_PER_SPAN,
    LogEvents,
    PendingEvents,
    attach,
    content_event,
    event_size,
    events_from_otlp_json,
)
from otel_traj.cli import main
from otel_traj.config import AssemblerConfig
from otel_traj.offline import trajectories_from_views
from otel_traj.serve import Service
from otel_traj.spanview import SpanEvent, SpanView
from otel_traj.verdict import Verdict
from tests.real_frameworks import REAL
from tests.serve_helpers import local_settings, post

BEDROCK = REAL / "bedrock_botocore"
TRACE_ID = "7be69f7e74538dbb4a7c9e7fb4298680"
SPAN_ID = "80030a7743875dcc"


def record(name: str | None, body: Any = None, **fields: Any) -> dict[str, Any]:
    """One OTLP/JSON log record in the span above (what the OTLP encoder writes)."""
    found: dict[str, Any] = {"traceId": TRACE_ID, "spanId": SPAN_ID, "timeUnixNano": "5", **fields}
    if name is not None:
        found["eventName"] = name
    if body is not None:
        found["body"] = body
    return found


def logs(*records: dict[str, Any]) -> dict[str, Any]:
    return {"resourceLogs": [{"scopeLogs": [{"logRecords": list(records)}]}]}


def text(value: str) -> dict[str, Any]:
    return {"stringValue": value}


def kvlist(**values: Any) -> dict[str, Any]:
    return {"kvlistValue": {"values": [{"key": k, "value": v} for k, v in values.items()]}}


def test_content_events_are_read_by_name_with_the_bodys_fields() -> None:
    found = events_from_otlp_json(
        logs(
            record("gen_ai.user.message", kvlist(content=text("refund INV-1002"))),
            # Older Logs SDKs name the event in an attribute.
            record(
                None,
                kvlist(id=text("call_1"), content=text("{}")),
                attributes=[{"key": "event.name", "value": text("gen_ai.tool.message")}],
            ),
            record("app.log", text("an application's own log line")),
            record("gen_ai.evaluation.result", kvlist(score=text("1"))),
            record("gen_ai.choice", text("not a map"), observedTimeUnixNano="9", timeUnixNano="0"),
        )
    )
    assert found.records == 5 and found.malformed == 0
    [events] = found.by_span.values()
    assert [(e.name, e.timestamp, dict(e.attributes)) for e in events] == [
        ("gen_ai.user.message", 5, {"content": "refund INV-1002"}),
        ("gen_ai.tool.message", 5, {"id": "call_1", "content": "{}"}),
        ("gen_ai.choice", 9, {"body": "not a map"}),
    ]


def test_records_that_cannot_be_read_are_counted_and_cost_only_themselves() -> None:
    found = events_from_otlp_json(
        logs(
            record("gen_ai.user.message", kvlist(content=text("kept"))),
            record("gen_ai.user.message", text("x"), spanId="not hex"),
            record("gen_ai.user.message", text("x"), timeUnixNano=True),
            "not an object",
            record("gen_ai.user.message", text("no span"), spanId=None),
        )
    )
    assert (found.records, found.malformed, found.events) == (5, 3, 1)


def test_events_join_their_span_in_time_order_and_the_rest_are_counted() -> None:
    view = SpanView(
        trace_id=1,
        span_id=2,
        parent_id=None,
        name="chat",
        start_ns=0,
        end_ns=10,
        events=(SpanEvent("own", 4),),
    )
    found = LogEvents()
    for time_ns, key in ((6, (1, 2)), (3, (1, 2)), (6, (9, 9))):
        event = content_event("gen_ai.user.message", time_ns, {}, {"content": str(time_ns)})
        assert event is not None
        found.add(key, event)
    [joined], unattached = attach([view], found)
    assert [(e.name, e.timestamp) for e in joined.events] == [
        ("gen_ai.user.message", 3),
        ("own", 4),
        ("gen_ai.user.message", 6),
    ]
    assert unattached == 1


def test_pending_events_are_bounded_and_taken_by_their_span() -> None:
    pending = PendingEvents(max_spans=2, max_bytes=1 << 20)
    event = content_event("gen_ai.user.message", 1, {}, {"content": "hi"})
    assert event is not None
    for span_id in (1, 2, 3):
        found = LogEvents()
        found.add((7, span_id), event)
        pending.add_all(found)
    assert (len(pending), pending.dropped) == (2, 1)  # the oldest span's event made room
    for _ in range(MAX_EVENTS_PER_SPAN + 5):
        pending.add((7, 3), event)
    assert pending.dropped == 1 + 6  # a span keeps MAX_EVENTS_PER_SPAN events
    view = SpanView(trace_id=7, span_id=3, parent_id=None, name="chat", start_ns=0, end_ns=1)
    assert len(pending.take(view).events) == MAX_EVENTS_PER_SPAN
    assert pending.take(view).events == () and len(pending) == 1
    assert pending.bytes == event_size(event)  # span 2's one event is all that waits


def test_pending_events_are_bounded_in_bytes() -> None:
    # A record's body is the instrumentation's (or a client's): a whole conversation, or anything.
    def sized(text: str) -> SpanEvent:
        event = content_event("gen_ai.user.message", 1, {}, {"content": text})
        assert event is not None
        return event

    big = sized("x" * 10_000)
    pending = PendingEvents(max_spans=1_000, max_bytes=3 * event_size(big))
    for span_id in range(5):
        pending.add((7, span_id), big)
    assert (len(pending), pending.dropped) == (3, 2)  # the two oldest spans went
    assert pending.bytes <= pending.max_bytes
    pending.add((7, 99), sized("y" * 40_000))  # more than the whole budget: not kept at all
    assert (len(pending), pending.dropped) == (3, 3)
    view = SpanView(trace_id=7, span_id=4, parent_id=None, name="chat", start_ns=0, end_ns=1)
    assert [e.attributes["content"] for e in pending.take(view).events] == ["x" * 10_000]
    assert pending.bytes == 2 * event_size(big)


@pytest.mark.parametrize(
    "body",
    [
        {"content": "\U0001f600" * 200},  # 4-byte characters: four bytes each, not one
        {"parts": [{"type": "number", "value": i} for i in range(50)]},  # many small values
    ],
    ids=["wide-characters", "small-values"],
)
def test_the_byte_bound_bounds_the_memory_that_waits(body: dict[str, Any]) -> None:
    """What ``max_bytes`` admits takes about that much memory, whatever the events are made of."""
    budget = 2 << 20
    pending = PendingEvents(max_spans=1_000_000, max_bytes=budget)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for span_id in range(20_000):
            event = content_event("gen_ai.user.message", 1, {}, json.loads(json.dumps(body)))
            assert event is not None
            pending.add((7, span_id), event)
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert pending.dropped > 0, "the test must fill the budget"
    assert held <= 1.5 * budget, f"{held / budget:.1f}x the bound"


@pytest.mark.parametrize("scenario", ["clean", "violating"])
def test_model_spans_and_their_log_records_alone_rebuild_the_run(scenario: str) -> None:
    # What a user of the botocore instrumentation without loop spans of its own has: the chat spans
    # (model, usage) and the events (messages, calls, results).
    inputs = read_trace_inputs([BEDROCK / f"{scenario}.otlp.json", BEDROCK / f"{scenario}.logs.json"])
    assert inputs.unattached == 0
    chats = [replace(v, parent_id=None) for v in inputs.views if v.name.startswith("chat ")]
    [run] = trajectories_from_views(chats)
    facts = json.loads((BEDROCK / f"{scenario}.facts.json").read_text())
    assert [(c.name, c.arguments) for c in run.tool_calls] == [
        (call["name"], call["arguments"]) for call in facts["tool_calls"]
    ]
    assert [c.call_id for c in run.tool_calls] == [f"call_{i + 1}" for i in range(len(run.tool_calls))]
    assert all(c.result for c in run.tool_calls)
    assert [c.turn for c in run.tool_calls] == sorted(c.turn for c in run.tool_calls)  # type: ignore[type-var]
    assert (run.model_turns, run.tokens.input, run.tokens.output) == (
        facts["model_calls"],
        facts["usage"]["input_tokens"],
        facts["usage"]["output_tokens"],
    )
    assert run.final_answer == facts["final_answer"]
    assert run.user_input is not None and "INV-1002" in run.user_input
    # Without the records, the same spans hold no call at all.
    bare = [replace(v, parent_id=None, events=()) for v in chats]
    [without] = trajectories_from_views(bare)
    assert without.tool_calls == () and without.final_answer is None


def test_grade_reads_log_files_given_or_found_beside_the_traces(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("clean.otlp.json", "clean.logs.json"):
        (tmp_path / name).write_bytes((BEDROCK / name).read_bytes())
    assert main(["grade", str(tmp_path), "-v", "--format", "json"]) == 0
    out, err = capsys.readouterr()
    assert f"read {tmp_path / 'clean.logs.json'}: otlp-json logs, 33 GenAI events\n" in err
    # A record that cannot be read is skipped, and said so.
    broken = json.loads((BEDROCK / "clean.logs.json").read_text())
    broken["resourceLogs"][0]["scopeLogs"][0]["logRecords"][0]["spanId"] = "not hex"
    (tmp_path / "clean.logs.json").write_text(json.dumps(broken))
    assert main(["grade", str(tmp_path), "-v", "--format", "json"]) == 0
    err = capsys.readouterr().err
    assert "otlp-json logs, 32 GenAI events, 1 unreadable records" in err
    [run] = json.loads(out)["trajectories"]
    assert [c["turn"] for c in run["tool_calls"]] == [0, 0, 1, 2]
    # Log records alone are no run: nothing to grade, and the file is named with the reason.
    (tmp_path / "clean.otlp.json").unlink()
    assert main(["grade", str(tmp_path)]) == 2
    assert "clean.logs.json (no GenAI events of a span read)" in capsys.readouterr().err


def test_in_process_the_events_emitted_while_a_span_runs_are_graded_with_it() -> None:
    # The recorded Bedrock chat spans made again with the SDK, and each one's recorded GenAI events
    # emitted through the Logs SDK while it runs, as the botocore instrumentation emits them.
    recorded = read_trace_inputs([BEDROCK / "clean.otlp.json"]).views
    events = events_from_otlp_json(json.loads((BEDROCK / "clean.logs.json").read_text()))
    verdicts: list[Verdict] = []
    processor = TrajectoryProcessor(on_verdict=verdicts.append)
    provider = TracerProvider()
    provider.add_span_processor(processor)
    logger_provider = LoggerProvider()
    logger_provider.add_log_record_processor(processor.log_record_processor)
    tracer = provider.get_tracer("support")
    logger = logger_provider.get_logger("opentelemetry.instrumentation.botocore.bedrock-runtime")
    logger.emit(LogRecord(event_name="gen_ai.user.message", body={"content": "outside any span"}))
    with tracer.start_as_current_span("support_agent"):
        for view in sorted((v for v in recorded if v.name.startswith("chat ")), key=lambda v: v.start_ns):
            with tracer.start_as_current_span(view.name, attributes=dict(view.attributes)):
                logger.emit(LogRecord(event_name="app.log", body="not a GenAI event"))
                for event in events.by_span[(view.trace_id, view.span_id)]:
                    body = {k: v for k, v in event.attributes.items() if k != "gen_ai.system"}
                    attributes = {"gen_ai.system": "aws.bedrock"}
                    logger.emit(LogRecord(event_name=event.name, body=body, attributes=attributes))
    assert processor.force_flush()
    [verdict] = verdicts
    facts = json.loads((BEDROCK / "clean.facts.json").read_text())
    run = verdict.trajectory
    assert [(c.name, c.arguments, c.call_id) for c in run.tool_calls] == [
        (call["name"], call["arguments"], f"call_{i + 1}") for i, call in enumerate(facts["tool_calls"])
    ]
    assert all(c.result for c in run.tool_calls) and run.final_answer == facts["final_answer"]
    assert processor.stats.internal_errors == 0 and "log_events" not in processor.stats.dropped
    processor.shutdown()


def test_in_process_events_whose_span_never_ends_are_dropped_and_counted() -> None:
    processor = TrajectoryProcessor(config=AssemblerConfig(max_traces=2))
    provider = TracerProvider()
    provider.add_span_processor(processor)
    logger_provider = LoggerProvider()
    logger_provider.add_log_record_processor(processor.log_record_processor)
    tracer, logger = provider.get_tracer("t"), logger_provider.get_logger("t")
    for _ in range(3):  # spans that are never ended: their events wait, two spans' worth at most
        span = tracer.start_span("chat m", attributes={"gen_ai.operation.name": "chat"})
        context = set_span_in_context(span)
        logger.emit(LogRecord(event_name="gen_ai.user.message", body={"content": "hi"}, context=context))
    assert processor.stats.dropped["log_events"] == 1
    processor.shutdown()


def _served(tmp_path: Path) -> tuple[Service, list[Verdict], str]:
    service = Service(local_settings(tmp_path))
    verdicts: list[Verdict] = []
    service.pipeline.add_callback(verdicts.append)
    ports = service.start()
    return service, verdicts, f"http://127.0.0.1:{ports.http}"


def _logs_protobuf(path: Path) -> bytes:
    """The recorded OTLP/JSON logs request as protobuf, as the OTLP/HTTP log exporter sends it."""
    doc = json.loads(path.read_text())
    for resource in doc["resourceLogs"]:
        for scope in resource["scopeLogs"]:
            for found in scope["logRecords"]:
                for key in ("traceId", "spanId"):
                    found[key] = base64.b64encode(bytes.fromhex(found[key])).decode()
    return json_format.Parse(json.dumps(doc), ExportLogsServiceRequest()).SerializeToString()


def test_serve_reads_a_span_with_the_events_received_before_it(tmp_path: Path) -> None:
    service, verdicts, url = _served(tmp_path)
    try:
        assert post(f"{url}/v1/logs", _logs_protobuf(BEDROCK / "clean.logs.json"))[0] == 200
        assert post(f"{url}/v1/traces", (BEDROCK / "clean.otlp.pb").read_bytes())[0] == 200
    finally:
        service.stop()
    [verdict] = verdicts
    # The calls are joined to the responses that asked for them: those are only in the events.
    assert [c.turn for c in verdict.trajectory.tool_calls] == [0, 0, 1, 2]
    assert service.logs.records()["content"] == 33
    assert "log_events" not in service.stats.snapshot().dropped


def test_serve_counts_the_events_that_came_after_their_span(tmp_path: Path) -> None:
    service, verdicts, url = _served(tmp_path)
    try:
        assert post(f"{url}/v1/traces", (BEDROCK / "clean.otlp.pb").read_bytes())[0] == 200
        logs = (BEDROCK / "clean.logs.json").read_bytes()
        assert post(f"{url}/v1/logs", logs, "application/json")[0] == 200
    finally:
        service.stop()
    [verdict] = verdicts
    assert {c.turn for c in verdict.trajectory.tool_calls} == {None}
    assert service.stats.snapshot().dropped["log_events"] == 33


def test_spans_and_log_records_saved_in_one_document_are_both_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One OTLP/JSON document holding ``resourceSpans`` and ``resourceLogs`` (a run saved with its
    log records, as agentevals downloads a session): the spans were left unread, so the run and its
    calls vanished."""
    spans = json.loads((BEDROCK / "clean.otlp.json").read_text())
    logs = json.loads((BEDROCK / "clean.logs.json").read_text())
    both = tmp_path / "run.json"
    both.write_text(json.dumps({**spans, **logs}))
    assert main(["grade", str(both), "-v", "--format", "json"]) == 0
    out, err = capsys.readouterr()
    assert "otlp-json and logs, " in err and ", 33 GenAI events" in err
    [run] = json.loads(out)["trajectories"]
    assert [c["turn"] for c in run["tool_calls"]] == [0, 0, 1, 2]
