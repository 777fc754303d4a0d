"""GenAI events sent as log records (the messages of the contrib botocore instrumentation's Bedrock
spans, among others), joined to the spans they were emitted in: from OTLP/JSON logs files next to the
traces, and with nothing but the model spans and those records a run is rebuilt whole."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from otel_traj.adapters.files import read_trace_inputs
from otel_traj.adapters.log_events import (
    LogEvents,
    PendingEvents,
    attach,
    content_event,
    events_from_otlp_json,
)
from otel_traj.cli import main
from otel_traj.offline import trajectories_from_views
from otel_traj.spanview import SpanEvent, SpanView
from tests.real_frameworks import REAL

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
    pending = PendingEvents(max_spans=2)
    for span_id in (1, 2, 3):
        found = LogEvents()
        event = content_event("gen_ai.user.message", span_id, {}, {"content": "hi"})
        assert event is not None
        found.add((7, span_id), event)
        pending.add(found)
    assert (len(pending), pending.dropped) == (2, 1)  # the oldest span's event made room
    view = SpanView(trace_id=7, span_id=3, parent_id=None, name="chat", start_ns=0, end_ns=1)
    assert [e.name for e in pending.take(view).events] == ["gen_ai.user.message"]
    assert pending.take(view).events == () and len(pending) == 1


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
    assert without.tool_calls == [] and without.final_answer is None


def test_grade_reads_log_files_given_or_found_beside_the_traces(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("clean.otlp.json", "clean.logs.json"):
        (tmp_path / name).write_bytes((BEDROCK / name).read_bytes())
    assert main(["grade", str(tmp_path), "-v", "--format", "json"]) == 0
    out, err = capsys.readouterr()
    assert f"read {tmp_path / 'clean.logs.json'}: otlp-json logs, 33 GenAI events" in err
    [run] = json.loads(out)["trajectories"]
    assert [c["turn"] for c in run["tool_calls"]] == [0, 0, 1, 2]
    # Log records alone are no run: nothing to grade, and the file is named with the reason.
    (tmp_path / "clean.otlp.json").unlink()
    assert main(["grade", str(tmp_path)]) == 2
    assert "clean.logs.json (no GenAI events of a span read)" in capsys.readouterr().err
