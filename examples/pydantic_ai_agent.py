"""pydantic-ai with its built-in OpenTelemetry instrumentation, graded by otel-traj.

    pip install "otel-traj[examples]"    # pydantic-ai-slim
    python -m examples.pydantic_ai_agent

The model is pydantic-ai's ``FunctionModel`` replaying a script, so this runs offline.
"""

from __future__ import annotations

from opentelemetry.sdk.trace import TracerProvider
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.instrumented import InstrumentationSettings
from pydantic_ai.usage import RequestUsage

from examples import _scenario as scenario
from otel_traj.processor import TrajectoryProcessor
from otel_traj.verdict import Verdict


def scripted(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    returned = sum(
        1 for m in messages if isinstance(m, ModelRequest) for p in m.parts if p.part_kind == "tool-return"
    )
    first, turn = scenario.next_turn(returned)
    usage = RequestUsage(input_tokens=150 + 60 * len(messages), output_tokens=25)
    if isinstance(turn, str):
        return ModelResponse(parts=[TextPart(turn)], usage=usage, model_name=scenario.MODEL_NAME)
    calls = [
        ToolCallPart(name, args, tool_call_id=f"call_{first + i + 1}") for i, (name, args) in enumerate(turn)
    ]
    return ModelResponse(parts=calls, usage=usage, model_name=scenario.MODEL_NAME)


def main() -> list[Verdict]:
    verdicts: list[Verdict] = []
    provider = TracerProvider()
    provider.add_span_processor(TrajectoryProcessor(policy=scenario.POLICY, on_verdict=verdicts.append))
    Agent.instrument_all(InstrumentationSettings(tracer_provider=provider))

    agent = Agent(
        FunctionModel(scripted, model_name=scenario.MODEL_NAME),
        name=scenario.AGENT_NAME,
        instructions=scenario.INSTRUCTIONS,
        tools=scenario.TOOLS,
    )
    agent.run_sync(scenario.USER_MESSAGE)
    provider.shutdown()  # grades what is still buffered
    scenario.print_verdicts(verdicts)
    return verdicts


if __name__ == "__main__":
    main()
