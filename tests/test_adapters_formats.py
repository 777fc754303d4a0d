"""Hand-made Tempo, Collector JSON Lines and Jaeger files decode to the values they hold."""

from __future__ import annotations

from pathlib import Path

from otel_traj.adapters import TraceFile, read_trace_file, read_trace_files
from otel_traj.spanview import (
    KIND_CLIENT,
    KIND_INTERNAL,
    KIND_SERVER,
    STATUS_ERROR,
    STATUS_OK,
    STATUS_UNSET,
    MalformedSpan,
    SpanView,
)

FORMATS = Path(__file__).parent / "fixtures" / "formats"
TRACE = 0x5B8EFFF798038103D269B633813FC60C
ROOT = 0xEEE19B7EC3C1B173
TOOL = 0xEEE19B7EC3C1B174


def _read(name: str) -> TraceFile:
    return read_trace_file(FORMATS / name)


def _by_id(views: list[SpanView]) -> dict[int, SpanView]:
    return {v.span_id: v for v in views}


def test_tempo_batches_with_instrumentation_library_spans() -> None:
    result = _read("tempo_batches.json")
    assert result.format == "tempo"
    assert result.malformed == 0
    spans = _by_id(result.views)
    root, tool = spans[ROOT], spans[TOOL]
    assert root.trace_id == TRACE and tool.trace_id == TRACE
    assert root.parent_id is None and root.is_local_root
    assert root.kind == KIND_SERVER
    assert root.start_ns == 1_700_000_000_000_000_000 and root.end_ns == 1_700_000_002_000_000_000
    assert dict(root.attributes) == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.usage.input_tokens": 1200,
    }
    assert root.status_code == STATUS_UNSET
    assert tool.parent_id == ROOT
    assert tool.kind == KIND_CLIENT
    assert dict(tool.attributes) == {
        "gen_ai.tool.name": "lookup_order",
        "retry": True,
        "score": 0.25,
        "ids": (1, 2),
    }
    assert (tool.status_code, tool.status_message) == (STATUS_ERROR, "order not found")
    assert [(e.name, e.timestamp, dict(e.attributes or {})) for e in tool.events] == [
        ("exception", 1_700_000_000_600_000_000, {"exception.type": "KeyError"})
    ]
    assert tool.scope_name == "opentelemetry.instrumentation.openai"
    assert dict(tool.resource) == {"service.name": "support-agent", "service.instance.count": 3}
    # One resource object per ResourceSpans, shared by its spans.
    assert tool.resource is root.resource


def test_tempo_trace_wrapper_around_resource_spans() -> None:
    result = _read("tempo_trace.json")
    assert result.format == "tempo"
    (span,) = result.views
    assert (span.trace_id, span.span_id, span.parent_id) == (TRACE, ROOT, 1)
    # flags 0x300: the producer knew whether the parent was remote, and it was.
    assert span.parent_is_remote and span.is_local_root
    assert span.kind == KIND_INTERNAL
    assert span.status_code == STATUS_OK
    assert dict(span.attributes) == {
        "gen_ai.agent.name": "checkout",
        "meta": {"tier": "gold"},
        "blob": b"\x00\x01\xfe",
    }
    assert span.scope_name == "pydantic-ai"
    assert dict(span.resource) == {"service.name": "checkout"}


def test_tempo_trace_wrapper_around_batches_counts_the_span_without_id() -> None:
    result = _read("tempo_trace_batches.json")
    assert result.malformed == 1
    span, unread = result.views
    assert (span.name, span.start_ns, span.end_ns, span.scope_name) == ("root", 10, 20, "old-lib")
    assert dict(span.resource) == {"service.name": "legacy"}
    # Its trace id reads: it stays in its trace, so that the run is not taken for whole.
    assert isinstance(unread, MalformedSpan)
    assert (unread.trace_id, unread.span_id, unread.name) == (span.trace_id, 0, "no span id")
    assert unread.reason.endswith(
        "tempo_trace_batches.json: malformed span: spanId: id must be a string, got NoneType"
    )


def test_collector_json_lines() -> None:
    result = _read("collector.jsonl")
    assert result.format == "otlp-json lines"
    root, tool = sorted(result.views, key=lambda v: v.start_ns)
    assert (root.name, root.parent_id, root.kind) == ("Agent workflow", None, KIND_INTERNAL)
    assert (tool.name, tool.parent_id) == ("lookup_order", ROOT)
    assert (tool.start_ns, tool.end_ns) == (200, 300)  # numbers, not strings, are accepted too
    assert tool.attributes["attempt"] == 2
    assert tool.attributes["openinference.span.kind"] == "TOOL"
    assert (tool.status_code, tool.status_message) == (STATUS_ERROR, "timeout")
    assert tool.scope_name == "openinference.instrumentation.openai_agents"
    assert tool.resource["service.name"] == "agent-a"


def test_jaeger_query_api_document() -> None:
    result = _read("jaeger.json")
    assert result.format == "jaeger"
    assert result.malformed == 1  # the span without a spanID
    spans = _by_id(result.views)
    root, tool, legacy = spans[ROOT], spans[TOOL], spans[0xEEE19B7EC3C1B175]
    assert root.trace_id == TRACE
    assert root.parent_id is None
    assert root.kind == KIND_SERVER
    assert root.scope_name == "strands.telemetry.tracer"
    assert (root.start_ns, root.end_ns) == (1_700_000_000_000_000_000, 1_700_000_002_000_000_000)
    # Jaeger's encodings of span fields are not attributes.
    assert dict(root.attributes) == {"gen_ai.operation.name": "invoke_agent"}
    assert dict(root.resource) == {"service.name": "support-agent", "service.version": "1.0.0"}

    assert tool.parent_id == ROOT
    assert tool.kind == KIND_CLIENT
    assert (tool.status_code, tool.status_message) == (STATUS_ERROR, "order not found")
    assert dict(tool.attributes) == {
        "gen_ai.tool.name": "lookup_order",
        "gen_ai.usage.input_tokens": 42,
        "temperature": 0.5,
        "cached": False,
        "payload": b"\x00\x01\xfe",
    }
    assert [(e.name, e.timestamp, dict(e.attributes or {})) for e in tool.events] == [
        ("gen_ai.tool.message", 1_700_000_000_600_000_000, {"content": '{"order_id": 7}'})
    ]

    assert legacy.parent_id == TOOL  # FOLLOWS_FROM when there is no CHILD_OF
    assert legacy.status_code == STATUS_ERROR  # from the bare ``error`` tag
    assert legacy.end_ns - legacy.start_ns == 10_000
    assert dict(legacy.resource) == {"service.name": "billing"}


def test_jaeger_single_trace_with_short_ids() -> None:
    result = _read("jaeger_trace.json")
    (span,) = result.views
    assert (span.trace_id, span.span_id) == (0xD269B633813FC60C, 1)
    assert span.status_code == STATUS_OK
    assert dict(span.attributes) == {}
    assert span.resource["service.name"] == "short-ids"


def test_jaeger_v3_result_is_otlp_json() -> None:
    result = _read("jaeger_v3.json")
    assert result.format == "jaeger"
    (span,) = result.views
    assert (span.trace_id, span.span_id, span.name, span.kind) == (TRACE, ROOT, "from v3", KIND_CLIENT)
    assert (span.scope_name, span.resource["service.name"]) == ("v3-scope", "v3-service")


def test_directory_of_samples_reads_every_file_sorted_and_each_span_once() -> None:
    batch = read_trace_files([FORMATS])
    every = [v for p in sorted(FORMATS.iterdir()) for v in _read(p.name).views]
    first_seen: dict[tuple[int, int], str] = {}
    for view in every:
        # A malformed span whose id did not read (0) is no other span's duplicate.
        first_seen.setdefault((view.trace_id, view.span_id or id(view)), view.name)
    assert [v.name for v in batch] == list(first_seen.values())
    assert batch.duplicates == len(every) - len(first_seen) > 0
    assert batch.malformed == 2
