"""Spans of a support agent whose run is still in progress, for the live scope checks: the agent span's
attributes and one tool call at a time."""

from __future__ import annotations

import json
from pathlib import Path

from opentelemetry import trace

POLICY = Path(__file__).resolve().parent.parent / "examples" / "policies" / "support_agent.yaml"
AGENT = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "support_agent"}


def tool(tracer: trace.Tracer, name: str, customer_id: str) -> None:
    with tracer.start_as_current_span(
        f"execute_tool {name}",
        attributes={
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": name,
            "gen_ai.tool.call.arguments": json.dumps({"customer_id": customer_id}),
        },
    ):
        pass
