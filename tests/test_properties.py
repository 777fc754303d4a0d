"""Property tests: arrival order never changes a trajectory; no attribute value raises out of on_end."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import set_span_in_context

from otel_traj.adapters.otlp_proto import views_from_bytes
from otel_traj.config import AssemblerConfig
from otel_traj.offline import trajectories_from_views
from otel_traj.processor import TrajectoryProcessor
from otel_traj.serialize import trajectory_to_dict
from tests.semconv_agent import clean_refund, emit


def _clean_views() -> list[Any]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    emit(provider.get_tracer("t"), clean_refund())
    emit(provider.get_tracer("t"), clean_refund("conv-2"))
    return list(views_from_bytes(encode_spans(exporter.get_finished_spans()).SerializeToString()))


VIEWS = _clean_views()
EXPECTED = [trajectory_to_dict(t) for t in trajectories_from_views(VIEWS)]


@settings(max_examples=60, deadline=None)
@given(st.permutations(VIEWS))
def test_shuffled_arrival_gives_the_same_trajectories(shuffled: list[Any]) -> None:
    assert [trajectory_to_dict(t) for t in trajectories_from_views(shuffled)] == EXPECTED


scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=True),
    st.text(max_size=50),
    st.sampled_from(["{", "[]", '{"a": ', "null", '{"customer_id": 5}', "\x00", "x" * 200_000]),
)
values = st.one_of(scalars, st.lists(st.one_of(st.integers(), st.text(max_size=5)), max_size=4))
KEYS = [
    "gen_ai.operation.name",
    "gen_ai.tool.name",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
    "gen_ai.usage.input_tokens",
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "openinference.span.kind",
    "input.value",
    "tool.name",
    "traceloop.span.kind",
    "traceloop.entity.input",
    "gen_ai.completion.0.tool_calls.0.name",
    "langfuse.observation.type",
    "langfuse.observation.usage_details",
    "ai.toolCall.args",
    "llm.token_count.prompt",
    "app.customer_id",
    "metadata",
]
attribute_maps = st.dictionaries(st.sampled_from(KEYS), values, max_size=8)
OPS = ["execute_tool", "chat", "invoke_agent", "TOOL", "LLM", "tool", "generation", 7]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    root=attribute_maps,
    children=st.lists(
        st.tuples(st.sampled_from(OPS), st.text(max_size=20), attribute_maps), min_size=1, max_size=5
    ),
)
def test_malformed_attributes_never_raise_out_of_on_end(
    root: dict[str, Any], children: list[tuple[Any, str, dict[str, Any]]]
) -> None:
    verdicts: list[Any] = []
    processor = TrajectoryProcessor(on_verdict=verdicts.append, config=AssemblerConfig(grace_s=0))
    provider = TracerProvider()
    provider.add_span_processor(processor)
    try:
        tracer = provider.get_tracer("fuzz")
        # The SDK drops invalid attribute values itself; set what it keeps, plus raw dict tampering below.
        parent = tracer.start_span("invoke_agent fuzz", attributes={"gen_ai.operation.name": "invoke_agent"})
        for key, value in root.items():
            if value is not None:
                parent.set_attribute(key, value)
        ctx = set_span_in_context(parent)
        for op, name, attrs in children:
            span = tracer.start_span(name or "execute_tool x", context=ctx)
            span.set_attribute("gen_ai.operation.name", op)
            span.set_attribute("openinference.span.kind", op)
            for key, value in attrs.items():
                if value is not None:
                    span.set_attribute(key, value)
            # Values the SDK would refuse (dicts, None) reach processors through other SDKs' spans.
            span._attributes._dict.update({k: v for k, v in attrs.items() if v is None})  # type: ignore[attr-defined]
            span._attributes._dict["gen_ai.tool.call.arguments"] = {"not": "a string"}  # type: ignore[attr-defined]
            span.end()
        parent.end()
        assert processor.force_flush(5000)
    finally:
        provider.shutdown()
    assert processor.stats.internal_errors == 0
    spans = processor.stats.spans
    assert sum(spans.values()) == len(children) + 1
    for verdict in verdicts:
        assert trajectory_to_dict(verdict.trajectory)["trace_id"]
