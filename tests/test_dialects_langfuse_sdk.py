"""What the Langfuse Python SDK writes beyond its observation types: the OpenAI drop-in's generation
input when tools are passed, and trace metadata as JSON-encoded attributes."""

from __future__ import annotations

import json

from otel_traj.dialects.context import capture_sources, captured_values
from otel_traj.dialects.langfuse import INPUT, generation_input
from otel_traj.spanview import SpanView

MAX = 4096
QUESTION = "Customer C023 here, please refund INV-1002."


def view() -> SpanView:
    return SpanView(trace_id=1, span_id=2, parent_id=None, start_ns=0, end_ns=1, name="OpenAI-generation")


def test_the_drop_ins_input_with_tools_gives_the_users_message() -> None:
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": QUESTION}]
    with_tools = json.dumps(
        {"tools": [{"type": "function", "function": {"name": "x"}}], "messages": messages}
    )
    assert generation_input(view(), {INPUT: with_tools}, MAX) == QUESTION
    assert generation_input(view(), {INPUT: json.dumps(messages)}, MAX) == QUESTION


def test_trace_metadata_is_captured_under_its_own_name_and_decoded() -> None:
    sources = capture_sources(["app.customer_id"])
    attributes = {"langfuse.trace.metadata.app.customer_id": '"C023"', "session.id": "conv-1"}
    assert captured_values(attributes, sources, MAX) == [("app.customer_id", "C023")]
    # A value that is not JSON is kept as it is.
    attributes = {"langfuse.trace.metadata.app.customer_id": "C023"}
    assert captured_values(attributes, sources, MAX) == [("app.customer_id", "C023")]
