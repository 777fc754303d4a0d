"""What traceloop-sdk writes besides its instrumentations' spans: association properties, whose
standard ``session_id`` / ``user_id`` name the session and the user, set inside an ``@agent``
function and therefore on the spans it starts but not on the agent span itself."""

from __future__ import annotations

import json

from otel_traj.dialects.context import capture_sources, captured_values
from otel_traj.offline import trajectories_from_views
from otel_traj.spanview import SpanView

PROPERTY = "traceloop.association.properties."


def test_standard_association_properties_are_the_session_and_the_user() -> None:
    sources = capture_sources(["session.id", "user.id", "app.customer_id"])
    attributes = {
        PROPERTY + "session_id": "conv-1",
        PROPERTY + "user_id": "u-7",
        PROPERTY + "app.customer_id": "C023",
        # Not a standard property: no captured key of its own.
        PROPERTY + "customer_id": "C999",
    }
    assert sorted(captured_values(attributes, sources, 4096)) == [
        ("app.customer_id", "C023"),
        ("session.id", "conv-1"),
        ("user.id", "u-7"),
    ]
    # Only the keys asked for are captured.
    assert captured_values(attributes, capture_sources(["app.customer_id"]), 4096) == [
        ("app.customer_id", "C023")
    ]


def test_the_session_property_on_the_agents_tool_spans_is_the_conversation() -> None:
    agent = SpanView(
        trace_id=1,
        span_id=1,
        parent_id=None,
        name="support_agent.agent",
        start_ns=0,
        end_ns=10,
        attributes={
            "traceloop.span.kind": "agent",
            "traceloop.entity.name": "support_agent",
            "traceloop.entity.input": json.dumps({"args": ["hi", "conv-1"], "kwargs": {}}),
        },
    )
    tool = SpanView(
        trace_id=1,
        span_id=2,
        parent_id=1,
        name="get_subscription.tool",
        start_ns=2,
        end_ns=3,
        attributes={
            "traceloop.span.kind": "tool",
            "traceloop.entity.name": "get_subscription",
            "traceloop.entity.input": json.dumps({"args": [], "kwargs": {"customer_id": "C023"}}),
            PROPERTY + "session_id": "conv-1",
        },
    )
    [trajectory] = trajectories_from_views([agent, tool])
    assert trajectory.agent == "support_agent"
    assert trajectory.conversation_id == "conv-1"
    assert [(c.name, c.arguments) for c in trajectory.tool_calls] == [
        ("get_subscription", {"customer_id": "C023"})
    ]
