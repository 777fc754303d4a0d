"""A Strands agent with its built-in OpenTelemetry spans, graded by otel-traj.

    pip install "otel-traj[examples-strands]"    # strands-agents (no [openai] extra needed)
    python -m examples.strands_agent

The model is a small scripted ``strands.models.Model``, so this runs offline with no provider SDK.
Strands records tool arguments in span events by default; otel-traj reads both layouts (set
``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental`` for the attribute layout).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from strands import Agent, tool
from strands.models import Model
from strands.types.content import Messages
from strands.types.streaming import StreamEvent

from examples import _scenario as scenario
from otel_traj.processor import TrajectoryProcessor
from otel_traj.verdict import Verdict


class ScriptedModel(Model):
    """Replays the scripted turns as Strands stream events."""

    def __init__(self) -> None:
        self.config: dict[str, Any] = {"model_id": scenario.MODEL_NAME}

    def update_config(self, **model_config: Any) -> None:
        self.config.update(model_config)

    def get_config(self) -> Any:
        return self.config

    def structured_output(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("the scripted model only chats")

    async def stream(self, messages: Messages, *args: Any, **kwargs: Any) -> AsyncIterator[StreamEvent]:
        results = sum(1 for m in messages for block in m["content"] if "toolResult" in block)
        first, turn = scenario.next_turn(results)
        yield {"messageStart": {"role": "assistant"}}
        if isinstance(turn, str):
            yield {"contentBlockStart": {"start": {}}}
            yield {"contentBlockDelta": {"delta": {"text": turn}}}
            yield {"contentBlockStop": {}}
        else:
            for i, (name, args) in enumerate(turn):
                yield {
                    "contentBlockStart": {
                        "start": {"toolUse": {"name": name, "toolUseId": f"call_{first + i + 1}"}}
                    }
                }
                yield {"contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps(args)}}}}
                yield {"contentBlockStop": {}}
        yield {"messageStop": {"stopReason": "end_turn" if isinstance(turn, str) else "tool_use"}}
        tokens = 150 + 60 * len(messages)
        yield {
            "metadata": {
                "usage": {"inputTokens": tokens, "outputTokens": 25, "totalTokens": tokens + 25},
                "metrics": {"latencyMs": 1},
            }
        }


def main() -> list[Verdict]:
    verdicts: list[Verdict] = []
    provider = TracerProvider()
    provider.add_span_processor(TrajectoryProcessor(policy=scenario.POLICY, on_verdict=verdicts.append))
    trace.set_tracer_provider(provider)  # Strands records through the global provider

    agent = Agent(
        model=ScriptedModel(),
        name=scenario.AGENT_NAME,
        system_prompt=scenario.INSTRUCTIONS,
        tools=[tool(fn) for fn in scenario.TOOLS],
        callback_handler=None,
        trace_attributes={"app.customer_id": "C023"},
    )
    agent(scenario.USER_MESSAGE)
    provider.shutdown()  # grades what is still buffered
    scenario.print_verdicts(verdicts)
    return verdicts


if __name__ == "__main__":
    main()
