"""One trace recorded by the OpenTelemetry SDK: a GenAI agent span around the spans a test gives
(name, attributes, start and end in milliseconds after the agent's start, the index of an earlier
given span as parent or None for the agent), read back into its trajectory."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_traj.adapters.sdk import from_readable_span
from otel_traj.offline import trajectories_from_views
from otel_traj.trajectory import Trajectory

MS = 1_000_000
Span = tuple[str, dict[str, Any], int, int, int | None]


def trajectory_under_agent(spans: Sequence[Span], user: str) -> Trajectory:
    """The run of an ``invoke_agent support_agent`` span (asked ``user``) around ``spans``."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("test")
    start = 1_000_000 * MS
    root = tracer.start_span(
        "invoke_agent support_agent",
        start_time=start,
        attributes={
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "support_agent",
            "gen_ai.input.messages": json.dumps(
                [{"role": "user", "parts": [{"type": "text", "content": user}]}]
            ),
        },
    )
    started: list[trace.Span] = []
    for name, attributes, begin, _, parent in spans:
        context = trace.set_span_in_context(root if parent is None else started[parent])
        started.append(
            tracer.start_span(name, context=context, start_time=start + begin * MS, attributes=attributes)
        )
    for span, (_, _, _, end, _) in zip(started, spans, strict=True):
        span.end(end_time=start + end * MS)
    root.end(end_time=start + 1000 * MS)
    (traj,) = trajectories_from_views([from_readable_span(s) for s in exporter.get_finished_spans()])
    return traj
